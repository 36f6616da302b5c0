# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planned maintenance of one nvmet port (playbooks/nvmeof_port_maintenance.yml), on the
controller: which hosts use the port, whether taking it out of service would leave one of them
without a usable path, and whether the hosts see the port out of service (or back).

Inputs are the read-only results of two modules: aiinfra.fabric.nvmet_info on the target (its
``nvmet`` tree: ports with their address, linked subsystems and ANA group states) and
aiinfra.fabric.nvme_health on each initiator (its ``nvme_health`` result). ``host_paths`` is the
one reader of the nvme_health shape here; every other function works on what it returns.

Out of service means every ANA group of the port is ``inaccessible``: the hosts keep their
controllers (nothing disconnects) and move I/O to their other paths. Back means the groups get
the states they had before, which the ``out`` step saves in a record on the target.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import normalize_traddr

ACTIONS = ("out", "back", "round")
USABLE_ANA = ("optimized", "non-optimized")
OUT_STATE = "inaccessible"
RECORD_VERSION = 1


class MaintenanceError(ValueError):
    pass


def port_id(value):
    """The port id as an int (0 to 65535), or a MaintenanceError naming the value."""
    if isinstance(value, bool):
        raise MaintenanceError("the port id must be an integer from 0 to 65535, got %r" % (value,))
    try:
        pid = int(str(value).strip())
    except (TypeError, ValueError):
        raise MaintenanceError("the port id must be an integer from 0 to 65535, got %r" % (value,))
    if not 0 <= pid <= 65535:
        raise MaintenanceError("the port id must be an integer from 0 to 65535, got %r" % (value,))
    return pid


def target_port(nvmet, pid, target):
    """The port ``pid`` of ``nvmet`` (nvmet_info's tree) as {port_id, trtype, traddr, trsvcid, label,
    subsystems, ana_groups: [{grpid, state}]}; a MaintenanceError naming the ports the target has
    when it has no such port."""
    pid = port_id(pid)
    ports = [p for p in (nvmet or {}).get("ports") or [] if isinstance(p, dict)]
    found = [p for p in ports if str(p.get("portid")) == str(pid)]
    if not found:
        have = ", ".join(str(p.get("portid")) for p in sorted(ports, key=lambda p: int(p.get("portid") or 0)))
        raise MaintenanceError("port %d is not on %s (its nvmet ports: %s)" % (pid, target, have or "none"))
    port = found[0]
    addr = port.get("addr") or {}
    trtype = addr.get("trtype")
    traddr = normalize_traddr(trtype, addr.get("traddr")) if addr.get("traddr") else None
    trsvcid = str(addr["trsvcid"]) if addr.get("trsvcid") not in (None, "") else None
    groups = sorted(({"grpid": int(g["grpid"]), "state": (g.get("ana") or {}).get("state")}
                     for g in port.get("ana_groups") or []), key=lambda g: g["grpid"])
    return {
        "target": target,
        "port_id": pid,
        "trtype": trtype,
        "traddr": traddr,
        "trsvcid": trsvcid,
        "label": "port %d (%s %s:%s on %s)" % (pid, trtype, traddr, trsvcid, target),
        "subsystems": sorted(port.get("subsystems") or []),
        "ana_groups": groups,
    }


def host_paths(health, unconfigured=False):
    """The one reader of nvme_health's result here: one flat dict per configured path, with
    {nqn, label, transport, traddr, trsvcid, controller, state, ana_states, usable, configured}.
    With ``unconfigured``, also the controllers no configured path accounts for (nvme_health's
    other_controllers: another tool's connections), with configured False and no ANA states."""
    out = []
    if not isinstance(health, dict):
        return out

    def flat(nqn, entry, configured):
        transport = entry.get("transport")
        where = {"transport": transport,
                 "traddr": normalize_traddr(transport, entry.get("traddr")) if entry.get("traddr") else None,
                 "trsvcid": str(entry["trsvcid"]) if entry.get("trsvcid") not in (None, "") else None}
        return dict(where, nqn=nqn, label=entry.get("label") or "%s %s" % (nqn, _where(where)),
                    controller=entry.get("controller"), state=entry.get("state"),
                    ana_states=dict(entry.get("ana_states") or {}), usable=bool(entry.get("usable")),
                    configured=configured)

    for sub in health.get("subsystems") or []:
        if isinstance(sub, dict):
            out.extend(flat(sub.get("nqn"), path, True) for path in sub.get("paths") or [] if isinstance(path, dict))
    if unconfigured:
        out.extend(flat(ctrl.get("nqn"), ctrl, False) for ctrl in health.get("other_controllers") or []
                   if isinstance(ctrl, dict))
    return out


