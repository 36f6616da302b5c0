# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declarative model of the Linux kernel NVMe-oF target (nvmet) over configfs.

This file is the whole domain of the nvmet_* modules and has no Ansible import:
it uses the Python 3.9+ standard library only, so it can also be copied to a
target host and run on its own, for example at boot to restore a save file:

    python3 nvmet.py restore /etc/nvmet/config.json     # apply the file
    python3 nvmet.py restore --check /etc/nvmet/config.json   # print the plan only
    python3 nvmet.py save                                  # print the current tree

The save-file format is nvmetcli's JSON schema (hosts, ports, subsystems).
Unlike ``nvmetcli restore`` it does not wipe the target first: it plans the
difference between the file and configfs, applies only that, in the order the
kernel requires, and exits non-zero on the first kernel error. Objects that are
not in the file are left alone. From Python, call :func:`restore_document`.

The pieces, in the order data flows through them:

* :class:`ConfigfsTree` reads ``<configfs>/nvmet`` into plain dicts
  (:meth:`ConfigfsTree.read`) and performs single operations (mkdir, write,
  link, ...). Its roots are constructor arguments so tests can use a temporary
  directory.
* ``validate_*`` functions check user input before anything is touched and
  raise :class:`NvmetError` naming the parameter and the value.
* ``plan_host`` / ``plan_subsystem`` / ``plan_port`` are pure: current state +
  desired spec -> ordered list of :class:`Op`.
* :func:`apply_plan` runs the operations and turns EBUSY/EACCES/EINVAL into a
  message naming the object, the attribute and the likely reason.
