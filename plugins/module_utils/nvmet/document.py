# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of a whole desired target in nvmetcli's save-file schema (standard library only).

:func:`validate_document` walks the whole document and returns every error it finds,
each naming its place in the document (``subsystems[3].namespaces[7].device.path``),
so a user fixes a document in one round and nothing on the host changes before the
document is clean. The field checks are the package's own (validate.py, canonical.py);
this file only walks the document and names the places.
"""

from __future__ import annotations

import os
import stat

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import canonical
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import (
    ANA_GRPID_MAX,
    DHGROUPS,
    HASHES,
    MASK,
    NSID_MAX,
    PORT_ADDR_FIELDS,
    NvmetError,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.discovery import (
    REFERRAL_FIELDS,
    normalize_referrals,
    validate_discovery_nqn,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import port_address_spec, saved_device_path
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import (
    _check_attr_names,
    _check_int,
    _kernel_form,
    derive_adrfam,
    normalize_nguid,
    normalize_port,
    normalize_uuid,
    validate_dhchap_key,
    validate_nqn,
    validate_traddr,
)

KEYS = {
    "document": ("hosts", "ports", "subsystems", "discovery"),
    "discovery": ("nqn",),
    "host": ("nqn", "dhchap"),
    "dhchap": ("key", "ctrl_key", "hash", "dhgroup"),
    "subsystem": ("nqn", "attr", "allowed_hosts", "namespaces", "passthru"),
    "namespace": ("nsid", "enable", "device", "ana", "ana_grpid", "resv", "buffered_io"),
    "device": ("path", "uuid", "nguid"),
    "port": ("portid", "addr", "param", "subsystems", "referrals", "ana_groups"),
    "addr": PORT_ADDR_FIELDS,
    "ana_group": ("grpid", "ana"),
    "referral": ("name", "enable", "addr"),
    "referral_addr": REFERRAL_FIELDS,
    "passthru": ("device", "enable", "admin_timeout", "io_timeout", "clear_ids"),
    "passthru_device": ("path",),
}
# nvmetcli writes these passthru attributes with the kernel's defaults.
PASSTHRU_DEFAULTS = (("admin_timeout", "0"), ("io_timeout", "0"), ("clear_ids", "1"))
_BOOLS = ("0", "1")


class DocumentError(NvmetError):
    """The document has errors; ``errors`` lists them all, each starting with its path."""

    def __init__(self, errors):
        super().__init__("the target document has %d error(s); nothing was changed: %s"
                         % (len(errors), "; ".join(errors)))
        self.errors = list(errors)


def _given(value):
    return value is not None


def _mapping(value, path, errors, allow_none=True):
    """value as a dict ({} for None when allowed), or None after recording an error."""
    if value is None and allow_none:
        return {}
    if not isinstance(value, dict):
        errors.append("%s: must be a mapping, got %s" % (path, type(value).__name__))
        return None
    return value


def _sequence(value, path, errors):
    if value is None:
        return []
    if not isinstance(value, list):
        errors.append("%s: must be a list, got %s" % (path, type(value).__name__))
        return []
    return value


def _unknown_keys(entry, kind, path, errors):
    for key in sorted(set(entry) - set(KEYS[kind]), key=str):
        errors.append("%s: is not part of the save-file schema (allowed here: %s)"
                      % ("%s.%s" % (path, key) if path else key, ", ".join(KEYS[kind])))


def _check(errors, fn, *args):
    """Run one field check; record its NvmetError (its message already names the path)."""
    try:
        return fn(*args)
    except NvmetError as exc:
        errors.append(exc.msg)
        return None


def _flag(value, path, errors):
    if value is None:
        return None
    text = str(int(value)) if isinstance(value, bool) else str(value)
    if text not in _BOOLS:
        errors.append("%s: %r is not 0 or 1" % (path, value))
        return None
    return text == "1"


def _duplicate(seen, key, path, what, errors):
    if key is None:
        return
    if key in seen:
        errors.append("%s: %s %s is also %s; each may be listed once" % (path, what, key, seen[key]))
    else:
        seen[key] = path


def _host(h, p, errors, seen):
    h = _mapping(h, p, errors, allow_none=False)
    if h is None:
        return
    _unknown_keys(h, "host", p, errors)
    nqn = _check(errors, validate_nqn, h.get("nqn"), p + ".nqn")
    _duplicate(seen, nqn, p + ".nqn", "host", errors)
    dh = _mapping(h.get("dhchap"), p + ".dhchap", errors)
    if dh is None:
        return
    _unknown_keys(dh, "dhchap", p + ".dhchap", errors)
    for field in ("key", "ctrl_key"):
        value = dh.get(field)
        if value == MASK:
            errors.append("%s.dhchap.%s: is masked (%s, as nvmet_info shows keys); give the key itself, or the host "
                          "would be admitted without authentication" % (p, field, MASK))
        elif value:
            _check(errors, validate_dhchap_key, value, "%s.dhchap.%s" % (p, field))
    if dh.get("ctrl_key") and not dh.get("key"):
        errors.append("%s.dhchap.ctrl_key: bidirectional authentication also needs dhchap.key" % p)
    if _given(dh.get("hash")) and dh["hash"] not in HASHES:
        errors.append("%s.dhchap.hash: %r is not one of %s" % (p, dh["hash"], ", ".join(HASHES)))
    if _given(dh.get("dhgroup")) and dh["dhgroup"] not in DHGROUPS:
        errors.append("%s.dhchap.dhgroup: %r is not one of %s" % (p, dh["dhgroup"], ", ".join(DHGROUPS)))


def _attributes(attr, p, errors):
    """Subsystem attributes: names, the kernel's accepted values; returns allow_any_host."""
    allow_any = False
    cntlid = {}
    for name in sorted(attr, key=str):
        value = attr[name]
        where = "%s.attr.%s" % (p, name)
        if name == "allow_any_host":
            allow_any = bool(_flag(value, where, errors))
            continue
        if _check(errors, _check_attr_names, {name: value}, p + ".attr", ()) is None:
            continue
        shown = _check(errors, _kernel_form, canonical.subsystem_attr, name, str(value), where)
        if shown is not None and name in ("cntlid_min", "cntlid_max"):
            cntlid[name] = int(shown)
    if len(cntlid) == 2 and cntlid["cntlid_min"] > cntlid["cntlid_max"]:
        errors.append("%s.attr.cntlid_min: %d is above cntlid_max %d; the kernel refuses that"
                      % (p, cntlid["cntlid_min"], cntlid["cntlid_max"]))
    return allow_any


