# shellcheck shell=sh
# What the role reads before it changes anything, in one remote command (each task is a
# module start on the host). Arguments: the missing-packages script, the host_state.sh
# script, the record path, "firewall" or "-", the packages to look up (one argument,
# blank-separated), the save file or "-", the number N of host_state.sh arguments, those
# N arguments (what the
# persist step looks at: the boot restorer, its unit, the modules at boot, the record;
# tasks/persist.yml judges their lines), then the backing files (one find reads them all:
# a process costs about 60 ms on the lab's emulated guests, and a target may have
# hundreds of files). One item per line:
#   configfs | no-configfs      whether configfs has the target (nvmet loaded)
#   nvmet-dump BASE64           the whole nvmet tree, its namespaces' files (inode and size),
#                               the loaded nvmet modules and the save file's sha256 and
#                               mode as "nvmet-..." lines, gzip'd, for the no-change
#                               check that runs on the controller (module_utils/nvmet/
#                               snapshot.py). One line whatever the size: the role's later
#                               tasks scan the probe's lines often, 20,000 of them for 512
#                               namespaces took seconds of templating. Without gzip or
#                               base64 on the host the lines come as they are.
#   missing PACKAGE             a package of the arguments that is not installed
#   byid NAME TARGET            each /dev/disk/by-id link and where it points
#   firewall TOOL               firewalld, ufw, nftables or none (with "firewall" only)
#   nvmetcli UNIT MASK          nvmetcli's restore unit: unit|none, masked|unmasked
#   record BASE64               the record of what this role created, when there is one
#   file exists BYTES PATH      a backing file that exists (a regular file, or a link to one)
#   p|s|h|m|l|u|r ...           host_state.sh's lines for its N arguments
pkgscript=$1; hostscript=$2; record=$3; fw=$4; pkgs=$5; save=$6; nstate=$7; shift 7
# host_state.sh on the first N arguments only: the subshell moves each of them to the end
# of the list and drops every original one (no process but the subshell).
(
  i=0; n=$#
  while [ "$i" -lt "$n" ]; do
    [ "$i" -lt "$nstate" ] && set -- "$@" "$1"
    shift; i=$((i + 1))
  done
  [ $# -gt 0 ] && sh -c "$hostscript" sh "$@"
)
shift "$nstate"
# -H: a link given as a backing file counts as the file it points to (as test -f does).
[ $# -gt 0 ] && find -H "$@" -maxdepth 0 -type f -printf 'file exists %s %p\n' 2>/dev/null
# The tree as text, in one find and two greps whatever its size (no process per file):
# every entry, then the line count of each readable file (an empty one has none), then
# their lines. The hosts' DH-HMAC-CHAP keys stay on the host: only a sha256 of each.
# (The AIINFRA_ variables point the unit tests at a fake tree.)
nvmet=${AIINFRA_NVMET_CONFIGFS:-/sys/kernel/config/nvmet}
nvmet_lines() {
  (
    cd "$nvmet" || exit 0
    find . -mindepth 1 -printf 'nvmet-entry %y %P\n'
    echo nvmet-counts
    grep -rsc --exclude='dhchap_*key' '' .
    echo nvmet-text
    grep -rs --exclude='dhchap_*key' '' .
    echo nvmet-end
    # Each namespace's regular file (links followed, as the kernel opens it): inode and
    # size, the identity the save file records (module_utils/nvmet/backing.py). One find.
    set --
    for f in subsystems/*/namespaces/*/device_path; do
      [ -f "$f" ] && IFS= read -r p < "$f" && case $p in /*) set -- "$@" "$p" ;; esac
    done
    [ $# -gt 0 ] && find -H "$@" -maxdepth 0 -type f -printf 'nvmet-file %i %s %p\n' 2>/dev/null
    for f in hosts/*/dhchap_key hosts/*/dhchap_ctrl_key; do
      [ -f "$f" ] || continue
      if v=$(cat "$f" 2>/dev/null); then
        [ -n "$v" ] && s=$(printf '%s' "$v" | sha256sum) && echo "nvmet-secret $f ${s%% *}"
      else
        echo "nvmet-secret $f unreadable"
      fi
    done
  )
  m=${AIINFRA_SYS_MODULE:-/sys/module}
  for d in "$m"/nvmet "$m"/nvmet_* "$m"/nvme_loop; do
    [ -d "$d" ] && echo "nvmet-module ${d##*/}"
  done
  # The save file holds the keys in clear: its mode counts as much as its text.
  if [ "$save" != - ] && [ -f "$save" ]; then
    s=$(sha256sum < "$save") && m=$(find -H "$save" -maxdepth 0 -printf '%m') && echo "nvmet-save ${s%% *} $m"
  fi
}
if [ -d "$nvmet" ]; then
  echo configfs
  if command -v gzip > /dev/null && command -v base64 > /dev/null; then
    printf 'nvmet-dump '
    nvmet_lines | gzip -1 | base64 -w 0
    echo
  else
    nvmet_lines
  fi
else
  echo no-configfs
fi
# Package names have no blanks; the list is split on them (without globbing).
set -f
# shellcheck disable=SC2086
[ -n "$pkgs" ] && sh -c "$pkgscript" sh $pkgs | sed 's/^/missing /'
set +f
[ -d /dev/disk/by-id ] && find /dev/disk/by-id -maxdepth 1 -type l -printf 'byid %f %l\n'
# firewalld is a daemon: active means it filters. ufw.service is active whenever ufw is
# installed (a oneshot that loads the rules only if enabled), so ufw counts only with
# ENABLED=yes in /etc/ufw/ufw.conf, which `ufw enable` writes and the boot reads.
# nftables.service is active when it loaded /etc/nftables.conf.
if [ "$fw" = firewall ]; then
  if systemctl is-active --quiet firewalld.service; then echo firewall firewalld
  elif grep -qs '^ENABLED=yes' /etc/ufw/ufw.conf; then echo firewall ufw
  elif systemctl is-active --quiet nftables.service; then echo firewall nftables
  else echo firewall none; fi
fi
unit=none; mask=unmasked
[ -e /usr/lib/systemd/system/nvmet.service ] && unit=unit
[ "$(readlink /etc/systemd/system/nvmet.service)" = /dev/null ] && mask=masked
echo "nvmetcli $unit $mask"
[ -f "$record" ] && echo "record $(base64 -w0 "$record")"
true
