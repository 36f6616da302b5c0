# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""What one sweep test measures, and the number it yields (pure).

``normalize_test(spec, index, parameter) -> dict``
    A test is ``{name, program, args, parse, table, metric, size, better, expect}``:
    ``parse`` ``osu`` reads OSU Micro-Benchmarks tables (and the mpi_bench role's
    OSU-shaped fabric_mpi_bench), ``nccl`` reads nccl-tests tables. ``table`` is the
    OSU table kind (latency, bandwidth, bibandwidth, collective); ``metric`` the column
    (``latency_us``, ``bandwidth_mbs``; nccl: ``busbw`` or ``algbw``, out of place unless
    ``in_place_busbw``); ``nccl`` (a dict of nccl-tests options: minbytes, maxbytes, ngpus,
    iters, ...) builds the nccl-tests arguments as the nccl_test module does. ``size`` in bytes: default the smallest size for latencies and
    the largest for bandwidths. ``better`` follows from the metric. ``expect`` is the
    expected value (same unit), optional.
``jobs_for(tests) -> [{'program', 'args', 'parse', 'tests': [names]}]``
    Tests that share a program and its arguments run as one job (fabric_mpi_bench
    ``all`` prints latency and bandwidth tables in one run).
``job_params(base, job, addresses, slots_per_node) -> mpi_run-style params``
    For :func:`ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.job.plan_job`.
``extract(test, parsed) -> (value, size, error)``
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.command import (
    NcclTestsError, build_test_args, size_to_bytes)
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep.errors import SweepError

PARSERS = ("osu", "nccl")
OSU_TABLES = ("latency", "bandwidth", "bibandwidth", "collective", "message_rate")
_UNITS = {"latency_us": "us", "min_latency_us": "us", "max_latency_us": "us", "bandwidth_mbs": "MB/s",
          "messages_per_s": "msg/s", "busbw": "GB/s", "algbw": "GB/s", "in_place_busbw": "GB/s",
          "in_place_algbw": "GB/s", "time_us": "us", "in_place_time_us": "us"}
_LOWER_IS_BETTER = ("latency_us", "min_latency_us", "max_latency_us", "time_us", "in_place_time_us")
_DEFAULT_METRIC = {"latency": "latency_us", "collective": "latency_us", "bandwidth": "bandwidth_mbs",
                   "bibandwidth": "bandwidth_mbs", "message_rate": "messages_per_s"}


class MeasureError(SweepError):
    """A test spec that cannot work; the message names the parameter and the value."""


def normalize_test(spec, index=0, parameter="tests"):
    where = "%s[%d]" % (parameter, index)
    if not isinstance(spec, dict):
        raise MeasureError("%s must be a dict {name, program, ...}, got %r" % (where, spec))
    known = {"name", "program", "args", "parse", "table", "metric", "size", "better", "expect", "nccl"}
    unknown = set(spec) - known
    if unknown:
        raise MeasureError("%s has unknown keys %s (allowed: %s)" % (where, sorted(unknown), ", ".join(sorted(known))))
    name = str(spec.get("name") or "").strip()
    if not name:
        raise MeasureError("%s needs a name" % where)
    program = str(spec.get("program") or "").strip()
    if not program:
        raise MeasureError("%s (%s) needs a program" % (where, name))
    args = spec.get("args") or []
    if not isinstance(args, (list, tuple)):
        raise MeasureError("%s.args must be a list, got %r" % (where, args))
    parse = spec.get("parse") or "osu"
    if parse not in PARSERS:
        raise MeasureError("%s.parse must be one of %s, got %r" % (where, ", ".join(PARSERS), parse))
    table = spec.get("table")
    if parse == "osu":
        if spec.get("nccl") is not None:
            raise MeasureError("%s.nccl (nccl-tests options) needs parse: nccl" % where)
        table = table or "latency"
        if table not in OSU_TABLES:
            raise MeasureError("%s.table must be one of %s, got %r" % (where, ", ".join(OSU_TABLES), table))
        metric = spec.get("metric") or _DEFAULT_METRIC[table]
    else:
        table = None
        if spec.get("nccl") is not None:
            # nccl-tests arguments from their names, validated like nccl_test's.
            options = spec["nccl"]
            if not isinstance(options, dict):
                raise MeasureError("%s.nccl must be a dict of nccl-tests options (minbytes, maxbytes, ngpus, "
                                   "iters, ...), got %r" % (where, options))
            try:
                args = build_test_args(**options) + [str(a) for a in args]
            except TypeError as exc:
                raise MeasureError("%s.nccl: %s" % (where, exc))
            except NcclTestsError as exc:
                raise MeasureError("%s.nccl: %s" % (where, exc))
        metric = spec.get("metric") or "busbw"
        if metric not in ("busbw", "algbw", "time_us", "in_place_busbw", "in_place_algbw", "in_place_time_us"):
            raise MeasureError("%s.metric for nccl must be busbw, algbw, time_us or their in_place_ forms, got %r"
                               % (where, metric))
    better = spec.get("better") or ("lower" if metric in _LOWER_IS_BETTER else "higher")
    if better not in ("higher", "lower"):
        raise MeasureError("%s.better must be higher or lower, got %r" % (where, better))
    size = spec.get("size")
    if size is not None and size != "":
        try:
            size = size_to_bytes(size, "%s.size" % where)
        except NcclTestsError as exc:
            raise MeasureError(str(exc))
    else:
        size = None
    expect = spec.get("expect")
    if expect is not None and expect != "":
        try:
            expect = float(expect)
        except (TypeError, ValueError):
            raise MeasureError("%s.expect must be a number (%s), got %r" % (where, _UNITS.get(metric, metric), expect))
        if expect <= 0:
            raise MeasureError("%s.expect must be above 0, got %r" % (where, expect))
    else:
        expect = None
    return {"name": name, "program": program, "args": [str(a) for a in args], "parse": parse, "table": table,
            "metric": metric, "unit": _UNITS.get(metric, ""), "size": size, "better": better, "expect": expect}


