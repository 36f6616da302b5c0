#!/usr/bin/env bash
# Build (or reuse) the lab's base image: a Debian root filesystem (AIINFRA_LAB_DISTRO,
# trixie by default, or bookworm) with a real 6.12 kernel, a busybox initramfs that mounts
# it, and the lab's SSH key baked in.
# Everything lands in $LAB_CACHE/images/<distro>-<stamp>/; the stamp is a hash of the inputs,
# so a changed package list or guest file gives a new image and an unchanged one is reused.
set -euo pipefail
# shellcheck source=lab/common.sh
. "$(dirname "$0")/common.sh"

need() { command -v "$1" >/dev/null 2>&1 || lab_die "'$1' is missing: install the Debian package $2 (scripts/setup does)"; }
need ssh-keygen openssh-client
mkdir -p "$LAB_DEBS" "$LAB_CACHE/images"
# One build at a time per cache, even when several labctl runs ask at once.
exec 9>"$LAB_CACHE/build.lock"
flock 9
[ -f "$LAB_KEY" ] || ssh-keygen -q -t ed25519 -N '' -C aiinfra-fabric-lab -f "$LAB_KEY"

case $LAB_DISTRO in
  bookworm)
    # The host's own release: mmdebstrap reads the host's apt sources (bookworm-security
    # carries the 6.12 kernel), and the host's apt knows the kernel's package name.
    kernel_suffix=deb12 mirrors=() keyring_opt=() ;;
  trixie)
    # Not the host's release: the mirrors are named, and the kernel's package name is
    # asked of an apt that reads only these sources, in a throwaway directory.
    kernel_suffix=deb13
    mirrors=("deb http://deb.debian.org/debian trixie main"
      "deb http://deb.debian.org/debian trixie-updates main"
      "deb http://deb.debian.org/debian-security trixie-security main")
    keyring_opt=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg) ;;
esac
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# apt-cache pkgnames against only the given sources lines, with lists in a temporary
# directory: the host's apt state is neither read nor changed.
foreign_pkgnames() {
  local prefix=$1; shift
  local dir line
  dir=$(mktemp -d "$LAB_CACHE/apt.XXXXXX")
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  for line in "$@"; do echo "${line/deb /deb [signed-by=$keyring] }"; done > "$dir/sources.list"
  local opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o Acquire::Retries=3
    -o APT::Architectures::=amd64)
  if apt-get -qq "${opts[@]}" update >"$dir/update.log" 2>&1; then
    apt-cache "${opts[@]}" pkgnames "$prefix" 2>/dev/null || true
  else
    echo "lab: apt-get update for $LAB_DISTRO failed: $(tail -n 3 "$dir/update.log")" >&2
  fi
  rm -rf "$dir"
}