* :func:`simulate` applies a plan to a copy of the state (check mode's "after").
"""

from __future__ import annotations

import base64
import copy
import errno
import ipaddress
import json
import os
import re
import stat
import subprocess
import sys
import zlib

MASK = "********"
NQN_MAX_BYTES = 223
NSID_MAX = 0xFFFFFFFE
ANA_GRPID_MAX = 128
DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"

TRANSPORT_MODULES = {"tcp": "nvmet_tcp", "rdma": "nvmet_rdma", "loop": "nvme_loop", "fc": "nvmet_fc"}
ADRFAMS = ("ipv4", "ipv6", "ib", "fc")
TREQ_VALUES = ("not specified", "required", "not required")
# Identity attributes the kernel freezes once a host has identified the subsystem.
IDENTITY_ATTRS = ("serial", "model", "version", "firmware")
NAMESPACE_DISABLED_ONLY = ("device_path", "uuid", "nguid", "buffered_io")
NAMESPACE_FILES = {
    "device_path": "device_path",
    "uuid": "device_uuid",
    "nguid": "device_nguid",
    "ana_grpid": "ana_grpid",
    "buffered_io": "buffered_io",
    "enabled": "enable",
}
PORT_ADDR_FIELDS = ("adrfam", "traddr", "trsvcid", "trtype", "treq", "tsas")
# Written in this order: the kernel derives tsas/treq defaults from trtype.
PORT_WRITE_ORDER = ("trtype", "adrfam", "traddr", "trsvcid", "treq", "tsas")
HOST_KEY_FIELDS = ("dhchap_key", "dhchap_ctrl_key")
HOST_FIELDS = ("dhchap_key", "dhchap_ctrl_key", "dhchap_hash", "dhchap_dhgroup")

_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_NQN_UUID_PREFIX = "nqn.2014-08.org.nvmexpress:uuid:"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NQN_RE = re.compile(r"^nqn\.(\d{4})-(0[1-9]|1[0-2])\.%s(?:\.%s)*:[^\s/]+$" % (_LABEL, _LABEL))
_DHCHAP_RE = re.compile(r"^DHHC-1:(0[0-3]):([A-Za-z0-9+/]+={0,2}):$")
_DHCHAP_KEY_LENGTHS = {0: (32, 48, 64), 1: (32,), 2: (48,), 3: (64,)}
_ATTR_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class NvmetError(Exception):
    """An error a user can act on. ``str()`` is the whole message."""

    def __init__(self, msg, applied=None):
        super().__init__(msg)
        self.msg = msg
        self.applied = applied or []


# --------------------------------------------------------------------------- validators


def validate_nqn(value, param="nqn"):
    """Check an NVMe Qualified Name: NVMe base spec 4.5, at most 223 bytes."""
    if not isinstance(value, str) or not value:
        raise NvmetError("%s: an NQN is required, got %r" % (param, value))
    size = len(value.encode("utf-8"))
    if size > NQN_MAX_BYTES:
        raise NvmetError("%s: %r is %d bytes long; an NQN is at most %d bytes" % (param, value, size, NQN_MAX_BYTES))
    if value == DISCOVERY_NQN:
        raise NvmetError("%s: %r is the well-known discovery NQN and cannot be configured" % (param, value))
    if value.startswith(_NQN_UUID_PREFIX):
        if not _UUID_RE.match(value[len(_NQN_UUID_PREFIX):]):
            raise NvmetError(
                "%s: %r uses the uuid form but %r is not a UUID (8-4-4-4-12 hex digits)"
                % (param, value, value[len(_NQN_UUID_PREFIX):])
            )
        return value
    if not _NQN_RE.match(value):
        raise NvmetError(
            "%s: %r is not a valid NQN; use nqn.yyyy-mm.reverse.domain:name (no spaces or '/') "
            "or %s<uuid>" % (param, value, _NQN_UUID_PREFIX)
        )
    return value


def normalize_uuid(value, param):
    if not isinstance(value, str) or not _UUID_RE.match(value):
        raise NvmetError("%s: %r is not a UUID (8-4-4-4-12 hex digits)" % (param, value))
    return value.lower()


def normalize_nguid(value, param):
    """Accept 32 hex digits with or without dashes; return the form the kernel prints."""
    digits = value.replace("-", "") if isinstance(value, str) else ""
    if not re.match(r"^[0-9a-fA-F]{32}$", digits):
        raise NvmetError("%s: %r is not an NGUID (32 hex digits, dashes optional)" % (param, value))
    d = digits.lower()
    return "%s-%s-%s-%s-%s" % (d[:8], d[8:12], d[12:16], d[16:20], d[20:])


def validate_dhchap_key(value, param):
    """Check a DH-HMAC-CHAP secret in the NVMe TP 8006 representation.

    ``DHHC-1:<hh>:<base64(key || crc32(key) little-endian)>:`` with hh 00 (no
    transform) or 01/02/03 (SHA-256/384/512, fixing the key length at 32/48/64).
    The kernel accepts malformed strings at write time and only fails at
    connect, so this is checked here. The value never appears in a message.
    """
    m = _DHCHAP_RE.match(value or "") if isinstance(value, str) else None
    if not m:
        raise NvmetError("%s: the value is not a DH-HMAC-CHAP key of the form DHHC-1:0X:<base64>: "
                         "(value hidden); generate one with 'nvme gen-dhchap-key'" % param)
    transform = int(m.group(1))
    try:
        raw = base64.b64decode(m.group(2), validate=True)
    except (ValueError, TypeError):
        raise NvmetError("%s: the key part is not valid base64 (value hidden)" % param) from None
    key, crc = raw[:-4], raw[-4:]
    if len(key) not in _DHCHAP_KEY_LENGTHS[transform]:
        raise NvmetError("%s: the key is %d bytes; with transform %02d it must be %s bytes (value hidden)"
                         % (param, len(key), transform, " or ".join(str(x) for x in _DHCHAP_KEY_LENGTHS[transform])))
    if (zlib.crc32(key) & 0xFFFFFFFF).to_bytes(4, "little") != crc:
        raise NvmetError("%s: the key's CRC-32 does not match; the key is corrupted or mistyped (value hidden)" % param)
    return value


def validate_traddr(traddr, adrfam, param="traddr"):
    if adrfam in ("ipv4", "ipv6"):
        try:
            addr = ipaddress.ip_address(traddr)
        except ValueError:
            raise NvmetError("%s: %r is not an IP address (adrfam is %s)" % (param, traddr, adrfam)) from None
        if (adrfam == "ipv4") != (addr.version == 4):
            raise NvmetError("%s: %r is an IPv%d address but adrfam is %s" % (param, traddr, addr.version, adrfam))
    elif adrfam == "fc":
        if not re.match(r"^nn-0x[0-9a-fA-F]{16}:pn-0x[0-9a-fA-F]{16}$", traddr):
            raise NvmetError("%s: %r is not an FC address (nn-0x<16 hex>:pn-0x<16 hex>) for adrfam fc" % (param, traddr))
    return traddr


def derive_adrfam(trtype, traddr):
    if trtype == "loop" or not traddr:
        return None
    if trtype == "fc":
        return "fc"
    try:
        return "ipv%d" % ipaddress.ip_address(traddr).version
    except ValueError:
        return None


def _check_int(value, param, low, high):
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value), 10)
        except ValueError:
            raise NvmetError("%s: %r is not an integer" % (param, value)) from None
    if not low <= value <= high:
        raise NvmetError("%s: %r is out of range %d..%d" % (param, value, low, high))
    return value


def _check_attr_names(attrs, param, reserved):
    out = {}
    for name, value in (attrs or {}).items():
        if name.startswith("attr_") or name.startswith("param_"):
            raise NvmetError("%s: key %r: give the name without its attr_/param_ prefix" % (param, name))
        if not _ATTR_NAME_RE.match(name):
            raise NvmetError("%s: key %r is not an attribute name" % (param, name))
        if name in reserved:
            raise NvmetError("%s: key %r has its own option; use %s instead" % (param, name, name))
        if isinstance(value, bool):
            value = int(value)
        out[name] = str(value)
    return out


def module_loaded(name, sysfs_root="/sys"):
    return os.path.isdir(os.path.join(sysfs_root, "module", name))


def check_configfs(tree):
    if not os.path.isdir(tree.nvmet):
        raise NvmetError(
            "configfs_root: %s does not exist: load the nvmet kernel module (modprobe nvmet) and mount configfs "
            "on %s" % (tree.nvmet, tree.root)
        )


def normalize_host(spec):
    """Validate a host spec (module parameters) and return it normalized."""
    s = dict(spec)
    validate_nqn(s.get("hostnqn"), "hostnqn")
    s.setdefault("state", "present")
    for field in HOST_KEY_FIELDS:
        if s.get(field) is not None:
            validate_dhchap_key(s[field], field)
    if s.get("dhchap_ctrl_key") and not s.get("dhchap_key"):
        raise NvmetError("dhchap_ctrl_key: bidirectional authentication also needs dhchap_key (the host key)")
    h = s.get("dhchap_hash")
    if h is not None and h not in ("hmac(sha256)", "hmac(sha384)", "hmac(sha512)"):
        raise NvmetError("dhchap_hash: %r is not one of hmac(sha256), hmac(sha384), hmac(sha512)" % h)
    g = s.get("dhchap_dhgroup")
    if g is not None and g not in ("null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192"):
        raise NvmetError("dhchap_dhgroup: %r is not one of null, ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144, ffdhe8192" % g)
    return s


def normalize_subsystem(spec, check_paths=True):
    """Validate a subsystem spec (module parameters) and return it normalized."""
    s = dict(spec)
    validate_nqn(s.get("nqn"), "nqn")
    s.setdefault("state", "present")
    for i, host in enumerate(s.get("allowed_hosts") or []):
        validate_nqn(host, "allowed_hosts[%d]" % i)
    if s.get("allow_any_host") and s.get("allowed_hosts"):
        raise NvmetError("allow_any_host: true and allowed_hosts %r exclude each other (the kernel refuses both); "
                         "choose one" % s["allowed_hosts"])
    seen = set()
    namespaces = []
    for i, ns in enumerate(s.get("namespaces") or []):
        ns = dict(ns)
        p = "namespaces[%d]" % i
        if ns.get("nsid") is None:
            raise NvmetError("%s.nsid: is required" % p)
        ns["nsid"] = _check_int(ns["nsid"], p + ".nsid", 1, NSID_MAX)
        if ns["nsid"] in seen:
            raise NvmetError("%s.nsid: %d is listed twice; namespace ids must be unique" % (p, ns["nsid"]))
        seen.add(ns["nsid"])
        path = ns.get("device_path")
        if s["state"] == "present":
            if not path:
                raise NvmetError("%s.device_path: is required (nsid %d)" % (p, ns["nsid"]))
            if check_paths:
                try:
                    st = os.stat(path)
                except OSError as exc:
                    raise NvmetError("%s.device_path: %r does not exist or cannot be read (%s)"
                                     % (p, path, exc.strerror)) from None
                if not (stat.S_ISBLK(st.st_mode) or stat.S_ISREG(st.st_mode)):
                    raise NvmetError("%s.device_path: %r is neither a block device nor a regular file" % (p, path))
        if ns.get("uuid") is not None:
            ns["uuid"] = normalize_uuid(ns["uuid"], p + ".uuid")
        if ns.get("nguid") is not None:
            ns["nguid"] = normalize_nguid(ns["nguid"], p + ".nguid")
        if ns.get("ana_grpid") is not None:
            ns["ana_grpid"] = _check_int(ns["ana_grpid"], p + ".ana_grpid", 1, ANA_GRPID_MAX)
        if ns.get("enabled") is None:
            ns["enabled"] = True
        namespaces.append(ns)
    s["namespaces"] = namespaces
    if s.get("serial") is not None and not re.match(r"^[\x20-\x7e]{1,20}$", str(s["serial"])):
        raise NvmetError("serial: %r must be 1-20 printable ASCII characters" % s["serial"])
    if s.get("model") is not None and not re.match(r"^[\x20-\x7e]{1,40}$", str(s["model"])):
        raise NvmetError("model: %r must be 1-40 printable ASCII characters" % s["model"])
    if s.get("firmware") is not None and not re.match(r"^[\x20-\x7e]{1,8}$", str(s["firmware"])):
        raise NvmetError("firmware: %r must be 1-8 printable ASCII characters" % s["firmware"])
    if s.get("version") is not None and not re.match(r"^\d+\.\d+(\.\d+)?$", str(s["version"])):
        raise NvmetError("version: %r is not an NVMe version like 1.3 or 2.0.0" % s["version"])
    s["attributes"] = _check_attr_names(s.get("attributes"), "attributes", ("allow_any_host",) + IDENTITY_ATTRS)
    return s


def normalize_port(spec, sysfs_root="/sys"):
    """Validate a port spec (module parameters) and return it normalized."""
    s = dict(spec)
    s["port_id"] = _check_int(s.get("port_id"), "port_id", 0, 65535)
    s.setdefault("state", "present")
    if s["state"] == "absent":
        return s
    trtype = s.get("trtype")
    if trtype is None:
        raise NvmetError("trtype: is required when state is present (one of %s)" % ", ".join(sorted(TRANSPORT_MODULES)))
    if trtype not in TRANSPORT_MODULES:
        raise NvmetError("trtype: %r is not one of %s" % (trtype, ", ".join(sorted(TRANSPORT_MODULES))))
    if sysfs_root is not None and not module_loaded(TRANSPORT_MODULES[trtype], sysfs_root):
        raise NvmetError(
            "trtype: %r needs the kernel module %s, which is not loaded (no %s); load it first, e.g. "
            "community.general.modprobe name=%s"
            % (trtype, TRANSPORT_MODULES[trtype], os.path.join(sysfs_root, "module", TRANSPORT_MODULES[trtype]),
               TRANSPORT_MODULES[trtype])
        )
    if trtype != "loop":
        if not s.get("traddr"):
            raise NvmetError("traddr: is required for trtype %s" % trtype)
        if s.get("adrfam") is None:
            s["adrfam"] = derive_adrfam(trtype, s["traddr"])
            if s["adrfam"] is None:
                raise NvmetError("traddr: %r is not an IPv4 or IPv6 address, so adrfam cannot be derived from it; "
                                 "fix traddr or set adrfam (%s)" % (s["traddr"], ", ".join(ADRFAMS)))
        if s["adrfam"] not in ADRFAMS:
            raise NvmetError("adrfam: %r is not one of %s" % (s["adrfam"], ", ".join(ADRFAMS)))
        validate_traddr(s["traddr"], s["adrfam"])
    if trtype in ("tcp", "rdma"):
        if s.get("trsvcid") is None:
            s["trsvcid"] = "4420"
        s["trsvcid"] = str(_check_int(s["trsvcid"], "trsvcid", 1, 65535))
    if s.get("treq") is not None and s["treq"] not in TREQ_VALUES:
        raise NvmetError("treq: %r is not one of %s" % (s["treq"], ", ".join(TREQ_VALUES)))
    if s.get("tsas") is not None:
        if trtype != "tcp":
            raise NvmetError("tsas: %r is only meaningful for trtype tcp (TLS), not %s" % (s["tsas"], trtype))
        if s["tsas"] not in ("none", "tls1.3"):
            raise NvmetError("tsas: %r is not one of none, tls1.3" % s["tsas"])
    if s.get("inline_data_size") is not None:
        s["inline_data_size"] = _check_int(s["inline_data_size"], "inline_data_size", -1, 2 ** 31 - 1)
    s["params"] = _check_attr_names(s.get("params"), "params", ("inline_data_size",))
    for i, nqn in enumerate(s.get("subsystems") or []):
        validate_nqn(nqn, "subsystems[%d]" % i)
    if s.get("subsystems") is not None and len(set(s["subsystems"])) != len(s["subsystems"]):
        raise NvmetError("subsystems: %r lists a subsystem twice" % (s["subsystems"],))
    return s


# --------------------------------------------------------------------------- configfs model


def _read(path):
    try:
        with open(path, "r") as f:
            return f.read().rstrip("\n")
    except OSError:
        return None


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


class Op(object):
    """One configfs operation. ``kind`` is mkdir, rmdir, write, link or unlink.

    ``path`` is relative to ``<configfs>/nvmet``; ``target`` (links) too.
    ``secret`` hides the value in every text form.
    """

    __slots__ = ("kind", "path", "value", "target", "secret")

    def __init__(self, kind, path, value=None, target=None, secret=False):
        self.kind, self.path, self.value, self.target, self.secret = kind, path, value, target, secret

    def text(self):
        if self.kind == "write":
            return "write %s = %s" % (self.path, MASK if self.secret else self.value)
        if self.kind == "link":
            return "link %s -> %s" % (self.path, self.target)
        return "%s %s" % (self.kind, self.path)

    def __repr__(self):
        return "Op(%s)" % self.text()

    def __eq__(self, other):
        return isinstance(other, Op) and (self.kind, self.path, self.value, self.target) == (
            other.kind, other.path, other.value, other.target)


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

    def path(self, rel):
        return os.path.join(self.nvmet, rel)

    # ---- reading

    def read(self):
        """Return {"hosts": {nqn: ...}, "ports": {id: ...}, "subsystems": {nqn: ...}} with secrets in clear.

        Use :func:`masked_host` or :func:`to_savefile` before showing hosts.
        """
        return {
            "hosts": dict((n, self.read_host(n)) for n in _listdir(self.path("hosts"))),
            "ports": dict((int(p), self.read_port(p)) for p in _listdir(self.path("ports")) if p.isdigit()),
            "subsystems": dict((n, self.read_subsystem(n)) for n in _listdir(self.path("subsystems"))),
        }

    def read_host(self, nqn):
        base = self.path(os.path.join("hosts", nqn))
        host = {"hostnqn": nqn}
        for field in HOST_FIELDS:
            value = _read(os.path.join(base, field))
            host[field] = value if value else None
        return host

    def read_subsystem(self, nqn):
        base = self.path(os.path.join("subsystems", nqn))
        attrs = {}
        for name in _listdir(base):
            if name.startswith("attr_"):
                value = _read(os.path.join(base, name))
                if value is not None:
                    attrs[name[5:]] = value
        allow_any = attrs.pop("allow_any_host", "0") == "1"
        namespaces = {}
        for name in _listdir(os.path.join(base, "namespaces")):
            if name.isdigit():
                namespaces[int(name)] = self.read_namespace(os.path.join(base, "namespaces", name), int(name))
        return {
            "nqn": nqn,
            "allow_any_host": allow_any,
            "allowed_hosts": _listdir(os.path.join(base, "allowed_hosts")),
            "namespaces": namespaces,
            "attributes": attrs,
        }

    @staticmethod
    def read_namespace(base, nsid):
        path = _read(os.path.join(base, "device_path"))
        nguid = _read(os.path.join(base, "device_nguid"))
        return {
            "nsid": nsid,
            "device_path": None if path in (None, "", "(null)") else path,
            "enabled": _read(os.path.join(base, "enable")) == "1",
            "uuid": _read(os.path.join(base, "device_uuid")) or None,
            "nguid": None if not nguid or nguid.replace("-", "").strip("0") == "" else nguid,
            "ana_grpid": _int_or(_read(os.path.join(base, "ana_grpid")), 1),
            "buffered_io": _read(os.path.join(base, "buffered_io")) == "1",
        }

    def read_port(self, port_id):
        base = self.path(os.path.join("ports", str(port_id)))
        addr = {}
        params = {}
        for name in _listdir(base):
            if name.startswith("addr_"):
                addr[name[5:]] = _read(os.path.join(base, name)) or None
            elif name.startswith("param_"):
                params[name[6:]] = _read(os.path.join(base, name))
        ana = {}
        for grp in _listdir(os.path.join(base, "ana_groups")):
            if grp.isdigit():
                ana[int(grp)] = _read(os.path.join(base, "ana_groups", grp, "ana_state"))
        port = {"port_id": int(port_id)}
        for field in PORT_ADDR_FIELDS:
            port[field] = addr.get(field)
        port["inline_data_size"] = _int_or(params.pop("inline_data_size", None))
        port["params"] = params
        port["subsystems"] = _listdir(os.path.join(base, "subsystems"))
        port["referrals"] = _listdir(os.path.join(base, "referrals"))
        port["ana_groups"] = ana
        return port

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
        tcp = None
        rdma = None
        for pid, port in state["ports"].items():
            if not port["subsystems"]:
                continue
            n = 0
            if port["trtype"] == "tcp":
                if tcp is None:
                    tcp = self._tcp_established()
                if tcp is None:
                    unknown = True
                    continue
                n = sum(1 for a in tcp if _addr_match(a, port["traddr"], port["trsvcid"]))
            elif port["trtype"] == "rdma":
                if rdma is None:
                    rdma = self._rdma_connected()
                if rdma is None:
                    unknown = True
                    continue
                n = sum(1 for a in rdma if _addr_match(a, port["traddr"], port["trsvcid"]))
            elif port["trtype"] == "loop":
                n = 0
                for ctrl in _listdir(os.path.join(self.sysfs_root, "class", "nvme")):
                    cbase = os.path.join(self.sysfs_root, "class", "nvme", ctrl)
                    if _read(os.path.join(cbase, "transport")) == "loop":
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
    return out


def to_savefile(state, mask_keys=True):
    """The state in nvmetcli's save-file schema; keys masked unless mask_keys is False."""
    hosts = []
    for nqn in sorted(state["hosts"]):
        h = state["hosts"][nqn]
        entry = {"nqn": nqn}
        dh = {}
        for field in HOST_FIELDS:
            value = h.get(field)
            if value and field in HOST_KEY_FIELDS and mask_keys:
                value = MASK
            if value:
                dh[field[len("dhchap_"):]] = value
        if dh:
            entry["dhchap"] = dh
        hosts.append(entry)
    ports = []
    for pid in sorted(state["ports"]):
        p = state["ports"][pid]
        addr = dict((f, p[f] if p[f] is not None else "") for f in PORT_ADDR_FIELDS)
        param = dict(p["params"])
        if p.get("inline_data_size") is not None:
            param["inline_data_size"] = str(p["inline_data_size"])
        ports.append({
            "portid": pid,
            "addr": addr,
            "param": param,
            "subsystems": list(p["subsystems"]),
            "referrals": [{"name": r} for r in p["referrals"]],
            "ana_groups": [{"grpid": g, "ana": {"state": s}} for g, s in sorted(p["ana_groups"].items())],
        })
    subsystems = []
    for nqn in sorted(state["subsystems"]):
        s = state["subsystems"][nqn]
        attr = dict(s["attributes"])
        attr["allow_any_host"] = "1" if s["allow_any_host"] else "0"
        namespaces = []
        for nsid in sorted(s["namespaces"]):
            ns = s["namespaces"][nsid]
            device = {"path": ns["device_path"] or "", "uuid": ns["uuid"] or ""}
            device["nguid"] = ns["nguid"] or "00000000-0000-0000-0000-000000000000"
            namespaces.append({
                "nsid": nsid,
                "enable": 1 if ns["enabled"] else 0,
                "device": device,
                "ana_grpid": ns["ana_grpid"],
                "buffered_io": 1 if ns["buffered_io"] else 0,
            })
        subsystems.append({"nqn": nqn, "attr": attr, "allowed_hosts": list(s["allowed_hosts"]),
                           "namespaces": namespaces})
    return {"hosts": hosts, "ports": ports, "subsystems": subsystems}


def from_savefile(doc):
    """Turn an nvmetcli save-file document into desired specs.

    Returns {"hosts": [...], "subsystems": [...], "ports": [...]}, each entry in
    the parameter schema of nvmet_host / nvmet_subsystem / nvmet_port (not yet
    validated: pass them through normalize_*). Masked keys ("********", as
    nvmet_info writes them) are dropped, so restoring a masked file keeps the
    keys that are already set.
    """
    if not isinstance(doc, dict):
        raise NvmetError("save file: the top level must be a JSON object with hosts, ports, subsystems")
    hosts = []
    for h in doc.get("hosts") or []:
        spec = {"hostnqn": h.get("nqn"), "state": "present"}
        for key, value in (h.get("dhchap") or {}).items():
            if value and value != MASK:
                spec["dhchap_" + key] = value
        hosts.append(spec)
    subsystems = []
    for s in doc.get("subsystems") or []:
        attr = dict(s.get("attr") or {})
        spec = {"nqn": s.get("nqn"), "state": "present",
                "allow_any_host": str(attr.pop("allow_any_host", "0")) == "1",
                "allowed_hosts": list(s.get("allowed_hosts") or []), "purge_allowed_hosts": True,
                "purge_namespaces": True}
        for name in IDENTITY_ATTRS:
            if name in attr:
                spec[name] = attr.pop(name)
        spec["attributes"] = attr
        spec["namespaces"] = []
        for ns in s.get("namespaces") or []:
            dev = ns.get("device") or {}
            entry = {"nsid": ns.get("nsid"), "device_path": dev.get("path"),
                     "enabled": bool(int(ns.get("enable", 1)))}
            if dev.get("uuid"):
                entry["uuid"] = dev["uuid"]
            if dev.get("nguid") and dev["nguid"].replace("-", "").strip("0"):
                entry["nguid"] = dev["nguid"]
            if ns.get("ana_grpid") is not None:
                entry["ana_grpid"] = ns["ana_grpid"]
            if ns.get("buffered_io") is not None:
                entry["buffered_io"] = bool(int(ns["buffered_io"]))
            spec["namespaces"].append(entry)
        subsystems.append(spec)
    ports = []
    for p in doc.get("ports") or []:
        addr = p.get("addr") or {}
        param = dict(p.get("param") or {})
        spec = {"port_id": p.get("portid"), "state": "present", "subsystems": list(p.get("subsystems") or [])}
        for field in PORT_ADDR_FIELDS:
            if addr.get(field) not in (None, ""):
                spec[field] = addr[field]
        if spec.get("tsas") and spec.get("trtype") != "tcp":
            spec.pop("tsas")
        if "inline_data_size" in param:
            spec["inline_data_size"] = param.pop("inline_data_size")
        spec["params"] = param
        ports.append(spec)
    return {"hosts": hosts, "subsystems": subsystems, "ports": ports}


# --------------------------------------------------------------------------- planning


def _bool_str(value):
    return "1" if value else "0"


def _conn_count(conns, key, value):
    """Live controller count, or None when it cannot be known."""
    if conns is None:
        return None
    return conns[key].get(value, 0)


def _require_quiet(count, force, what, how):
    if force:
        return
    if count is None:
        raise NvmetError(
            "%s may have connected hosts and this host cannot tell (no nvmet debugfs, and no socket/RDMA view "
            "of the port); set force: true to %s anyway" % (what, how))
    if count:
        raise NvmetError("%s has %d live connection(s); set force: true to %s (this disconnects them)" % (what, count, how))


def _exposing_ports(state, nqn):
    return sorted(pid for pid, p in state["ports"].items() if nqn in p["subsystems"])


def plan_host(state, spec, conns=None, force=False):
    """Plan hosts/<hostnqn>. Keys are compared in memory and written masked."""
    nqn = spec["hostnqn"]
    rel = "hosts/" + nqn
    cur = state["hosts"].get(nqn)
    ops = []
    if spec.get("state", "present") == "absent":
        if cur is None:
            return ops
        users = sorted(n for n, s in state["subsystems"].items() if nqn in s["allowed_hosts"])
        if users and not force:
            raise NvmetError("host %s is in allowed_hosts of subsystem(s) %s; remove it there first or set force: true "
                             "to unlink it from them" % (nqn, ", ".join(users)))
        for sub in users:
            if _exposing_ports(state, sub):
                _require_quiet(_conn_count(conns, "by_subsystem", sub), force, "subsystem %s" % sub,
                               "remove host %s from it" % nqn)
            ops.append(Op("unlink", "subsystems/%s/allowed_hosts/%s" % (sub, nqn)))
        ops.append(Op("rmdir", rel))
        return ops
    if cur is None:
        ops.append(Op("mkdir", rel))
        cur = {}
    # Keys before hash: writing a transformed key can set the hash.
    for field in ("dhchap_key", "dhchap_ctrl_key", "dhchap_hash", "dhchap_dhgroup"):
        want = spec.get(field)
        if want is not None and cur.get(field) != want:
            ops.append(Op("write", "%s/%s" % (rel, field), want, secret=field in HOST_KEY_FIELDS))
    return ops


def _plan_namespace_removal(sub_rel, ns):
    ops = []
    if ns["enabled"]:
        ops.append(Op("write", "%s/namespaces/%d/enable" % (sub_rel, ns["nsid"]), "0"))
    ops.append(Op("rmdir", "%s/namespaces/%d" % (sub_rel, ns["nsid"])))
    return ops


def plan_subsystem(state, spec, conns=None, force=False):
    """Plan subsystems/<nqn> (spec from normalize_subsystem). Pure: reads nothing."""
    nqn = spec["nqn"]
    rel = "subsystems/" + nqn
    cur = state["subsystems"].get(nqn)
    ports = _exposing_ports(state, nqn)
    live = _conn_count(conns, "by_subsystem", nqn) if ports else 0
    ops = []
    if spec.get("state", "present") == "absent":
        if cur is None:
            return ops
        _require_quiet(live, force, "subsystem %s" % nqn, "remove it")
        for pid in ports:
            ops.append(Op("unlink", "ports/%d/subsystems/%s" % (pid, nqn)))
        for nsid in sorted(cur["namespaces"], reverse=True):
            ops.extend(_plan_namespace_removal(rel, cur["namespaces"][nsid]))
        for host in reversed(cur["allowed_hosts"]):
            ops.append(Op("unlink", "%s/allowed_hosts/%s" % (rel, host)))
        ops.append(Op("rmdir", rel))
        return ops

    new = cur is None
    if new:
        ops.append(Op("mkdir", rel))
        cur = {"nqn": nqn, "allow_any_host": False, "allowed_hosts": [], "namespaces": {}, "attributes": {}}
    # Identity first: the kernel refuses these once a host has identified the
    # subsystem, and failing before anything else keeps the run all-or-nothing.
    for name in IDENTITY_ATTRS:
        want = spec.get(name)
        if want is not None and cur["attributes"].get(name) != str(want):
            ops.append(Op("write", "%s/attr_%s" % (rel, name), str(want)))
    for name, want in sorted(spec["attributes"].items()):
        if not new and name not in cur["attributes"]:
            raise NvmetError("attributes: this kernel has no attr_%s for subsystem %s (it has: %s)"
                             % (name, nqn, ", ".join(sorted(cur["attributes"]))))
        if cur["attributes"].get(name) != want:
            ops.append(Op("write", "%s/attr_%s" % (rel, name), want))

    # Hosts. allow_any_host=1 and allowed_hosts links exclude each other in the
    # kernel, so the order depends on the direction of the change.
    want_any = bool(spec.get("allow_any_host"))
    want_hosts = list(spec.get("allowed_hosts") or [])
    removed_hosts = [h for h in cur["allowed_hosts"] if h not in want_hosts and (want_any or spec.get("purge_allowed_hosts"))]
    if removed_hosts and ports:
        _require_quiet(live, force, "subsystem %s" % nqn, "remove allowed host(s) %s" % ", ".join(removed_hosts))
    if cur["allow_any_host"] and not want_any:
        if ports:
            _require_quiet(live, force, "subsystem %s" % nqn, "turn allow_any_host off")
        ops.append(Op("write", "%s/attr_allow_any_host" % rel, "0"))
    for host in removed_hosts:
        ops.append(Op("unlink", "%s/allowed_hosts/%s" % (rel, host)))
    for host in want_hosts:
        if host not in cur["allowed_hosts"]:
            if host not in state["hosts"] and Op("mkdir", "hosts/" + host) not in ops:
                ops.append(Op("mkdir", "hosts/" + host))
            ops.append(Op("link", "%s/allowed_hosts/%s" % (rel, host), target="hosts/" + host))
    if want_any and not cur["allow_any_host"]:
        ops.append(Op("write", "%s/attr_allow_any_host" % rel, "1"))

    # Namespaces: removals, then changes, then new ones.
    wanted = dict((ns["nsid"], ns) for ns in spec.get("namespaces") or [])
    if spec.get("purge_namespaces"):
        extra = sorted((n for n in cur["namespaces"] if n not in wanted), reverse=True)
        if extra and ports:
            _require_quiet(live, force, "subsystem %s" % nqn, "remove namespace(s) %s" % ", ".join(map(str, extra)))
        for nsid in extra:
            ops.extend(_plan_namespace_removal(rel, cur["namespaces"][nsid]))
    for nsid in sorted(wanted):
        want = wanted[nsid]
        ns_rel = "%s/namespaces/%d" % (rel, nsid)
        have = cur["namespaces"].get(nsid)
        if have is None:
            ops.append(Op("mkdir", ns_rel))
            have = {"nsid": nsid, "device_path": None, "enabled": False, "uuid": None, "nguid": None,
                    "ana_grpid": 1, "buffered_io": False}
        offline = []
        for field in NAMESPACE_DISABLED_ONLY:
            value = want.get(field)
            if value is not None and have.get(field) != value:
                offline.append(Op("write", "%s/%s" % (ns_rel, NAMESPACE_FILES[field]),
                                  _bool_str(value) if isinstance(value, bool) else value))
        online = []
        if want.get("ana_grpid") is not None and have["ana_grpid"] != want["ana_grpid"]:
            online.append(Op("write", "%s/ana_grpid" % ns_rel, str(want["ana_grpid"])))
        if offline and have["enabled"]:
            if ports:
                _require_quiet(live, force, "subsystem %s" % nqn,
                               "change %s of namespace %d (it is disabled meanwhile)"
                               % (", ".join(o.path.rsplit("/", 1)[1] for o in offline), nsid))
            ops.append(Op("write", "%s/enable" % ns_rel, "0"))
            ops.extend(offline)
            ops.extend(online)
            if want["enabled"]:
                ops.append(Op("write", "%s/enable" % ns_rel, "1"))
            continue
        ops.extend(offline)
        ops.extend(online)
        if want["enabled"] != have["enabled"]:
            if not want["enabled"] and ports:
                _require_quiet(live, force, "subsystem %s" % nqn, "disable namespace %d" % nsid)
            ops.append(Op("write", "%s/enable" % ns_rel, _bool_str(want["enabled"])))
    return ops


def plan_port(state, spec, conns=None, force=False, allow_reconfigure=False, missing_ok=False):
    """Plan ports/<port_id> (spec from normalize_port). Pure: reads nothing.

    ``missing_ok`` plans links to subsystems that do not exist yet (check mode,
    where an earlier task would have created them) instead of failing.
    """
    pid = spec["port_id"]
    rel = "ports/%d" % pid
    cur = state["ports"].get(pid)
    ops = []
    if spec.get("state", "present") == "absent":
        if cur is None:
            return ops
        if cur["subsystems"]:
            _require_quiet(_conn_count(conns, "by_port", pid), force, "port %d" % pid, "remove it")
        for nqn in reversed(cur["subsystems"]):
            ops.append(Op("unlink", "%s/subsystems/%s" % (rel, nqn)))
        for name in reversed(cur["referrals"]):
            ops.append(Op("rmdir", "%s/referrals/%s" % (rel, name)))
        for grp in sorted(cur["ana_groups"], reverse=True):
            if grp != 1:
                ops.append(Op("rmdir", "%s/ana_groups/%d" % (rel, grp)))
        ops.append(Op("rmdir", rel))
        return ops

    for nqn in spec.get("subsystems") or []:
        if nqn not in state["subsystems"] and not missing_ok:
            raise NvmetError("subsystems: %s does not exist under %s; create it first (aiinfra.fabric.nvmet_subsystem)"
                             % (nqn, "subsystems/"))
    if cur is None:
        ops.append(Op("mkdir", rel))
        cur = {"port_id": pid, "adrfam": None, "traddr": None, "trsvcid": None, "trtype": None,
               "treq": None, "tsas": None, "inline_data_size": None, "params": {}, "subsystems": [],
               "referrals": [], "ana_groups": {1: "optimized"}}
    settings = []
    for field in PORT_WRITE_ORDER:
        want = spec.get(field)
        if want is not None and cur.get(field) != str(want):
            settings.append(Op("write", "%s/addr_%s" % (rel, field), str(want)))
    if spec.get("inline_data_size") is not None and cur.get("inline_data_size") != spec["inline_data_size"]:
        settings.append(Op("write", "%s/param_inline_data_size" % rel, str(spec["inline_data_size"])))
    for name, want in sorted((spec.get("params") or {}).items()):
        if pid in state["ports"] and name not in cur["params"]:
            raise NvmetError("params: this kernel has no param_%s for port %d (it has: %s)"
                             % (name, pid, ", ".join(sorted(cur["params"]))))
        if cur["params"].get(name) != want:
            settings.append(Op("write", "%s/param_%s" % (rel, name), want))

    linked = list(cur["subsystems"])
    want_links = spec.get("subsystems")
    if want_links is None:
        want_links = linked
    if settings and linked:
        changed = ", ".join(o.path.rsplit("/", 1)[1] for o in settings)
        if not allow_reconfigure:
            raise NvmetError(
                "port %d: %s differ, and the kernel only changes addr_*/param_* while no subsystem is linked; "
                "this needs unlinking %s, which disconnects their hosts; set allow_reconfigure: true to do that"
                % (pid, changed, ", ".join(linked)))
        _require_quiet(_conn_count(conns, "by_port", pid), force, "port %d" % pid, "reconfigure it (%s)" % changed)
        for nqn in reversed(linked):
            ops.append(Op("unlink", "%s/subsystems/%s" % (rel, nqn)))
        linked = []
    else:
        gone = [n for n in linked if n not in want_links]
        if gone:
            _require_quiet(_conn_count(conns, "by_port", pid), force, "port %d" % pid,
                           "unlink %s from it" % ", ".join(gone))
        for nqn in gone:
            ops.append(Op("unlink", "%s/subsystems/%s" % (rel, nqn)))
            linked.remove(nqn)
    ops.extend(settings)
    for nqn in want_links:
        if nqn not in linked:
            ops.append(Op("link", "%s/subsystems/%s" % (rel, nqn), target="subsystems/" + nqn))
    return ops


# --------------------------------------------------------------------------- applying


def explain(op, exc):
    """A sentence for a failed configfs operation: which object, attribute, and why."""
    parts = op.path.split("/")
    code = exc.errno
    name = parts[-1]
    obj = "/".join(parts[:-1]) if op.kind in ("write", "link", "unlink") else op.path
    why = ""
    if op.kind == "write":
        if parts[0] == "subsystems" and "namespaces" in parts:
            if name in ("device_path", "device_uuid", "device_nguid", "buffered_io") and code in (errno.EBUSY, errno.EINVAL):
                why = "this can only change while the namespace is disabled (enable=0)"
                if code == errno.EINVAL and name != "buffered_io":
                    why = "the kernel rejected the value"
            elif name == "enable":
                why = ("the kernel could not open the namespace's device_path (missing, not a block device or regular "
                       "file, or already exported by another namespace)")
            elif name == "ana_grpid":
                why = "the ANA group does not exist on any port (create ports/<id>/ana_groups/<grpid>) or is out of range"
        elif parts[0] == "subsystems" and name.startswith("attr_"):
            if name[5:] in IDENTITY_ATTRS and code == errno.EINVAL:
                why = ("the kernel freezes serial/model/version/firmware once a host has identified the subsystem, "
                       "or the value is invalid; to change it, remove and recreate the subsystem")
            elif name == "attr_allow_any_host" and code == errno.EINVAL:
                why = "allowed_hosts is not empty; allow_any_host and allowed_hosts exclude each other"
            elif name in ("attr_cntlid_min", "attr_cntlid_max") and code == errno.EINVAL:
                why = "cntlid_min must be <= cntlid_max and both in 1..65519"
        elif parts[0] == "ports":
            if code == errno.EACCES:
                why = "the port is enabled (a subsystem is linked); addr_*/param_* change only on an unlinked port"
            elif code == errno.EINVAL:
                why = "the kernel rejected the value for this transport"
        elif parts[0] == "hosts" and code == errno.EINVAL:
            why = "the kernel rejected the value (malformed key, or hash/DH group not available)"
    elif op.kind == "link":
        if parts[0] == "ports":
            why = ("the kernel could not enable the port: is the transport module loaded, does the address exist on "
                   "this host, and is it free?")
        elif "allowed_hosts" in parts and code == errno.EINVAL:
            why = "allow_any_host is set; allow_any_host and allowed_hosts exclude each other"
    elif op.kind == "rmdir" and code in (errno.EBUSY, errno.ENOTEMPTY):
        why = "it still has children or is the target of a link (allowed_hosts / port subsystems)"
    elif op.kind == "mkdir" and code == errno.EEXIST:
        why = "it already exists (changed by someone else meanwhile?)"
    if op.kind == "write":
        action = "write %s = %s on %s" % (name, "(value hidden)" if op.secret else repr(str(op.value)), obj)
    else:
        action = {"link": "link %s into %s" % (name, obj), "unlink": "unlink %s from %s" % (name, obj),
                  "mkdir": "create %s" % obj, "rmdir": "remove %s" % obj}[op.kind]
    reason = os.strerror(code) if code else str(exc)
    msg = "nvmet: cannot %s: %s (%s)" % (action, reason, errno.errorcode.get(code, code))
    if why:
        msg += ": " + why
    return msg


def apply_plan(tree, ops):
    """Run ops in order. On a kernel error raise NvmetError; ``applied`` lists what was done."""
    done = []
    for op in ops:
        try:
            tree.do(op)
        except OSError as exc:
            raise NvmetError(explain(op, exc), applied=done) from exc
        done.append(op.text())
    return done


def simulate(state, ops):
    """Return a copy of state with ops applied as the kernel would (for check mode)."""
    st = copy.deepcopy(state)
    for op in ops:
        parts = op.path.split("/")
        top = parts[0]
        if top == "hosts":
            nqn = parts[1]
            if op.kind == "mkdir":
                st["hosts"][nqn] = {"hostnqn": nqn, "dhchap_key": None, "dhchap_ctrl_key": None,
                                    "dhchap_hash": "hmac(sha256)", "dhchap_dhgroup": "null"}
            elif op.kind == "rmdir":
                st["hosts"].pop(nqn, None)
            elif op.kind == "write":
                st["hosts"][nqn][parts[2]] = op.value
        elif top == "subsystems":
            nqn = parts[1]
            if len(parts) == 2:
                if op.kind == "mkdir":
                    st["subsystems"][nqn] = {"nqn": nqn, "allow_any_host": False, "allowed_hosts": [],
                                             "namespaces": {}, "attributes": {}}
                else:
                    st["subsystems"].pop(nqn, None)
                continue
            sub = st["subsystems"][nqn]
            if parts[2].startswith("attr_"):
                if parts[2] == "attr_allow_any_host":
                    sub["allow_any_host"] = op.value == "1"
                else:
                    sub["attributes"][parts[2][5:]] = op.value
            elif parts[2] == "allowed_hosts":
                if op.kind == "link":
                    sub["allowed_hosts"] = sorted(sub["allowed_hosts"] + [parts[3]])
                else:
                    sub["allowed_hosts"].remove(parts[3])
            elif parts[2] == "namespaces":
                nsid = int(parts[3])
                if op.kind == "mkdir":
                    sub["namespaces"][nsid] = {"nsid": nsid, "device_path": None, "enabled": False, "uuid": None,
                                               "nguid": None, "ana_grpid": 1, "buffered_io": False}
                elif op.kind == "rmdir":
                    sub["namespaces"].pop(nsid, None)
                else:
                    ns = sub["namespaces"][nsid]
                    field = dict((v, k) for k, v in NAMESPACE_FILES.items())[parts[4]]
                    if field in ("enabled", "buffered_io"):
                        ns[field] = op.value == "1"
                    elif field == "ana_grpid":
                        ns[field] = int(op.value)
                    else:
                        ns[field] = op.value
        elif top == "ports":
            pid = int(parts[1])
            if len(parts) == 2:
                if op.kind == "mkdir":
                    st["ports"][pid] = {"port_id": pid, "adrfam": None, "traddr": None, "trsvcid": None,
                                        "trtype": None, "treq": "not specified", "tsas": None,
                                        "inline_data_size": -1, "params": {}, "subsystems": [], "referrals": [],
                                        "ana_groups": {1: "optimized"}}
                else:
                    st["ports"].pop(pid, None)
                continue
            port = st["ports"][pid]
            if parts[2].startswith("addr_"):
                port[parts[2][5:]] = op.value
                if parts[2] == "addr_trtype" and op.value == "tcp" and port.get("tsas") is None:
                    port["tsas"] = "none"
            elif parts[2] == "param_inline_data_size":
                port["inline_data_size"] = int(op.value)
            elif parts[2].startswith("param_"):
                port["params"][parts[2][6:]] = op.value
            elif parts[2] == "subsystems":
                if op.kind == "link":
                    port["subsystems"] = sorted(port["subsystems"] + [parts[3]])
                else:
                    port["subsystems"].remove(parts[3])
            elif parts[2] == "referrals":
                port["referrals"].remove(parts[3])
            elif parts[2] == "ana_groups":
                port["ana_groups"].pop(int(parts[3]), None)
    return st


# --------------------------------------------------------------------------- whole-document restore


def _plan_steps(state, steps):
    """Plan each step (state -> ops) against the state the steps before it leave."""
    ops = []
    for step in steps:
        part = step(state)
        ops.extend(part)
        state = simulate(state, part)
    return ops


def plan_document(tree, state, doc, force=False, allow_reconfigure=False, check_paths=True):
    """Plan a whole nvmetcli save-file document: hosts, then subsystems, then ports."""
    specs = from_savefile(doc)
    conns = tree.connections(state)
    return _plan_steps(state, (
        [lambda st, raw=raw: plan_host(st, normalize_host(raw), conns, force) for raw in specs["hosts"]]
        + [lambda st, raw=raw: plan_subsystem(st, normalize_subsystem(raw, check_paths), conns, force)
           for raw in specs["subsystems"]]
        + [lambda st, raw=raw: plan_port(st, normalize_port(raw, tree.sysfs_root), conns, force, allow_reconfigure)
           for raw in specs["ports"]]))


def restore_document(doc, root="/sys/kernel/config", check=False, force=False, allow_reconfigure=False,
                     tree=None):
    """Make configfs match an nvmetcli save-file document; return the operation texts.

    Validates everything first, then applies (unless check). Raises NvmetError.
    """
    tree = tree or ConfigfsTree(root)
    check_configfs(tree)
    ops = plan_document(tree, tree.read(), doc, force=force, allow_reconfigure=allow_reconfigure)
    if check:
        return [op.text() for op in ops]
    return apply_plan(tree, ops)


def clear_document(doc, root="/sys/kernel/config", check=False, tree=None):
    """Remove what an nvmetcli save-file document lists: ports, then subsystems, then hosts.

    The boot unit's stop action: it runs at shutdown while the network is still up, so
    no initiator write is acknowledged after the final sync of the backing files'
    file system (an acknowledged write into a sparse file is only durable once the
    file system commits it). Connected hosts do not stop it (they reconnect when the
    target is back). Objects the document does not list are left alone. Returns the
    operation texts; [] when nvmet is not loaded.
    """
    tree = tree or ConfigfsTree(root)
    if not os.path.isdir(tree.nvmet):
        return []
    state = tree.read()
    conns = tree.connections(state)
    specs = from_savefile(doc)
    ops = _plan_steps(state, (
        [lambda st, pid=raw["port_id"]: plan_port(st, {"port_id": pid, "state": "absent"}, conns, force=True)
         for raw in specs["ports"]]
        + [lambda st, nqn=raw["nqn"]: plan_subsystem(st, {"nqn": nqn, "state": "absent"}, conns, force=True)
           for raw in specs["subsystems"]]
        + [lambda st, nqn=raw["hostnqn"]: plan_host(st, {"hostnqn": nqn, "state": "absent"}, conns, force=True)
           for raw in specs["hosts"]]))
    if check:
        return [op.text() for op in ops]
    return apply_plan(tree, ops)


def save_to_file(tree, path, check=False, remove_when_empty=False):
    """Write the configuration, keys included, to path (mode 0600, parent 0700) when it differs.

    The keys never leave the host: only a one-word outcome is returned -- "unchanged",
    "written", or with remove_when_empty and no object left, "removed" or "absent".
    With check nothing is written and the outcome is "would write" or "would remove".
    """
    check_configfs(tree)
    doc = to_savefile(tree.read(), mask_keys=False)
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    exists = os.path.exists(path)
    if remove_when_empty and not any(doc.get(k) for k in ("hosts", "ports", "subsystems")):
        if not exists:
            return "absent"
        if not check:
            os.unlink(path)
        return "would remove" if check else "removed"
    if exists:
        with open(path) as f:
            if f.read() == text:
                return "unchanged"
    if check:
        return "would write"
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    tmp = "%s.%d.tmp" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return "written"


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(prog="nvmet.py", description="Restore or save the kernel NVMe-oF target "
                                     "configuration (nvmetcli save-file JSON) declaratively.")
    parser.add_argument("--configfs-root", default="/sys/kernel/config")
    sub = parser.add_subparsers(dest="command")
    r = sub.add_parser("restore", help="make configfs match FILE; print each operation")
    r.add_argument("file")
    r.add_argument("--check", action="store_true", help="print the plan, change nothing")
    r.add_argument("--force", action="store_true", help="proceed even when hosts are connected")
    r.add_argument("--allow-reconfigure", action="store_true", help="unlink/change/relink ports whose address differs")
    c = sub.add_parser("clear", help="remove the ports, subsystems and hosts FILE lists (ports first), even with "
                       "hosts connected; a missing FILE or an unloaded nvmet is nothing to do")
    c.add_argument("file")
    c.add_argument("--check", action="store_true", help="print the plan, change nothing")
    s = sub.add_parser("save", help="print the current configuration (keys in clear with --keys)")
    s.add_argument("--keys", action="store_true")
    s.add_argument("--output", metavar="FILE", help="write to FILE (keys included, mode 0600) when it differs, "
                   "print unchanged/written instead of the configuration")
    s.add_argument("--remove-when-empty", action="store_true",
                   help="with --output: delete FILE when no host, port or subsystem is left (print removed/absent)")
    s.add_argument("--check", action="store_true", help="with --output: report what would happen, write nothing")
    args = parser.parse_args(argv)
    tree = ConfigfsTree(args.configfs_root)
    try:
        if args.command == "restore":
            with open(args.file) as f:
                doc = json.load(f)
            for line in restore_document(doc, check=args.check, force=args.force,
                                         allow_reconfigure=args.allow_reconfigure, tree=tree):
                sys.stdout.write(("would " if args.check else "") + line + "\n")
        elif args.command == "clear":
            if not os.path.exists(args.file):
                return 0
            with open(args.file) as f:
                doc = json.load(f)
            for line in clear_document(doc, check=args.check, tree=tree):
                sys.stdout.write(("would " if args.check else "") + line + "\n")
        elif args.command == "save" and args.output:
            sys.stdout.write(save_to_file(tree, args.output, check=args.check,
                                          remove_when_empty=args.remove_when_empty) + "\n")
        elif args.command == "save":
            check_configfs(tree)
            sys.stdout.write(json.dumps(to_savefile(tree.read(), mask_keys=not args.keys), indent=2, sort_keys=True) + "\n")
        else:
            parser.print_help()
            return 2
    except NvmetError as exc:
        for line in exc.applied:
            sys.stdout.write(line + "\n")
        sys.stderr.write("error: %s\n" % exc.msg)
        return 1
    except (OSError, ValueError) as exc:
        sys.stderr.write("error: %s\n" % exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
