# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric health on an NVMe-oF host: each configured path against what the kernel holds.

Read only. What is configured comes from the records the nvmeof_initiator role writes
(/var/lib/aiinfra-fabric/nvmeof_initiator-*.json: every path it connected) or from the
caller; what holds comes from sysfs, read once: the fabrics controllers (sysfs.py, with the
timeouts in force) and native multipath (multipath.py, with each path's ANA state).

A path is *usable* when its controller is live and no head device of it reports an ANA state
other than optimized or non-optimized. A subsystem is ``ok`` when every configured path is
usable, ``degraded`` when some are not but I/O still has a path (fewer than its
``min_live_paths``: one path lost of two), and ``down`` when none is usable. A configured path
the kernel holds no controller for is ``missing``: it was removed (ctrl_loss_tmo ran out, or
the target answered a reconnect with a status that has DNR set) or never connected; the
kernel will not bring it back, only a new connect does.
"""

from __future__ import annotations

import glob
import json
import os

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import controller_matches, normalize_traddr
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connections import path_label
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError

RECORD_GLOB = "nvmeof_initiator-*.json"
DEFAULT_RECORD_DIR = "/var/lib/aiinfra-fabric"
USABLE_ANA = (None, "optimized", "non-optimized")
# What the kernel's controller states mean for a path (nvme_ctrl_state_names).
STATE_MEANING = {
    "new": "being created",
    "connecting": "reconnecting (the kernel retries every reconnect_delay s until ctrl_loss_tmo)",
    "resetting": "resetting",
    "deleting": "being removed",
    "deleting (no IO)": "being removed",
    "dead": "dead",
}
TIMEOUTS = ("ctrl_loss_tmo", "reconnect_delay", "fast_io_fail_tmo", "keep_alive_tmo")


class HealthError(NvmeError, ValueError):
    pass


def read_json_files(pattern, key, what, error):
    """[(file, object)] of the JSON files ``pattern`` matches, sorted, each an object with a list
    under ``key``; ``error`` (an exception class) names the first that cannot be read or is not
    ``what`` - the collection writes them whole, so that is damage, not a state."""
    found = []
    for path in sorted(glob.glob(pattern)):
        try:
            with open(path) as handle:
                value = json.load(handle)
        except (IOError, OSError, ValueError) as exc:
            raise error("cannot read %s %s: %s" % (what, path, exc))
        if not isinstance(value, dict) or not isinstance(value.get(key), list):
            raise error("%s is not %s (no list of %s)" % (path, what, key))
        found.append((path, value))
    return found


def read_records(record_dir=DEFAULT_RECORD_DIR):
    """[(file, record)] of the nvmeof_initiator records in ``record_dir``."""
    return read_json_files(os.path.join(record_dir, RECORD_GLOB), "connections", "the nvmeof_initiator record",
                           HealthError)


def configured_from_records(records):
    """The subsystems the records configure: [{nqn, paths, min_live_paths: None, source}], each
    path once (a path in two records counts once)."""
    by_nqn = {}
    order = []
    for path, record in records:
        for conn in record["connections"]:
            nqn = conn.get("nqn")
            if nqn not in by_nqn:
                by_nqn[nqn] = {"nqn": nqn, "paths": [], "min_live_paths": None, "sources": []}
                order.append(nqn)
            entry = by_nqn[nqn]
            wanted = _path(conn)
            if wanted not in entry["paths"]:
                entry["paths"].append(wanted)
            if path not in entry["sources"]:
                entry["sources"].append(path)
    return [by_nqn[n] for n in order]


def configured_from_params(subsystems):
    """The ``subsystems`` option, in the shape configured_from_records gives."""
    out = []
    for sub in subsystems or []:
        out.append({"nqn": sub["nqn"], "paths": [_path(dict(p, nqn=sub["nqn"])) for p in sub.get("paths") or []],
                    "min_live_paths": sub.get("min_live_paths"), "sources": ["subsystems"]})
    return out


def _path(conn):
    transport = conn.get("transport") or "tcp"
    return {
        "nqn": conn["nqn"],
        "transport": transport,
        "traddr": normalize_traddr(transport, conn.get("traddr")) if conn.get("traddr") else None,
        "trsvcid": str(conn["trsvcid"]) if conn.get("trsvcid") not in (None, "") else None,
        "host_traddr": normalize_traddr(transport, conn.get("host_traddr")) if conn.get("host_traddr") else None,
        "host_iface": conn.get("host_iface") or None,
        "hostnqn": conn.get("hostnqn") or None,
    }


def _desired(path):
    """The path as controller_matches() takes it (a recorded hostnqn narrows the match)."""
    return dict(path, hostnqn_given=bool(path.get("hostnqn")))


def _ana_of(controller, multipath_subsystems):
    """{head: ana_state} of one controller, from the multipath view (empty without it)."""
    for sub in multipath_subsystems:
        for mp_path in sub["paths"]:
            if mp_path["controller"] == controller:
                return dict((head, ns["ana_state"]) for head, ns in sorted(mp_path["namespaces"].items()))
    return {}


def path_health(path, controllers, multipath_subsystems):
    """One configured path: its controller (the live one first when the kernel holds several),
    state, ANA states, timeouts, and whether I/O can use it, with the reason when not."""
    matches = [c for c in controllers if controller_matches(c, _desired(path))]
    # controller_matches skips controllers being deleted: look at them only to say so.
    dying = [c for c in controllers if c.get("state", "").startswith("deleting")
             and controller_matches(dict(c, state="live"), _desired(path))]
    matches.sort(key=lambda c: c.get("state") != "live")
    out = dict(path, label=path_label(dict(path, hostnqn_given=bool(path.get("hostnqn")))))
    if not matches:
        ctrl = dying[0] if dying else None
        out.update({"controller": ctrl["name"] if ctrl else None, "state": ctrl["state"] if ctrl else "missing",
                    "ana_states": {}, "usable": False})
        out.update(dict((k, ctrl.get(k)) if ctrl else (k, None) for k in TIMEOUTS))
        out["problem"] = ("being removed by the kernel (%s)" % ctrl["name"]) if ctrl else (
            "missing: the kernel holds no controller for it (removed after ctrl_loss_tmo or a reconnect the target "
            "refused with DNR, or never connected); only a new connect brings it back")
        return out
    ctrl = matches[0]
    ana = _ana_of(ctrl["name"], multipath_subsystems)
    out.update({"controller": ctrl["name"], "state": ctrl["state"], "ana_states": ana})
    out.update(dict((k, ctrl.get(k)) for k in TIMEOUTS))
    bad_ana = sorted("%s %s" % (head, state) for head, state in ana.items() if state not in USABLE_ANA)
    out["usable"] = ctrl["state"] == "live" and not bad_ana
    if ctrl["state"] != "live":
        out["problem"] = "%s is %s" % (ctrl["name"], STATE_MEANING.get(ctrl["state"], ctrl["state"]))
    elif bad_ana:
        out["problem"] = "%s is live but its ANA state is %s (the target took this path out of service)" % (
            ctrl["name"], ", ".join(bad_ana))
    if len(matches) > 1:
        out["duplicates"] = [c["name"] for c in matches[1:]]
    return out


def subsystem_health(configured, controllers, multipath_subsystems):
    paths = [path_health(p, controllers, multipath_subsystems) for p in configured["paths"]]
    usable = sum(1 for p in paths if p["usable"])
    live = sum(1 for p in paths if p["state"] == "live")
    wanted = configured.get("min_live_paths") or len(paths)
    mp = [s for s in multipath_subsystems if s["nqn"] == configured["nqn"]]
    status = "down" if usable == 0 else ("degraded" if usable < len(paths) or usable < wanted else "ok")
    problems = ["%s: %s" % (p["label"], p["problem"]) for p in paths if p.get("problem")]
    if status != "ok" and usable < wanted:
        problems.append("%s: %d of %d configured paths usable (min_live_paths %d)" % (
            configured["nqn"], usable, len(paths), wanted))
    return {
        "nqn": configured["nqn"],
        "status": status,
        "configured_paths": len(paths),
        "live_paths": live,
        "usable_paths": usable,
        "min_live_paths": wanted,
        "subsystem": mp[0]["name"] if mp else None,
        "iopolicy": mp[0]["iopolicy"] if mp else None,
        "heads": [h["name"] for s in mp for h in s["heads"]],
        "paths": paths,
        "problems": problems,
        "sources": configured.get("sources", []),
    }


def host_health(configured, controllers, multipath_subsystems):
    """The whole host: per subsystem, and the fabrics controllers no configured path accounts
    for (another tool's, or a discovery controller): listed, never judged."""
    subsystems = [subsystem_health(c, controllers, multipath_subsystems) for c in configured]
    claimed = set(p["controller"] for s in subsystems for p in s["paths"] if p.get("controller"))
    claimed.update(d for s in subsystems for p in s["paths"] for d in p.get("duplicates", []))
    others = [{"controller": c["name"], "nqn": c["subsysnqn"], "transport": c["transport"], "traddr": c.get("traddr"),
               "trsvcid": c.get("trsvcid"), "state": c["state"]} for c in controllers if c["name"] not in claimed]
    worst = "ok"
    for s in subsystems:
        if s["status"] == "down" or (s["status"] == "degraded" and worst == "ok"):
            worst = s["status"]
    return {
        "status": worst if subsystems else "unconfigured",
        "subsystems": subsystems,
        "degraded": [s["nqn"] for s in subsystems if s["status"] != "ok"],
        "problems": [line for s in subsystems for line in s["problems"]],
        "other_controllers": others,
    }


def summary_line(health):
    """One line for a run's end: ``ok, 1 subsystem, 2/2 paths usable`` (with the problems)."""
    subs = health["subsystems"]
    if not subs:
        return "no configured NVMe-oF paths (no nvmeof_initiator record, no subsystems given)"
    usable = sum(s["usable_paths"] for s in subs)
    total = sum(s["configured_paths"] for s in subs)
    return "%s, %d subsystem%s, %d/%d paths usable%s" % (
        health["status"], len(subs), "" if len(subs) == 1 else "s", usable, total,
        "" if not health["problems"] else "; " + "; ".join(health["problems"]))
