#!/usr/bin/env bash
# Benchmark (not a test): many initiators. One subsystem on te1 allows N host identities
# (default 32); te2 connects to it once as each of them (nvme connect --hostnqn/--hostid,
# one controller per identity) through aiinfra.fabric.nvme_connect in a loop. Measures the
# connect loop (per connection), the idempotent re-run (must report changed=0), and the
# disconnect loop; counts the controllers te2 has, the TCP connections te1 serves, and
# the hosts aiinfra.fabric.nvmet_info lists. Needs the lab (lab/labctl up first); what it
# creates is removed at the end. ANSIBLE_CONFIG defaults to lab/ansible.cfg (Mitogen).
#
# Then the same through the roles ("role:" rows, benchmarks/nvme_many_initiators_role.yml):
# the nvmeof_target role exports another subsystem from te1 allowing the N identities, and
# the nvmeof_initiator role on te2 connects it over N paths, each with its own hostnqn and
# hostid; converge, no-op re-run (changed=0 on both hosts), teardown (initiator, then
# target, from their records), then what is left on te2 and in te1's configfs. The
# initiator's teardown works from every record on te2, so te2 must have none beforehand.
#
#   benchmarks/nvme_many_initiators.sh [N]
#
# nvme-cli 2.3 (Debian 12) refuses every identity after the first as "already connected"
# (it looks for a controller of the same subsystem and address under every host NQN, and
# ignores --duplicate-connect; fixed upstream in 2.6 and 2.9). nvme_connect then connects
# through /dev/nvme-fabrics itself; the table says how many connects went which way.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
N=${1:-32}
LABCTL=lab/labctl
export ANSIBLE_CONFIG=${ANSIBLE_CONFIG:-$PWD/lab/ansible.cfg}
export ANSIBLE_TIMEOUT=${ANSIBLE_TIMEOUT:-60}
LOG=${BENCH_LOG:-$(mktemp -d /tmp/nvme-many.XXXXXX)}
NQN=nqn.2024-04.io.aiinfra.bench:many
ROLE_NQN=nqn.2024-04.io.aiinfra.bench:many-role
ROLE_PORT=10

now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }
step() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
vm() { local h=$1; shift; "$LABCTL" ssh "$h" "$@"; }
play() {  # play STEP LOGNAME [ansible-playbook args]
  local s=$1 name=$2; shift 2
  ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks .venv/bin/ansible-playbook -i inventory/lab \
    benchmarks/nvme_many_initiators.yml -e "bench_step=$s" -e "@$LOG/hosts.json" "$@" >"$LOG/$name.log" 2>&1 \
    || { step "playbook $name failed, see $LOG/$name.log"; tail -40 "$LOG/$name.log" >&2; exit 1; }
}
# rplay STEP LOGNAME: the same for the roles' playbook: every task in the profile summary,
# results as JSON (one line each; the yaml format folds a long msg after 80 columns).
rplay() {
  local s=$1 name=$2; shift 2
  ANSIBLE_CALLBACKS_ENABLED=ansible.posix.profile_tasks PROFILE_TASKS_TASK_OUTPUT_LIMIT=200 \
    ANSIBLE_CALLBACK_RESULT_FORMAT=json .venv/bin/ansible-playbook \
    -i inventory/lab benchmarks/nvme_many_initiators_role.yml -e "bench_step=$s" -e "@$LOG/hosts.json" "$@" \
    >"$LOG/$name.log" 2>&1 || { step "playbook $name failed, see $LOG/$name.log"; tail -40 "$LOG/$name.log" >&2; exit 1; }
}
recap() { grep -E "^$1 +:" "$2" | sed -E "s/.*$3=([0-9]+).*/\1/"; }
items() { grep -cE "^$1: \[te2\] => \(item=" "$2" || true; }  # loop items reported changed / ok
task_s() { grep -E "^$1 -+ " "$2" | tail -1 | grep -oE '[0-9.]+s$' | tr -d s; }
role_task_s() { grep -E "(^|: )$1 -+ " "$2" | tail -1 | grep -oE '[0-9.]+s$' | tr -d s; }  # a role's task
te2_controllers() {  # "controllers live distinct-hostnqns" of te2 for the bench subsystem (or the NQN given)
  vm te2 "n=0; live=0; for c in /sys/class/nvme/nvme*; do [ \"\$(cat \$c/subsysnqn 2>/dev/null)\" = ${1:-$NQN} ] || continue; \
    n=\$((n+1)); [ \"\$(cat \$c/state)\" = live ] && live=\$((live+1)); cat \$c/hostnqn >>/tmp/nvme-many-hostnqns; done; \
    echo \$n \$live \$(sort -u /tmp/nvme-many-hostnqns 2>/dev/null | wc -l); rm -f /tmp/nvme-many-hostnqns"
}

