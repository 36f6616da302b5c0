#!/usr/bin/env bash
# Benchmark (not a test): what the number of subsystems and namespaces costs a run of the
# aiinfra.fabric.nvmeof_target role, side by side in one run on te1 (lab/labctl up first):
# 1x1, 16x16 (256 namespaces) and 32x16 (512), each a first converge, a no-op re-run
# (its changed count) and a teardown from the record (backing files removed). The role
# applies the whole target in one nvmet_target task, so the number of tasks stays the same
# whatever the size; prints the seconds, each size / 1x1, and the tasks each run ran.
#   benchmarks/nvmeof_target_role_scale.sh [SHAPE...]     (default: 1x1 16x16 32x16)
# ANSIBLE_CONFIG defaults to lab/ansible.cfg (Mitogen); ansible.cfg for the stock strategy.
set -euo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."
export ANSIBLE_CONFIG=${ANSIBLE_CONFIG:-$PWD/lab/ansible.cfg}
export ANSIBLE_TIMEOUT=${ANSIBLE_TIMEOUT:-60}
export ANSIBLE_NOCOLOR=1
export ANSIBLE_CALLBACKS_ENABLED=${ANSIBLE_CALLBACKS_ENABLED:-ansible.posix.profile_tasks}
LOG=${BENCH_LOG:-$(mktemp -d /tmp/nvmeof-target-role-bench.XXXXXX)}
mkdir -p "$LOG"
PLAY=(.venv/bin/ansible-playbook -i inventory/lab benchmarks/nvmeof_target_role_scale.yml)
SHAPES=("$@")
[ ${#SHAPES[@]} -gt 0 ] || SHAPES=(1x1 16x16 32x16)

# shellcheck source=benchmarks/lib.sh
. benchmarks/lib.sh
recap() { grep -E '^te1 +:' "$LOG/$1.log" | sed -E 's/^te1 +: ok=([0-9]+) +changed=([0-9]+).* skipped=([0-9]+).*/ok=\1 changed=\2 skipped=\3/'; }

lab/labctl status >&2
declare -A T
for shape in "${SHAPES[@]}"; do
  subs=${shape%x*} ns=${shape#*x}
  args=(-e "bench_subs=$subs" -e "bench_ns=$ns")
  step "$shape: converge"; run "$shape-converge" "${args[@]}"; T[$shape-converge]=$secs
  step "$shape: no-op re-run"; run "$shape-noop" "${args[@]}"; T[$shape-noop]=$secs
  step "$shape: teardown"; run "$shape-teardown" "${args[@]}" -e bench_state=absent; T[$shape-teardown]=$secs
done

base=${SHAPES[0]}
printf '\n%-7s %6s %9s %9s %9s   %-28s %-28s %s\n' shape ns converge no-op teardown "converge tasks (te1)" "no-op tasks" "teardown tasks"
for shape in "${SHAPES[@]}"; do
  printf '%-7s %6d %8.1fs %8.1fs %8.1fs   %-28s %-28s %s\n' "$shape" $(( ${shape%x*} * ${shape#*x} )) \
    "${T[$shape-converge]}" "${T[$shape-noop]}" "${T[$shape-teardown]}" \
    "$(recap "$shape-converge")" "$(recap "$shape-noop")" "$(recap "$shape-teardown")"
done
for shape in "${SHAPES[@]:1}"; do
  printf '%-7s %6s %9.2f %9.2f %9.2f   (/ %s)\n' "$shape" "" \
    "$(echo "${T[$shape-converge]} / ${T[$base-converge]}" | bc -l)" \
    "$(echo "${T[$shape-noop]} / ${T[$base-noop]}" | bc -l)" \
    "$(echo "${T[$shape-teardown]} / ${T[$base-teardown]}" | bc -l)" "$base"
done
printf 'ANSIBLE_CONFIG=%s; logs in %s\n' "$ANSIBLE_CONFIG" "$LOG"