def _namespace(ns, p, errors, nsids, devices, check_paths):
    ns = _mapping(ns, p, errors, allow_none=False)
    if ns is None:
        return
    _unknown_keys(ns, "namespace", p, errors)
    nsid = _check(errors, _check_int, ns.get("nsid"), p + ".nsid", 1, NSID_MAX) if _given(ns.get("nsid")) else None
    if not _given(ns.get("nsid")):
        errors.append("%s.nsid: is required (1..%d)" % (p, NSID_MAX))
    _duplicate(nsids, nsid, p + ".nsid", "namespace", errors)
    _flag(ns.get("enable"), p + ".enable", errors)
    _flag(ns.get("buffered_io"), p + ".buffered_io", errors)
    if _given(ns.get("ana_grpid")):
        _check(errors, _check_int, ns["ana_grpid"], p + ".ana_grpid", 1, ANA_GRPID_MAX)
    ana = _mapping(ns.get("ana"), p + ".ana", errors) or {}
    if _given(ana.get("grpid")):
        _check(errors, _check_int, ana["grpid"], p + ".ana.grpid", 1, ANA_GRPID_MAX)
    resv = _mapping(ns.get("resv"), p + ".resv", errors) or {}
    if str(resv.get("enable", "0")) != "0":
        errors.append("%s.resv.enable: persistent reservations are not managed by this module; leave them out or 0" % p)
    dev = _mapping(ns.get("device"), p + ".device", errors)
    if dev is None:
        return
    _unknown_keys(dev, "device", p + ".device", errors)
    path = dev.get("path")
    if not path:
        errors.append("%s.device.path: is required (the block device or file the namespace exports)" % p)
    elif not isinstance(path, str) or not os.path.isabs(path):
        errors.append("%s.device.path: %r is not an absolute path" % (p, path))
    else:
        if check_paths:
            try:
                st = os.stat(path)
            except OSError as exc:
                errors.append("%s.device.path: %r does not exist or cannot be read (%s)" % (p, path, exc.strerror))
            else:
                if not (stat.S_ISBLK(st.st_mode) or stat.S_ISREG(st.st_mode)):
                    errors.append("%s.device.path: %r is neither a block device nor a regular file" % (p, path))
        real = os.path.realpath(path)
        if real in devices:
            errors.append("%s.device.path: %r is also exported by %s; two namespaces on one device are two "
                          "uncoordinated writers" % (p, path, devices[real]))
        else:
            devices[real] = p
    if _given(dev.get("uuid")):
        _check(errors, normalize_uuid, dev["uuid"], p + ".device.uuid")
    if _given(dev.get("nguid")):
        _check(errors, normalize_nguid, dev["nguid"], p + ".device.nguid")