$LABCTL status >&2
python3 - "$N" >"$LOG/hosts.json" <<'PY'
import json, sys, uuid
ids = [str(uuid.uuid5(uuid.NAMESPACE_DNS, "host%02d.bench.aiinfra.io" % i)) for i in range(int(sys.argv[1]))]
hosts = [{"hostnqn": "nqn.2014-08.org.nvmexpress:uuid:" + i, "hostid": i} for i in ids]
print(json.dumps({"bench_hosts": hosts, "bench_target_hosts": [{"nqn": h["hostnqn"]} for h in hosts]}))
PY
step "setup (not timed): nvmet + nvmet_tcp on te1, a 16 MiB sparse file, nvme_tcp on te2"
vm te1 "modprobe nvmet && modprobe nvmet_tcp && truncate -s 16M /root/nvme-many.img"
vm te2 "modprobe nvme_tcp"
[ "$(te2_controllers | cut -d' ' -f1)" = 0 ] || { step "te2 already has controllers to $NQN; disconnect them first"; exit 1; }
[ "$(te2_controllers "$ROLE_NQN" | cut -d' ' -f1)" = 0 ] || { step "te2 already has controllers to $ROLE_NQN; disconnect them first"; exit 1; }
te2_records() { vm te2 "ls /var/lib/aiinfra-fabric/nvmeof_initiator-*.json 2>/dev/null | wc -l"; }
[ "$(te2_records)" = 0 ] || { step "te2 has nvmeof_initiator records (/var/lib/aiinfra-fabric): the role part's teardown would \
tear those down too; run the initiator role with nvmeof_initiator_state=absent on te2 first"; exit 1; }
vm te1 "! test -e /sys/kernel/config/nvmet/subsystems/$ROLE_NQN" \
  || { step "te1 already exports $ROLE_NQN; remove it first (nvmeof_target_state=absent)"; exit 1; }

step "target: one subsystem allowing $N hosts (nvmet_target)"
t0=$(now); play target target; t_target=$(since "$t0")
step "connect: $N host identities (nvme_connect loop)"
t0=$(now); play connect connect; t_connect=$(since "$t0")
read -r c_total c_live c_hosts <<<"$(te2_controllers)"
tcp_est=$(vm te1 "ss -Htn state established '( sport = :4439 )' | wc -l")
play info info
unquote() { sed -E "s/'\$//; s/''/'/g"; }  # the yaml callback's single-quoted msg
info_line=$(grep -oE 'nvmet_info: [^"]*' "$LOG/info.log" | head -1 | unquote)
paths_line=$(grep -oE 'connect paths: [^"]*' "$LOG/connect.log" | head -1 | unquote)
nvme_version=$(vm te2 "nvme version" | head -1)
step "re-run: the same loop again (must change nothing)"
t0=$(now); play connect rerun; t_rerun=$(since "$t0")
step "disconnect: $N host identities"
t0=$(now); play disconnect disconnect; t_disc=$(since "$t0")
read -r d_total _ _ <<<"$(te2_controllers)"
step "clear the target (not timed)"
play clear clear
vm te1 "rm -f /root/nvme-many.img"

step "role: converge, nvmeof_target on te1 then nvmeof_initiator on te2 ($N paths, one identity each)"
t0=$(now); rplay converge role-converge; t_rconv=$(since "$t0")
read -r rc_total rc_live rc_hosts <<<"$(te2_controllers "$ROLE_NQN")"
rtcp_est=$(vm te1 "ss -Htn state established '( sport = :4440 )' | wc -l")
rplay info role-info
rinfo_line=$(grep -oE 'nvmet_info: [^"]*' "$LOG/role-info.log" | head -1)
rheads_line=$(grep -oE 'role: head devices [^"]*' "$LOG/role-converge.log" | head -1)
step "role: re-run (must change nothing on either host)"
t0=$(now); rplay converge role-rerun; t_rrerun=$(since "$t0")
step "role: teardown, nvmeof_initiator on te2 then nvmeof_target on te1 (state absent)"
t0=$(now); rplay teardown role-teardown; t_rdown=$(since "$t0")
read -r rd_total _ _ <<<"$(te2_controllers "$ROLE_NQN")"
rd_records=$(te2_records)
rd_te1=$(vm te1 "t=/sys/kernel/config/nvmet; s=absent; p=absent; f=absent; h=0; \
  [ -e \$t/subsystems/$ROLE_NQN ] && s=present; [ -e \$t/ports/$ROLE_PORT ] && p=present; \
  [ -e /root/nvme-many-role.img ] && f=present; \
  for n in $(python3 -c 'import json, sys; print(" ".join(h["hostnqn"] for h in json.load(open(sys.argv[1]))["bench_hosts"]))' "$LOG/hosts.json"); \
  do [ -e \$t/hosts/\$n ] && h=\$((h+1)); done; echo subsystem \$s, port $ROLE_PORT \$p, bench host entries \$h, backing file \$f")

