# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Figures and gates from a parsed nccl-tests report (pure).

``summarize(report)``  peak / largest-size busbw, total wrong values, hosts
``check_gates(...)``   failure messages for wrong values, out-of-bounds, low busbw
``no_mpi_processes(report)`` how many independent runs a launcher started when the
                       binary was built without MPI (0 when it was not that mistake)
"""

from __future__ import annotations

# --------------------------------------------------------------------------- summary, gates

def summarize(report):
    """Figures a gate or a dashboard wants, from a parsed report."""
    rows = report["rows"]
    oop = [r for r in rows if r.get("out_of_place")]
    peak = max(oop, key=lambda r: r["out_of_place"]["busbw"]) if oop else None
    largest = max(r["size"] for r in oop) if oop else None
    at_largest = [r for r in oop if r["size"] == largest]
    # With -d all / -o all there are several rows per size; the gate uses the slowest.
    slowest = min(at_largest, key=lambda r: r["out_of_place"]["busbw"]) if at_largest else None
    wrong = 0
    wrong_rows = []
    for row in rows:
        count = 0
        for half in (row.get("out_of_place"), row.get("in_place")):
            if half and half.get("wrong"):
                count += half["wrong"]
        if count:
            wrong += count
            wrong_rows.append({"size": row["size"], "type": row["type"], "redop": row["redop"], "wrong": count})
    hosts = []
    for dev in report["devices"]:
        if dev["host"] not in hosts:
            hosts.append(dev["host"])
    models = sorted(set(d["name"] for d in report["devices"] if d.get("name")))
    return {
        "rows": len(rows),
        "peak_busbw": peak["out_of_place"]["busbw"] if peak else None,
        "peak_busbw_size": peak["size"] if peak else None,
        "largest_size": largest,
        "largest_size_busbw": slowest["out_of_place"]["busbw"] if slowest else None,
        "wrong_total": wrong,
        "wrong_rows": wrong_rows,
        "nranks": len(report["devices"]) or None,
        "hosts": hosts,
        "gpu_models": models,
    }


def no_mpi_processes(report):
    """How many separate single-process runs are in this output (0: not that mistake).

    A binary built without MPI=1 that a launcher starts N times runs N independent
    jobs: each prints its own header and its own rank 0, and none talks to the others.
    """
    ranks = [d["rank"] for d in report["devices"]]
    zeros = ranks.count(0)
    runs = max(report["headers"], zeros)
    return runs if runs > 1 else 0


def bound_for(min_busbw=None, min_busbw_per_gpu=None, gpu_models=()):
    """The busbw bound in GB/s for these GPUs: the first ``min_busbw_per_gpu`` key found
    (case-insensitively) in a GPU name, the strictest if models differ; else ``min_busbw``.
    Returns ``(bound or None, what it came from)``.
    """
    chosen = None
    for pattern, value in (min_busbw_per_gpu or {}).items():
        for model in gpu_models:
            if str(pattern).lower() in model.lower():
                if chosen is None or float(value) > chosen[0]:
                    chosen = (float(value), "min_busbw_per_gpu[%s] (%s)" % (pattern, model))
    if chosen:
        return chosen
    if min_busbw is not None:
        return float(min_busbw), "min_busbw"
    return None, None


def check_gates(report, summary, host, min_busbw=None, min_busbw_per_gpu=None):
    """Failure messages (empty list: every gate passed)."""
    failures = []
    where = "%s (devices: %s)" % (host, describe_devices(report["devices"]) or "not listed")
    if summary["wrong_total"]:
        sizes = ", ".join("%d B %s/%s: %d" % (w["size"], w["type"], w["redop"], w["wrong"])
                          for w in summary["wrong_rows"][:5])
        failures.append("%d wrong values (#wrong) on %s: %s" % (summary["wrong_total"], where, sizes))
    if report["out_of_bounds_failed"]:
        failures.append("out of bounds values: %s FAILED on %s" % (report["out_of_bounds"], where))
    if report["avg_busbw_failed"]:
        failures.append("nccl-tests' own NCCL_TESTS_MIN_BW check FAILED (avg bus bandwidth %s) on %s"
                        % (report["avg_busbw"], where))
    bound, origin = bound_for(min_busbw, min_busbw_per_gpu, summary["gpu_models"])
    if bound is not None:
        value = summary["largest_size_busbw"]
        if value is None:
            failures.append("no out-of-place result to compare with %s = %s GB/s on %s" % (origin, bound, where))
        elif value < bound:
            failures.append("out-of-place busbw %.2f GB/s at the largest size (%d B) is below %s = %s GB/s on %s"
                            % (value, summary["largest_size"], origin, bound, where))
    return failures


def describe_devices(devices):
    """``host0: 0,1 NVIDIA H100; host1: 0 NVIDIA H100`` — compact, for messages."""
    per_host = {}
    order = []
    for dev in devices:
        key = (dev["host"], dev.get("name") or "")
        if key not in per_host:
            per_host[key] = []
            order.append(key)
        per_host[key].append(str(dev["device"]))
    return "; ".join("%s: %s %s" % (h, ",".join(per_host[(h, n)]), n) for h, n in order).strip()