def _passthru(s, p, errors, check_paths):
    """nvmetcli's passthru group: a list of at most one {device: {path}, enable}; an
    enabled passthru subsystem gets its namespaces from the controller, so it has none."""
    entries = _sequence(s.get("passthru"), p + ".passthru", errors)
    if len(entries) > 1:
        errors.append("%s.passthru: a subsystem has one passthru controller, got %d entries" % (p, len(entries)))
    for i, pt in enumerate(entries[:1]):
        where = "%s.passthru[%d]" % (p, i)
        pt = _mapping(pt, where, errors, allow_none=False)
        if pt is None:
            continue
        _unknown_keys(pt, "passthru", where, errors)
        for key, default in PASSTHRU_DEFAULTS:
            if _given(pt.get(key)) and str(pt[key]) != default:
                errors.append("%s.%s: %r is not managed by this module (only the kernel's default %s, which nvmetcli "
                              "writes); leave it out" % (where, key, pt[key], default))
        dev = _mapping(pt.get("device"), where + ".device", errors) or {}
        _unknown_keys(dev, "passthru_device", where + ".device", errors)
        path = saved_device_path(dev)
        enabled = _flag(pt.get("enable", 1 if path else 0), where + ".enable", errors)
        if path is not None and (not isinstance(path, str) or not os.path.isabs(path)):
            errors.append("%s.device.path: %r is not an absolute path (the NVMe controller, /dev/nvmeN)" % (where, path))
        elif path and check_paths:
            try:
                st = os.stat(path)
            except OSError as exc:
                errors.append("%s.device.path: %r does not exist or cannot be read (%s)" % (where, path, exc.strerror))
            else:
                if not stat.S_ISCHR(st.st_mode):
                    errors.append("%s.device.path: %r is not a character device (an NVMe controller, /dev/nvmeN)"
                                  % (where, path))
        if enabled and not path:
            errors.append("%s.enable: a passthru subsystem needs device.path (the NVMe controller) to be enabled" % where)
        if enabled and s.get("namespaces"):
            errors.append("%s: an enabled passthru subsystem cannot have namespaces (the kernel refuses both); "
                          "leave namespaces empty" % where)


def _referrals(pt, p, errors):
    """nvmetcli's referrals of a port: each {name, enable, addr: {trtype, adrfam, traddr, ...}}."""
    specs = []
    for i, ref in enumerate(_sequence(pt.get("referrals"), p + ".referrals", errors)):
        where = "%s.referrals[%d]" % (p, i)
        ref = _mapping(ref, where, errors, allow_none=False)
        if ref is None:
            return
        _unknown_keys(ref, "referral", where, errors)
        addr = _mapping(ref.get("addr"), where + ".addr", errors) or {}
        _unknown_keys(addr, "referral_addr", where + ".addr", errors)
        enabled = _flag(ref.get("enable", 1), where + ".enable", errors)
        specs.append(dict([("name", ref.get("name")), ("enabled", enabled is not False)]
                          + [(f, addr.get(f)) for f in REFERRAL_FIELDS if addr.get(f) not in (None, "")]))
    try:
        normalize_referrals(specs, _check_int, validate_traddr, derive_adrfam)
    except NvmetError as exc:
        errors.append("%s.%s" % (p, exc.msg))


def _discovery(doc, errors):
    disc = _mapping(doc.get("discovery"), "discovery", errors)
    if not disc:
        return
    _unknown_keys(disc, "discovery", "discovery", errors)
    if _given(disc.get("nqn")):
        try:
            validate_discovery_nqn(disc["nqn"])
        except NvmetError as exc:
            errors.append("discovery.nqn: " + exc.msg.split(": ", 1)[-1])


def _subsystem(s, p, errors, seen, devices, check_paths):
    s = _mapping(s, p, errors, allow_none=False)
    if s is None:
        return
    _unknown_keys(s, "subsystem", p, errors)
    nqn = _check(errors, validate_nqn, s.get("nqn"), p + ".nqn")
    _duplicate(seen, nqn, p + ".nqn", "subsystem", errors)
    _passthru(s, p, errors, check_paths)
    attr = _mapping(s.get("attr"), p + ".attr", errors) or {}
    allow_any = _attributes(attr, p, errors)
    hosts = {}
    for i, host in enumerate(_sequence(s.get("allowed_hosts"), p + ".allowed_hosts", errors)):
        where = "%s.allowed_hosts[%d]" % (p, i)
        _duplicate(hosts, _check(errors, validate_nqn, host, where), where, "host", errors)
    if allow_any and hosts:
        errors.append("%s.attr.allow_any_host: 1 and allowed_hosts exclude each other (the kernel refuses both); "
                      "choose one" % p)
    nsids = {}
    for i, ns in enumerate(_sequence(s.get("namespaces"), p + ".namespaces", errors)):
        _namespace(ns, "%s.namespaces[%d]" % (p, i), errors, nsids, devices, check_paths)


