# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvmeof_target role's variables turned into one nvmet_target document (standard library only).

The role describes a target as lists: ``nvmeof_target_subsystems`` (NQN, namespaces from
block devices by stable id or from files, allowed hosts by NQN or inventory group) and
``nvmeof_target_ports`` (transport, address, service id, ANA group states). The seed's
single-subsystem variables are the short form of a one-item list of each. Three steps,
each a pure function the role calls through the ``aiinfra.fabric.nvmet_topology_*``
filters, so every rule here is unit-tested:

1. :func:`normalize`  the variables, checked whole (every error at once, each with its
                      place); nothing on a host has changed when it fails.
2. :func:`resolve_devices`  block devices by serial or WWN to their /dev/disk/by-id path,
                      from the target's own listing of /dev/disk/by-id.
3. :func:`build_document`  the save-file document (allowed host groups resolved to the
                      members' host NQNs, DH-HMAC-CHAP keys attached).

:func:`record_after_converge` and :func:`teardown_plan` keep the record the teardown
works from (what converge created, whatever variables the teardown run is given).
"""

from __future__ import annotations

import posixpath
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.canonical import ANA_STATES
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError

BY_ID = "/dev/disk/by-id/"
# The role's ports are IP addresses with service ids and firewall rules.
TRANSPORTS = tuple(sorted(transports.IP_TRANSPORTS))
SUBSYSTEM_KEYS = ("nqn", "namespaces", "allowed_hosts", "allow_any_host", "ports")
NAMESPACE_KEYS = ("nsid", "device", "serial", "wwn", "file", "size_mb", "uuid", "nguid", "ana_group", "enabled")
NAMESPACE_SOURCES = ("device", "serial", "wwn", "file")
PORT_KEYS = ("id", "transport", "address", "service_id", "adrfam", "ana_groups", "tls")
# NVMe/TCP TLS of a port: required (TLS 1.3 only), allowed (TLS 1.3 or plain TCP), none.
TLS_MODES = ("none", "required", "allowed")
_TLS_TREQ = {"required": "required", "allowed": "not required"}
# Names the kernel gives in discovery order: they can change at the next boot.
_KERNEL_NAME = re.compile(r"^/dev/(nvme\d+n\d+(p\d+)?|nvme\d+c\d+n\d+|[shv]d[a-z]+\d*|xvd[a-z]+\d*)$")
_NQN = re.compile(r"^nqn\.\d{4}-\d{2}\.[^:]+(:.+)?$|^nqn\.2014-08\.org\.nvmexpress:uuid:[0-9a-fA-F-]{36}$")
_PART = re.compile(r"-part\d+$")
# Errors about the short form's port name its variables, not the long form's keys.
_SHORT_PORT = "<short port>"
_SHORT_NAMES = {"id": "nvmeof_target_port_id", "transport": "nvmeof_target_transport",
                "address": "nvmeof_target_address", "service_id": "nvmeof_target_trsvcid",
                "adrfam": "nvmeof_target_adrfam", "tls": "nvmeof_target_tls"}


def _short_names(error):
    for key, name in _SHORT_NAMES.items():
        error = error.replace("%s.%s:" % (_SHORT_PORT, key), name + ":")
    error = error.replace(_SHORT_PORT, "nvmeof_target port")
    for key in ("file", "device", "size_mb"):
        error = error.replace("nvmeof_target.%s:" % key, "nvmeof_target_backing_%s:" % key)
    return error.replace("nvmeof_target.", "nvmeof_target_")


class TopologyError(NvmetError):
    """The variables are wrong; ``errors`` lists every problem, each starting with its place."""

    def __init__(self, errors):
        super().__init__("nvmeof_target: %d error(s) in the variables, nothing was changed: %s"
                         % (len(errors), "; ".join(errors)))
        self.errors = list(errors)


def _int(value, where, lo, hi, errors):
    try:
        if isinstance(value, bool):
            raise ValueError
        out = int(str(value), 10)
    except (TypeError, ValueError):
        errors.append("%s: %r is not a whole number" % (where, value))
        return None
    if not lo <= out <= hi:
        errors.append("%s: %d is not in %d..%d" % (where, out, lo, hi))
        return None
    return out


def _bool(value, where, errors):
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    errors.append("%s: %r is not a boolean" % (where, value))
    return False


def _unknown(item, allowed, where, errors):
    for key in sorted(set(item) - set(allowed)):
        errors.append("%s.%s: unknown key (known: %s)" % (where, key, ", ".join(allowed)))


def short_form(v):
    """The seed's single-subsystem variables as one subsystem and one port (long form)."""
    ns = {"nsid": v.get("nsid", 1)}
    if v.get("backing_device"):
        ns["device"] = v["backing_device"]
    else:
        ns["file"] = v.get("backing_file")
        ns["size_mb"] = v.get("backing_size_mb", 1024)
    allow_any = bool(v.get("allow_any_host"))
    allowed = [] if allow_any else ([v["initiator_group"]] if v.get("initiator_group") else []) + list(
        v.get("allowed_hosts") or [])
    sub = {"nqn": v.get("nqn"), "namespaces": [ns], "allowed_hosts": allowed, "allow_any_host": allow_any}
    port = {"id": v.get("port_id", 1), "transport": v.get("transport"), "address": v.get("address"),
            "service_id": v.get("trsvcid", transports.DEFAULT_SERVICE_ID)}
    if v.get("adrfam"):
        port["adrfam"] = v["adrfam"]
    if v.get("tls"):
        port["tls"] = v["tls"]
    return [sub], [port]


def _namespace(ns, where, short, errors, index):
    if not isinstance(ns, dict):
        errors.append("%s: must be a mapping, got %s" % (where, type(ns).__name__))
        return None
    _unknown(ns, NAMESPACE_KEYS, where, errors)
    nsid = _int(ns.get("nsid", index + 1), where + ".nsid", 1, 0xFFFFFFFE, errors)
    given = [k for k in NAMESPACE_SOURCES if ns.get(k) not in (None, "")]
    if len(given) != 1:
        errors.append("%s: give exactly one of device (a %s path), serial, wwn or file; got %s"
                      % (where, BY_ID, ", ".join(given) or "none"))
        return None
    kind = given[0]
    value = str(ns[kind]).strip()
    enabled = _bool(ns.get("enabled", True), where + ".enabled", errors)
    out = {"nsid": nsid, "kind": kind, "value": value, "enabled": enabled}
    if kind in ("device", "file") and _KERNEL_NAME.match(posixpath.normpath(value)):
        errors.append("%s.%s: %r is a kernel name that can change at the next boot; use its %s path, its serial "
                      "or its WWN" % (where, kind, value, BY_ID))
        return None
    if kind == "device":
        if not value.startswith("/dev/"):
            errors.append("%s.device: %r is not a device path; give a %s path, or serial or wwn" % (where, value, BY_ID))
        elif not short and not value.startswith(BY_ID):
            errors.append("%s.device: %r is not a stable id; give a %s path, or serial or wwn" % (where, value, BY_ID))
    elif kind == "file":
        if not posixpath.isabs(value) or value.startswith("/dev/"):
            errors.append("%s.file: %r is not an absolute path to a regular file" % (where, value))
        out["size_mb"] = _int(ns.get("size_mb", 1024), where + ".size_mb", 1, 1 << 40, errors)
    elif "/" in value or " " in value:
        errors.append("%s.%s: %r contains '/' or a space; give the bare %s as the device reports it"
                      % (where, kind, value, kind))
    if kind != "file" and ns.get("size_mb") is not None:
        errors.append("%s.size_mb: only a file namespace has a size (a block device has its own)" % where)
    for key in ("uuid", "nguid"):
        if ns.get(key):
            out[key] = str(ns[key])
    if ns.get("ana_group") is not None:
        out["ana_group"] = _int(ns["ana_group"], where + ".ana_group", 1, 128, errors)
    return out


def _port(p, where, errors):
    if not isinstance(p, dict):
        errors.append("%s: must be a mapping, got %s" % (where, type(p).__name__))
        return None
    _unknown(p, PORT_KEYS, where, errors)
    out = {"id": _int(p.get("id"), where + ".id", 1, 65535, errors)}
    transport = p.get("transport")
    if transport not in TRANSPORTS:
        errors.append("%s.transport: %r is not one of %s" % (where, transport, ", ".join(TRANSPORTS)))
    address = str(p.get("address") or "").strip()
    if not address:
        errors.append("%s.address: is required (the address the port listens on)" % where)
    row = transports.get(transport) if transport in TRANSPORTS else None
    service = _int(p.get("service_id", row.service_id if row else transports.DEFAULT_SERVICE_ID),
                   where + ".service_id", 1, 65535, errors)
    adrfam = p.get("adrfam") or ("ipv6" if ":" in address else "ipv4")
    if adrfam not in ("ipv4", "ipv6"):
        errors.append("%s.adrfam: %r is not ipv4 or ipv6" % (where, adrfam))
    groups = []
    for i, g in enumerate(p.get("ana_groups") or []):
        gw = "%s.ana_groups[%d]" % (where, i)
        if not isinstance(g, dict):
            errors.append("%s: must be a mapping with id and state" % gw)
            continue
        _unknown(g, ("id", "state"), gw, errors)
        gid = _int(g.get("id"), gw + ".id", 1, 128, errors)
        if g.get("state", "optimized") not in ANA_STATES:
            errors.append("%s.state: %r is not one of %s" % (gw, g.get("state"), ", ".join(ANA_STATES)))
        if gid is not None and gid in [x["id"] for x in groups]:
            errors.append("%s.id: group %d is listed twice" % (gw, gid))
        groups.append({"id": gid, "state": g.get("state", "optimized")})
    tls = p.get("tls", "none")
    if tls not in TLS_MODES:
        errors.append("%s.tls: %r is not one of %s" % (where, tls, ", ".join(TLS_MODES)))
    elif tls != "none" and not (row and row.tls):
        errors.append("%s.tls: TLS is for NVMe/TCP ports; this port's transport is %s" % (where, transport))
    out.update(transport=transport, address=address, service_id=str(service), adrfam=adrfam, ana_groups=groups,
               tls=tls)
    return out


def normalize(subsystems, ports, short, inventory_groups):
    """Check the role's variables whole and return the topology in one shape.

    ``subsystems``/``ports`` are the long-form lists (empty: the short form ``short``,
    a dict of the seed variables without their ``nvmeof_target_`` prefix, stands in).
    ``inventory_groups`` are the inventory's group names (an allowed host that is not an
    NQN must be one). Raises TopologyError with every problem found.
    """
    errors = []
    short_subs, short_ports = short_form(short or {})
    long_subs = bool(subsystems)
    subsystems = subsystems if long_subs else short_subs
    if not isinstance(subsystems, list) or not isinstance(ports, list):
        raise TopologyError(["nvmeof_target_subsystems and nvmeof_target_ports: must be lists"])
    long_ports = bool(ports)
    ports = ports if long_ports else short_ports
    out_ports, seen_ports, seen_addr = [], set(), {}
    for i, p in enumerate(ports):
        where = "nvmeof_target_ports[%d]" % i if long_ports else _SHORT_PORT
        port = _port(p, where, errors)
        if port is None:
            continue
        if port["id"] in seen_ports:
            errors.append("%s.id: port %s is listed twice" % (where, port["id"]))
        seen_ports.add(port["id"])
        key = (port["transport"], port["address"], port["service_id"])
        if key in seen_addr:
            errors.append("%s: %s %s:%s is also %s" % (where, key[0], key[1], key[2], seen_addr[key]))
        seen_addr[key] = where
        out_ports.append(port)
    out_subs, seen_nqns, groups = [], set(), set()
    for i, s in enumerate(subsystems):
        where = "nvmeof_target_subsystems[%d]" % i if long_subs else "nvmeof_target"
        if not isinstance(s, dict):
            errors.append("%s: must be a mapping, got %s" % (where, type(s).__name__))
            continue
        _unknown(s, SUBSYSTEM_KEYS, where, errors)
        nqn = str(s.get("nqn") or "")
        if not _NQN.match(nqn) or len(nqn) > 223:
            errors.append("%s.nqn: %r is not an NQN (nqn.yyyy-mm.reverse-domain:name, at most 223 bytes)" % (where, nqn))
        if nqn in seen_nqns:
            errors.append("%s.nqn: %s is listed twice" % (where, nqn))
        seen_nqns.add(nqn)
        namespaces, nsids = [], set()
        for j, ns in enumerate(s.get("namespaces") or []):
            nw = "%s.namespaces[%d]" % (where, j) if long_subs else "nvmeof_target"
            out = _namespace(ns, nw, not long_subs, errors, j)
            if out is None:
                continue
            if out["nsid"] in nsids:
                errors.append("%s.nsid: %s is listed twice in %s" % (nw, out["nsid"], nqn))
            nsids.add(out["nsid"])
            namespaces.append(out)
        if not namespaces and not errors:
            errors.append("%s.namespaces: a subsystem needs at least one namespace" % where)
        allow_any = _bool(s.get("allow_any_host", False), where + ".allow_any_host", errors)
        allowed = list(s.get("allowed_hosts") or [])
        if allow_any and allowed and long_subs:
            errors.append("%s: allow_any_host is true and allowed_hosts is not empty; choose one" % where)
        for j, h in enumerate(allowed):
            if str(h).startswith("nqn."):
                if not _NQN.match(str(h)):
                    errors.append("%s.allowed_hosts[%d]: %r is not a valid host NQN" % (where, j, h))
            elif h in inventory_groups:
                groups.add(h)
            else:
                errors.append("%s.allowed_hosts[%d]: %r is neither a host NQN (nqn...) nor an inventory group"
                              % (where, j, h))
        port_ids = s.get("ports")
        if port_ids is None:
            port_ids = [p["id"] for p in out_ports]
        else:
            port_ids = [_int(x, where + ".ports", 1, 65535, errors) for x in port_ids]
            for pid in port_ids:
                if pid is not None and pid not in seen_ports:
                    errors.append("%s.ports: port %s is not in nvmeof_target_ports" % (where, pid))
        for ns in namespaces:
            grp = ns.get("ana_group")
            if grp not in (None, 1) and not any(
                    grp in [g["id"] for g in p["ana_groups"]] for p in out_ports if p["id"] in port_ids):
                errors.append("%s: namespace %s is in ANA group %s, which none of its ports declares in ana_groups"
                              % (where, ns["nsid"], grp))
        out_subs.append({"nqn": nqn, "namespaces": namespaces, "allowed_hosts": allowed,
                         "allow_any_host": allow_any, "ports": port_ids})
    if errors:
        raise TopologyError([_short_names(e) for e in errors])
    kinds = set(ns["kind"] for s in out_subs for ns in s["namespaces"])
    files = {}
    for s in out_subs:
        for ns in s["namespaces"]:
            if ns["kind"] == "file":
                files.setdefault(ns["value"], ns["size_mb"])
    return {"subsystems": out_subs, "ports": out_ports, "groups": sorted(groups),
            "needs_by_id": bool(kinds - {"file"}),
            "files": [{"path": k, "size_mb": v} for k, v in sorted(files.items())],
            "transports": sorted(set(p["transport"] for p in out_ports))}


def parse_by_id(lines):
    """``find /dev/disk/by-id -maxdepth 1 -type l -printf '%f %l\\n'`` output: {name: kernel name}."""
    out = {}
    for line in lines or []:
        parts = line.strip().split(" ", 1)
        if len(parts) == 2 and parts[0] and "/" not in parts[0]:
            out[parts[0]] = posixpath.basename(parts[1])
    return out


def _candidates(kind, value, links):
    if kind == "serial":
        return [n for n in links if not _PART.search(n) and (n.endswith("_" + value) or n.endswith("_" + value + "_1"))]
    wwn = value.lower()
    names = set(["wwn-" + wwn, "nvme-" + wwn, "nvme-eui." + wwn])
    if not wwn.startswith("0x"):
        names.add("wwn-0x" + wwn)
    return [n for n in links if n.lower() in names]


def resolve_devices(topology, by_id_lines):
    """Each block namespace's /dev/disk/by-id path (``path``) and kernel name (``kernel``).

    A serial or WWN is looked up in the target's own listing; one that matches nothing,
    or names two different devices, is an error, as are two namespaces on one device.
    """
    links = parse_by_id(by_id_lines)
    errors, used = [], {}
    topo = {"subsystems": [], "ports": topology["ports"], "groups": topology["groups"],
            "files": topology["files"], "transports": topology["transports"], "devices": []}
    for s in topology["subsystems"]:
        sub = dict(s, namespaces=[])
        for ns in s["namespaces"]:
            ns = dict(ns)
            where = "%s namespace %s (%s %s)" % (s["nqn"], ns["nsid"], ns["kind"], ns["value"])
            if ns["kind"] == "file":
                ns["path"] = ns["value"]
                sub["namespaces"].append(ns)
                continue
            if ns["kind"] == "device":
                name = posixpath.basename(ns["value"])
                if ns["value"].startswith(BY_ID) and name not in links:
                    errors.append("%s: no such entry in %s on the target" % (where, BY_ID))
                    continue
                ns["path"], ns["kernel"] = ns["value"], links.get(name, "")
            else:
                found = sorted(_candidates(ns["kind"], ns["value"], links), key=lambda n: (len(n), n))
                kernels = sorted(set(links[n] for n in found))
                if not found:
                    errors.append("%s: no device in %s on the target has this %s" % (where, BY_ID, ns["kind"]))
                    continue
                if len(kernels) > 1:
                    errors.append("%s: matches several devices (%s); give the %s path"
                                  % (where, ", ".join("%s -> %s" % (n, links[n]) for n in found), BY_ID))
                    continue
                ns["path"], ns["kernel"] = BY_ID + found[0], kernels[0]
            key = ns["kernel"] or ns["path"]
            if key in used:
                errors.append("%s: the same device as %s" % (where, used[key]))
                continue
            used[key] = where
            topo["devices"].append(ns["path"])
            sub["namespaces"].append(ns)
        topo["subsystems"].append(sub)
    if errors:
        raise TopologyError(errors)
    return topo


def build_document(topology, members, identities):
    """The nvmet_target document for a resolved topology, without keys (:func:`add_keys`).

    ``members``: {group: [inventory hosts]} for the groups the topology names;
    ``identities``: {inventory host: {"hostnqn": ...}}.
    """
    errors, hosts = [], []
    subsystems = []
    for s in topology["subsystems"]:
        allowed = []
        for h in [] if s["allow_any_host"] else s["allowed_hosts"]:
            if str(h).startswith("nqn."):
                nqns = [h]
            else:
                nqns = []
                for m in members.get(h) or []:
                    if not (identities.get(m) or {}).get("hostnqn"):
                        errors.append("%s: host %s of group %s has no host NQN (run the nvmeof_initiator role "
                                      "first, it creates /etc/nvme/hostnqn, or list the NQN in allowed_hosts)"
                                      % (s["nqn"], m, h))
                    else:
                        nqns.append(identities[m]["hostnqn"])
            allowed.extend(n for n in nqns if n not in allowed)
        if not allowed and not s["allow_any_host"]:
            errors.append("%s: no host would be allowed (allowed_hosts %s name no host); list host NQNs or groups "
                          "with members, or set allow_any_host" % (s["nqn"], s["allowed_hosts"]))
        hosts.extend(n for n in allowed if n not in hosts)
        namespaces = []
        for ns in s["namespaces"]:
            dev = {"path": ns["path"]}
            for key in ("uuid", "nguid"):
                if ns.get(key):
                    dev[key] = ns[key]
            entry = {"nsid": ns["nsid"], "enable": 1 if ns["enabled"] else 0, "device": dev}
            if ns.get("ana_group") is not None:
                entry["ana_grpid"] = ns["ana_group"]
            namespaces.append(entry)
        subsystems.append({"nqn": s["nqn"], "attr": {"allow_any_host": "1" if s["allow_any_host"] else "0"},
                           "allowed_hosts": allowed, "namespaces": namespaces})
    if errors:
        raise TopologyError(errors)
    ports = []
    for p in topology["ports"]:
        entry = {"portid": p["id"],
                 "addr": {"trtype": p["transport"], "adrfam": p["adrfam"], "traddr": p["address"],
                          "trsvcid": p["service_id"]},
                 "subsystems": [s["nqn"] for s in topology["subsystems"] if p["id"] in s["ports"]]}
        if p.get("tls", "none") != "none":
            # The kernel refuses treq "not specified" once tsas is tls1.3; nvmet_target writes treq first.
            entry["addr"].update(treq=_TLS_TREQ[p["tls"]], tsas="tls1.3")
        if p["ana_groups"]:
            entry["ana_groups"] = [{"grpid": g["id"], "ana": {"state": g["state"]}} for g in p["ana_groups"]]
        ports.append(entry)
    return {"hosts": [{"nqn": nqn} for nqn in hosts], "subsystems": subsystems, "ports": ports}


def add_keys(document, keys):
    """The document with each listed host's DH-HMAC-CHAP keys ({hostnqn: {key, ctrl_key}})."""
    out = dict(document, hosts=[])
    for host in document["hosts"]:
        entry = dict(host)
        mine = (keys or {}).get(host["nqn"]) or {}
        if mine.get("key"):
            entry["dhchap"] = {"key": mine["key"]}
            if mine.get("ctrl_key"):
                entry["dhchap"]["ctrl_key"] = mine["ctrl_key"]
        out["hosts"].append(entry)
    return out


def port_rules(topology):
    """The firewall rule each port needs, by port id, as its transport's row says (RoCEv2 is
    UDP 4791, NVMe/TCP its service id)."""
    rules = {}
    for p in topology["ports"]:
        proto, port = transports.get(p["transport"]).firewall
        rules[str(p["id"])] = {"port": port or p["service_id"], "proto": proto}
    return rules
