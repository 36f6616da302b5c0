# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read NVMe over Fabrics host state from sysfs and procfs.

The kernel is the only reliable source of what is connected: nvme-cli 2.x cannot
tell a connection made with other options and fails on a repeated connect. This
module reads /sys/class/nvme-fabrics/ctl/nvme*/ (one directory per fabrics
controller) and the block devices of their namespaces. The roots are constructor
arguments so unit tests can point them at a temporary tree.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports

# Controller attributes copied into results. The DH-HMAC-CHAP secrets and the TLS
# key are read separately (``read_secrets``) and never land in a result. The identity
# (which connection a controller is) is read first; the rest only for the controllers a
# caller asks for: a host with n controllers costs about 20 n file reads for a full pass.
IDENTITY_ATTRIBUTES = ("transport", "address", "subsysnqn", "hostnqn", "state")
DETAIL_ATTRIBUTES = (
    "hostid", "cntlid", "kato", "queue_count", "sqsize", "ctrl_loss_tmo", "reconnect_delay",
    "fast_io_fail_tmo", "model", "serial", "firmware_rev", "numa_node",
)
SECRET_ATTRIBUTES = ("dhchap_secret", "dhchap_ctrl_secret")
NAMESPACE_ID_ATTRIBUTES = ("uuid", "nguid", "wwid", "eui")
DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"

_CTRL_NAME = re.compile(r"^nvme(\d+)$")
# With native multipath (Debian's default) the controller directory holds path
# devices nvme<subsys>c<ctrl>n<head>; the block device users see is the head,
# nvme<subsys>n<head>. Without multipath it holds nvme<ctrl>n<ns> directly.
_PATH_NS = re.compile(r"^nvme(\d+)c(\d+)n(\d+)$")
_PLAIN_NS = re.compile(r"^nvme(\d+)n(\d+)$")


def parse_address(text):
    """Parse the sysfs ``address`` attribute into a dict.

    The kernel writes comma-separated key=value pairs, for example
    ``traddr=10.99.0.1,trsvcid=4420,src_addr=10.99.0.2``. Fields are compared as
    values, never by substring, so 10.0.0.1 never matches 10.0.0.10.
    """
    result = {}
    for part in (text or "").strip().split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        if not sep:
            continue
        result[key.strip()] = value.strip()
    return result


