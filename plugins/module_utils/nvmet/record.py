# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvmeof_target role's record of what it created, and the teardown planned from it (standard library only).

The record (``/var/lib/aiinfra-fabric/nvmeof_target.json`` on the target) lists, per
subsystem the role configured: the ports it linked, the host entries and backing files
this role made, the backing files it exported and the firewall rules it opened, and
per port its address. The teardown reads it, not today's variables, so a teardown run
given other variables (another transport, the short form after a long-form converge)
still removes exactly what converge made, and nothing another tool or subsystem uses.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError

VERSION = 2


class RecordError(NvmetError):
    """A teardown the record cannot support (a name it does not list); nothing was changed."""


def load_record(raw):
    """The record in its current shape; version 1 (one entry per NQN at the top) is converted.

    ``removed``: subsystems an earlier teardown removed while others stayed recorded, so
    that running the same teardown again finds nothing to do instead of an unknown name.
    """
    raw = raw or {}
    if raw.get("version") == VERSION:
        out = {"version": VERSION, "subsystems": dict(raw.get("subsystems") or {}), "ports": dict(raw.get("ports") or {})}
        if raw.get("removed"):
            out["removed"] = sorted(set(raw["removed"]) - set(out["subsystems"]))
        return out
    subs = {}
    for nqn, old in raw.items():
        if not isinstance(old, dict):
            continue
        files = [old["backing_file"]] if old.get("backing_file") else []
        subs[nqn] = {"ports": [int(old["port_id"])] if old.get("port_id") is not None else [],
                     "hosts_created": list(old.get("hosts_created") or []),
                     "files": files,
                     "files_created": files if old.get("backing_file_created") else [],
                     "firewall_rules_added": list(old.get("firewall_rules_added") or [])}
    return {"version": VERSION, "subsystems": subs, "ports": {}}


def _union(a, b):
    out = list(a or [])
    out.extend(x for x in b or [] if x not in out)
    return out


def record_after_converge(previous, topology, document, operations, files_created, rules_needed, rules_opened):
    """The record after a converge of ``topology`` (resolved) applied as ``document``.

    ``operations``: the nvmet_target operations (``mkdir hosts/<nqn>`` marks a host entry
    this run made); ``files_created``: backing files this run made; ``rules_needed``: the
    firewall rules per port id ({"1": rule}); ``rules_opened``: those this run opened.
    """
    rec = load_record(previous)
    recorded_rules = [r for e in rec["subsystems"].values() for r in e.get("firewall_rules_added") or []]
    new_hosts = [op[len("mkdir hosts/"):] for op in operations or [] if op.startswith("mkdir hosts/")]
    allowed = dict((s["nqn"], s.get("allowed_hosts") or []) for s in document["subsystems"])
    for s in topology["subsystems"]:
        entry = dict(rec["subsystems"].get(s["nqn"]) or {})
        files = [ns["path"] for ns in s["namespaces"] if ns["kind"] == "file"]
        mine_rules = []
        for pid in s["ports"]:
            rule = rules_needed.get(str(pid))
            if rule and (rule in rules_opened or rule in recorded_rules) and rule not in mine_rules:
                mine_rules.append(rule)
        entry["ports"] = sorted(_union(entry.get("ports"), s["ports"]))
        entry["hosts_created"] = sorted(_union(entry.get("hosts_created"),
                                               [h for h in new_hosts if h in allowed.get(s["nqn"], [])]))
        entry["files"] = _union(entry.get("files"), files)
        entry["files_created"] = _union(entry.get("files_created"), [f for f in files_created or [] if f in files])
        entry["firewall_rules_added"] = _union(entry.get("firewall_rules_added"), mine_rules)
        rec["subsystems"][s["nqn"]] = entry
    for p in topology["ports"]:
        rec["ports"][str(p["id"])] = {"transport": p["transport"], "address": p["address"],
                                      "service_id": p["service_id"]}
    if rec.get("removed"):
        rec["removed"] = [n for n in rec["removed"] if n not in rec["subsystems"]]
        if not rec["removed"]:
            del rec["removed"]
    return rec


