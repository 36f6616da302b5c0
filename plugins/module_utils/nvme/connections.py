# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's connections as one topology: subsystems, each with its paths (nvme_connections).

:func:`connections_from_params` turns the module's ``subsystems`` list and the settings
shared by every path into one nvme_connect parameter set per path, validated with
nvme_connect's own rules; every error is collected, each named by its place in the list
(``subsystems[1].paths[0].traddr``), before anything on the host is read or changed.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError, desired_from_params,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import MultipathError, validate_iopolicy

# Keys of a path entry; everything else a connection needs comes from the module's top level.
PATH_KEYS = ("transport", "traddr", "trsvcid", "host_traddr", "host_iface", "hostnqn", "hostid")
# Settings of the module's top level that every path gets (nvme_connect options of the same name).
SHARED_KEYS = ("ctrl_loss_tmo", "reconnect_delay", "keep_alive_tmo", "fast_io_fail_tmo", "nr_io_queues", "queue_size",
               "dhchap_secret", "dhchap_ctrl_secret", "persistent", "reconnect", "force", "wait_timeout", "state")
# TLS settings: given once at the top level, used by the paths of the subsystems with tls=true.
TLS_KEYS = ("tls_key", "keyring", "concat")
# What tells two paths apart (the same tuple twice would be one controller connected twice).
_IDENTITY = ("nqn", "transport", "traddr", "trsvcid", "host_traddr", "host_iface", "hostnqn")


def path_label(conn):
    """``NQN TRANSPORT TRADDR:TRSVCID [as HOSTNQN]``: how results and errors name a path."""
    where = conn["transport"]
    if conn.get("traddr"):
        where = "%s %s:%s" % (conn["transport"], conn["traddr"], conn.get("trsvcid"))
    named = conn.get("hostnqn") and conn.get("hostnqn_given", True)
    return "%s %s%s" % (conn["nqn"], where, (" as %s" % conn["hostnqn"]) if named else "")


def connections_from_params(params, release):
    """([(where, connect params, desired)], [subsystem dicts], [errors]).

    ``where`` is ``subsystems[I].paths[J]``; the subsystem dicts carry nqn, iopolicy and
    min_live_paths (defaulting to the number of its paths) for the multipath step."""
    errors = []
    connections = []
    subsystems = []
    seen = {}
    for i, sub in enumerate(params["subsystems"] or []):
        where_sub = "subsystems[%d]" % i
        nqn = sub.get("nqn")
        paths = sub.get("paths") or []
        if not paths:
            errors.append("%s.paths: %s has no path; give at least one (transport, traddr, trsvcid)" % (where_sub, nqn))
        try:
            iopolicy = validate_iopolicy(sub.get("iopolicy"), release)
        except MultipathError as exc:
            errors.append("%s.iopolicy: %s" % (where_sub, exc))
            iopolicy = None
        min_live = sub.get("min_live_paths")
        if min_live is None:
            min_live = len(paths)
        elif min_live < 0 or min_live > len(paths):
            errors.append("%s.min_live_paths: %d is not between 0 and the subsystem's %d path(s)"
                          % (where_sub, min_live, len(paths)))
        subsystems.append(dict(nqn=nqn, iopolicy=iopolicy, min_live_paths=min_live, tls=bool(sub.get("tls"))))
        for j, path in enumerate(paths):
            where = "%s.paths[%d]" % (where_sub, j)
            conn = dict((key, params[key]) for key in SHARED_KEYS)
            conn.update((key, path.get(key)) for key in PATH_KEYS)
            conn["nqn"] = nqn
            conn["tls"] = bool(sub.get("tls"))
            for key in TLS_KEYS:
                conn[key] = params[key] if conn["tls"] else (False if key == "concat" else None)
            conn["generate_host_identity"] = False
            try:
                desired = desired_from_params(conn)
            except ValidationError as exc:
                errors.append("%s: %s" % (where, exc))
                continue
            key = tuple(desired.get(k) for k in _IDENTITY)
            if key in seen:
                errors.append("%s: the same path as %s (%s)" % (where, seen[key], path_label(desired)))
                continue
            seen[key] = where
            connections.append((where, conn, desired))
    nqns = [s["nqn"] for s in subsystems]
    for i, nqn in enumerate(nqns):
        if nqn in nqns[:i]:
            errors.append("subsystems[%d].nqn: %s is listed twice; give each subsystem once, with all its paths"
                          % (i, nqn))
    if not params["subsystems"]:
        errors.append("subsystems: empty; give at least one subsystem with its paths")
    if params["wait_timeout"] < 0:
        errors.append("wait_timeout: %d must be >= 0" % params["wait_timeout"])
    return connections, subsystems, errors


