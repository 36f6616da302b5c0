#!/usr/bin/env bash
# ana-paths-watch.sh LOG NQN NSID - every 0.2 s, how many paths of subsystem NQN can carry I/O to
# namespace NSID: the controller's state is live and its path device's ANA state is optimized or
# non-optimized (/sys/class/nvme-subsystem/nvme-subsys<S>/nvme<C>/{state,nvme<S>c<C>n<H>/{nsid,ana_state}}).
# One line per sample: epoch ms, usable paths, paths, then each path as nvme<C>=<state>/<ana_state>.
# Bash builtins only (the lab runs under TCG). Stopped by its pid (LOG.pid).
set -u
log=$1 nqn=$2 nsid=$3
echo $$ > "$log.pid"
exec {tick}<> <(:)
while :; do
  usable=0 total=0 detail=""
  for s in /sys/class/nvme-subsystem/nvme-subsys*; do
    n=""
    { read -r n < "$s/subsysnqn"; } 2>/dev/null
    [ "$n" = "$nqn" ] || continue
    for c in "$s"/nvme[0-9]*; do
      case ${c##*/} in nvme*n*) continue ;; esac   # the head devices nvme<S>n<H>
      st=gone ana=none
      { read -r st < "$c/state"; } 2>/dev/null
      # The path device of namespace NSID: its nsid file (head numbers are not namespace ids).
      for p in "$c"/nvme*c*n*; do
        id=""
        { read -r id < "$p/nsid"; } 2>/dev/null
        [ "$id" = "$nsid" ] || continue
        { read -r ana < "$p/ana_state"; } 2>/dev/null
      done
      total=$((total + 1))
      if [ "$st" = live ] && { [ "$ana" = optimized ] || [ "$ana" = non-optimized ]; }; then usable=$((usable + 1)); fi
      detail="$detail ${c##*/}=$st/$ana"
    done
  done
  now=${EPOCHREALTIME/[.,]/}
  echo "${now:0:13} $usable $total$detail" >> "$log"
  read -r -t 0.2 -u "$tick" _ || :
done