kernel_pkg=${AIINFRA_LAB_KERNEL_PACKAGE:-}
if [ -z "$kernel_pkg" ]; then
  if [ ${#mirrors[@]} = 0 ]; then
    names=$(apt-cache pkgnames linux-image-6.12. 2>/dev/null || true)
  else
    names=$(foreign_pkgnames linux-image-6.12. "${mirrors[@]}")
  fi
  kernel_pkg=$(echo "$names" | grep -E "^linux-image-6\.12\.[0-9]+\+${kernel_suffix}-amd64-unsigned\$" | sort -V | tail -n 1 || true)
  [ -n "$kernel_pkg" ] || lab_die "no linux-image-6.12.*+${kernel_suffix}-amd64-unsigned package found for $LAB_DISTRO (bookworm: enable bookworm-security in the host's apt sources and run 'apt-get update'; trixie: deb.debian.org must be reachable); or set AIINFRA_LAB_KERNEL_PACKAGE"
fi

# packages.txt for every distribution, packages-<distro>.txt for one.
package_files=("$LAB_DIR/packages.txt")
[ -f "$LAB_DIR/packages-$LAB_DISTRO.txt" ] && package_files+=("$LAB_DIR/packages-$LAB_DISTRO.txt")
packages=$(cat "${package_files[@]}" | grep -vE '^\s*(#|$)' | tr '\n' ',')"$kernel_pkg"
stamp=$( { echo "$LAB_DISTRO" "${mirrors[@]}"; echo "$packages"; cat "$0" "$LAB_DIR/initramfs-init"; find "$LAB_DIR/guest" -type f -print0 | sort -z | xargs -0 cat; cat "$LAB_KEY.pub"; } | sha256sum | cut -c1-16)
stamp=$LAB_DISTRO-$stamp
out=$LAB_CACHE/images/$stamp
if [ -f "$out/done" ]; then
  [ "$(readlink "$LAB_IMAGE_LINK" 2>/dev/null)" = "$stamp" ] || ln -sfn "$stamp" "$LAB_IMAGE_LINK"
  lab_log "image $stamp is cached ($kernel_pkg)"
  exit 0
fi
need mmdebstrap mmdebstrap
need mkfs.ext4 e2fsprogs
need busybox busybox-static
need cpio cpio
need xz xz-utils
[ "$(id -u)" = 0 ] || lab_die "building the lab image needs root (mmdebstrap and device nodes)"

work=$(mktemp -d "$LAB_CACHE/build.XXXXXX")
log=$LAB_CACHE/build-image.log
# shellcheck disable=SC2154  # rc is set by the trap's own first command, when it runs
trap 'rc=$?; rm -rf "$work"; [ $rc = 0 ] || echo "lab: image build failed; log: $log" >&2' EXIT
lab_log "building image $stamp with $kernel_pkg (log: $log)"
start=$SECONDS

lab_log "mmdebstrap: installing $(echo "$packages" | tr ',' '\n' | wc -l) packages into a $LAB_DISTRO root"
# shellcheck disable=SC2016  # single quotes on purpose: mmdebstrap expands $1 (the new root) in its hooks
mmdebstrap --variant=apt --mode=root --components=main \
  --include="$packages" \
  --aptopt='Acquire::Retries "3"' ${keyring_opt[@]+"${keyring_opt[@]}"} \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --skip=essential/unlink \
  --setup-hook='mkdir -p "$1"/var/cache/apt/archives/' \
  --setup-hook="sync-in $LAB_DEBS /var/cache/apt/archives/" \
  --customize-hook="sync-out /var/cache/apt/archives $LAB_DEBS" \
  --customize-hook="copy-in $LAB_DIR/guest/lab-init.sh /usr/local/sbin/" \
  --customize-hook="copy-in $LAB_DIR/guest/lab-init.service /etc/systemd/system/" \
  --customize-hook="$LAB_DIR/guest/customize.sh \"\$1\" $LAB_KEY.pub" \
  "$LAB_DISTRO" "$work/root" ${mirrors[@]+"${mirrors[@]}"} >"$log" 2>&1 \
  || lab_die "mmdebstrap failed; last lines of $log:$(echo; tail -n 20 "$log")"
lab_log "mmdebstrap done in $((SECONDS - start)) s"

kver=$(basename "$(ls -d "$work"/root/lib/modules/6.12.*)")
mkdir -p "$work/out"
cp "$work/root/boot/vmlinuz-$kver" "$work/out/vmlinuz"
echo "$kver" > "$work/out/kernel-version"

lab_log "initramfs: busybox + the modules that mount an ext4 root on virtio-blk"
"$LAB_DIR/make-initramfs.sh" "$work/root" "$kver" "$work/out/initrd.img" >>"$log" 2>&1 \
  || lab_die "initramfs build failed; see $log"

lab_log "root image: mkfs.ext4 -d ($LAB_DISK_SIZE, sparse)"
rm -f "$work/root/boot/vmlinuz-"* "$work/root/boot/initrd.img-"*
mkfs.ext4 -q -F -L labroot -d "$work/root" "$work/out/rootfs.img" "$LAB_DISK_SIZE" >>"$log" 2>&1 \
  || lab_die "mkfs.ext4 failed; see $log"

echo "$kernel_pkg" > "$work/out/kernel-package"
echo "$LAB_DISTRO" > "$work/out/distro"
touch "$work/out/done"
rm -rf "$out"; mv "$work/out" "$out"
ln -sfn "$stamp" "$LAB_IMAGE_LINK"
# Keep only the newest few images of this distribution: each is a few hundred MB of sparse file.
find "$LAB_CACHE/images" -mindepth 1 -maxdepth 1 -type d -name "$LAB_DISTRO-*" ! -name "$stamp" -printf '%T@ %p\n' \
  | sort -rn | tail -n +3 | cut -d' ' -f2- | xargs -r rm -rf
lab_log "image $stamp ready in $((SECONDS - start)) s"
