#!/usr/bin/env bash
# mp-watch.sh LOG CTRL PATHDEV - log, in Unix epoch milliseconds (fio's clock), every
# change of one path: its controller's state (/sys/class/nvme/CTRL/state) and its ANA
# state on one namespace (/sys/class/nvme/CTRL/PATHDEV/ana_state). Sampled every 0.1 s without
# forking (bash builtins only), so it barely takes CPU from fio on a one-CPU VM.
# Started in the background by side_effect.yml and stopped by its pid (written to LOG.pid).
set -u
log=$1 ctrl=$2 pathdev=$3
echo $$ > "$log.pid"
exec {tick}<> <(:)
last=""
while :; do
  state=gone ana=none
  { read -r state < "/sys/class/nvme/$ctrl/state"; } 2>/dev/null
  { read -r ana < "/sys/class/nvme/$ctrl/$pathdev/ana_state"; } 2>/dev/null
  now=${EPOCHREALTIME/[.,]/}
  if [ "$state $ana" != "$last" ]; then
    echo "${now:0:13} $state $ana" >> "$log"
    last="$state $ana"
  fi
  read -r -t 0.1 -u "$tick" _ || :
done