conn_task=$(task_s "Connect as each host identity" "$LOG/connect.log")
rerun_task=$(task_s "Connect as each host identity" "$LOG/rerun.log")
disc_task=$(task_s "Connect as each host identity" "$LOG/disconnect.log")
per() { echo "scale=2; $1 / $N" | bc; }
printf '\nmany initiators: one subsystem on te1, te2 connects as %d host identities over tcp (logs in %s)\n' "$N" "$LOG"
printf '%-56s %10s\n' "" seconds
printf '%-56s %10.2f\n' "target: nvmet_target, $N hosts allowed (playbook)" "$t_target"
printf '%-56s %10.2f   changed=%s (loop items: %s changed, %s ok)\n' "connect $N: playbook" "$t_connect" \
  "$(recap te2 "$LOG/connect.log" changed)" "$(items changed "$LOG/connect.log")" "$(items ok "$LOG/connect.log")"
printf '%-56s %10s   per connection %s s\n' "  nvme_connect loop task" "$conn_task" "$(per "$conn_task")"
printf '%-56s %10.2f   changed=%s (loop items: %s changed, %s ok)\n' "re-run: playbook" "$t_rerun" \
  "$(recap te2 "$LOG/rerun.log" changed)" "$(items changed "$LOG/rerun.log")" "$(items ok "$LOG/rerun.log")"
printf '%-56s %10s   per connection %s s\n' "  nvme_connect loop task" "$rerun_task" "$(per "$rerun_task")"
printf '%-56s %10.2f   changed=%s (loop items: %s changed, %s ok)\n' "disconnect $N: playbook" "$t_disc" \
  "$(recap te2 "$LOG/disconnect.log" changed)" "$(items changed "$LOG/disconnect.log")" "$(items ok "$LOG/disconnect.log")"
printf '%-56s %10s   per connection %s s\n' "  nvme_connect loop task" "$disc_task" "$(per "$disc_task")"
printf 'te2 controllers to %s: %s (live %s, distinct host NQNs %s); after disconnect: %s\n' \
  "$NQN" "$c_total" "$c_live" "$c_hosts" "$d_total"
printf 'te1 established TCP connections on port 4439: %s (admin + I/O queues)\n' "$tcp_est"
printf '%s\n' "$info_line"
printf '%s (te2: %s)\n' "$paths_line" "$nvme_version"

CONNECT_TASK="Connect every path of every subsystem, set the I/O policy and wait for the paths"
DISCONNECT_TASK="Disconnect from the target subsystems"
rconv_task=$(role_task_s "$CONNECT_TASK" "$LOG/role-converge.log")
rrerun_task=$(role_task_s "$CONNECT_TASK" "$LOG/role-rerun.log")
rdown_task=$(role_task_s "$DISCONNECT_TASK" "$LOG/role-teardown.log")
rchanged() { printf 'changed=te1 %s te2 %s' "$(recap te1 "$1" changed)" "$(recap te2 "$1" changed)"; }
printf '\nrole: the same %d identities as %d paths of one subsystem, nvmeof_target on te1, nvmeof_initiator on te2\n' "$N" "$N"
printf '%-56s %10.2f   %s (all %d paths in one nvme_connections task)\n' "role: converge $N paths: playbook" \
  "$t_rconv" "$(rchanged "$LOG/role-converge.log")" "$N"
printf '%-56s %10s   per connection %s s\n' "role:   connect task" "$rconv_task" "$(per "$rconv_task")"
printf '%-56s %10.2f   %s\n' "role: re-run: playbook" "$t_rrerun" "$(rchanged "$LOG/role-rerun.log")"
printf '%-56s %10s   per connection %s s\n' "role:   connect task" "$rrerun_task" "$(per "$rrerun_task")"
printf '%-56s %10.2f   %s\n' "role: teardown, initiator then target: playbook" "$t_rdown" \
  "$(rchanged "$LOG/role-teardown.log")"
printf '%-56s %10s   per connection %s s\n' "role:   disconnect task" "$rdown_task" "$(per "$rdown_task")"
printf 'role: te2 controllers to %s: %s (live %s, distinct host NQNs %s); after teardown: %s, records left %s\n' \
  "$ROLE_NQN" "$rc_total" "$rc_live" "$rc_hosts" "$rd_total" "$rd_records"
printf 'role: te1 established TCP connections on port 4440: %s; after teardown: %s\n' "$rtcp_est" "$rd_te1"
printf 'role: %s\n' "$rinfo_line"
printf '%s\n' "$rheads_line"
