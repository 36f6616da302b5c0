# shellcheck shell=sh
# What the role reads before it changes anything, in one remote command (each task is a
# module start on the host). Arguments: the missing-packages script, the host_state.sh
# script, the record path, "firewall" or "-", the packages to look up (one argument,
# blank-separated), the number N of host_state.sh arguments, those N arguments (what the
# persist step looks at: the boot restorer, its unit, the modules at boot, the record;
# tasks/persist.yml judges their lines), then the backing files (one find reads them all:
# a process costs about 60 ms on the lab's emulated guests, and a target may have
# hundreds of files). One item per line:
#   configfs | no-configfs      whether configfs has the target (nvmet loaded)
#   missing PACKAGE             a package of the arguments that is not installed
#   byid NAME TARGET            each /dev/disk/by-id link and where it points
#   firewall TOOL               firewalld, ufw, nftables or none (with "firewall" only)
#   nvmetcli UNIT MASK          nvmetcli's restore unit: unit|none, masked|unmasked
#   record BASE64               the record of what this role created, when there is one
#   file exists BYTES PATH      a backing file that exists (a regular file, or a link to one)
#   p|s|h|m|l|u|r ...           host_state.sh's lines for its N arguments
pkgscript=$1; hostscript=$2; record=$3; fw=$4; pkgs=$5; nstate=$6; shift 6
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
if [ -d /sys/kernel/config/nvmet ]; then echo configfs; else echo no-configfs; fi
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
