# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Result facts -> benchmark records: each benchmark of the registry reads its facts.

Each benchmark role publishes one fact per host (see the registry's RESULT_FACTS). The
benchmark modules (report/benchmarks/) read the shapes the roles really set (see
docs/results-schema.md) and return plain dicts in the schema of the results document. A
fact whose own verdict says it failed becomes a failed *run* record, which the checks turn
into a failure.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import ReportError, verdict
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import REGISTRY, RESULT_FACTS
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.kind import RunFacts


def _fact_verdict(bench, host, benchmark, name, fact, records):
    """A fact that says it failed, when none of its runs' records carries that failure."""
    passed, reason = verdict(fact if isinstance(fact, dict) else {})
    if passed is not False or any(r.get("passed") is False for r in records):
        return
    bench["verdicts"].append({"host": host, "benchmark": benchmark, "fact": name, "passed": False, "failure": reason})


def _describe_host(host, info, bench):
    """The host's attributes the inventory left out, from its records (GPU model, transport)."""
    for b in REGISTRY:
        for field in b.host_info:
            if not info.get(field):
                values = sorted(set(r[field] for r in bench[b.name] if r["host"] == host and r[field]))
                info[field] = values[0] if values else None


def collect(host_facts, host_info=None):
    """Turn ``{host: {fact_name: value}}`` into the benchmarks part of the document.

    ``host_info`` gives per-host attributes used by reference selectors
    (``host_class``, ``gpu_model``, ``transport``, ``groups``).
    Returns ``(benchmarks, hosts)``.
    """
    if not isinstance(host_facts, dict):
        raise ReportError("host facts must be a mapping of host name to facts, got %s" % type(host_facts).__name__)
    host_info = host_info or {}
    bench = dict((b.name, []) for b in REGISTRY)
    bench["verdicts"] = []
    hosts = {}
    run = RunFacts(host_facts)
    for host in sorted(host_facts):
        facts = host_facts[host] or {}
        if not isinstance(facts, dict):
            raise ReportError("facts of host %r must be a mapping, got %s" % (host, type(facts).__name__))
        info = dict(host_info.get(host) or {})
        for b in REGISTRY:
            records = b.read(host, facts, run)
            if records is None:
                continue
            bench[b.name].extend(records)
            if b.fact_verdict:
                for name in b.facts:
                    if facts.get(name) is not None:
                        _fact_verdict(bench, host, b.name, name, facts[name], records)
        present = [f for f in RESULT_FACTS if facts.get(f) is not None]
        if not present:
            continue
        _describe_host(host, info, bench)
        info.setdefault("host_class", None)
        info["facts"] = present
        hosts[host] = info
    return bench, hosts
