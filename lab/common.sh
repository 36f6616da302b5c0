# shellcheck shell=bash
# Shared settings of the lab scripts. Sourced, never run.

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_CACHE=${AIINFRA_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aiinfra-fabric-lab}
# One lab instance per run folder: several can run side by side with their own
# AIINFRA_LAB_RUN, AIINFRA_LAB_SSH_PORT_BASE and AIINFRA_LAB_FABRIC_PORT.
LAB_RUN=${AIINFRA_LAB_RUN:-$LAB_CACHE/run}
LAB_VMS=(te1 te2)
# Host-side ports, all on 127.0.0.1: SSH forward per VM, and the socket that carries
# the private fabric link between the two VMs.
LAB_SSH_PORT_BASE=${AIINFRA_LAB_SSH_PORT_BASE:-2221}
LAB_FABRIC_PORT=${AIINFRA_LAB_FABRIC_PORT:-10990}
LAB_MEM_MB=${AIINFRA_LAB_MEM_MB:-1536}
LAB_CPUS=${AIINFRA_LAB_CPUS:-2}
LAB_DISK_SIZE=${AIINFRA_LAB_DISK_SIZE:-6G}
LAB_BOOT_TIMEOUT=${AIINFRA_LAB_BOOT_TIMEOUT:-600}
# Boot once, restore many times: the first 'labctl up' of a run folder cold-boots each VM,
# saves its booted state (RAM and disk, a QEMU internal snapshot) in $LAB_RUN/<vm>.booted.qcow2,
# and every later fresh VM starts from a copy of it in seconds. 0 = always cold boot.
LAB_SNAPSHOT=${AIINFRA_LAB_SNAPSHOT:-1}
LAB_KEY=$LAB_CACHE/id_ed25519

lab_vm_index() {
  case $1 in
    te1) echo 0 ;;
    te2) echo 1 ;;
    *) lab_die "unknown lab VM '$1' (the lab has: ${LAB_VMS[*]})" ;;
  esac
}
lab_ssh_port() { echo $((LAB_SSH_PORT_BASE + $(lab_vm_index "$1"))); }
lab_fabric_ip() { echo "10.99.0.$(($(lab_vm_index "$1") + 1))"; }
lab_mac() { printf '52:54:00:99:00:%02x' $(($(lab_vm_index "$1") + 1)); }

lab_log() { printf '[lab %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
lab_die() { printf 'lab: error: %s\n' "$*" >&2; exit 1; }
# A failure of the lab itself (QEMU would not start or exited, no SSH by the deadline), not
# of what runs on it: exit status 75 (EX_TEMPFAIL), so callers can tell the two apart.
LAB_INFRA_RC=75
lab_infra_die() { printf 'lab: infrastructure error: %s\n' "$*" >&2; exit "$LAB_INFRA_RC"; }

lab_ssh_opts=(-o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null
  -o LogLevel=ERROR -o ConnectTimeout=5 -o ServerAliveInterval=15)

lab_ssh() {
  local vm=$1; shift
  ssh "${lab_ssh_opts[@]}" -i "$LAB_KEY" -p "$(lab_ssh_port "$vm")" root@127.0.0.1 "$@"
}
