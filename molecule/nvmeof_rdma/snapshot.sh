#!/bin/sh
# The host state the NVMe-oF playbooks may touch, as sorted text, for before/after
# comparisons in the nvmeof_* scenarios. Independent of which kernel modules are
# loaded: only objects under configfs nvmet, not the nvmet directory itself.
echo "## configfs nvmet objects"
for d in hosts ports subsystems; do
  [ -d /sys/kernel/config/nvmet/$d ] && find /sys/kernel/config/nvmet/$d -mindepth 1 -maxdepth 1 | sort
done
echo "## nvme fabrics controllers"
# shellcheck disable=SC2012  # kernel object names (nvme0, nvme1 ...), no odd characters
ls /sys/class/nvme-fabrics/ctl 2>/dev/null | sort
echo "## rdma links"
rdma link show 2>/dev/null | awk '{print $2, $NF}' | sort
echo "## mounts"
findmnt -rn -o TARGET,SOURCE,FSTYPE | grep -v -e '^/proc' -e '^/sys' -e '^/run' -e '^/dev' | sort
echo "## loop devices"
losetup -a | sort
echo "## /etc/nvme"
find /etc/nvme -type f -exec sha256sum {} + 2>/dev/null | sort
echo "## /etc/nvmet, /var/lib/nvmet, /var/lib/aiinfra-fabric, /usr/local/libexec/aiinfra-fabric, /var/cache/aiinfra-fabric, /etc/nvme/aiinfra-fabric"
find /etc/nvmet /var/lib/nvmet /var/lib/aiinfra-fabric /usr/local/libexec/aiinfra-fabric /var/cache/aiinfra-fabric /etc/nvme/aiinfra-fabric 2>/dev/null | sort
echo "## /etc/modules-load.d"
find /etc/modules-load.d -type f -exec sha256sum {} + | sort
echo "## systemd units in /etc"
find /etc/systemd/system | sort
echo "## fstab"
sha256sum /etc/fstab
echo "## mount points"
# shellcheck disable=SC2012  # the lab's own mount points, no odd characters
ls -d /mnt/* 2>/dev/null | sort
echo "## firewall rules (ufw, firewalld)"
command -v ufw >/dev/null 2>&1 && ufw status 2>/dev/null
command -v firewall-cmd >/dev/null 2>&1 && firewall-cmd --list-ports 2>/dev/null
true
