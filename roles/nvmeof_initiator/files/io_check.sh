#!/bin/sh
# aiinfra.fabric nvmeof_initiator: read/write check on a mounted NVMe-oF namespace.
# usage: io_check.sh MOUNT_POINT SIZE_MB   -> one JSON object on stdout
set -eu
dir=$1
mb=$2
src=$(mktemp /tmp/aiinfra-io-check.XXXXXX)
dst="$dir/.aiinfra-io-check.$$"
trap 'rm -f "$src" "$dst"' EXIT
dd if=/dev/urandom of="$src" bs=1M count="$mb" status=none
sum_w=$(sha256sum "$src" | cut -d' ' -f1)
t0=$(date +%s%N)
dd if="$src" of="$dst" bs=1M oflag=direct conv=fsync status=none
t1=$(date +%s%N)
sync
echo 3 > /proc/sys/vm/drop_caches
t2=$(date +%s%N)
sum_r=$(dd if="$dst" bs=1M iflag=direct status=none | sha256sum | cut -d' ' -f1)
t3=$(date +%s%N)
match=false
[ "$sum_w" = "$sum_r" ] && match=true
printf '{"file": "%s", "bytes": %d, "sha256_written": "%s", "sha256_read": "%s", "match": %s, "write_ms": %d, "read_ms": %d}\n' \
  "$dst" $((mb * 1048576)) "$sum_w" "$sum_r" "$match" $(((t1 - t0) / 1000000)) $(((t3 - t2) / 1000000))
