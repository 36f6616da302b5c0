#!/usr/bin/env bash
# Lab proof (issue 37): configured NVMe-oF paths come back by themselves, and the fabric health
# playbook sees the fault while it lasts.
#
#   AIINFRA_LAB_NVME_DRIVES=4 AIINFRA_LAB_FABRIC_LINKS=2 lab/labctl up     # the multipath shape
#   AIINFRA_LAB_NVME_DRIVES=4 AIINFRA_LAB_FABRIC_LINKS=2 tests/lab/paths_heal.sh
#
# Runs molecule nvmeof_multipath's prepare and converge (te1 exports jbof-a over two NVMe/TCP
# ports; te2 connects both paths with native multipath; the nvmeof_initiator role installs
# aiinfra-nvme-heal.timer), then molecule/nvmeof_multipath/heal.yml: three faults on path B
# while fio writes and verifies on the head device - the subsystem unlinked from port 2 on te1
# and linked back (the kernel removes the path: DNR), te1's eth2 down and up, te2's eth2 down
# and up - each 30 s, with playbooks/fabric_health.yml run during and after each. It prints,
# per fault, when path B was live again after the fault cleared, the watcher's log, the
# healer's journal lines and the kernel's NVMe messages; it exits non-zero when fio saw a
# verify error, a path did not come back within 600 s, or the health playbook did not fail
# during a fault and pass after it.
set -euo pipefail
# shellcheck source=tests/lab/multipath_shape.sh
. "$(dirname "$(readlink -f "$0")")/multipath_shape.sh"
for step in prepare converge heal; do
  printf '%s paths-heal: %s\n' "$(date +%T)" "molecule/nvmeof_multipath/$step.yml" >&2
  ansible-playbook -i inventory/lab "molecule/nvmeof_multipath/$step.yml"
done
