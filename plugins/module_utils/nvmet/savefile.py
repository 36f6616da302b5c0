# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvmetcli's save-file format (to/from the state dicts) and the save file itself (standard
library only).

What the target runs, at boot (restore.py) and in the modules: the schema both ways, and
writing, reading and comparing the file. Planning a document is target.py's (the nvmet_target
module's), restoring and clearing one at boot is bootrestore.py's.
"""

from __future__ import annotations

import json
import os

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import backing
from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import (
    SECRET_MODE, file_mode, fsync_dir, write_atomically,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import (
    HOST_FIELDS,
    HOST_KEY_FIELDS,
    IDENTITY_ATTRS,
    MASK,
    PORT_ADDR_FIELDS,
    NvmetError,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.discovery import REFERRAL_FIELDS
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs


def to_savefile(state, mask_keys=True, files=None):
    """The state in nvmetcli's save-file schema; keys masked unless mask_keys is False.

    ``files``: {(nqn, nsid, path): identity} (backing.py), written as each enabled
    namespace's ``file_identity`` for the boot restorer to compare.
    """
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
        # Only the fields that have a value: nvmetcli restore writes every key it finds,
        # and the kernel refuses an empty addr_tsas on a non-TCP port (EINVAL).
        addr = dict((f, p[f]) for f in PORT_ADDR_FIELDS if p[f] not in (None, ""))
        param = dict(p["params"])
        if p.get("inline_data_size") is not None:
            param["inline_data_size"] = str(p["inline_data_size"])
        ports.append({
            "portid": pid,
            "addr": addr,
            "param": param,
            "subsystems": list(p["subsystems"]),
            "referrals": [{"name": name, "enable": 1 if ref["enabled"] else 0,
                           "addr": dict((f, ref[f] or "") for f in REFERRAL_FIELDS)}
                          for name, ref in sorted(p["referrals"].items())],
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
            # No empty values (nvmetcli would write them: an empty device_uuid is EINVAL).
            device = {"nguid": ns["nguid"] or "00000000-0000-0000-0000-000000000000"}
            if ns["device_path"]:
                device["path"] = ns["device_path"]
            if ns["uuid"]:
                device["uuid"] = ns["uuid"]
            namespaces.append({
                "nsid": nsid,
                "enable": 1 if ns["enabled"] else 0,
                "device": device,
                "ana_grpid": ns["ana_grpid"],
                "buffered_io": 1 if ns["buffered_io"] else 0,
            })
            ident = (files or {}).get((nqn, nsid, ns["device_path"])) if ns["enabled"] else None
            if ident:
                namespaces[-1][backing.IDENTITY_KEY] = dict(ident)
        entry = {"nqn": nqn, "attr": attr, "allowed_hosts": list(s["allowed_hosts"]), "namespaces": namespaces}
        if s.get("passthru"):
            # nvmetcli's form; the restorer reports it as not restored rather than drop it.
            entry["passthru"] = [{"device": {"path": s["passthru"]["device_path"]},
                                  "enable": 1 if s["passthru"]["enabled"] else 0}]
        subsystems.append(entry)
    return {"hosts": hosts, "ports": ports, "subsystems": subsystems}


def port_address_spec(addr, param):
    """The address fields of a save-file port entry (its ``addr`` and ``param`` groups) as
    the per-object port spec takes them: empty values left out, tsas only on a TLS-capable
    transport (tcp), and
    inline_data_size, which the spec carries beside the address."""
    spec = {}
    for field in PORT_ADDR_FIELDS:
        if addr.get(field) not in (None, ""):
            spec[field] = addr[field]
    if spec.get("tsas") and not getattr(transports.get(spec.get("trtype")), "tls", False):
        spec.pop("tsas")
    if "inline_data_size" in param:
        spec["inline_data_size"] = param["inline_data_size"]
    return spec


def saved_device_path(device):
    """The path of a save file's ``device`` group, None when unset: empty, or "(null)",
    which the kernel prints for an unset path and ``nvmetcli save`` copies."""
    path = (device or {}).get("path")
    return None if path in (None, "", "(null)") else path


def from_savefile(doc):
    """Turn an nvmetcli save-file document into desired specs.

    Returns {"hosts": [...], "subsystems": [...], "ports": [...]}, each entry in
    the parameter schema of nvmet_host / nvmet_subsystem / nvmet_port (not yet
    validated: pass them through normalize_*). A masked key ("********", as
    nvmet_info writes them) is not a key: it is left out of the spec and named in
    the spec's ``masked_keys``, so the restore can refuse to create that host without
    authentication (see :func:`refuse_masked_host`).
    """
    if not isinstance(doc, dict):
        raise NvmetError("save file: the top level must be a JSON object with hosts, ports, subsystems")
    hosts = []
    for h in doc.get("hosts") or []:
        spec = {"hostnqn": h.get("nqn"), "state": "present"}
        for key, value in (h.get("dhchap") or {}).items():
            if value == MASK:
                spec.setdefault("masked_keys", []).append("dhchap_" + key)
            elif value:
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
            entry = {"nsid": ns.get("nsid"), "device_path": saved_device_path(dev),
                     "enabled": bool(int(ns.get("enable", 1)))}
            if dev.get("uuid"):
                entry["uuid"] = dev["uuid"]
            if dev.get("nguid") and dev["nguid"].replace("-", "").strip("0"):
                entry["nguid"] = dev["nguid"]
            # nvmetcli writes the group twice: ana_grpid, and grpid in its "ana" attribute group.
            grpid = ns.get("ana_grpid", (ns.get("ana") or {}).get("grpid"))
            if grpid is not None:
                entry["ana_grpid"] = grpid
            if ns.get("buffered_io") is not None:
                entry["buffered_io"] = bool(int(ns["buffered_io"]))
            spec["namespaces"].append(entry)
        subsystems.append(spec)
    ports = []
    for p in doc.get("ports") or []:
        addr = p.get("addr") or {}
        param = dict(p.get("param") or {})
        spec = {"port_id": p.get("portid"), "state": "present", "subsystems": list(p.get("subsystems") or [])}
        spec.update(port_address_spec(addr, param))
        param.pop("inline_data_size", None)
        spec["params"] = param
        spec["ana_groups"] = [{"grpid": g.get("grpid"), "state": (g.get("ana") or {}).get("state")}
                              for g in p.get("ana_groups") or []]
        spec["referrals"] = [dict([("name", r.get("name")), ("enabled", str(r.get("enable", 1)) == "1")]
                                  + [(f, (r.get("addr") or {}).get(f)) for f in REFERRAL_FIELDS
                                     if (r.get("addr") or {}).get(f) not in (None, "")])
                             for r in p.get("referrals") or []]
        ports.append(spec)
    return {"hosts": hosts, "subsystems": subsystems, "ports": ports}


# --------------------------------------------------------------------------- masked keys


def refuse_masked_host(state, spec):
    """Why a host spec with masked keys must not be restored, or None when it may.

    Creating the host, or leaving it without the key the file masks, would admit it by
    its NQN alone. A host that already has every masked key set keeps it (nothing is
    written): restoring a masked copy over a running target changes nothing.
    """
    masked = spec.get("masked_keys") or []
    cur = state["hosts"].get(spec.get("hostnqn"))
    if not masked or (cur is not None and all(cur.get(f) for f in masked)):
        return None
    return ("the save file has its %s masked (%s, as nvmet_info and `save` without --keys show keys); restoring "
            "it would admit the host without authentication. Restore from the file the nvmeof_target role writes "
            "(keys in clear, mode 0600) or set the key with aiinfra.fabric.nvmet_host" % (" and ".join(masked), MASK))


def document_without(doc, subsystems=(), ports=(), hosts=()):
    """The document less the listed subsystems, ports and hosts, and every link to them.

    What the teardown writes before it removes those objects from configfs.
    """
    drop_subs, drop_hosts = set(subsystems), set(hosts)
    drop_ports = set(int(p) for p in ports)
    out = dict(doc)
    out["hosts"] = [h for h in doc.get("hosts", []) if h.get("nqn") not in drop_hosts]
    out["subsystems"] = []
    for sub in doc.get("subsystems", []):
        if sub.get("nqn") not in drop_subs:
            out["subsystems"].append(dict(sub, allowed_hosts=[h for h in sub.get("allowed_hosts", [])
                                                              if h not in drop_hosts]))
    out["ports"] = []
    for port in doc.get("ports", []):
        if int(port.get("portid")) not in drop_ports:
            out["ports"].append(dict(port, subsystems=[n for n in port.get("subsystems", []) if n not in drop_subs]))
    return out


def saved_text(doc):
    """The save file's text for a save-file document (keys in clear): what
    :func:`save_to_file` writes, and what a no-change check compares the file with."""
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def read_saved(path):
    """The save-file document at path, or None when there is none or it is not JSON."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def save_to_file(tree, path, check=False, remove_when_empty=False, without=None, state=None, files=None):
    """Write the configuration, keys included, to path (mode 0600, parent 0700) when it differs,
    or when the file has another mode than 0600 (it holds the keys in clear).

    Written atomically and durably (atomic_write.write_atomically). ``without`` (a dict of
    :func:`document_without` arguments) leaves out what a teardown is about to remove.
    The keys never leave the host: only a one-word outcome is returned -- "unchanged",
    "written", or with remove_when_empty and no object left, "removed" or "absent".
    With check nothing is written and the outcome is "would write" or "would remove".
    ``state``: a configfs state the caller has just read (``tree.read()``), saved as it is.
    ``files``: the backing files' identities to record (backing.py); by default those the
    file records now, for namespaces still enabled on the same path, else read now.
    """
    if state is None:
        check_configfs(tree)
        state = tree.read()
    if files is None:
        files = backing.identities_to_record(state, read_saved(path))
    doc = to_savefile(state, mask_keys=False, files=files)
    if without:
        doc = document_without(doc, **without)
    text = saved_text(doc)
    exists = os.path.exists(path)
    if remove_when_empty and not any(doc.get(k) for k in ("hosts", "ports", "subsystems")):
        if not exists:
            return "absent"
        if not check:
            os.unlink(path)
            fsync_dir(os.path.dirname(os.path.abspath(path)))
        return "would remove" if check else "removed"
    if exists and file_mode(path) == SECRET_MODE:
        with open(path) as f:
            if f.read() == text:
                return "unchanged"
    if check:
        return "would write"
    write_atomically(path, text, SECRET_MODE)
    return "written"
