# shellcheck shell=sh
# The host identity the target allows: /etc/nvme/hostnqn and /etc/nvme/hostid, made once
# when missing, in one remote command. Arguments: run or check, the missing-packages
# script, then the packages the role installs. Prints "missing PACKAGE" for each of them
# that is not installed, then "exists|created|would-create NQN"; with check nothing is
# written.
#
# The host ID is the UUID of a uuid-form NQN, else a UUID derived from the NQN (uuid5 in
# the namespace Ansible's to_uuid filter uses), so a re-run writes the same value.
mode=$1; pkgscript=$2; shift 2; made=exists
[ $# -gt 0 ] && sh -c "$pkgscript" sh "$@" | sed 's/^/missing /'
if [ -e /etc/nvme/hostnqn ]; then
  nqn=$(tr -d '[:space:]' </etc/nvme/hostnqn)
else
  # nvme-cli may not be installed yet: its gen-hostnqn makes the same uuid form.
  if command -v nvme >/dev/null 2>&1; then nqn=$(nvme gen-hostnqn) || exit 1
  else nqn=nqn.2014-08.org.nvmexpress:uuid:$(cat /proc/sys/kernel/random/uuid) || exit 1; fi
  made=created
  if [ "$mode" = check ]; then made=would-create
  else
    mkdir -p /etc/nvme && chmod 0755 /etc/nvme || exit 1
    (umask 022 && printf '%s\n' "$nqn" >/etc/nvme/hostnqn.new && mv /etc/nvme/hostnqn.new /etc/nvme/hostnqn) || exit 1
  fi
fi
if [ ! -e /etc/nvme/hostid ]; then
  case $nqn in
    *:uuid:*) id=${nqn##*:uuid:} ;;
    *) id=$(python3 -c 'import sys, uuid; print(uuid.uuid5(uuid.UUID("361E6D51-FAEC-444A-9079-341386DA8E2E"), sys.argv[1]))' "$nqn") || exit 1 ;;
  esac
  if [ "$mode" = check ]; then made=would-create
  else
    mkdir -p /etc/nvme && (umask 022 && printf '%s\n' "$id" >/etc/nvme/hostid.new && mv /etc/nvme/hostid.new /etc/nvme/hostid) || exit 1
    made=created
  fi
fi
echo "$made $nqn"
