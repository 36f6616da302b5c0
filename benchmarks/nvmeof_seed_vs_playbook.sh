#!/usr/bin/env bash
# Benchmark (not a test): the seed's NVMe-oF scripts vs. the collection's playbooks,
# side by side, in one run on the lab (lab/labctl up first; the VMs are left as found).
#
#   (a) seed:     soft-RoCE up on te1+te2, 01_setup_target.sh (te1), 11_connect_target.sh,
#                 12_test_io.sh, 13_disconnect_target.sh (te2), 02_teardown_target.sh (te1),
#                 soft-RoCE down — each run over `labctl ssh`, as a user would.
#   (b) playbook: playbooks/nvmeof_rdma.yml (first converge), the same again (no-op
#                 re-run), playbooks/nvmeof_teardown.yml.
#
# Prints a, b = converge + teardown, b/a, and no-op / first converge, then where the
# playbooks' time goes: tasks run per host and the costliest tasks of each run
# (ansible.posix.profile_tasks). Copying the seed scripts to the VMs and removing the
# seed's backing file between (a) and (b) are not timed. ANSIBLE_CONFIG defaults to
# lab/ansible.cfg (Mitogen); set it to ansible.cfg for the stock strategy. The issue's
# goals: b/a <= 1.0 with Mitogen, <= 2.0 stock; no-op / converge <= 0.5 both.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
LABCTL=lab/labctl
export ANSIBLE_CONFIG=${ANSIBLE_CONFIG:-$PWD/lab/ansible.cfg}
export ANSIBLE_TIMEOUT=${ANSIBLE_TIMEOUT:-60}
PLAYBOOK=(.venv/bin/ansible-playbook -i inventory/lab)
export ANSIBLE_CALLBACKS_ENABLED=${ANSIBLE_CALLBACKS_ENABLED:-ansible.posix.profile_tasks}
export PROFILE_TASKS_TASK_OUTPUT_LIMIT=${PROFILE_TASKS_TASK_OUTPUT_LIMIT:-12}
if grep -q '^strategy *= *mitogen' "$ANSIBLE_CONFIG"; then STRATEGY=mitogen GOAL=1.0; else STRATEGY=stock GOAL=2.0; fi
LOG=${BENCH_LOG:-$(mktemp -d /tmp/nvmeof-bench.XXXXXX)}

now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
step() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
vm() { local h=$1; shift; "$LABCTL" ssh "$h" "$@"; }

$LABCTL status >&2
step "copying benchmarks/seed to te1 and te2 (not timed)"
for h in te1 te2; do
  tar -C benchmarks -cf - seed | vm "$h" 'rm -rf /root/seed && tar -C /root -xf -'
done
hostnqn=$(vm te2 cat /etc/nvme/hostnqn)

step "(a) the seed's scripts"
t0=$(now)
vm te1 'bash /root/seed/scripts/00_soft_roce.sh up' >"$LOG/a0_te1.log" 2>&1
vm te2 'bash /root/seed/scripts/00_soft_roce.sh up' >"$LOG/a0_te2.log" 2>&1
vm te1 "INITIATOR_NQN=$hostnqn bash /root/seed/scripts/01_setup_target.sh" >"$LOG/a01.log" 2>&1
vm te2 'bash /root/seed/scripts/11_connect_target.sh' >"$LOG/a11.log" 2>&1
vm te2 'bash /root/seed/scripts/12_test_io.sh' >"$LOG/a12.log" 2>&1
vm te2 'bash /root/seed/scripts/13_disconnect_target.sh' >"$LOG/a13.log" 2>&1
vm te1 "INITIATOR_NQN=$hostnqn bash /root/seed/scripts/02_teardown_target.sh" >"$LOG/a02.log" 2>&1
vm te1 'bash /root/seed/scripts/00_soft_roce.sh down' >>"$LOG/a0_te1.log" 2>&1
vm te2 'bash /root/seed/scripts/00_soft_roce.sh down' >>"$LOG/a0_te2.log" 2>&1
a=$(since "$t0")
grep -q "Read/Write content matched: OK" "$LOG/a12.log" || { step "seed I/O test did not pass, see $LOG/a12.log"; exit 1; }

step "cleaning up after the seed (not timed): its backing file, its copy of the scripts"
vm te1 'rm -f /var/lib/nvmet/disk1.img; rmdir /var/lib/nvmet 2>/dev/null; rm -rf /root/seed'
vm te2 'rm -rf /root/seed'

step "(b) the playbooks"
t0=$(now)
"${PLAYBOOK[@]}" playbooks/nvmeof_rdma.yml >"$LOG/b_converge.log" 2>&1
converge=$(since "$t0")
t0=$(now)
"${PLAYBOOK[@]}" playbooks/nvmeof_rdma.yml >"$LOG/b_noop.log" 2>&1
noop=$(since "$t0")
t0=$(now)
# Removing the (sparse) backing file too costs one unlink; it leaves the VMs as found.
"${PLAYBOOK[@]}" playbooks/nvmeof_teardown.yml -e nvmeof_target_remove_backing_file=true >"$LOG/b_teardown.log" 2>&1
teardown=$(since "$t0")
noop_changed=$(grep -E '^te[12] +:' "$LOG/b_noop.log" | sed -E 's/.*changed=([0-9]+).*/\1/' | paste -sd+ | bc)

b=$(echo "$converge + $teardown" | bc)
printf '\n'
printf 'seed scripts (a)                 %8.1f s\n' "$a"
printf 'playbook converge                %8.1f s\n' "$converge"
printf 'playbook teardown                %8.1f s\n' "$teardown"
printf 'playbook total (b)               %8.1f s\n' "$b"
printf 'ratio b/a                        %8.2f   (goal <= %s, %s)\n' "$(echo "$b / $a" | bc -l)" "$GOAL" "$STRATEGY"
printf 'no-op re-run                     %8.1f s  (changed=%s)\n' "$noop" "$noop_changed"
printf 'no-op / first converge           %8.2f   (goal <= 0.5)\n' "$(echo "$noop / $converge" | bc -l)"
printf 'ANSIBLE_CONFIG=%s; logs in %s\n' "$ANSIBLE_CONFIG" "$LOG"

tasks() {  # tasks LOG: tasks run per host (ok + changed + failed + skipped in the recap)
  grep -E '^te[12] +:' "$1" | sed -E 's/^(te[12]) .*ok=([0-9]+).*changed=([0-9]+).*failed=([0-9]+).*skipped=([0-9]+).*/\1 ok=\2 changed=\3 skipped=\5/' | paste -sd' '
}
for run in converge noop teardown; do
  printf '\n%s: %s\n' "$run" "$(tasks "$LOG/b_$run.log")"
  # profile_tasks' summary: the costliest tasks, longest first.
  sed -n '/^=\{20,\}/,$p' "$LOG/b_$run.log" | grep -E ' -+ [0-9.]+s$' | head -"$PROFILE_TASKS_TASK_OUTPUT_LIMIT" || true
done
