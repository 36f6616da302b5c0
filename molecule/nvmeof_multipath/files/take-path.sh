#!/usr/bin/env bash
# take-path.sh down|up IFACE  - take te2's link IFACE down or up; print when (epoch ms).
# take-path.sh now             - print the time (epoch ms).
# take-path.sh wait LOG SINCE_MS STATE_RE ANA_RE TIMEOUT_S
#   - wait until mp-watch.sh's LOG has a line at or after SINCE_MS whose controller state
#     matches STATE_RE and whose ANA state matches ANA_RE (extended regular expressions,
#     whole word); print that line's time, the moment the kernel showed it. Fails after
#     TIMEOUT_S.
set -eu
now() { local t=${EPOCHREALTIME/[.,]/}; echo "${t:0:13}"; }
case $1 in
  down|up)
    now
    ip link set "$2" "$1" ;;
  now)
    now ;;
  wait)
    log=$2 since=$3 state_re=$4 ana_re=$5 deadline=$((SECONDS + $6))
    while [ "$SECONDS" -lt "$deadline" ]; do
      if [ -f "$log" ]; then
        while read -r t state ana; do
          if [ "$t" -ge "$since" ] && [[ $state =~ ^($state_re)$ ]] && [[ $ana =~ ^($ana_re)$ ]]; then
            echo "$t"
            exit 0
          fi
        done < "$log"
      fi
      sleep 0.2
    done
    echo "no '$state_re $ana_re' in $log since $since within $6 s:" >&2
    cat "$log" >&2
    exit 1 ;;
  *)
    echo "usage: $0 down|up IFACE | now | wait LOG SINCE_MS STATE_RE ANA_RE TIMEOUT_S" >&2
    exit 2 ;;
esac
