# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Carry out a host_config plan, in order, and read back what was asked for."""

from __future__ import annotations

import os

from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import write_atomically
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.observation import (
    DISABLEABLE, ENABLED, sysfs_module, under)
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.state import HostConfigError, op_text


class SystemProbe(object):
    """Kernel modules from /sys/module, units from systemctl (run: module.run_command)."""

    def __init__(self, run, systemctl, sys_root="/sys"):
        self.run = run
        self.systemctl = systemctl
        self.sys_root = sys_root

    def loaded(self, name):
        return os.path.isdir(os.path.join(self.sys_root, "module", sysfs_module(name)))

    def known_unit(self, name):
        rc, out, err = self.run([self.systemctl, "list-units", "--all", "--plain", "--no-legend", name])
        return rc == 0 and bool(out.strip())

    def enablement(self, name):
        """systemctl is-enabled's word ("-" when it prints none), as files/host_state.sh reports it."""
        # Asked once per unit and run: each systemctl call is a process start (slow on emulated hosts).
        cache = self.__dict__.setdefault("_enablements", {})
        if name not in cache:
            rc, out, err = self.run([self.systemctl, "is-enabled", name])
            cache[name] = out.strip() or "-"
        return cache[name]

    def activity(self, name):
        """systemctl is-active's word ("-" when it prints none)."""
        rc, out, err = self.run([self.systemctl, "is-active", name])
        return out.strip() or "-"

    def enabled(self, name):
        return self.enablement(name) in ENABLED

    def can_disable(self, name):
        return self.enablement(name) in DISABLEABLE

    def active(self, name):
        return self.activity(name) == "active"


def _write(root, op):
    write_atomically(under(root, op["path"]), op["content"], op["mode"], uid=op["uid"], gid=op["gid"])


def apply(ops, root, run, systemctl, modprobe):
    """Run each operation; a failure names the operation and what went wrong, and lists what was done."""
    done = []
    for op in ops:
        kind = op["op"]
        try:
            if kind == "mkdir":
                full = under(root, op["path"])
                os.mkdir(full, op["mode"])
                os.chmod(full, op["mode"])  # mkdir's mode is masked by the umask
                if op["uid"] is not None or op["gid"] is not None:
                    os.chown(full, -1 if op["uid"] is None else op["uid"], -1 if op["gid"] is None else op["gid"])
            elif kind == "write":
                _write(root, op)
            elif kind == "chmod":
                os.chmod(under(root, op["path"]), op["mode"])
            elif kind == "chown":
                os.chown(under(root, op["path"]), -1 if op["uid"] is None else op["uid"],
                         -1 if op["gid"] is None else op["gid"])
            elif kind == "remove":
                os.unlink(under(root, op["path"]))
            elif kind == "rmdir":
                os.rmdir(under(root, op["path"]))
            else:
                if kind == "modprobe":
                    argv = [modprobe, op["name"]]
                elif kind == "daemon_reload":
                    argv = [systemctl, "daemon-reload"]
                elif kind in ("enable", "disable"):
                    argv = [systemctl, "--no-reload", kind, op["name"]]
                else:
                    argv = [systemctl, kind, op["name"]]
                rc, out, err = run(argv)
                if rc != 0:
                    raise HostConfigError("host_config: '%s' failed (rc %d): %s"
                                          % (" ".join(argv), rc, (err or out).strip()))
        except HostConfigError as exc:
            exc.done = done
            raise
        except OSError as exc:
            raise HostConfigError("host_config: %s failed: %s" % (op_text(op), exc), done=done)
        done.append(op_text(op))
    return done


def read_files(root, paths):
    """Text of each path (None when missing); for status files, never for secrets."""
    out = {}
    for path in paths:
        try:
            with open(under(root, path)) as fh:
                out[path] = fh.read()
        except FileNotFoundError:
            out[path] = None
    return out
