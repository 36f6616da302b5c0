# shellcheck shell=bash
# Shared settings of the lab scripts. Sourced, never run.
# shellcheck disable=SC2034  # the settings are read by the scripts that source this file

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB_CACHE=${AIINFRA_LAB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/aiinfra-fabric-lab}
# One lab instance per run folder: several can run side by side with their own
# AIINFRA_LAB_RUN, AIINFRA_LAB_SSH_PORT_BASE and AIINFRA_LAB_FABRIC_PORT.
# The lab's shape (every default is the original two-VM, one-link lab the scenarios use):
#   AIINFRA_LAB_NODES=2..4        VMs te1..teN on the fabric (a UDP multicast hub on 127.0.0.1)
#   AIINFRA_LAB_FABRIC_LINKS=1|2  a second, independent fabric link on eth2 (10.99.1.0/24)
#   AIINFRA_LAB_NVME_DRIVES=N     emulated NVMe drives on te1 (AIINFRA_LAB_NVME_SIZE each)
#   AIINFRA_LAB_DISTRO            the image's Debian release: trixie (Debian 13, the default)
#                                 or bookworm (Debian 12, nvme-cli 2.3: older behaviour)
LAB_NODES=${AIINFRA_LAB_NODES:-2}
LAB_FABRIC_LINKS=${AIINFRA_LAB_FABRIC_LINKS:-1}
LAB_NVME_DRIVES=${AIINFRA_LAB_NVME_DRIVES:-0}
LAB_NVME_SIZE=${AIINFRA_LAB_NVME_SIZE:-1G}
LAB_DISTRO=${AIINFRA_LAB_DISTRO:-trixie}
case $LAB_NODES in 2|3|4) ;; *) echo "lab: error: AIINFRA_LAB_NODES must be 2, 3 or 4 (got '$LAB_NODES')" >&2; exit 1 ;; esac
case $LAB_FABRIC_LINKS in 1|2) ;; *) echo "lab: error: AIINFRA_LAB_FABRIC_LINKS must be 1 or 2 (got '$LAB_FABRIC_LINKS')" >&2; exit 1 ;; esac
case $LAB_NVME_DRIVES in [0-8]) ;; *) echo "lab: error: AIINFRA_LAB_NVME_DRIVES must be 0..8 (got '$LAB_NVME_DRIVES')" >&2; exit 1 ;; esac
case $LAB_DISTRO in bookworm|trixie) ;; *) echo "lab: error: AIINFRA_LAB_DISTRO must be bookworm or trixie (got '$LAB_DISTRO')" >&2; exit 1 ;; esac
# A lab of another shape keeps its own run folder (its own saved booted state): the default
# lab's snapshot survives a scenario that needs three VMs or NVMe drives.
LAB_SHAPE=
[ "$LAB_NODES$LAB_FABRIC_LINKS$LAB_NVME_DRIVES$LAB_DISTRO" = 210trixie ] \
  || LAB_SHAPE=-$LAB_DISTRO-n$LAB_NODES-l$LAB_FABRIC_LINKS-d$LAB_NVME_DRIVES
LAB_RUN=${AIINFRA_LAB_RUN:-$LAB_CACHE/run}$LAB_SHAPE
LAB_VMS=()
for _i in $(seq 1 "$LAB_NODES"); do LAB_VMS+=("te$_i"); done
unset _i
# Host-side ports, all on 127.0.0.1: SSH forward per VM, and the socket that carries
# the private fabric link between the two VMs.
LAB_SSH_PORT_BASE=${AIINFRA_LAB_SSH_PORT_BASE:-2221}
LAB_FABRIC_PORT=${AIINFRA_LAB_FABRIC_PORT:-10990}
LAB_MEM_MB=${AIINFRA_LAB_MEM_MB:-1536}
LAB_CPUS=${AIINFRA_LAB_CPUS:-2}
# How QEMU emulates the guests' CPUs (TCG: KVM does not work on the build machines).
#   AIINFRA_LAB_TCG_THREAD=multi|single  one host thread per vCPU, or all vCPUs of a VM in one
#   AIINFRA_LAB_CPU_MODEL=max|<QEMU model> the CPU model the guests see
# The defaults are what lab/stress measured (docs/lab.md, "Guest stability"): with one host
# thread per vCPU (thread=multi) the guests died of "Oops: int3" in __netif_receive_skb_core
# (TCG let one vCPU run a static branch the other was patching) 3 times in 15 minutes of
# stress; with one thread per VM (thread=single) none died, with -cpu max as with Nehalem.
LAB_TCG_THREAD=${AIINFRA_LAB_TCG_THREAD:-single}
LAB_CPU_MODEL=${AIINFRA_LAB_CPU_MODEL:-max}
case $LAB_TCG_THREAD in multi|single) ;; *) echo "lab: error: AIINFRA_LAB_TCG_THREAD must be multi or single (got '$LAB_TCG_THREAD')" >&2; exit 1 ;; esac
case $LAB_CPUS in 1|2|3|4) ;; *) echo "lab: error: AIINFRA_LAB_CPUS must be 1..4 (got '$LAB_CPUS')" >&2; exit 1 ;; esac
LAB_DISK_SIZE=${AIINFRA_LAB_DISK_SIZE:-6G}
LAB_BOOT_TIMEOUT=${AIINFRA_LAB_BOOT_TIMEOUT:-600}
# Boot once, restore many times: the first 'labctl up' of a run folder cold-boots each VM,
# saves its booted state (RAM and disk, a QEMU internal snapshot) in $LAB_RUN/<vm>.booted.qcow2,
# and every later fresh VM starts from a copy of it in seconds. 0 = always cold boot.
LAB_SNAPSHOT=${AIINFRA_LAB_SNAPSHOT:-1}
LAB_KEY=$LAB_CACHE/id_ed25519
# One image per distribution: $LAB_CACHE/images/<distro>-<stamp>, the newest behind this link.
LAB_IMAGE_LINK=$LAB_CACHE/images/current-$LAB_DISTRO
# Downloaded packages, kept between image builds (one folder per distribution).
if [ "$LAB_DISTRO" = bookworm ]; then LAB_DEBS=$LAB_CACHE/debs; else LAB_DEBS=$LAB_CACHE/debs-$LAB_DISTRO; fi

lab_vm_index() {
  local i
  for i in "${!LAB_VMS[@]}"; do
    [ "${LAB_VMS[$i]}" = "$1" ] && { echo "$i"; return 0; }
  done
  lab_die "unknown lab VM '$1' (the lab has: ${LAB_VMS[*]}; AIINFRA_LAB_NODES=$LAB_NODES)"
}
lab_ssh_port() { echo $((LAB_SSH_PORT_BASE + $(lab_vm_index "$1"))); }
lab_fabric_ip() { echo "10.99.0.$(($(lab_vm_index "$1") + 1))"; }
lab_fabric_ip_b() { echo "10.99.1.$(($(lab_vm_index "$1") + 1))"; }
lab_mac() { printf '52:54:00:99:00:%02x' $(($(lab_vm_index "$1") + 1)); }
lab_mac_b() { printf '52:54:00:99:01:%02x' $(($(lab_vm_index "$1") + 1)); }
# The second link's host-side port (its multicast port).
lab_fabric_port_b() { echo $((LAB_FABRIC_PORT + 1000)); }

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
