# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The results model of fabric_report: records -> metrics, and the document's constants.

The benchmark modules (report/benchmarks/, listed in its registry) read the result facts
into records in the schema of docs/results-schema.md. From the records,
:func:`derive_metrics` produces the flat list of scalar metrics that references, baselines
and the outlier check work on. A metric's ``key`` names what was measured independently of
the host (benchmark, metric name, labels); its ``id`` adds the host, so the same measurement
can be found in a baseline.

Pure functions only; runs on the controller (the fabric_report action plugin), kept to
Python 3.9 syntax like the rest of module_utils.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import EXACT, HIGHER, LOWER, ReportError
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import BENCHMARKS, REGISTRY, RESULT_FACTS

SCHEMA = "aiinfra.fabric.results"
SCHEMA_VERSION = 1

# The record lists of the document's "benchmarks": the benchmarks, and "verdicts" (a result
# fact that says it failed without a run record that carries the failure).
RECORD_LISTS = BENCHMARKS + ("verdicts",)


# --------------------------------------------------------------------------- metrics

def _metric(host, benchmark, name, value, unit, better, labels, info, note=None):
    labels = dict((k, v) for k, v in labels.items() if v is not None)
    key = "%s.%s" % (benchmark, name)
    if labels:
        key += "[" + ",".join("%s=%s" % (k, labels[k]) for k in sorted(labels)) + "]"
    return {"id": "%s/%s" % (host, key), "key": key, "host": host, "benchmark": benchmark,
            "metric": name, "value": value, "unit": unit, "better": better, "labels": labels,
            "host_class": info.get("host_class"), "gpu_model": info.get("gpu_model"),
            "transport": labels.get("transport") or info.get("transport"), "note": note or None}


def _unique_ids(metrics):
    """Give a repeated id (the same run twice with the same labels) a ``seq`` label: 2, 3, ..."""
    count = {}
    for m in metrics:
        n = count[m["id"]] = count.get(m["id"], 0) + 1
        if n > 1:
            m["labels"]["seq"] = n
            key = "%s.%s[%s]" % (m["benchmark"], m["metric"],
                                 ",".join("%s=%s" % (k, m["labels"][k]) for k in sorted(m["labels"])))
            m["key"], m["id"] = key, "%s/%s" % (m["host"], key)
    return metrics


def derive_metrics(benchmarks, hosts):
    """The flat scalar metrics of a run, sorted by id: each benchmark's, then the verdicts'."""
    metrics = []

    def adder(benchmark):
        def add(host, name, value, unit, better, labels, note=None, info=None):
            # info: the record's own attributes (an NCCL run's GPU model) over the host's.
            attrs = dict(hosts.get(host) or {}, **info) if info else (hosts.get(host) or {})
            m = _metric(host, benchmark, name, value, unit, better, labels, attrs, note)
            if m["value"] is not None:
                metrics.append(m)
        return add

    for bench in REGISTRY:
        bench.metrics(benchmarks.get(bench.name, []), adder(bench.name))
    for v in benchmarks.get("verdicts", []):
        adder(v["benchmark"])(v["host"], "run_passed", bool(v["passed"]), "bool", EXACT, {"fact": v["fact"]},
                              v.get("failure"))
    _unique_ids(metrics)
    metrics.sort(key=lambda m: m["id"])
    return metrics


# With the shared base's and the registry's names that other modules import from here.
__all__ = ["SCHEMA", "SCHEMA_VERSION", "RECORD_LISTS", "RESULT_FACTS", "BENCHMARKS", "HIGHER", "LOWER", "EXACT",
           "ReportError", "derive_metrics"]