def _read(path):
    try:
        with open(path, "r") as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def _int_or_none(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class FabricsSysfs(object):
    """Fabrics controllers and their namespaces as plain dicts.

    ``sys_root`` replaces /sys and ``proc_root`` replaces /proc (tests).
    """

    def __init__(self, sys_root="/sys", proc_root="/proc"):
        self.sys_root = sys_root
        self.proc_root = proc_root
        self._holding = False
        self._held = None

    @property
    def ctl_dir(self):
        return os.path.join(self.sys_root, "class", "nvme-fabrics", "ctl")

    def controller_names(self):
        try:
            entries = os.listdir(self.ctl_dir)
        except OSError:
            return []
        names = [e for e in entries if _CTRL_NAME.match(e)]
        return sorted(names, key=lambda n: int(_CTRL_NAME.match(n).group(1)))

    @staticmethod
    def _identity(base, name):
        """Which connection a controller is: name, state, transport, subsysnqn, hostnqn and
        the address fields; None when it vanished while being read."""
        raw = dict((attr, _read(os.path.join(base, attr))) for attr in IDENTITY_ATTRIBUTES)
        if raw["transport"] is None and raw["subsysnqn"] is None:
            return None
        address = parse_address(raw["address"])
        return {
            "name": name,
            "state": raw["state"],
            "transport": raw["transport"],
            "subsysnqn": raw["subsysnqn"],
            "hostnqn": raw["hostnqn"],
            "address": address,
            "traddr": address.get("traddr"),
            "trsvcid": address.get("trsvcid"),
            "host_traddr": address.get("host_traddr"),
            "host_iface": address.get("host_iface"),
            "src_addr": address.get("src_addr"),
        }

    def read_controller(self, name, match=None):
        """One controller; None when it vanished while being read, or when ``match`` (a
        predicate on its identity, see _identity) refuses it, which reads no more of it."""
        base = os.path.join(self.ctl_dir, name)
        if not os.path.isdir(base):
            return None
        identity = self._identity(base, name)
        if identity is None or (match is not None and not match(identity)):
            return None
        return self._complete(base, identity)

    def _complete(self, base, identity):
        """The identity plus everything else a result shows about the controller."""
        raw = dict((attr, _read(os.path.join(base, attr))) for attr in DETAIL_ATTRIBUTES)
        ctrl = dict(identity)
        ctrl.update({
            "hostid": raw["hostid"],
            "cntlid": _int_or_none(raw["cntlid"]),
            "keep_alive_tmo": _int_or_none(raw["kato"]),
            "reconnect_delay": _int_or_none(raw["reconnect_delay"]),
            "fast_io_fail_tmo": raw["fast_io_fail_tmo"],
            "model": raw["model"],
            "serial": raw["serial"],
            "firmware_rev": raw["firmware_rev"],
            # tls_key (the serial of the TLS PSK in use) exists only on a controller that
            # runs over TLS (seen on 6.12: "2d57d9e8"); whether it does is all we keep.
            "tls": _read(os.path.join(base, "tls_key")) not in (None, "", "none"),
        })
        # ctrl_loss_tmo reads "off" when the controller retries forever (-1).
        loss = raw["ctrl_loss_tmo"]
        ctrl["ctrl_loss_tmo"] = -1 if loss == "off" else _int_or_none(loss)
        # queue_count includes the admin queue; sqsize is 0-based.
        queue_count = _int_or_none(raw["queue_count"])
        ctrl["nr_io_queues"] = queue_count - 1 if queue_count is not None else None
        sqsize = _int_or_none(raw["sqsize"])
        ctrl["queue_size"] = sqsize + 1 if sqsize is not None else None
        ctrl["namespaces"] = self._namespace_names(base)
        return ctrl

    def read_secrets(self, name):
        """The DH-HMAC-CHAP secrets the controller was created with ("none" → None).

        Used only to detect drift; the values never leave the module.
        """
        base = os.path.join(self.ctl_dir, name)
        result = {}
        for attr in SECRET_ATTRIBUTES:
            value = _read(os.path.join(base, attr))
            result[attr] = None if value in (None, "", "none") else value
        return result

    def controllers(self, match=None):
        """The fabrics controllers in name order. With ``match``, a predicate on a
        controller's identity (see _identity), only those it accepts, and only those are
        read in full. While held (:meth:`hold`), every call answers from one full read."""
        if self._holding:
            if self._held is None:
                self._held = self._read_all(None)
            return [dict(c) for c in self._held if match is None or match(c)]
        return self._read_all(match)

    def _read_all(self, match):
        read = (self.read_controller(name, match) for name in self.controller_names())
        return [ctrl for ctrl in read if ctrl is not None]

    def hold(self):
        """Answer controllers() from one read (made at the next call) until :meth:`release`.

        For a pass over many connections while nothing connects or disconnects: planning
        them all, or reporting those already in place. Without it each of n connections
        reads all n controllers again (n squared file reads: 13 s for 32 on the lab)."""
        self._holding = True
        self._held = None

    def release(self):
        """Read sysfs afresh at every controllers() call again (before a connect, a
        disconnect or a wait for either)."""
        self._holding = False
        self._held = None

    def _namespace_names(self, ctrl_base):
        """Block device names (the ones in /dev) of the controller's namespaces."""
        try:
            entries = os.listdir(ctrl_base)
        except OSError:
            return []
        names = set()
        for entry in entries:
            match = _PATH_NS.match(entry)
            if match:
                names.add("nvme%sn%s" % (match.group(1), match.group(3)))
                continue
            if _PLAIN_NS.match(entry):
                names.add(entry)
        return sorted(names, key=_natural_key)

    def block_device(self, name, controller=None):
        """Facts of a namespace block device; None when /sys/block/<name> is absent."""
        base = os.path.join(self.sys_root, "block", name)
        if not os.path.isdir(base):
            return None
        sectors = _int_or_none(_read(os.path.join(base, "size")))
        device = {
            "name": name,
            "path": "/dev/" + name,
            "controller": controller,
            "nsid": _int_or_none(_read(os.path.join(base, "nsid"))),
            # The size attribute counts 512-byte sectors whatever the LBA size.
            "size_bytes": sectors * 512 if sectors is not None else None,
        }
        for attr in NAMESPACE_ID_ATTRIBUTES:
            device[attr] = _read(os.path.join(base, attr))
        return device

    def devices_of(self, controllers):
        """Block devices of the given controllers, each listed once."""
        seen = {}
        for ctrl in controllers:
            for name in ctrl.get("namespaces", []):
                if name in seen:
                    continue
                device = self.block_device(name, controller=ctrl["name"])
                if device is not None:
                    seen[name] = device
        return [seen[n] for n in sorted(seen, key=_natural_key)]

    def _dev_numbers(self, name):
        """major:minor of a block device and of its partitions."""
        base = os.path.join(self.sys_root, "block", name)
        numbers = {}
        own = _read(os.path.join(base, "dev"))
        if own:
            numbers[own] = name
        try:
            entries = os.listdir(base)
        except OSError:
            entries = []
        for entry in entries:
            if entry.startswith(name + "p"):
                part = _read(os.path.join(base, entry, "dev"))
                if part:
                    numbers[part] = entry
        return numbers

    def _holders(self, name):
        base = os.path.join(self.sys_root, "block", name)
        holders = []
        dirs = [os.path.join(base, "holders")]
        try:
            dirs.extend(os.path.join(base, e, "holders") for e in os.listdir(base) if e.startswith(name + "p"))
        except OSError:
            pass
        for path in dirs:
            try:
                holders.extend(os.listdir(path))
            except OSError:
                continue
        return sorted(set(holders))

    def usage(self, names):
        """Who uses the block devices: mounts (from mountinfo), swap, holders (LVM, md, dm).

        Returns a list of human-readable strings, empty when nothing uses them.
        """
        numbers = {}
        for name in names:
            numbers.update(self._dev_numbers(name))
        users = []
        mountinfo = _read(os.path.join(self.proc_root, "self", "mountinfo")) or ""
        for line in mountinfo.splitlines():
            fields = line.split()
            if len(fields) > 4 and fields[2] in numbers:
                users.append("/dev/%s mounted on %s" % (numbers[fields[2]], _unescape(fields[4])))
        swaps = _read(os.path.join(self.proc_root, "swaps")) or ""
        dev_names = set(numbers.values())
        for line in swaps.splitlines()[1:]:
            fields = line.split()
            if fields and os.path.basename(fields[0]) in dev_names:
                users.append("%s is in use as swap" % fields[0])
        for name in names:
            for holder in self._holders(name):
                users.append("/dev/%s is held by %s" % (name, holder))
        return users

    def online_cpus(self):
        """Number of online CPUs (the kernel caps the I/O queue count by it)."""
        text = _read(os.path.join(self.sys_root, "devices", "system", "cpu", "online"))
        if not text:
            return None
        count = 0
        for part in text.split(","):
            first, sep, last = part.partition("-")
            try:
                count += (int(last) - int(first) + 1) if sep else 1
            except ValueError:
                return None
        return count

    def transport_module_loaded(self, transport):
        """Whether the host transport driver is present (built in or loaded)."""
        module = transports.BY_NAME[transport].host_module
        return os.path.isdir(os.path.join(self.sys_root, "module", module))

    def fabrics_device_present(self, dev_root="/dev"):
        return os.path.exists(os.path.join(dev_root, "nvme-fabrics"))


def _natural_key(name):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def _unescape(path):
    # mountinfo escapes space, tab, newline and backslash as octal.
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), path)
