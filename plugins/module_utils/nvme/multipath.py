# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Native NVMe multipath on a host: subsystems, their head devices and paths.

With nvme_core's native multipath the kernel groups every controller of one
subsystem NQN under /sys/class/nvme-subsystem/nvme-subsys<S>/: the subsystem's
``iopolicy`` (numa, round-robin, queue-depth from Linux 6.11), one symlink per
controller (a path), and one head block device nvme<S>n<H> per namespace, the
device users format and mount. Each controller holds one hidden path device
nvme<S>c<C>n<H> per namespace, whose ``ana_state``/``ana_grpid`` say how the
target's ANA group sees that path.

Reading is done by :class:`MultipathSysfs` (roots are constructor arguments for
tests); deciding (validation, iopolicy plan, path counting) by pure functions.
"""

from __future__ import annotations

import os
import re

# The sysfs attribute readers of the nvme package (stripped text or None; int or None).
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import _int_or_none, _read, parse_address
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError

IOPOLICIES = ("numa", "round-robin", "queue-depth")
# "queue-depth" was added to nvme-multipath in Linux 6.11.
IOPOLICY_MIN_KERNEL = {"queue-depth": (6, 11)}

_SUBSYS = re.compile(r"^nvme-subsys(\d+)$")
_CTRL = re.compile(r"^nvme(\d+)$")
_HEAD = re.compile(r"^nvme(\d+)n(\d+)$")
_PATH = re.compile(r"^nvme(\d+)c(\d+)n(\d+)$")
_RELEASE = re.compile(r"^(\d+)\.(\d+)")
# The by-id names udev derives from the namespace's WWID (60-persistent-storage.rules):
# they follow the namespace, not the controller or the order of discovery.
_WWID_LINK = re.compile(r"^nvme-(uuid|eui|nvme)\.")


class MultipathError(NvmeError, ValueError):
    pass


def _natural(name):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def kernel_version(release):
    """(major, minor) from a uname release such as 6.12.48+deb13-amd64; None when unparseable."""
    match = _RELEASE.match(release or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def validate_iopolicy(iopolicy, release):
    """Refuse, before anything is written, a policy the running kernel does not know."""
    if iopolicy is None:
        return None
    if iopolicy not in IOPOLICIES:
        raise MultipathError("iopolicy=%r is not one of %s" % (iopolicy, ", ".join(IOPOLICIES)))
    needed = IOPOLICY_MIN_KERNEL.get(iopolicy)
    version = kernel_version(release)
    if needed and version is not None and version < needed:
        raise MultipathError("iopolicy=%s needs Linux %d.%d or later; this host runs %s. Use numa or round-robin"
                             % ((iopolicy,) + needed + (release,)))
    return iopolicy


class MultipathSysfs(object):
    """Native multipath state as plain dicts. ``sys_root`` replaces /sys, ``dev_root`` /dev."""

    def __init__(self, sys_root="/sys", dev_root="/dev"):
        self.sys_root = sys_root
        self.dev_root = dev_root

    def _subsys_dir(self, name=""):
        return os.path.join(self.sys_root, "class", "nvme-subsystem", name)

    def module_parameter(self, name):
        """A parameter of the loaded nvme_core module; None when the module (or the parameter) is absent."""
        return _read(os.path.join(self.sys_root, "module", "nvme_core", "parameters", name))

    def native_multipath(self):
        """True/False from nvme_core's ``multipath`` parameter, None when nvme_core is not
        loaded or was built without CONFIG_NVME_MULTIPATH (no such parameter)."""
        value = self.module_parameter("multipath")
        if value is None:
            return None
        return value.upper() in ("Y", "1")

    def subsystem_names(self):
        try:
            entries = os.listdir(self._subsys_dir())
        except OSError:
            return []
        return sorted((e for e in entries if _SUBSYS.match(e)), key=_natural)

    def by_id_links(self, head):
        """Names in /dev/disk/by-id that point at /dev/<head> (not at a partition)."""
        by_id = os.path.join(self.dev_root, "disk", "by-id")
        try:
            entries = sorted(os.listdir(by_id))
        except OSError:
            return []
        links = []
        for entry in entries:
            target = os.path.join(by_id, entry)
            try:
                resolved = os.readlink(target)
            except OSError:
                continue
            if os.path.basename(resolved) == head:
                links.append(target)
        return links

    def read_path(self, ctrl, subsys_instance):
        """One controller of a subsystem, as a path: transport, address, state and,
        per head, the ANA state its path device reports."""
        base = os.path.join(self.sys_root, "class", "nvme", ctrl)
        address = parse_address(_read(os.path.join(base, "address")))
        path = {
            "controller": ctrl,
            "transport": _read(os.path.join(base, "transport")),
            "traddr": address.get("traddr"),
            "trsvcid": address.get("trsvcid"),
            "host_traddr": address.get("host_traddr"),
            "host_iface": address.get("host_iface"),
            "src_addr": address.get("src_addr"),
            "state": _read(os.path.join(base, "state")),
            "namespaces": {},
        }
        try:
            entries = os.listdir(base)
        except OSError:
            entries = []
        for entry in sorted(entries, key=_natural):
            match = _PATH.match(entry)
            if not match or match.group(1) != subsys_instance:
                continue
            head = "nvme%sn%s" % (match.group(1), match.group(3))
            pbase = os.path.join(base, entry)
            path["namespaces"][head] = {
                "path_device": entry,
                "ana_state": _read(os.path.join(pbase, "ana_state")),
                "ana_grpid": _int_or_none(_read(os.path.join(pbase, "ana_grpid"))),
                "ios": completed_ios(_read(os.path.join(pbase, "stat"))),
            }
        return path

    def read_subsystem(self, name):
        base = self._subsys_dir(name)
        nqn = _read(os.path.join(base, "subsysnqn"))
        if nqn is None:
            return None
        instance = _SUBSYS.match(name).group(1)
        try:
            entries = sorted(os.listdir(base), key=_natural)
        except OSError:
            return None
        ctrls = [e for e in entries if _CTRL.match(e)]
        heads = [e for e in entries if _HEAD.match(e) and _HEAD.match(e).group(1) == instance]
        paths = [self.read_path(c, instance) for c in ctrls]
        subsystem = {
            "name": name,
            "nqn": nqn,
            "iopolicy": _read(os.path.join(base, "iopolicy")),
            "model": _read(os.path.join(base, "model")),
            "serial": _read(os.path.join(base, "serial")),
            "paths": paths,
            "heads": [self.read_head(h, paths) for h in heads],
        }
        return subsystem

    def read_head(self, head, paths):
        block = os.path.join(self.sys_root, "block", head)
        sectors = _int_or_none(_read(os.path.join(block, "size")))
        links = self.by_id_links(head)
        stable = [link for link in links if _WWID_LINK.match(os.path.basename(link))]
        return {
            "name": head,
            "path": "/dev/" + head,
            "by_id": (stable or links or [None])[0],
            "by_id_links": links,
            "nsid": _int_or_none(_read(os.path.join(block, "nsid"))),
            "wwid": _read(os.path.join(block, "wwid")),
            "uuid": _read(os.path.join(block, "uuid")),
            "size_bytes": sectors * 512 if sectors is not None else None,
            "paths": [head_path(p, head) for p in paths if head in p["namespaces"]],
        }

    def subsystems(self, nqns=None):
        """Subsystems (optionally only those with the given NQNs), sorted by NQN."""
        wanted = set(nqns) if nqns else None
        result = []
        for name in self.subsystem_names():
            subsystem = self.read_subsystem(name)
            if subsystem is None or (wanted is not None and subsystem["nqn"] not in wanted):
                continue
            result.append(subsystem)
        return sorted(result, key=lambda s: (s["nqn"], _natural(s["name"])))

    def write_iopolicy(self, name, iopolicy):
        """Write a subsystem's iopolicy and read it back (the kernel answers EINVAL for a
        policy it does not know, and older kernels may ignore some silently)."""
        target = os.path.join(self._subsys_dir(name), "iopolicy")
        try:
            with open(target, "w") as handle:
                handle.write(iopolicy)
        except (IOError, OSError) as exc:
            raise MultipathError("writing iopolicy=%s to %s failed: %s (the kernel does not know this policy?)"
                                 % (iopolicy, target, exc))
        now = _read(target)
        if now != iopolicy:
            raise MultipathError("wrote iopolicy=%s to %s but it reads %r: this kernel does not support it"
                                 % (iopolicy, target, now))


def completed_ios(stat):
    """Reads + writes completed on a path device, from its block ``stat`` file (fields 1
    and 5, Documentation/block/stat.rst): which path carried I/O. None when absent."""
    fields = (stat or "").split()
    if len(fields) < 5:
        return None
    try:
        return int(fields[0]) + int(fields[4])
    except ValueError:
        return None


def head_path(path, head):
    """One path of one head: where it goes, whether the controller is live, the ANA state."""
    ns = path["namespaces"][head]
    return {
        "controller": path["controller"],
        "path_device": ns["path_device"],
        "transport": path["transport"],
        "traddr": path["traddr"],
        "trsvcid": path["trsvcid"],
        "state": path["state"],
        "ana_state": ns["ana_state"],
        "ana_grpid": ns["ana_grpid"],
        "ios": ns["ios"],
    }


def usable_paths(head):
    """Paths I/O can use now: controller live and ANA optimized or non-optimized (or no ANA)."""
    return [p for p in head["paths"]
            if p["state"] == "live" and p["ana_state"] in (None, "optimized", "non-optimized")]


def plan_iopolicy(subsystems, iopolicy):
    """[(subsystem name, nqn, current, desired)] for the subsystems whose policy differs."""
    if iopolicy is None:
        return []
    return [(s["name"], s["nqn"], s["iopolicy"], iopolicy) for s in subsystems if s["iopolicy"] != iopolicy]


def missing_subsystems(subsystems, nqns):
    present = set(s["nqn"] for s in subsystems)
    return [n for n in nqns if n not in present]


def path_shortfall(subsystems, min_live_paths):
    """Human-readable lines for each head with fewer than ``min_live_paths`` usable paths."""
    problems = []
    if not min_live_paths:
        return problems
    for subsystem in subsystems:
        if not subsystem["heads"]:
            problems.append("%s (%s) has no namespace head device" % (subsystem["nqn"], subsystem["name"]))
        for head in subsystem["heads"]:
            usable = usable_paths(head)
            if len(usable) < min_live_paths:
                seen = ["%s %s %s:%s state=%s ana=%s" % (
                    p["controller"], p["transport"], p["traddr"], p["trsvcid"], p["state"], p["ana_state"])
                    for p in head["paths"]]
                problems.append("%s of %s has %d usable path(s), wanted %d: %s" % (
                    head["path"], subsystem["nqn"], len(usable), min_live_paths, ", ".join(seen) or "no paths"))
    return problems