def _port_address(pt, addr, param, p, errors, sysfs_root):
    """The address part, checked by normalize_port; its field names mapped to document paths."""
    spec = dict(port_address_spec(addr, param), port_id=0, state="present")
    try:
        normalize_port(spec, sysfs_root)
    except NvmetError as exc:
        head, sep, rest = exc.msg.partition(": ")
        where = "%s.param.%s" % (p, head) if head == "inline_data_size" else "%s.addr.%s" % (p, head)
        errors.append(where + sep + rest if sep else "%s.addr: %s" % (p, exc.msg))
        return None
    return spec


def _port(pt, p, errors, seen, addresses, subsystems_known, sysfs_root):
    pt = _mapping(pt, p, errors, allow_none=False)
    if pt is None:
        return
    _unknown_keys(pt, "port", p, errors)
    if not _given(pt.get("portid")):
        errors.append("%s.portid: is required (0..65535)" % p)
        pid = None
    else:
        pid = _check(errors, _check_int, pt["portid"], p + ".portid", 0, 65535)
    _duplicate(seen, pid, p + ".portid", "port", errors)
    addr = _mapping(pt.get("addr"), p + ".addr", errors) or {}
    _unknown_keys(addr, "addr", p + ".addr", errors)
    param = _mapping(pt.get("param"), p + ".param", errors) or {}
    spec = _port_address(pt, addr, param, p, errors, sysfs_root)
    if spec and spec.get("traddr"):
        _duplicate(addresses, (spec["trtype"], spec["traddr"], spec.get("trsvcid")), p + ".addr",
                   "address", errors)
    for name in sorted(param, key=str):
        if name == "inline_data_size":
            continue
        if _check(errors, _check_attr_names, {name: param[name]}, p + ".param", ()) is not None:
            _check(errors, _kernel_form, canonical.port_param, name, str(param[name]), "%s.param.%s" % (p, name))
    _referrals(pt, p, errors)
    grpids = {}
    for i, grp in enumerate(_sequence(pt.get("ana_groups"), p + ".ana_groups", errors)):
        where = "%s.ana_groups[%d]" % (p, i)
        grp = _mapping(grp, where, errors, allow_none=False)
        if grp is None:
            continue
        _unknown_keys(grp, "ana_group", where, errors)
        grpid = _check(errors, _check_int, grp.get("grpid"), where + ".grpid", 1, ANA_GRPID_MAX)
        _duplicate(grpids, grpid, where + ".grpid", "ANA group", errors)
        state = (_mapping(grp.get("ana"), where + ".ana", errors) or {}).get("state")
        if _given(state) and state not in canonical.ANA_STATES:
            errors.append("%s.ana.state: %r is not one of %s" % (where, state, ", ".join(canonical.ANA_STATES)))
    links = {}
    for i, nqn in enumerate(_sequence(pt.get("subsystems"), p + ".subsystems", errors)):
        where = "%s.subsystems[%d]" % (p, i)
        if _check(errors, validate_nqn, nqn, where) is None:
            continue
        _duplicate(links, nqn, where, "subsystem", errors)
        if nqn not in subsystems_known:
            errors.append("%s: subsystem %s is neither in the document's subsystems nor kept in configfs" % (where, nqn))


def validate_document(doc, subsystems_kept=(), sysfs_root="/sys", check_paths=True):
    """Every error of the document, as a list of "path: message" (empty when it is clean).

    ``subsystems_kept`` are subsystems in configfs that the run leaves in place (ports may
    link them without listing them); ``sysfs_root`` is where transport modules are looked
    up (None: not checked); ``check_paths`` stats each namespace's device.
    """
    errors = []
    doc = _mapping(doc, "document", errors, allow_none=False)
    if doc is None:
        return errors
    _unknown_keys(doc, "document", "", errors)
    _discovery(doc, errors)
    seen_hosts, seen_subs, devices, seen_ports, addresses = {}, {}, {}, {}, {}
    for i, h in enumerate(_sequence(doc.get("hosts"), "hosts", errors)):
        _host(h, "hosts[%d]" % i, errors, seen_hosts)
    for i, s in enumerate(_sequence(doc.get("subsystems"), "subsystems", errors)):
        _subsystem(s, "subsystems[%d]" % i, errors, seen_subs, devices, check_paths)
    known = set(seen_subs) | set(subsystems_kept)
    for i, pt in enumerate(_sequence(doc.get("ports"), "ports", errors)):
        _port(pt, "ports[%d]" % i, errors, seen_ports, addresses, known, sysfs_root)
    return errors
