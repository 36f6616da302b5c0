#!/usr/bin/env bash
# Benchmark (not a test): what the size of a storage fabric costs the roles, measured side
# by side in one run on one lab (4 NVMe drives on te1, two fabric links):
#   single    1 drive, 1 subsystem, 1 port, 1 initiator (te2), 1 path
#   topology  4 drives, 2 subsystems, 2 ports with ANA groups, 2 initiators (te2, and te1
#             on its own target), 2 paths each with native multipath
# Each shape: first converge, no-op re-run (its changed count), teardown from the record.
# Prints the seconds, topology/single for each, and the role tasks that ran per host.
# Brings the lab up in that shape when it is not (lab/labctl up); leaves it up.
#   benchmarks/nvmeof_topology_scale.sh
# ANSIBLE_CONFIG defaults to lab/ansible.cfg (Mitogen); ansible.cfg for the stock strategy.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
export AIINFRA_LAB_NVME_DRIVES=4 AIINFRA_LAB_FABRIC_LINKS=2
export ANSIBLE_CONFIG=${ANSIBLE_CONFIG:-$PWD/lab/ansible.cfg}
export ANSIBLE_TIMEOUT=${ANSIBLE_TIMEOUT:-60}
export ANSIBLE_NOCOLOR=1
LOG=${BENCH_LOG:-$(mktemp -d /tmp/nvmeof-topology-bench.XXXXXX)}
PLAY=(.venv/bin/ansible-playbook -i inventory/lab benchmarks/nvmeof_topology_scale.yml)

# shellcheck source=benchmarks/lib.sh
. benchmarks/lib.sh
changed() { grep -E '^te[12] +:' "$LOG/$1.log" | sed -E 's/.*changed=([0-9]+).*/\1/' | paste -sd+ | bc; }
# tasks NAME: "te1 ok=N changed=M te2 ..." from the run's recap lines.
tasks() { grep -E '^te[12] +:' "$LOG/$1.log" | sed -E 's/^(te[12]) +: ok=([0-9]+) +changed=([0-9]+).*/\1 ok=\2 changed=\3/' | paste -sd' ' -; }

lab/labctl up >&2
declare -A T
for shape in single topology; do
  step "$shape: converge"
  run "$shape-converge" -e bench_shape="$shape"; T[$shape-converge]=$secs
  step "$shape: no-op re-run"
  run "$shape-noop" -e bench_shape="$shape"; T[$shape-noop]=$secs
  step "$shape: teardown"
  run "$shape-teardown" -e bench_shape="$shape" -e bench_state=absent; T[$shape-teardown]=$secs
done

printf '\n%-10s %10s %10s %10s  %s\n' shape converge no-op teardown 'no-op changed; ok tasks per host (converge)'
for shape in single topology; do
  printf '%-10s %9.1fs %9.1fs %9.1fs  changed=%s; %s\n' "$shape" "${T[$shape-converge]}" "${T[$shape-noop]}" \
    "${T[$shape-teardown]}" "$(changed "$shape-noop")" "$(tasks "$shape-converge")"
done
printf '%-10s %10.2f %10.2f %10.2f\n' topo/single \
  "$(echo "${T[topology-converge]} / ${T[single-converge]}" | bc -l)" \
  "$(echo "${T[topology-noop]} / ${T[single-noop]}" | bc -l)" \
  "$(echo "${T[topology-teardown]} / ${T[single-teardown]}" | bc -l)"
printf 'no-op/converge: single %.2f, topology %.2f; ANSIBLE_CONFIG=%s; logs in %s\n' \
  "$(echo "${T[single-noop]} / ${T[single-converge]}" | bc -l)" \
  "$(echo "${T[topology-noop]} / ${T[topology-converge]}" | bc -l)" "$ANSIBLE_CONFIG" "$LOG"