def host_result(connections, multipath_results):
    """The module's summary over its paths (results of apply_connection, with ``label``) and,
    with state=connected, its per-subsystem multipath results: changed, the controllers,
    the devices (each once), the subsystems, the time waited for paths, and the diff."""
    devices = []
    for conn in connections:
        for dev in conn.get("devices") or []:
            if dev["path"] not in [d["path"] for d in devices]:
                devices.append(dev)
    listed = multipath_results is not None
    multipath_results = multipath_results or []
    out = dict(
        changed=any(c["changed"] for c in connections) or any(r.get("changed") for r in multipath_results),
        controllers=[ctrl for c in connections for ctrl in c.get("controllers") or []],
        devices=devices,
        waited_s=round(sum(r.get("waited_s", 0.0) for r in multipath_results), 1),
    )
    if listed:
        out["subsystems"] = [s for r in multipath_results for s in r.get("subsystems") or []]
    diffs = [(c["label"], c.pop("diff")) for c in connections if "diff" in c]
    mp_diffs = [r.pop("diff") for r in multipath_results if "diff" in r]
    if diffs or mp_diffs:
        out["diff"] = dict((side, {
            "paths": dict((label, d[side]) for label, d in diffs),
            "iopolicy": dict(kv for d in mp_diffs for kv in d[side]["iopolicy"].items()),
        }) for side in ("before", "after"))
    return out


def _true(value):
    """A role variable's truth, whether it arrives as a bool or as the text of one."""
    if isinstance(value, str):
        return value.strip().lower() in ("true", "yes", "on", "1")
    return bool(value)


def from_role_topology(subsystems, defaults):
    """The nvmeof_initiator role's subsystems (its argument_specs shape) as nvme_connections'
    ``subsystems``: each path gets the role-wide transport, port and host NQN it does not set
    itself, each subsystem the role-wide I/O policy, TLS choice and path count to wait for
    (``min_live_paths`` 0: every path listed). Empty values mean "not set"."""
    def given(value):
        return value is not None and value != ""

    out = []
    for sub in subsystems or []:
        paths = []
        for path in sub.get("paths") or []:
            entry = dict((key, path[key]) for key in PATH_KEYS if given(path.get(key)))
            entry.setdefault("transport", defaults.get("transport"))
            entry["trsvcid"] = str(entry.get("trsvcid", defaults.get("trsvcid")))
            if given(defaults.get("hostnqn")):
                entry.setdefault("hostnqn", defaults["hostnqn"])
            paths.append(entry)
        entry = dict(nqn=sub.get("nqn"), paths=paths,
                     tls=_true(sub["tls"] if sub.get("tls") is not None else defaults.get("tls")))
        iopolicy = sub.get("iopolicy") if given(sub.get("iopolicy")) else defaults.get("iopolicy")
        if given(iopolicy):
            entry["iopolicy"] = iopolicy
        wanted = int(defaults.get("min_live_paths") or 0)
        entry["min_live_paths"] = wanted if wanted > 0 else len(paths)
        out.append(entry)
    return out


def by_subsystem(connections):
    """Flat connection entries (each with its ``nqn``, as the nvmeof_initiator role records
    them) grouped as nvme_connections' ``subsystems``, in the order first seen; keys with
    empty values are left out."""
    out = []
    index = {}
    for conn in connections or []:
        nqn = conn.get("nqn")
        if nqn not in index:
            index[nqn] = len(out)
            out.append(dict(nqn=nqn, paths=[]))
        path = dict((key, conn[key]) for key in PATH_KEYS if conn.get(key) not in (None, ""))
        if "trsvcid" in path:
            path["trsvcid"] = str(path["trsvcid"])
        if path not in out[index[nqn]]["paths"]:
            out[index[nqn]]["paths"].append(path)
    return out
