# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The results model of fabric_report: benchmark facts -> one versioned document.

Each benchmark role publishes one fact per host (``nccl_tests_result``,
``mpi_bench_result``, ``nvmeof_initiator_result``, ``nvmeof_target_result``). The
adapters here accept the documented shapes of those facts and are lenient about
what is missing: a fact without rows gives a record without rows, never an
exception. Every adapter returns plain dicts in the schema of docs/results-schema.md.

From the records, :func:`derive_metrics` produces the flat list of scalar metrics
that references, baselines and the outlier check work on. A metric's ``key`` names
what was measured independently of the host (benchmark, metric name, labels); its
``id`` adds the host, so the same measurement can be found in a baseline.

Pure functions only; runs on the controller (the fabric_report action plugin), kept
compatible with Python 3.8+ like the rest of module_utils.
"""

from __future__ import annotations

import math

SCHEMA = "aiinfra.fabric.results"
SCHEMA_VERSION = 1

# The facts fabric_report collects, in the order the report lists them.
RESULT_FACTS = ("nvmeof_target_result", "nvmeof_initiator_result", "mpi_bench_result", "nccl_tests_result",
                "fabric_sweep_result")
BENCHMARKS = ("nvmeof", "fio", "mpi", "nccl", "sweep")
# The record lists of the document's "benchmarks": the benchmarks, and "verdicts" (a result
# fact that says it failed without a run record that carries the failure).
RECORD_LISTS = BENCHMARKS + ("verdicts",)

HIGHER = "higher"
LOWER = "lower"
EXACT = "exact"

# fio latency percentiles as the fio parser (module_utils/nvme/fio.py) publishes them.
FIO_PERCENTILES = ("p50", "p90", "p95", "p99", "p99_9")


class ReportError(Exception):
    """Bad input to the report: the message names the parameter/fact and the value."""


# --------------------------------------------------------------------------- helpers

def _num(value, default=None):
    """A finite float from an int/float/numeric string; ``default`` otherwise."""
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, (int, float)):
        result = float(value)
    else:
        text = str(value).strip()
        if not text or text.upper() in ("N/A", "NA", "-", "NAN"):
            return default
        try:
            result = float(text)
        except ValueError:
            return default
    return result if math.isfinite(result) else default


def _int(value, default=None):
    result = _num(value)
    return int(result) if result is not None else default


def _first(mapping, *names, **kw):
    """The first of ``names`` present (not None) in ``mapping``."""
    if not isinstance(mapping, dict):
        return kw.get("default")
    for name in names:
        if mapping.get(name) is not None:
            return mapping[name]
    return kw.get("default")


def _host_names(hosts):
    """``["a", {"name": "b", "slots": 2}]`` -> ``["a", "b"]``; a comma string splits."""
    if hosts is None:
        return []
    if isinstance(hosts, str):
        return [h.strip() for h in hosts.replace("+", ",").split(",") if h.strip()]
    out = []
    for h in hosts if isinstance(hosts, (list, tuple)) else [hosts]:
        if isinstance(h, dict):
            name = _first(h, "name", "host", "hostname")
            if name:
                out.append(str(name))
        elif h is not None:
            out.append(str(h))
    return out


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


def _run_passed(add, host, benchmark, record, labels):
    if record.get("passed") is not None:
        add(host, benchmark, "run_passed", bool(record["passed"]), "bool", EXACT, labels, record.get("failure"))


def derive_metrics(benchmarks, hosts):
    """The flat scalar metrics of a run, sorted by id."""
    metrics = []

    def add(host, benchmark, name, value, unit, better, labels, note=None):
        m = _metric(host, benchmark, name, value, unit, better, labels, hosts.get(host) or {}, note)
        if m["value"] is not None:
            metrics.append(m)

    for r in benchmarks.get("nccl", []):
        labels = {"test": r["test"], "scope": r["scope"], "nranks": r["nranks"], "sizes": r.get("sizes")}
        if r["scope"] == "multi":
            labels["hosts"] = "+".join(r["hosts"])
        info = dict(hosts.get(r["host"]) or {})
        if r.get("gpu_model"):
            info["gpu_model"] = r["gpu_model"]
        for name, value in (("busbw_peak", r["peak_busbw"]), ("busbw_max_size", r["busbw_at_max_size"]),
                            ("avg_busbw", r["avg_busbw"])):
            if value is not None:
                metrics.append(_metric(r["host"], "nccl", name, value, "GB/s", HIGHER, labels, info))
        if r["wrong_total"] is not None:
            metrics.append(_metric(r["host"], "nccl", "wrong", r["wrong_total"], "count", EXACT, labels, info))
        if r.get("passed") is not None:
            metrics.append(_metric(r["host"], "nccl", "run_passed", bool(r["passed"]), "bool", EXACT, labels, info,
                                   r.get("failure")))
    jobs_seen = set()
    for r in benchmarks.get("mpi", []):
        labels = {"program": r["program"], "test": r["test"], "np": r["np"], "scope": r["scope"]}
        if r["scope"] == "multi":
            labels["hosts"] = "+".join(r["hosts"])
        rows = r["rows"]
        lat = [x for x in rows if x["latency_us"] is not None]
        bw = [x for x in rows if x["bandwidth_mbps"] is not None]
        if lat:
            add(r["host"], "mpi", "latency_min_size", lat[0]["latency_us"], "us", LOWER,
                dict(labels, size=lat[0]["size"]))
            if len(lat) > 1:
                add(r["host"], "mpi", "latency_max_size", lat[-1]["latency_us"], "us", LOWER,
                    dict(labels, size=lat[-1]["size"]))
        if bw:
            best = max(bw, key=lambda x: x["bandwidth_mbps"])
            add(r["host"], "mpi", "bandwidth_peak", best["bandwidth_mbps"], "MB/s", HIGHER, labels)
        if r["check_passed"] is not None:
            add(r["host"], "mpi", "check_passed", bool(r["check_passed"]), "bool", EXACT, labels)
        if (r["host"], r["run"]) not in jobs_seen:  # one verdict per job, not per result table
            jobs_seen.add((r["host"], r["run"]))
            _run_passed(add, r["host"], "mpi", r, {"job": r["run"], "np": r["np"], "scope": r["scope"]})
    for r in benchmarks.get("fio", []):
        labels = {"job": r["job"], "direction": r["direction"], "transport": r["transport"]}
        if r["iops"] is not None:
            add(r["host"], "fio", "iops", r["iops"], "IOPS", HIGHER, labels)
        if r["bw_bytes"] is not None:
            add(r["host"], "fio", "bw", round(r["bw_bytes"] / 1048576.0, 3), "MiB/s", HIGHER, labels)
        for p in ("p50", "p99", "p99_9"):
            if r["lat_us"].get(p) is not None:
                add(r["host"], "fio", "lat_%s" % p, r["lat_us"][p], "us", LOWER, labels)
        add(r["host"], "fio", "error", r["error"], "errno", EXACT, labels)
    for r in benchmarks.get("nvmeof", []):
        labels = {"role": r["role"], "transport": r["transport"]}
        if r["io_check"] is not None:
            add(r["host"], "nvmeof", "io_check", r["io_check"], "bool", EXACT, labels)
        _run_passed(add, r["host"], "nvmeof", r, labels)
    for r in benchmarks.get("sweep", []):
        # One metric per pair and test (the pair's nodes in the labels), and the sweep's verdict.
        for p in r["pairs"]:
            add(r["host"], "sweep", p["test"], p["value"], p["unit"], p["better"],
                {"pair": p["pair"], "launcher": r["launcher"], "size": p["size"]})
        _run_passed(add, r["host"], "sweep", r, {"run": r["run"], "launcher": r["launcher"]})
    for v in benchmarks.get("verdicts", []):
        add(v["host"], v["benchmark"], "run_passed", bool(v["passed"]), "bool", EXACT, {"fact": v["fact"]},
            v.get("failure"))
    _unique_ids(metrics)
    metrics.sort(key=lambda m: m["id"])
    return metrics