def teardown_plan(previous, named, subsystems_now, ports_now, named_by_default=False):
    """What a teardown removes, from the record.

    ``named``: the subsystem NQNs the teardown run's variables name; each must be one the
    record lists (or one an earlier teardown removed: nothing to do), else RecordError
    lists what the record holds, before anything changes. A name that is not recorded is
    a typo or a subsystem this role did not make, never a reason to remove the whole
    record. ``named_by_default``: the names are the role's defaults, not the user's (the
    short form's NQN left unset); when the record neither lists them nor has them as
    removed, the whole record is removed (a teardown run with the default variables after
    a long-form converge).
    ``subsystems_now``/``ports_now``: nvmet_info's lists (what configfs holds now).

    Backing files: only those this role created (``files``), and only when no subsystem
    left in the record exports them; ``files_kept`` lists the others it exported, which
    a teardown never deletes.
    """
    rec = load_record(previous)
    recorded = rec["subsystems"]
    removed_before = rec.get("removed") or []
    unknown = [n for n in named or [] if n not in recorded and n not in removed_before]
    if named_by_default and recorded and len(unknown) == len(named or []):
        scope = sorted(recorded)
    elif unknown and recorded:
        raise RecordError("%s: not in the record of what the nvmeof_target role created on this host, which lists %s. "
                          "Nothing was changed. Name recorded subsystems (nvmeof_target_subsystems or nvmeof_target_nqn), "
                          "or leave both unset to remove everything the record lists"
                          % (", ".join(unknown), ", ".join(sorted(recorded))))
    else:
        scope = [n for n in named or [] if n in recorded]
    remove = set(scope)
    left = dict((n, dict(e)) for n, e in recorded.items() if n not in remove)
    gone = [recorded[n] for n in scope]
    others_now = [s for s in subsystems_now or [] if s.get("nqn") not in remove]
    allowed_left = set(h for s in others_now for h in s.get("allowed_hosts") or [])
    ports, kept_for = [], {}
    candidate = sorted(set(int(p) for e in gone for p in e.get("ports") or []))
    for port in ports_now or []:
        if port.get("portid") in candidate:
            users = [n for n in port.get("subsystems") or [] if n not in remove]
            if users:
                kept_for[str(port["portid"])] = users
            else:
                ports.append(port["portid"])
    created = _union([], [h for e in gone for h in e.get("hosts_created") or []])
    hosts = [h for h in created if h not in allowed_left]
    # A host entry made for a removed subsystem that a recorded one still allows is now
    # that one's to remove.
    for nqn, entry in left.items():
        now = [s for s in others_now if s.get("nqn") == nqn]
        allowed = now[0].get("allowed_hosts") or [] if now else []
        entry["hosts_created"] = sorted(_union(entry.get("hosts_created"), [h for h in created if h in allowed]))
    files_left = set(f for e in left.values() for f in e.get("files") or [])
    rules_left = [r for e in left.values() for r in e.get("firewall_rules_added") or []]
    ports_left = set(str(p) for e in left.values() for p in e.get("ports") or [])
    created = set(f for e in gone for f in e.get("files_created") or [])
    exported = [f for f in _union([], [f for e in gone for f in e.get("files") or []]) if f not in files_left]
    record_left = {}
    if left:
        record_left = {"version": VERSION, "subsystems": left,
                       "ports": dict((k, v) for k, v in rec["ports"].items() if k in ports_left)}
        if removed_before or scope:
            record_left["removed"] = sorted(set(removed_before) | set(scope))
    return {
        "subsystems": scope,
        "ports": ports,
        "ports_kept_for": kept_for,
        "hosts": hosts,
        "files": [f for f in exported if f in created],
        "files_kept": [f for f in exported if f not in created],
        "dirs_created": sorted(set(f.rsplit("/", 1)[0] or "/" for e in gone for f in e.get("files_created") or [])),
        "firewall_rules": [r for r in _union([], [r for e in gone for r in e.get("firewall_rules_added") or []])
                           if r not in rules_left],
        "record_left": record_left,
    }
