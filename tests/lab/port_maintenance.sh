#!/usr/bin/env bash
# Lab proof (issue 37, item 2): planned maintenance of a target port drops no path.
#
#   AIINFRA_LAB_NVME_DRIVES=4 AIINFRA_LAB_FABRIC_LINKS=2 lab/labctl up     # the multipath shape
#   AIINFRA_LAB_NVME_DRIVES=4 AIINFRA_LAB_FABRIC_LINKS=2 tests/lab/port_maintenance.sh
#
# Runs molecule nvmeof_multipath's prepare and converge (te1 exports jbof-a over ports 1 and 2;
# te2 connects both paths with native multipath), then:
#   1. playbooks/nvmeof_port_maintenance.yml --check for port 2: nothing changes on te1;
#   2. while fio writes and verifies (crc32c) on te2's head device and files/ana-paths-watch.sh
#      samples every 0.2 s how many of its paths are live with a usable ANA state
#      (tests/lab/port_maintenance_io.yml): the playbook with action=round for port 2
#      (out, hold PM_HOLD seconds, back); then fio is stopped and the proof asserts 0 verify
#      errors, at least one usable path at every sample, fewer than all during the round, and all
#      usable at the end;
#   3. the refusal: with te2's path A down (its eth1 down), the playbook for port 2 must fail,
#      naming te2, jbof-a and port 2, and leave port 2's ANA states and te1's record as they were.
# ANA inaccessible disconnects nothing, so the path healer (aiinfra-nvme-heal.timer) has
# nothing to do here; in step 3 it may reconnect path A once eth1 is back.
set -euo pipefail
# shellcheck source=tests/lab/multipath_shape.sh
. "$(dirname "$(readlink -f "$0")")/multipath_shape.sh"
hold=${PM_HOLD:-30}
trap 'echo "port_maintenance.sh: failed at line $LINENO; the runs are in .cache/pm-*.log" >&2' ERR
say() { printf '%s port-maintenance: %s\n' "$(date +%T)" "$*" >&2; }
maint=(ansible-playbook -i inventory/lab playbooks/nvmeof_port_maintenance.yml -e nvmeof_port_maintenance_port=2)
# te1's view of port 2: its ANA group states and the maintenance record, if any.
# shellcheck disable=SC2016  # expanded on te1
port2() { lab/labctl ssh te1 'for g in /sys/kernel/config/nvmet/ports/2/ana_groups/*; do echo "group ${g##*/} $(cat "$g/ana_state")"; done; ls /var/lib/aiinfra-fabric/nvmeof_port_maintenance-2.json 2>&1 || true'; }

if [ "${PM_SKIP_CONVERGE:-0}" != 1 ]; then
  for step in prepare converge; do
    say "molecule/nvmeof_multipath/$step.yml"
    ansible-playbook -i inventory/lab "molecule/nvmeof_multipath/$step.yml" >/dev/null
  done
fi

say "1. --check: port 2 before"; before=$(port2); echo "$before"
"${maint[@]}" -e nvmeof_port_maintenance_action=round --check > "$repo/.cache/pm-check.log"
after=$(port2)
[ "$before" = "$after" ] || { echo "port_maintenance.sh: --check changed port 2: $after" >&2; exit 1; }
say "1. --check changed nothing on te1"

say "2. fio + sampler on te2; round on port 2 (hold $hold s)"
ansible-playbook -i inventory/lab tests/lab/port_maintenance_io.yml -e pm_step=start > "$repo/.cache/pm-start.log"
start=$SECONDS
"${maint[@]}" -e nvmeof_port_maintenance_action=round -e "nvmeof_port_maintenance_hold=$hold" | tee "$repo/.cache/pm-round.log" \
  | sed -n '/Show the plan\|Show per host/,/^$/p'
say "2. the round took $((SECONDS - start)) s (playbook wall time)"
ansible-playbook -i inventory/lab tests/lab/port_maintenance_io.yml -e pm_step=stop | tee "$repo/.cache/pm-stop.log" | sed -n '/Show the sampler/,/^$/p'
port2

say "3. refusal: te2's path A down (eth1)"
lab/labctl ssh te2 'ip link set eth1 down'
# Wait until te2's kernel no longer holds path A live (keep-alive 3 s).
for _ in $(seq 60); do
  # shellcheck disable=SC2016  # expanded on te2
  lab/labctl ssh te2 'grep -l traddr=10.99.0.1, /sys/class/nvme-fabrics/ctl/nvme*/address | while read -r a; do cat "${a%/address}/state"; done' | grep -qx live || break
  sleep 1
done
before=$(port2)
if "${maint[@]}" -e nvmeof_port_maintenance_action=out > "$repo/.cache/pm-refusal.log" 2>&1; then rc=0; else rc=$?; fi
after=$(port2)
lab/labctl ssh te2 'ip link set eth1 up'
grep -o 'Refused, nothing changed: [^"]*' "$repo/.cache/pm-refusal.log" | head -n 1
[ "$rc" != 0 ] || { echo "port_maintenance.sh: the playbook did not refuse (rc 0)" >&2; exit 1; }
grep -q "te2: subsystem nqn.2024-04.com.example:te1.jbof-a would be left with no usable path: its only usable path goes through port 2 (tcp 10.99.1.1:4420 on te1)" "$repo/.cache/pm-refusal.log" \
  || { echo "port_maintenance.sh: no refusal naming te2, jbof-a and port 2 (see .cache/pm-refusal.log)" >&2; exit 1; }
[ "$before" = "$after" ] || { echo "port_maintenance.sh: the refused run changed port 2: $after" >&2; exit 1; }
say "3. refused (rc $rc), port 2 unchanged: $(echo "$after" | tr '\n' ';')"
say "waiting for path A to come back"
ansible -i inventory/lab te2 -m aiinfra.fabric.nvme_multipath \
  -a '{"nqn": ["nqn.2024-04.com.example:te1.jbof-a"], "min_live_paths": 2, "wait_timeout": 180}' >/dev/null
say "done: both paths of te2's jbof-a live again"
