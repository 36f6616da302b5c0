# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation and normalization of user input (module parameters, save-file entries).

Everything here runs before anything on the host changes and raises NvmetError naming
the parameter and the value.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import stat
import zlib

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import canonical
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import (
    ADRFAMS,
    ANA_GRPID_MAX,
    DHGROUPS,
    HASHES,
    HOST_KEY_FIELDS,
    DISCOVERY_NQN,
    IDENTITY_ATTRS,
    NQN_MAX_BYTES,
    NSID_MAX,
    TRANSPORT_MODULES,
    TREQ_VALUES,
    NvmetError,
    _ATTR_NAME_RE,
    _DHCHAP_KEY_LENGTHS,
    _DHCHAP_RE,
    _NQN_RE,
    _NQN_UUID_PREFIX,
    _UUID_RE,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.discovery import normalize_referrals, validate_discovery_nqn


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
    """The address family of ``traddr`` on a port of ``trtype`` (None: cannot tell)."""
    row = transports.get(trtype)
    if row is None or row.address is None or not traddr:
        return None
    if row.address == "fc":
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


def _kernel_form(convert, name, value, param):
    """``convert(name, value)`` (a canonical.* function), with the kernel's refusal as an NvmetError."""
    try:
        return convert(name, value)
    except canonical.KernelRejects as exc:
        raise NvmetError("%s: %s; the kernel refuses it" % (param, exc)) from None


def module_loaded(name, sysfs_root="/sys"):
    return os.path.isdir(os.path.join(sysfs_root, "module", name))


def check_configfs(tree):
    if not tree.exists():
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
    if h is not None and h not in HASHES:
        raise NvmetError("dhchap_hash: %r is not one of %s" % (h, ", ".join(HASHES)))
    g = s.get("dhchap_dhgroup")
    if g is not None and g not in DHGROUPS:
        raise NvmetError("dhchap_dhgroup: %r is not one of %s" % (g, ", ".join(DHGROUPS)))
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
    # Identity and attributes in the form the kernel shows them, so that comparing with
    # what is read back is exact; values the kernel refuses fail here, before any change.
    for name in IDENTITY_ATTRS:
        if s.get(name) is not None:
            s[name] = _kernel_form(canonical.subsystem_attr, name, s[name], name)
    attrs = _check_attr_names(s.get("attributes"), "attributes", ("allow_any_host",) + IDENTITY_ATTRS)
    s["attributes"] = dict((k, _kernel_form(canonical.subsystem_attr, k, v, "attributes.%s" % k))
                           for k, v in attrs.items())
    if "cntlid_min" in s["attributes"] and "cntlid_max" in s["attributes"]:
        low, high = int(s["attributes"]["cntlid_min"]), int(s["attributes"]["cntlid_max"])
        if low > high:
            raise NvmetError("attributes: cntlid_min %d is above cntlid_max %d; the kernel refuses that" % (low, high))
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
    row = transports.get(trtype)
    if row.address is not None:
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
    if row.service_id is not None:
        if s.get("trsvcid") is None:
            s["trsvcid"] = row.service_id
        s["trsvcid"] = str(_check_int(s["trsvcid"], "trsvcid", 1, 65535))
    if s.get("treq") is not None and s["treq"] not in TREQ_VALUES:
        raise NvmetError("treq: %r is not one of %s" % (s["treq"], ", ".join(TREQ_VALUES)))
    if s.get("tsas") is not None:
        if not row.tls:
            raise NvmetError("tsas: %r is only meaningful for trtype %s (TLS), not %s"
                             % (s["tsas"], transports.spelled(transports.names(tls=True)), trtype))
        if s["tsas"] not in ("none", "tls1.3"):
            raise NvmetError("tsas: %r is not one of none, tls1.3" % s["tsas"])
    if s.get("inline_data_size") is not None:
        s["inline_data_size"] = int(_kernel_form(canonical.port_param, "inline_data_size", s["inline_data_size"],
                                                 "inline_data_size"))
    params = _check_attr_names(s.get("params"), "params", ("inline_data_size",))
    s["params"] = dict((k, _kernel_form(canonical.port_param, k, v, "params.%s" % k)) for k, v in params.items())
    groups = []
    for i, grp in enumerate(s.get("ana_groups") or []):
        p = "ana_groups[%d]" % i
        if not isinstance(grp, dict) or grp.get("grpid") is None:
            raise NvmetError("%s.grpid: is required (1..%d)" % (p, ANA_GRPID_MAX))
        grpid = _check_int(grp["grpid"], p + ".grpid", 1, ANA_GRPID_MAX)
        if any(g["grpid"] == grpid for g in groups):
            raise NvmetError("%s.grpid: %d is listed twice" % (p, grpid))
        state = grp.get("state")
        if state is not None and state not in canonical.ANA_STATES:
            raise NvmetError("%s.state: %r is not one of %s" % (p, state, ", ".join(canonical.ANA_STATES)))
        groups.append({"grpid": grpid, "state": state})
    s["ana_groups"] = groups
    s["referrals"] = normalize_referrals(s.get("referrals"), _check_int, validate_traddr, derive_adrfam)
    if s.get("discovery_nqn") is not None:
        validate_discovery_nqn(s["discovery_nqn"])
    for i, nqn in enumerate(s.get("subsystems") or []):
        validate_nqn(nqn, "subsystems[%d]" % i)
    if s.get("subsystems") is not None and len(set(s["subsystems"])) != len(s["subsystems"]):
        raise NvmetError("subsystems: %r lists a subsystem twice" % (s["subsystems"],))
    return s
