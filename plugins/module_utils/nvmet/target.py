# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A whole desired target in one plan (standard library only): the nvmet_target module's domain.

The document (nvmetcli's save-file schema) is validated whole (document.py), then
planned with the per-object planners (planner.py) the other nvmet modules and the boot
restorer use: what the document lists, each object as declared, plus what ``purge`` says
about what the document does not list. :func:`read_and_plan` is the one entry point for a
document (the nvmet_target module, and the role's no-change check through snapshot.py):

* ``none``   (default) nothing the document does not declare is removed: a listed
             subsystem keeps namespaces and allowed hosts the document does not name,
             a listed port keeps its other links; unlisted objects are left alone.
* ``listed`` each listed object is made exactly as declared (its other namespaces,
             allowed hosts, port links and ANA groups go); unlisted objects are left alone.
* ``all``    as ``listed``, and subsystems, ports and hosts the document does not list are
             removed (ports first, hosts last).

Referrals are planned with their port. With ``listed`` or ``all`` a port whose
document entry has a ``referrals`` key gets exactly those; a port entry without the key
keeps the referrals it has (nvmetcli always writes the key, so its files are exact).
A passthru subsystem (``passthru: [{device: {path: /dev/nvmeN}, enable: 1}]``) gets its
controller after the subsystem is made; changing an enabled one disables it first (the
kernel refuses device_path while enabled), which disconnects its hosts: force.
The top-level ``discovery`` group that nvmetcli writes (``{"nqn": ...}``) sets the
target's discovery NQN; the default NQN on a kernel without the attribute is no change.
"""

from __future__ import annotations

import copy
import json

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import (
    DISCOVERY_NQN,
    HOST_KEY_FIELDS,
    TRANSPORT_MODULES,
    NvmetError,
    Op,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.discovery import plan_discovery_nqn
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.document import DocumentError, validate_document
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import (
    plan_host,
    plan_in_order,
    plan_port,
    plan_subsystem,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import (
    from_savefile,
    refuse_masked_host,
    saved_device_path,
    to_savefile,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import (
    check_configfs,
    normalize_host,
    normalize_port,
    normalize_subsystem,
)

PURGE_CHOICES = ("none", "listed", "all")


def load_document(path):
    """Read a save-file document from JSON or YAML (YAML needs PyYAML on the host)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as exc:
        raise NvmetError("src: cannot read %s: %s" % (path, exc.strerror)) from None
    try:
        return json.loads(text)
    except ValueError as json_error:
        try:
            import yaml
        except ImportError:
            raise NvmetError("src: %s is not JSON (%s), and PyYAML is not installed on this host to read it as YAML"
                             % (path, json_error)) from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise NvmetError("src: %s is neither JSON nor YAML: %s" % (path, exc)) from None


def drop_unset(value):
    """The document without None values (Ansible fills unset sub-options with None)."""
    if isinstance(value, dict):
        return dict((k, drop_unset(v)) for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return [drop_unset(v) for v in value]
    return value


def secrets_of(doc):
    """The DH-HMAC-CHAP keys a document holds (to keep them out of every output)."""
    out = []
    for h in (doc or {}).get("hosts") or [] if isinstance(doc, dict) else []:
        dh = h.get("dhchap") if isinstance(h, dict) else None
        if isinstance(dh, dict):
            out.extend(v for k, v in dh.items() if k in ("key", "ctrl_key") and isinstance(v, str) and v)
    return out


def _listed(doc):
    return (set(h.get("nqn") for h in doc.get("hosts") or []),
            set(s.get("nqn") for s in doc.get("subsystems") or []),
            set(int(p.get("portid")) for p in doc.get("ports") or []))


def check_document(doc, state, purge="none", sysfs_root="/sys", check_paths=True):
    """Validate the whole document against what this run keeps; raise DocumentError with every error."""
    if purge not in PURGE_CHOICES:
        raise NvmetError("purge: %r is not one of %s" % (purge, ", ".join(PURGE_CHOICES)))
    kept = () if purge == "all" else state["subsystems"]
    errors = validate_document(doc, kept, sysfs_root, check_paths)
    if errors:
        raise DocumentError(errors)


def _keep_undeclared(doc, state):
    """purge none: the document plus, for each listed object, what configfs has that the
    document does not name, so the planner (which makes listed objects exact) keeps it."""
    doc = copy.deepcopy(doc)
    current = to_savefile(state, mask_keys=False)
    subs = dict((s["nqn"], s) for s in current["subsystems"])
    for sub in doc.get("subsystems") or []:
        have = subs.get(sub.get("nqn"))
        if have is None:
            continue
        attr = sub.setdefault("attr", {})
        attr.setdefault("allow_any_host", have["attr"]["allow_any_host"])
        nsids = set(int(ns["nsid"]) for ns in sub.get("namespaces") or [])
        sub["namespaces"] = list(sub.get("namespaces") or []) + [
            ns for ns in have["namespaces"] if ns["nsid"] not in nsids]
        if str(attr["allow_any_host"]) != "1":
            hosts = list(sub.get("allowed_hosts") or [])
            sub["allowed_hosts"] = hosts + [h for h in have["allowed_hosts"] if h not in hosts]
    ports = dict((p["portid"], p) for p in current["ports"])
    for port in doc.get("ports") or []:
        have = ports.get(int(port.get("portid")))
        if have is not None:
            links = list(port.get("subsystems") or [])
            port["subsystems"] = links + [n for n in have["subsystems"] if n not in links]
    return doc


def _keep_port_links(doc, state):
    """A listed port's links to subsystems configfs keeps and the document does not name."""
    doc = copy.deepcopy(doc)
    for port in doc.get("ports") or []:
        have = state["ports"].get(int(port.get("portid")))
        if have is not None:
            links = list(port.get("subsystems") or [])
            port["subsystems"] = links + sorted(n for n in have["subsystems"] if n not in links and n in state["subsystems"])
    return doc


def _refuse_masked(state, spec):
    why = refuse_masked_host(state, spec)
    if why:
        raise NvmetError("host %s: %s" % (spec.get("hostnqn"), why))
    return spec


def _plan_listed(tree, state, doc, conns, force=False, allow_reconfigure=False):
    """What the document lists, each object made as declared: hosts, then subsystems, then
    ports (the paths were checked with the document, by :func:`check_document`)."""
    specs = from_savefile(doc)
    return plan_in_order(state, (
        [lambda st, raw=raw: plan_host(st, normalize_host(_refuse_masked(st, raw)), conns, force)
         for raw in specs["hosts"]]
        + [lambda st, raw=raw: plan_subsystem(st, normalize_subsystem(raw, False), conns, force)
           for raw in specs["subsystems"]]
        + [lambda st, raw=raw: plan_port(st, normalize_port(raw, tree.sysfs_root), conns, force, allow_reconfigure)
           for raw in specs["ports"]]))


def plan_target(tree, state, doc, purge="none", force=False, allow_reconfigure=False, keep_port_links=False):
    """Plan the whole document (already checked by :func:`check_document`) against state.

    ``keep_port_links`` (with purge listed or all): a listed port keeps its links to the
    subsystems the document does not list and this run leaves in place.

    Returns the ordered operations. Raises NvmetError when a guard refuses (live
    connections without force, a port reconfigure without allow_reconfigure, ...).
    """
    hosts, subs, ports = _listed(doc)
    conns = tree.connections(state)
    ops = []
    st = state

    def step(part):
        ops.extend(part)
        return simulate(st, part)

    if purge == "all":
        # Unlisted ports first (an address they hold may be the one a listed port wants),
        # then unlisted subsystems; hosts last, once no kept subsystem allows them.
        for pid in sorted(p for p in state["ports"] if p not in ports):
            st = step(plan_port(st, {"port_id": pid, "state": "absent"}, conns, force))
        for nqn in sorted(n for n in state["subsystems"] if n not in subs):
            st = step(plan_subsystem(st, {"nqn": nqn, "state": "absent"}, conns, force))
    if purge == "none":
        planned = _keep_undeclared(doc, st)
    else:
        planned = doc = _keep_port_links(doc, st) if keep_port_links else doc
    # Hosts and subsystems, then each passthru controller (enabled before any port
    # links its subsystem, so no host meets it empty), then the ports: the same order
    # as the restorer's one pass.
    # One read of the live connections for the whole plan (each read runs `rdma res show`).
    st = step(_plan_listed(tree, st, dict(planned, ports=[]), conns, force, allow_reconfigure))
    for entry in doc.get("subsystems") or []:
        st = step(plan_passthru(st, entry, conns, force))
    st = step(_plan_listed(tree, st, {"ports": planned.get("ports") or []}, conns, force, allow_reconfigure))
    if purge in ("listed", "all"):
        for entry, raw in zip(doc.get("ports") or [], from_savefile(doc)["ports"]):
            spec = dict(normalize_port(raw, None), purge_ana_groups=True, purge_referrals="referrals" in entry)
            st = step(plan_port(st, spec, conns, force, allow_reconfigure))
    disc = (doc.get("discovery") or {}).get("nqn")
    if disc is not None and not (disc == DISCOVERY_NQN and st.get("discovery_nqn") is None):
        st = step(plan_discovery_nqn(st, disc))
    if purge == "all":
        for nqn in sorted(n for n in state["hosts"] if n not in hosts):
            st = step(plan_host(st, {"hostnqn": nqn, "state": "absent"}, conns, force))
    return ops


def read_and_plan(tree, doc, purge="none", force=False, allow_reconfigure=False, keep_port_links=False,
                  check_paths=True):
    """Read the target and plan the whole document against it: the nvmet_target module's
    steps, and the same steps the role's no-change check runs on a probe's copy of
    configfs (snapshot.py). Returns (state, ops); raises DocumentError or NvmetError."""
    check_configfs(tree)
    state = tree.read()
    check_document(doc, state, purge, tree.sysfs_root, check_paths)
    return state, plan_target(tree, state, doc, purge, force, allow_reconfigure, keep_port_links=keep_port_links)


def transport_modules(doc):
    """The kernel modules a document needs: nvmet, and one per port transport."""
    names = ["nvmet"]
    for port in doc.get("ports") or []:
        name = TRANSPORT_MODULES.get((port.get("addr") or {}).get("trtype"))
        if name and name not in names:
            names.append(name)
    return names


def plan_passthru(state, entry, conns=None, force=False):
    """Set a subsystem's passthru controller and enable it as the document's entry says."""
    wanted = (entry.get("passthru") or [None])[0]
    if not wanted:
        return []
    nqn = entry["nqn"]
    path = saved_device_path(wanted.get("device"))
    enable = str(wanted.get("enable", 1 if path else 0)) == "1"
    cur = (state["subsystems"].get(nqn) or {}).get("passthru") or {"device_path": None, "enabled": False}
    rel = "subsystems/%s/passthru" % nqn
    ops, enabled = [], cur["enabled"]
    if path and path != cur["device_path"]:
        if enabled:
            _quiet_or_force(conns, nqn, force, "change its passthru controller from %s to %s" % (cur["device_path"], path))
            ops.append(Op("write", rel + "/enable", "0"))
            enabled = False
        ops.append(Op("write", rel + "/device_path", path))
    if enable != enabled:
        if enabled:
            _quiet_or_force(conns, nqn, force, "disable its passthru controller")
        ops.append(Op("write", rel + "/enable", "1" if enable else "0"))
    return ops


def _quiet_or_force(conns, nqn, force, how):
    if force:
        return
    live = None if conns is None else conns["by_subsystem"].get(nqn, 0)
    if live is None:
        raise NvmetError("subsystem %s may have connected hosts and this host cannot tell; set force: true to %s"
                         % (nqn, how))
    if live:
        raise NvmetError("subsystem %s has %d live connection(s); set force: true to %s (this disconnects them)"
                         % (nqn, live, how))


def target_view(state):
    """The target in the save-file schema with keys masked (the module's return and diff)."""
    return to_savefile(state, mask_keys=True)


def changed_keys(ops):
    """Which hosts' keys the plan writes, as hosts/<nqn>/<field> (never the values)."""
    return [op.path for op in ops if op.secret and op.path.rsplit("/", 1)[-1] in HOST_KEY_FIELDS]
