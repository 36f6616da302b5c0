#!/bin/sh
# take-path.sh down|up IFACE|ADDR:PORT - take one fabric path away from te2, or give it
# back, and print when (Unix epoch milliseconds, the clock fio's log uses).
# IFACE: the link goes down (ip link). ADDR:PORT (one-link lab): its packets are dropped.
set -eu
action=$1 what=$2
date +%s%3N
case $what in
  *:*)
    addr=${what%:*} port=${what#*:}
    flag=-I; [ "$action" = up ] && flag=-D
    iptables "$flag" OUTPUT -p tcp -d "$addr" --dport "$port" -j DROP
    iptables "$flag" INPUT -p tcp -s "$addr" --sport "$port" -j DROP ;;
  *)
    ip link set "$what" "$action" ;;
esac
