#!/bin/sh
# Runs early on every boot of a lab VM (lab-init.service). Reads the VM's name and
# fabric address from the kernel command line (lab.name=, lab.fabip=), brings up the
# two NICs, and on first boot makes the identity that must be unique per VM.
set -eu
name=; fabip=
for arg in $(cat /proc/cmdline); do
  case $arg in
    lab.name=*) name=${arg#lab.name=} ;;
    lab.fabip=*) fabip=${arg#lab.fabip=} ;;
  esac
done
[ -n "$name" ] || { echo "lab-init: no lab.name= on the kernel command line" >&2; exit 1; }

echo "$name" > /etc/hostname
hostname "$name"
cat > /etc/hosts <<HOSTS
127.0.0.1 localhost
127.0.1.1 $name
10.99.0.1 te1
10.99.0.2 te2
HOSTS

if [ ! -e /var/lib/lab-init/identity ]; then
  systemd-machine-id-setup >/dev/null
  ssh-keygen -A >/dev/null
  mkdir -p /etc/nvme
  # nvme-cli derives the NQN from the system UUID (QEMU -uuid, unique per VM disk).
  nvme gen-hostnqn > /etc/nvme/hostnqn
  sed 's/.*:uuid://' /etc/nvme/hostnqn > /etc/nvme/hostid
  mkdir -p /var/lib/lab-init
  touch /var/lib/lab-init/identity
fi

# eth0: QEMU user-mode NIC (SSH forward only); eth1: the private fabric link.
modprobe virtio_net
i=0
while [ ! -e /sys/class/net/eth1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ip link set lo up
ip link set eth0 up
ip addr replace 10.0.2.15/24 dev eth0
ip link set eth1 up
[ -z "$fabip" ] || ip addr replace "$fabip" dev eth1
