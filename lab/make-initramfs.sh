#!/usr/bin/env bash
# make-initramfs.sh ROOT KVER OUT: a busybox initramfs with the modules (and their
# dependencies, from modules.dep) that mount an ext4 root on virtio-blk.
set -euo pipefail
root=$1 kver=$2 out=$3
moddir=$root/lib/modules/$kver
lab_dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"/{bin,dev,proc,sys,newroot,modules}
cp "$(command -v busybox)" "$tmp/bin/busybox"
ln -s busybox "$tmp/bin/sh"  # the interpreter /init names
cp "$lab_dir/initramfs-init" "$tmp/init"; chmod 0755 "$tmp/init"

# Depth-first over modules.dep, so each module comes after what it needs.
declare -A seen=()
order=()
add() {
  local rel=$1 dep
  [ -n "${seen[$rel]:-}" ] && return
  seen[$rel]=1
  # shellcheck disable=SC2013  # modules.dep lists a module's dependencies as space-separated paths
  for dep in $(awk -F': ' -v m="$rel" '$1 == m { print $2 }' "$moddir/modules.dep"); do add "$dep"; done
  order+=("$rel")
}
for name in crc32c_generic virtio_blk ext4; do
  rel=$(awk -F: -v n="$name" '{ f = $1; sub(/.*\//, "", f); sub(/\.ko.*/, "", f); gsub(/-/, "_", f); if (f == n) { print $1; exit } }' "$moddir/modules.dep")
  if [ -z "$rel" ]; then echo "$name: built in"; continue; fi
  add "$rel"
done
for rel in "${order[@]}"; do
  base=$(basename "$rel"); base=${base%%.ko*}
  case $rel in
    *.xz) xz -dc "$moddir/$rel" > "$tmp/modules/$base.ko" ;;
    *.zst) zstd -qdc "$moddir/$rel" > "$tmp/modules/$base.ko" ;;
    *) cp "$moddir/$rel" "$tmp/modules/$base.ko" ;;
  esac
  echo "$base" >> "$tmp/modules.list"
done
echo "modules: $(tr '\n' ' ' < "$tmp/modules.list")"
(cd "$tmp" && find . | cpio -o -H newc --quiet | gzip -1) > "$out"
