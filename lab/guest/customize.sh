#!/bin/sh
# mmdebstrap customize hook: run on the build host with the guest root as $1.
# Makes the image lean to boot under TCG and strips per-machine identity, which
# lab-init.sh creates afresh in each VM on its first boot.
set -eu
root=$1
pubkey=$2

# Identity that must differ between te1 and te2: made on first boot.
rm -f "$root"/etc/ssh/ssh_host_* "$root"/etc/nvme/hostnqn "$root"/etc/nvme/hostid
: > "$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
echo lab > "$root/etc/hostname"

# Root logs in with the lab's key only.
install -d -m 0700 "$root/root/.ssh"
install -m 0600 "$pubkey" "$root/root/.ssh/authorized_keys"
# A non-root account with sudo, as users log in on real clusters: scenarios that set
# AIINFRA_LAB_USER=aiinfra (lab_smoke, nvmeof_rdma) connect as it and become root.
chroot "$root" useradd --create-home --shell /bin/bash --uid 1000 aiinfra
install -d -m 0700 -o 1000 -g 1000 "$root/home/aiinfra/.ssh"
install -m 0600 -o 1000 -g 1000 "$pubkey" "$root/home/aiinfra/.ssh/authorized_keys"
printf 'aiinfra ALL=(ALL) NOPASSWD: ALL\n' > "$root/etc/sudoers.d/aiinfra-lab"
chmod 0440 "$root/etc/sudoers.d/aiinfra-lab"
cat > "$root/etc/ssh/sshd_config.d/lab.conf" <<'CONF'
PermitRootLogin prohibit-password
PasswordAuthentication no
UseDNS no
CONF

# The root file system is mounted read-write by the initramfs; nothing in fstab means
# no unit waits for a root device to be announced by udev.
: > "$root/etc/fstab"

chmod 0755 "$root/usr/local/sbin/lab-init.sh"
chroot "$root" systemctl enable lab-init.service
# The console is a local socket of the lab's own: log root in there without a password.
install -d "$root/etc/systemd/system/serial-getty@ttyS0.service.d"
cat > "$root/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'CONF'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,57600,38400,9600 %I $TERM
CONF

# Nothing periodic or slow to start in a two-VM lab.
for unit in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
    fstrim.timer systemd-timesyncd.service nvmefc-boot-connections.service \
    systemd-networkd-wait-online.service systemd-pcrphase.service \
    systemd-pcrphase-initrd.service systemd-pcrphase-sysinit.service \
    getty@tty1.service; do
  ln -sf /dev/null "$root/etc/systemd/system/$unit"
done
# Slurm and munge are installed but off: roles/slurm writes their keys and config and starts them.
for unit in munge.service slurmctld.service slurmd.service; do
  if [ -e "$root/lib/systemd/system/$unit" ] || [ -e "$root/usr/lib/systemd/system/$unit" ]; then
    chroot "$root" systemctl disable "$unit" >/dev/null 2>&1 || true
  fi
done
install -d "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=32M\n' > "$root/etc/systemd/journald.conf.d/lab.conf"

# Kernel modules stored uncompressed: under TCG every xz-compressed module cost seconds to
# unpack at load (measured on a te1 reboot: modprobe@drm.service 25.9 s, modprobe@configfs
# 19.7 s, rdma-load-modules@rdma 43.5 s; userspace boot 1 min 23 s), and the roles load
# nvmet, nvme-tcp, nvme-rdma and rdma_rxe on every fresh VM.
for kdir in "$root"/lib/modules/*/; do
  find "$kdir" -name '*.ko.xz' -print0 | xargs -0 -r -P 2 -n 64 xz -d
  chroot "$root" depmod -a "$(basename "$kdir")"
done
