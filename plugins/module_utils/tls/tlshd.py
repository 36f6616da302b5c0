# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Is tlshd ready to make handshakes?

The kernel hands a TLS handshake (NVMe/TCP with ``--tls``) to user space by a generic
netlink multicast to the ``tlshd`` group of the ``handshake`` family; with no socket in that
group the request fails at once with ESRCH, and the kernel logs ``failed to start TLS: -3``.
systemd calls tlshd.service started when it has forked it (Type=simple), before tlshd has
joined the group, so a unit ordered after it (nvmf-autoconnect: ``nvme connect-all`` at boot,
which does not retry) can lose that race. The nvme_tls role therefore runs
``nvme-tls-keys wait-tlshd $MAINPID`` as tlshd's ExecStartPost: tlshd counts as started once
it holds a generic netlink socket (protocol 16) that has joined a multicast group.

/proc/net/netlink shows the first 32 groups of each socket as a hexadecimal mask (the
handshake family's groups are registered at boot, so they have low numbers); a socket of
tlshd's is found through the socket inodes of /proc/PID/fd.
"""

from __future__ import annotations

import os
import time

NETLINK_GENERIC = 16


def _socket_inodes(pid, proc):
    fd_dir = os.path.join(proc, str(pid), "fd")
    inodes = set()
    for name in os.listdir(fd_dir):
        try:
            target = os.readlink(os.path.join(fd_dir, name))
        except OSError:
            continue  # closed while we read
        if target.startswith("socket:[") and target.endswith("]"):
            inodes.add(target[len("socket:["):-1])
    return inodes


def listening(pid, proc="/proc"):
    """True when process ``pid`` holds a generic netlink socket that has joined a multicast
    group; False when it does not yet; OSError (ENOENT) when the process is gone."""
    inodes = _socket_inodes(pid, proc)
    with open(os.path.join(proc, "net", "netlink")) as handle:
        lines = handle.read().splitlines()
    for line in lines[1:]:
        # sk Eth Pid Groups Rmem Wmem Dump Locks Drops Inode
        fields = line.split()
        if len(fields) < 10 or fields[1] != str(NETLINK_GENERIC) or fields[9] not in inodes:
            continue
        try:
            if int(fields[3], 16) != 0:
                return True
        except ValueError:
            continue
    return False


def wait(pid, timeout, proc="/proc", sleep=time.sleep, clock=time.monotonic, interval=0.05):
    """Wait until ``listening(pid)``, at most ``timeout`` seconds: (ready, seconds waited,
    why not). A process that is gone is not ready (tlshd exited: its unit says why)."""
    start = clock()
    while True:
        try:
            if listening(pid, proc):
                return True, clock() - start, ""
        except OSError as exc:
            return False, clock() - start, "tlshd (pid %s) is gone: %s" % (pid, exc)
        if clock() - start >= timeout:
            return False, clock() - start, (
                "tlshd (pid %s) has joined no generic netlink group after %.0f s: a TLS connection made now "
                "fails with 'failed to start TLS: -3' (no handshake agent)" % (pid, timeout))
        sleep(interval)
