#!/bin/sh
# Runs early on every boot of a lab VM (lab-init.service). Reads the VM's name and
# fabric addresses from the kernel command line (lab.name=, lab.fabip=, lab.fabip2= for the
# optional second link, lab.nodes=), brings up the NICs, and on first boot makes the identity that must be unique per VM.
set -eu
name=; fabip=; fabip2=; nodes=2
# shellcheck disable=SC2013  # /proc/cmdline is one line of space-separated words: words are wanted
for arg in $(cat /proc/cmdline); do
  case $arg in
    lab.name=*) name=${arg#lab.name=} ;;
    lab.fabip=*) fabip=${arg#lab.fabip=} ;;
    lab.fabip2=*) fabip2=${arg#lab.fabip2=} ;;
    lab.nodes=*) nodes=${arg#lab.nodes=} ;;
  esac
done
[ -n "$name" ] || { echo "lab-init: no lab.name= on the kernel command line" >&2; exit 1; }

echo "$name" > /etc/hostname
hostname "$name"
{
  echo "127.0.0.1 localhost"
  echo "127.0.1.1 $name"
  i=1
  while [ "$i" -le "$nodes" ]; do
    echo "10.99.0.$i te$i"
    [ -z "$fabip2" ] || echo "10.99.1.$i te$i-b"
    i=$((i + 1))
  done
} > /etc/hosts

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

# eth0: QEMU user-mode NIC (SSH forward only); eth1: the private fabric link; eth2: the
# second fabric link when the lab has one.
modprobe virtio_net
i=0
while [ ! -e /sys/class/net/eth1 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
ip link set lo up
ip link set eth0 up
ip addr replace 10.0.2.15/24 dev eth0
ip link set eth1 up
[ -z "$fabip" ] || ip addr replace "$fabip" dev eth1
if [ -n "$fabip2" ]; then
  i=0
  while [ ! -e /sys/class/net/eth2 ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
  ip link set eth2 up
  ip addr replace "$fabip2" dev eth2
fi
