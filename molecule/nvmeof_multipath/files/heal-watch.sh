#!/usr/bin/env bash
# heal-watch.sh LOG NQN TRADDR - log, in Unix epoch milliseconds, every change of one path
# (subsystem NQN at target address TRADDR): the controller that holds it and its state, or
# "- missing" while the kernel holds none. It follows the path from controller to controller:
# a path the kernel removed and nvme-heal connected again comes back as a new nvme<N>. Sampled
# every 0.1 s with bash builtins only. Stopped by its pid (LOG.pid).
set -u
log=$1 nqn=$2 traddr=$3
echo $$ > "$log.pid"
exec {tick}<> <(:)
last=""
while :; do
  cur="- missing"
  for c in /sys/class/nvme-fabrics/ctl/nvme*; do
    n="" a="" s=gone
    { read -r n < "$c/subsysnqn"; } 2>/dev/null
    [ "$n" = "$nqn" ] || continue
    { read -r a < "$c/address"; } 2>/dev/null
    case ",$a," in *",traddr=$traddr,"*) ;; *) continue ;; esac
    { read -r s < "$c/state"; } 2>/dev/null
    cur="${c##*/} $s"
    [ "$s" = live ] && break
  done
  now=${EPOCHREALTIME/[.,]/}
  if [ "$cur" != "$last" ]; then
    echo "${now:0:13} $cur" >> "$log"
    last=$cur
  fi
  read -r -t 0.1 -u "$tick" _ || :
done
