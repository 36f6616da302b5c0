# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvmet configfs tree: read into plain dicts, changed one operation at a time,
and the exported (module return) views of what was read.
"""

from __future__ import annotations

import copy
import errno
import ipaddress
import json
import os
import subprocess

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import canonical
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import HOST_FIELDS, PORT_ADDR_FIELDS, NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.discovery import REFERRAL_FIELDS


def _read(path):
    try:
        with open(path, "r") as f:
            return f.read().rstrip("\n")
    except OSError:
        return None


def _read_attr(path):
    """The text of one configfs/sysfs attribute, without its trailing newline.

    os.open/os.read, not open(): a target of a few hundred namespaces has a few thousand
    attribute files, and under emulation a text-mode file object per file (fstat, buffer,
    decoder, a second read for end of file) costs more than the kernel's read itself
    (benchmarks/nvmet_target_scale.sh --profile). An attribute is at most a page, which
    the kernel returns in the first read; a full buffer means read on."""
    fd = os.open(path, os.O_RDONLY)
    try:
        data = os.read(fd, _READ_SIZE)
        if len(data) == _READ_SIZE:
            chunks = [data]
            while chunks[-1]:
                chunks.append(os.read(fd, _READ_SIZE))
            data = b"".join(chunks)
    finally:
        os.close(fd)
    return data.decode("utf-8").rstrip("\n")


_READ_SIZE = 8192


def _absent_or_raise(path, exc):
    """None for a file or directory that is not there; any other read error fails the
    read (taking it for "absent" would plan a mkdir or a removal)."""
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return None
    raise NvmetError("nvmet: cannot read %s: %s (%s); not treating it as absent"
                     % (path, exc.strerror, errno.errorcode.get(exc.errno, exc.errno))) from None


def _attr(path):
    try:
        return _read_attr(path)
    except OSError as exc:
        return _absent_or_raise(path, exc)


# A namespace's files, in the order read_namespace unpacks them.
_NAMESPACE_READ = ("device_path", "device_nguid", "enable", "device_uuid", "ana_grpid", "buffered_io")


def _listdir(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _int_or(value, default=None):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


class ConfigfsTree(object):
    """The nvmet configfs tree, read into plain data and changed one operation at a time.

    ``root`` is the configfs mount (``/sys/kernel/config``); ``sysfs_root``,
    ``proc_root`` and ``debugfs_root`` are where live connections are looked
    for. All are arguments so unit tests can point them at a temporary tree.
    """

    def __init__(self, root="/sys/kernel/config", sysfs_root="/sys", proc_root="/proc",
                 debugfs_root="/sys/kernel/debug", run_command=None):
        self.root = root
        self.nvmet = os.path.join(root, "nvmet")
        self.sysfs_root = sysfs_root
        self.proc_root = proc_root
        self.debugfs_root = debugfs_root
        self.run_command = run_command if run_command is not None else _run_command

    def exists(self):
        """Whether configfs has the nvmet directory (the kernel module is loaded)."""
        return os.path.isdir(self.nvmet)

    def path(self, rel):
        # Concatenation, not os.path.join: relative paths only, thousands of calls per read.
        return self.nvmet + "/" + rel

    # ---- reading
    # A file or directory that is not there is absent (older kernels lack some
    # attributes; an object can go away meanwhile); any other read error fails the
    # read, because taking it for "absent" would plan a mkdir or a removal.

    def read(self):
        """Return {"hosts": {nqn: ...}, "ports": {id: ...}, "subsystems": {nqn: ...}} with secrets in clear.

        Use :func:`masked_host` or :func:`to_savefile` before showing hosts.
        """
        return {
            "hosts": dict((n, self.read_host(n)) for n in self.names("hosts")),
            "ports": dict((int(p), self.read_port(p)) for p in self.names("ports") if p.isdigit()),
            "subsystems": dict((n, self.read_subsystem(n)) for n in self.names("subsystems")),
            "discovery_nqn": self._get("discovery_nqn"),
        }

    def read_one(self, section, key):
        """Re-read one object (after applying a plan to it), or None when it is gone."""
        rel = "%s/%s" % (section, key)
        if self._get(rel, is_dir=True) is None:
            return None
        return {"hosts": self.read_host, "ports": self.read_port, "subsystems": self.read_subsystem}[section](key)

    def reread_changed(self, state, ops):
        """The state after applying ``ops``: ``state`` with only the objects the ops
        touched read again from configfs (each subsystem, port or host once, or dropped
        when it is gone). A whole-tree read costs every attribute of every object; after a
        plan the rest of the tree is what ``state`` already holds. No ops: ``state``."""
        touched = []
        for op in ops:
            parts = op.path.split("/", 2)
            if parts[0] == "discovery_nqn":
                item = ("discovery_nqn", None)
            else:
                item = (parts[0], parts[1])
            if item not in touched:
                touched.append(item)
        if not touched:
            return state
        after = dict((k, dict(v) if isinstance(v, dict) else v) for k, v in state.items())
        for section, key in touched:
            if section == "discovery_nqn":
                after["discovery_nqn"] = self._get("discovery_nqn")
                continue
            obj = self.read_one(section, key)
            slot = int(key) if section == "ports" else key
            if obj is None:
                after[section].pop(slot, None)
            else:
                after[section][slot] = obj
        return after

    def _get(self, rel, is_dir=False):
        """Text of an attribute (or a directory listing), None when it does not exist."""
        path = self.nvmet + "/" + rel
        if is_dir:
            try:
                return sorted(os.listdir(path))
            except OSError as exc:
                return _absent_or_raise(path, exc)
        return _attr(path)

    def _attrs(self, rel, names):
        """The texts of several attributes of one object (None for each one absent)."""
        prefix = self.nvmet + "/" + rel + "/"
        return [_attr(prefix + name) for name in names]

    def names(self, rel):
        """The entries of a configfs directory, sorted ([] when it does not exist)."""
        return self._get(rel, is_dir=True) or []

    def read_host(self, nqn):
        base = "hosts/" + nqn
        host = {"hostnqn": nqn}
        for field in HOST_FIELDS:
            value = self._get(base + "/" + field)
            host[field] = value if value else None
        return host

    def read_subsystem(self, nqn):
        base = "subsystems/" + nqn
        attrs = {}
        for name in self.names(base):
            if name.startswith("attr_"):
                value = self._get(base + "/" + name)
                if value is not None:
                    attrs[name[5:]] = canonical.subsystem_attr(name[5:], value, strict=False)
        allow_any = attrs.pop("allow_any_host", "0") == "1"
        namespaces = {}
        for name in self.names(base + "/namespaces"):
            if name.isdigit():
                namespaces[int(name)] = self.read_namespace("%s/namespaces/%s" % (base, name), int(name))
        return {
            "nqn": nqn,
            "allow_any_host": allow_any,
            "allowed_hosts": self.names(base + "/allowed_hosts"),
            "namespaces": namespaces,
            "attributes": attrs,
            "passthru": self.read_passthru(base + "/passthru"),
        }

    def read_passthru(self, base):
        """A passthru subsystem's controller, or None (no passthru/ or no device_path set)."""
        path = self._get(base + "/device_path")
        if not path or path == "(null)":
            return None
        return {"device_path": path, "enabled": self._get(base + "/enable") == "1"}

    def read_namespace(self, base, nsid):
        path, nguid, enable, uuid, grpid, buffered = self._attrs(base, _NAMESPACE_READ)
        return {
            "nsid": nsid,
            "device_path": None if path in (None, "", "(null)") else path,
            "enabled": enable == "1",
            "uuid": uuid or None,
            "nguid": None if not nguid or nguid.replace("-", "").strip("0") == "" else nguid,
            "ana_grpid": _int_or(grpid, 1),
            "buffered_io": buffered == "1",
        }

    def read_port(self, port_id):
        base = "ports/%s" % port_id
        addr = {}
        params = {}
        for name in self.names(base):
            if name.startswith("addr_"):
                addr[name[5:]] = self._get(base + "/" + name) or None
            elif name.startswith("param_"):
                params[name[6:]] = canonical.port_param(name[6:], self._get(base + "/" + name), strict=False)
        ana = {}
        for grp in self.names(base + "/ana_groups"):
            if grp.isdigit():
                ana[int(grp)] = self._get("%s/ana_groups/%s/ana_state" % (base, grp))
        port = {"port_id": int(port_id)}
        for field in PORT_ADDR_FIELDS:
            port[field] = addr.get(field)
        port["inline_data_size"] = _int_or(params.pop("inline_data_size", None))
        port["params"] = params
        port["subsystems"] = self.names(base + "/subsystems")
        port["referrals"] = dict((name, self.read_referral("%s/referrals/%s" % (base, name)))
                                 for name in self.names(base + "/referrals"))
        port["ana_groups"] = ana
        return port

    def read_referral(self, base):
        ref = dict((f, self._get("%s/addr_%s" % (base, f)) or None) for f in REFERRAL_FIELDS)
        ref["enabled"] = self._get(base + "/enable") == "1"
        return ref

    # ---- live connections

    def connections(self, state):
        """Who is connected, as {"by_subsystem": {nqn: n}, "by_port": {id: n}, "exact": bool} or None.

        Sources, best first: the nvmet debugfs tree (CONFIG_NVME_TARGET_DEBUGFS,
        per subsystem/host/port; Debian's 6.12 kernel does not build it);
        established TCP sockets on a tcp port's address (/proc/net/tcp{,6}:
        nvmet-tcp's kernel sockets are listed there); connected RDMA CM ids on an
        rdma port's address (``rdma -j res show cm_id``); and loop controllers
        in /sys/class/nvme. Sockets say which port is in use but not which
        subsystem, so every subsystem linked to a busy port counts as in use
        (``exact`` is false). None means nothing could be read for some linked
        port, and callers must treat the target as possibly in use.
        """
        dbg = os.path.join(self.debugfs_root, "nvmet")
        by_subsys, by_port = {}, {}
        if os.path.isdir(dbg):
            for nqn in _listdir(dbg):
                for ctrl in _listdir(os.path.join(dbg, nqn)):
                    if ctrl.startswith("ctrl"):
                        by_subsys[nqn] = by_subsys.get(nqn, 0) + 1
                        port = _int_or(_read(os.path.join(dbg, nqn, ctrl, "port")))
                        if port is not None:
                            by_port[port] = by_port.get(port, 0) + 1
            return {"by_subsystem": by_subsys, "by_port": by_port, "exact": True}
        unknown = False
        # Each peer list is read once, for the first port that needs it; which one a port's
        # transport needs is the table's "peers" (module_utils/transports.py).
        readers = {"sockets": self._tcp_established, "cm_ids": self._rdma_connected}
        peers = {}
        for pid, port in state["ports"].items():
            if not port["subsystems"]:
                continue
            n = 0
            source = getattr(transports.get(port["trtype"]), "peers", None)
            if source in readers:
                if peers.get(source) is None:
                    peers[source] = readers[source]()
                if peers[source] is None:
                    unknown = True
                    continue
                n = sum(1 for a in peers[source] if _addr_match(a, port["traddr"], port["trsvcid"]))
            elif source == "host_controllers":
                n = 0
                for ctrl in _listdir(os.path.join(self.sysfs_root, "class", "nvme")):
                    cbase = os.path.join(self.sysfs_root, "class", "nvme", ctrl)
                    if _read(os.path.join(cbase, "transport")) == port["trtype"]:
                        nqn = _read(os.path.join(cbase, "subsysnqn"))
                        if nqn in port["subsystems"]:
                            n += 1
            else:
                unknown = True
                continue
            if n:
                by_port[pid] = n
                for nqn in port["subsystems"]:
                    by_subsys[nqn] = by_subsys.get(nqn, 0) + n
        if unknown:
            return None
        return {"by_subsystem": by_subsys, "by_port": by_port, "exact": False}

    def _tcp_established(self):
        found = []
        ok = False
        for name, v6 in (("tcp", False), ("tcp6", True)):
            text = _read(os.path.join(self.proc_root, "net", name))
            if text is None:
                continue
            ok = True
            for line in text.splitlines()[1:]:
                fields = line.split()
                if len(fields) > 3 and fields[3] == "01":  # TCP_ESTABLISHED
                    found.append(_proc_net_addr(fields[1], v6))
        return found if ok else None

    def _rdma_connected(self):
        out = self.run_command(["rdma", "-j", "res", "show", "cm_id"])
        if out is None:
            return None
        try:
            entries = json.loads(out or "[]")
        except ValueError:
            return None
        found = []
        for e in entries:
            if e.get("state") not in ("LISTEN", "IDLE") and e.get("src-addr"):
                host, port = e["src-addr"].rsplit(":", 1)
                found.append((host.strip("[]"), port))
        return found

    # ---- changing

    def do(self, op):
        p = self.path(op.path)
        if op.kind == "mkdir":
            os.mkdir(p)
        elif op.kind == "rmdir":
            os.rmdir(p)
        elif op.kind == "write":
            fd = os.open(p, os.O_WRONLY)
            try:
                os.write(fd, str(op.value).encode("utf-8"))
            finally:
                os.close(fd)
        elif op.kind == "link":
            os.symlink(self.path(op.target), p)
        elif op.kind == "unlink":
            os.unlink(p)
        else:
            raise ValueError("unknown operation %r" % op.kind)


