# shellcheck shell=bash
# Helpers sourced by the benchmark scripts that time whole ansible-playbook runs.
# The caller sets PLAY (the ansible-playbook command, an array) and LOG (a folder).

step() { printf '[bench %s] %s\n' "$(date +%T)" "$*" >&2; }
now() { date +%s.%N; }
# run NAME ARGS...: one ansible-playbook run, its seconds in $secs; a failed run stops the benchmark.
run() {
  local name=$1 t0; shift
  t0=$(now)
  if ! "${PLAY[@]}" "$@" >"$LOG/$name.log" 2>&1; then
    step "$name failed: see $LOG/$name.log"; tail -n 30 "$LOG/$name.log" >&2; exit 1
  fi
  # shellcheck disable=SC2034  # the result, read by the benchmark script that sourced this file
  secs=$(echo "$(now) - $t0" | bc)
}