def through(path, port):
    """Whether a host's path goes to the target port (transport, address and service id)."""
    return (path["transport"] == port["trtype"] and path["traddr"] == port["traddr"]
            and (path["trsvcid"] or None) == (port["trsvcid"] or None))


def _describe(path, short=False):
    ana = ", ".join("%s %s" % kv for kv in sorted(path["ana_states"].items()))
    where = _where(path) if short else path["label"]
    return "%s %s%s" % (where, path["state"], (" (ANA %s)" % ana) if ana else "")


def _where(path):
    return "%s %s:%s" % (path["transport"], path["traddr"], path["trsvcid"])


def plan(port, health_by_host, force=False, unread=()):
    """What taking ``port`` out of service does to each host: {hosts: {host: [path through the port,
    usable before, with the other usable paths of its subsystem]}, refusals: [...], lines: [...]}.

    A host is affected when it has a usable path through the port to a subsystem linked there.
    Each such path needs another usable path of the same subsystem on that host; one without is
    a refusal that names the host, the subsystem and the port (``force`` lets it pass, noted).
    So is each host of ``unread`` (an initiator whose paths could not be read): whether it uses
    the port is unknown."""
    hosts = {}
    refusals = ["%s: its paths could not be read (unreachable, failed, or outside --limit), so whether it uses %s is "
                "unknown" % (host, port["label"]) for host in sorted(unread)]
    lines = []
    for host in sorted(health_by_host):
        everything = host_paths(health_by_host[host], unconfigured=True)
        refusals.extend(
            "%s: %s holds %s through %s (%s), a connection the nvmeof_initiator role did not configure, so its other "
            "paths are unknown" % (host, c["controller"], c["nqn"], port["label"], c["state"])
            for c in everything if not c["configured"] and through(c, port) and c["nqn"] in port["subsystems"]
            and c["state"] == "live")
        paths = [p for p in everything if p["configured"]]
        affected = []
        for path in paths:
            if not through(path, port) or path["nqn"] not in port["subsystems"] or not path["usable"]:
                continue
            others = [p for p in paths if p["nqn"] == path["nqn"] and not through(p, port) and p["usable"]]
            affected.append({"nqn": path["nqn"], "label": path["label"], "controller": path["controller"],
                             "ana_states": path["ana_states"], "other_usable": [p["label"] for p in others]})
            if not others:
                rest = [_describe(p, short=True) for p in paths if p["nqn"] == path["nqn"] and not through(p, port)]
                refusals.append(
                    "%s: subsystem %s would be left with no usable path: its only usable path goes through %s; "
                    "its other paths: %s" % (host, path["nqn"], port["label"], ", ".join(rest) or "none configured"))
            else:
                lines.append("%s: %s moves its I/O from %s to %s" % (
                    host, path["nqn"], _where(path), ", ".join(_where(p) for p in others)))
        if affected:
            hosts[host] = affected
    if not hosts:
        lines.append("no initiator has a usable path through %s" % port["label"])
    if force and refusals:
        lines.extend("forced: " + r for r in refusals)
        refusals = []
    return {"hosts": hosts, "refusals": refusals, "lines": lines}


def record(port, hosts, previous=None):
    """The record the ``out`` step writes on the target before it changes anything: the port,
    the ANA group states to restore and the hosts' paths to wait for. A record already there
    (the port is out already) is kept: its states are the ones from before maintenance."""
    if previous:
        check_record(previous, port)
        return previous
    return {
        "version": RECORD_VERSION,
        "port_id": port["port_id"],
        "trtype": port["trtype"],
        "traddr": port["traddr"],
        "trsvcid": port["trsvcid"],
        "ana_groups": port["ana_groups"],
        "hosts": hosts,
    }


def check_record(rec, port):
    if not isinstance(rec, dict) or rec.get("version") != RECORD_VERSION or not isinstance(rec.get("ana_groups"), list):
        raise MaintenanceError("the maintenance record of %s is not one this collection wrote (%r); remove it and set "
                               "the port's ANA group states with aiinfra.fabric.nvmet_port" % (port["label"], rec))
    where = (rec.get("port_id"), rec.get("trtype"), rec.get("traddr"), rec.get("trsvcid"))
    if where != (port["port_id"], port["trtype"], port["traddr"], port["trsvcid"]):
        raise MaintenanceError("the maintenance record of %s was written for port %s (%s %s:%s), which has changed "
                               "since; set its ANA group states with aiinfra.fabric.nvmet_port" % ((port["label"],) + where))
    return rec