def _run_command(argv):
    try:
        proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, LC_ALL="C"),
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout.decode("utf-8", "replace")


def _proc_net_addr(field, v6):
    hexaddr, hexport = field.split(":")
    raw = bytes.fromhex(hexaddr)
    if v6:
        # /proc/net/tcp6 prints each 32-bit word in host (little-endian) order.
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4))
        addr = ipaddress.IPv6Address(raw)
        addr = addr.ipv4_mapped or addr
    else:
        addr = ipaddress.IPv4Address(raw[::-1])
    return (str(addr), str(int(hexport, 16)))


def _addr_match(addr, traddr, trsvcid):
    host, port = addr
    if str(port) != str(trsvcid):
        return False
    if traddr in ("0.0.0.0", "::", None, ""):
        return True
    try:
        return ipaddress.ip_address(host) == ipaddress.ip_address(traddr)
    except ValueError:
        return host == traddr


# --------------------------------------------------------------------------- exported schemas


def masked_host(host):
    """The host as the modules report it: keys replaced by key_set flags."""
    return {
        "hostnqn": host["hostnqn"],
        "key_set": bool(host.get("dhchap_key")),
        "ctrl_key_set": bool(host.get("dhchap_ctrl_key")),
        "dhchap_hash": host.get("dhchap_hash"),
        "dhchap_dhgroup": host.get("dhchap_dhgroup"),
    }


def export_subsystem(sub):
    if sub is None:
        return None
    out = copy.deepcopy(sub)
    out["namespaces"] = [out["namespaces"][k] for k in sorted(out["namespaces"])]
    return out


def export_port(port):
    if port is None:
        return None
    out = copy.deepcopy(port)
    out["ana_groups"] = [{"grpid": k, "state": v} for k, v in sorted(out["ana_groups"].items())]
    out["referrals"] = [dict(ref, name=name) for name, ref in sorted(out["referrals"].items())]
    return out