def normalize_tests(specs, parameter="tests"):
    if not isinstance(specs, (list, tuple)) or not specs:
        raise MeasureError("%s must be a non-empty list of tests" % parameter)
    tests = [normalize_test(s, i, parameter) for i, s in enumerate(specs)]
    names = [t["name"] for t in tests]
    twice = sorted(set(n for n in names if names.count(n) > 1))
    if twice:
        raise MeasureError("%s names %s more than once" % (parameter, ", ".join(twice)))
    return tests


def jobs_for(tests):
    jobs = []
    for test in tests:
        key = (test["program"], tuple(test["args"]), test["parse"])
        for job in jobs:
            if (job["program"], tuple(job["args"]), job["parse"]) == key:
                job["tests"].append(test["name"])
                break
        else:
            jobs.append({"program": test["program"], "args": list(test["args"]), "parse": test["parse"],
                         "tests": [test["name"]]})
    return jobs


def job_params(base, job, addresses, slots_per_node=1):
    """mpi_run parameters for ``job`` on ``addresses``: ``slots_per_node`` ranks on each."""
    params = dict(base)
    params.update({
        "program": job["program"],
        "args": list(job["args"]),
        "hosts": [{"name": a, "slots": slots_per_node} for a in addresses],
        "np": len(addresses) * slots_per_node,
        "parse": "none",
        "expect": {},
    })
    if params.get("launcher") != "srun":
        # One rank after the other on each node in turn: ranks 0 and 1 on different nodes.
        params["map_by"] = params.get("map_by") or "node"
    return params


def _pick_row(rows, size, smallest):
    rows = [r for r in rows if r.get("size") is not None]
    if not rows:
        return None
    if size is None:
        return min(rows, key=lambda r: r["size"]) if smallest else max(rows, key=lambda r: r["size"])
    for row in rows:
        if row["size"] == size:
            return row
    return None


def extract(test, parsed):
    """``(value, size, error)`` for ``test`` from the job's parsed output."""
    if parsed is None:
        return None, test["size"], "no output to read"
    if test["parse"] == "osu":
        tables = [t for t in parsed.get("tables", []) if t.get("kind") == test["table"]]
        if not tables:
            return None, test["size"], "no %s table in the output" % test["table"]
        rows = tables[0]["rows"]
        # Latencies at the smallest message, bandwidths at the largest, unless asked.
        row = _pick_row(rows, test["size"], smallest=test["better"] == "lower")
        if row is None:
            return None, test["size"], "no row for size %s in the %s table" % (test["size"], test["table"])
        if row.get("validation") == "Fail":
            return None, row["size"], "validation failed at size %s" % row["size"]
        value = row.get(test["metric"])
    else:
        if parsed.get("problems"):
            return None, test["size"], "nccl-tests output cannot be trusted: %s" % parsed["problems"][0]
        row = _pick_row(parsed.get("rows", []), test["size"], smallest=False)
        if row is None:
            return None, test["size"], "no nccl-tests row%s" % ("" if test["size"] is None else
                                                                " for size %s" % test["size"])
        metric = test["metric"]
        half = row.get("in_place") if metric.startswith("in_place_") else row.get("out_of_place")
        if half is None and not metric.startswith("in_place_"):
            half = row.get("in_place")
        metric = metric[len("in_place_"):] if metric.startswith("in_place_") else metric
        if half and half.get("wrong") not in (None, 0, "N/A"):
            return None, row["size"], "nccl-tests reports %s wrong values at size %s" % (
                half.get("wrong"), row["size"])
        value = (half or {}).get(metric)
    if value is None:
        return None, row.get("size"), "no %s value in the row for size %s" % (test["metric"], row.get("size"))
    return float(value), row.get("size"), None