def groups_for(action, port, rec):
    """The ana_groups option of aiinfra.fabric.nvmet_port for ``out`` (every group of the port
    inaccessible) or ``back`` (the states in the record)."""
    if action == "out":
        return [{"grpid": g["grpid"], "state": OUT_STATE} for g in port["ana_groups"]]
    if not rec:
        raise MaintenanceError("%s has no maintenance record, so there are no saved ANA states to put back (was it "
                               "taken out with this playbook?); set its ANA group states with "
                               "aiinfra.fabric.nvmet_port" % port["label"])
    check_record(rec, port)
    return [{"grpid": int(g["grpid"]), "state": g["state"]} for g in rec["ana_groups"]]


def pending(health, expected, phase):
    """What a host still shows that the phase waits for: [] once settled.

    ``expected`` is the host's entry of plan()'s hosts (the paths through the port). ``out``: each
    such path is no longer usable (its ANA state inaccessible, so I/O left it). ``back``: each is
    usable again with the ANA states it had before."""
    now = dict((p["label"], p) for p in host_paths(health))
    waiting = []
    for want in expected or []:
        path = now.get(want["label"])
        if path is None:
            waiting.append("%s: not configured on the host any more" % want["label"])
        elif phase == "out" and path["usable"]:
            waiting.append("%s: still usable, waiting for ANA %s" % (_describe(path), OUT_STATE))
        elif phase == "back" and (not path["usable"] or path["ana_states"] != want["ana_states"]):
            waiting.append("%s: waiting for it live with ANA %s" % (_describe(path), ", ".join(
                "%s %s" % kv for kv in sorted(want["ana_states"].items())) or "usable"))
    return waiting


def usable_counts(health):
    """{nqn: "usable/configured"} of a host, for the report."""
    counts = {}
    for path in host_paths(health):
        usable, total = counts.get(path["nqn"], (0, 0))
        counts[path["nqn"]] = (usable + (1 if path["usable"] else 0), total + 1)
    return dict((nqn, "%d/%d" % c) for nqn, c in counts.items())


def maintenance_plan(port, action, health_by_host, rec=None, force=False, unread=()):
    """Everything the playbook does, decided before anything changes: the hosts and their paths
    through the port, the refusals, the ANA groups for ``out`` and ``back``, and the record."""
    if action not in ACTIONS:
        raise MaintenanceError("unknown action %r: use one of %s" % (action, ", ".join(ACTIONS)))
    if rec:
        check_record(rec, port)
    decided = plan(port, health_by_host, force, unread)
    if rec:
        # The port is out already: the hosts to wait for are those the out step recorded.
        decided["hosts"] = rec.get("hosts") or {}
        decided["lines"].insert(0, "%s is out of service since an earlier run (its record holds the ANA states "
                                   "to put back)" % port["label"])
    if action == "back":
        decided["refusals"] = []
        if not rec and port["ana_groups"] and all(g["state"] in USABLE_ANA for g in port["ana_groups"]):
            # Back already (a second run): nothing recorded, nothing out of service.
            decided["hosts"] = {}
            decided["lines"] = ["%s is in service (no maintenance record, every ANA group %s): nothing to put back"
                                % (port["label"], " or ".join(USABLE_ANA))]
            back = [dict(g) for g in port["ana_groups"]]
        else:
            back = groups_for("back", port, rec)
    else:
        back = [dict(g) for g in (rec["ana_groups"] if rec else port["ana_groups"])]
    decided.update({
        "port": port,
        "action": action,
        "out_groups": groups_for("out", port, rec),
        "back_groups": back,
        "record": record(port, decided["hosts"], rec),
    })
    return decided


def report(decided, before, during, after):
    """Readable lines: per host and subsystem, the usable paths before, during and after (``-``
    where a phase did not run)."""
    hosts = decided["hosts"]
    lines = ["%s %s: %d host(s) with a path through it" % (decided["port"]["label"], decided["action"], len(hosts))]
    for host in sorted(set(before) | set(hosts)):
        b, d, a = usable_counts(before.get(host)), usable_counts(during.get(host)), usable_counts(after.get(host))
        used = set(p["nqn"] for p in hosts.get(host, []))
        for nqn in sorted(set(b) | set(d) | set(a)):
            lines.append("%s %s: usable paths before %s, during %s, after %s%s" % (
                host, nqn, b.get(nqn, "-"), d.get(nqn, "-"), a.get(nqn, "-"),
                "" if nqn in used else " (not using the port)"))
    return lines
