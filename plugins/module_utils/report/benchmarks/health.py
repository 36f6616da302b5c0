# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric health: ``fabric_health_result`` (what aiinfra.fabric.nvme_health returned on an
initiator, as playbooks/fabric_health.yml publishes it) -> one record per configured
subsystem, the built-in check that no configured path is unusable (a degraded subsystem is a
failed check naming the host, the subsystem and each path it lacks), health.csv, and one
summary line per host.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import EXACT, integer
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.kind import Benchmark

FACT = "fabric_health_result"


def read(host, facts, run):
    fact = facts.get(FACT)
    if not isinstance(fact, dict):
        return None
    records = []
    for sub in fact.get("subsystems") or []:
        if not isinstance(sub, dict):
            continue
        configured = integer(sub.get("configured_paths")) or 0
        usable = integer(sub.get("usable_paths")) or 0
        problems = [str(p) for p in sub.get("problems") or []]
        records.append({
            "host": host,
            "subsystem": sub.get("nqn"),
            "status": sub.get("status"),
            "configured_paths": configured,
            "live_paths": integer(sub.get("live_paths")),
            "usable_paths": usable,
            "unusable_paths": configured - usable,
            "iopolicy": sub.get("iopolicy"),
            "problems": problems,
        })
    return records or None


def metrics(records, add):
    for r in records:
        note = "%s on %s: %s" % (r["subsystem"], r["host"], "; ".join(r["problems"])) if r["problems"] else None
        add(r["host"], "unusable_paths", r["unusable_paths"], "paths", EXACT, {"subsystem": r["subsystem"]}, note)


CSV_COLUMNS = ["host", "subsystem", "status", "configured_paths", "live_paths", "usable_paths", "iopolicy", "problems"]


def csv_rows(records):
    return [dict(r, problems="; ".join(r["problems"])) for r in records]


def section(records):
    return {
        "title": "Fabric health",
        "columns": ["host", "subsystem", "status", "configured", "live", "usable", "iopolicy", "problems"],
        "numeric": (),
        "rows": [(r["host"], r["subsystem"], r["status"], r["configured_paths"], r["live_paths"], r["usable_paths"],
                  r["iopolicy"], "; ".join(r["problems"])) for r in records],
    }


def summary(host, name, fact):
    line = fact.get("summary") if isinstance(fact, dict) else None
    return ["Fabric health: %s" % (line or "no result")]


BENCHMARK = Benchmark(
    "health", facts=(FACT,), read=read, metrics=metrics, expect={"unusable_paths": 0}, csv_columns=CSV_COLUMNS,
    csv_rows=csv_rows, section=section, summary=summary)


def connections_by_port(host_results):
    """The target's view, from the initiators': ``{host: fabric_health_result}`` -> one line per
    target subsystem and address (``NQN TRANSPORT TRADDR:TRSVCID: te2 live, te3 missing``),
    naming each host whose configured path goes there, with that path's state; then the
    controllers no configured path accounts for (``... (not configured by aiinfra.fabric)``)."""
    ports = {}
    order = []

    def note(key, entry):
        if key not in ports:
            ports[key] = []
            order.append(key)
        ports[key].append(entry)

    for host in sorted(host_results):
        result = host_results[host]
        if not isinstance(result, dict):
            continue
        for sub in result.get("subsystems") or []:
            for path in sub.get("paths") or []:
                key = (sub.get("nqn"), path.get("transport"), path.get("traddr"), path.get("trsvcid"))
                note(key, "%s %s" % (host, path.get("state")))
        for ctrl in result.get("other_controllers") or []:
            key = (ctrl.get("nqn"), ctrl.get("transport"), ctrl.get("traddr"), ctrl.get("trsvcid"))
            note(key, "%s %s (not configured by aiinfra.fabric)" % (host, ctrl.get("state")))
    return ["%s %s %s:%s: %s" % (key + (", ".join(ports[key]),)) for key in sorted(order, key=lambda k: tuple(
        str(part) for part in k))]
