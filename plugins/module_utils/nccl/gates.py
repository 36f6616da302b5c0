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

import math


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


def first_match(name, patterns):
    """The first of ``patterns`` (in their order) found in ``name``, case-insensitively, or None.

    The one rule for telling a GPU model from the name nvidia-smi / nccl-tests print
    (``NVIDIA H100 80GB HBM3``): the busbw bounds and the expectations catalog both use it.
    """
    lowered = (name or "").lower()
    for pattern in patterns:
        if str(pattern).lower() in lowered:
            return pattern
    return None


def bound_for(min_busbw=None, min_busbw_per_gpu=None, gpu_models=()):
    """The busbw bound in GB/s for these GPUs. Returns ``(bound or None, what it came from)``.

    For each GPU model the first ``min_busbw_per_gpu`` key (in the order given) found in
    its name, case-insensitively, is its bound - so put ``H100 PCIe`` before ``H100``.
    When the job spans several models, the strictest of their bounds applies. Without a
    matching key, ``min_busbw``.
    """
    chosen = None
    bounds = min_busbw_per_gpu or {}
    for model in gpu_models:
        pattern = first_match(model, bounds)
        if pattern is not None:
            value = float(bounds[pattern])
            if chosen is None or value > chosen[0]:
                chosen = (value, "min_busbw_per_gpu[%s] (%s)" % (pattern, model))
    if chosen:
        return chosen
    if min_busbw is not None:
        return float(min_busbw), "min_busbw"
    return None, None


def expected_sizes(config, reduced_to=None):
    """The sizes nccl-tests' loop visits for this configuration (up to the reduced maxBytes).

    ``for (size = minbytes; size <= maxbytes; size = stepfactor > 1 ? size*stepfactor :
    size+stepbytes)`` (src/common.cu). The printed size can be a little lower (rounded to
    whole elements per rank), so rows are counted, not compared byte for byte.
    """
    if not config or config.get("minbytes") is None or config.get("maxbytes") is None:
        return None
    low, high = int(config["minbytes"]), int(config["maxbytes"])
    if reduced_to is not None:
        high = min(high, int(reduced_to))
    factor, step = config.get("stepfactor"), config.get("stepbytes")
    sizes = []
    size = low
    while size <= high and len(sizes) < 10000:
        sizes.append(size)
        if factor and factor > 1:
            size *= factor
        elif step and step > 0:
            size += step
        else:
            break
    return sizes


def completeness(report):
    """Failure messages when the table is incomplete: no footer, or fewer sizes than asked for."""
    failures = []
    if not report["rows"]:
        return failures
    if not report.get("footer"):
        failures.append("the table has no footer ('# Out of bounds values', '# Avg bus bandwidth'): the output "
                        "ends mid-table (the run was killed, timed out or its output was cut)")
    sizes = expected_sizes(report.get("config"), report.get("max_bytes_reduced_to"))
    if sizes:
        combos = {}
        for row in report["rows"]:
            combos.setdefault((row.get("type"), row.get("redop"), row.get("root")), []).append(row["size"])
        for (dtype, redop, root), measured in combos.items():
            if len(measured) < len(sizes):
                failures.append(
                    "only %d of the %d sizes were measured%s: the largest is %d B, the run was asked to reach %d B"
                    % (len(measured), len(sizes), "" if len(combos) == 1 else " for %s/%s" % (dtype, redop),
                       max(measured), sizes[-1]))
    return failures


def gate_size(report, summary):
    """The size (bytes) at which the busbw gate is applied: the largest measured."""
    return summary["largest_size"]


def _reduced_note(report):
    config = report.get("config") or {}
    reduced = report.get("max_bytes_reduced_to")
    if reduced is None:
        return ""
    return (" (nccl-tests printed 'Reducing maxBytes to %d due to memory limitation': the requested maxbytes "
            "%s B did not fit in GPU memory)" % (reduced, config.get("maxbytes")))


def check_gates(report, summary, host, min_busbw=None, min_busbw_per_gpu=None, expected_gpus=None):
    """Failure messages (empty list: every gate passed)."""
    failures = []
    where = "%s (devices: %s)" % (host, describe_devices(report["devices"]) or "not listed")
    for problem in report.get("problems") or []:
        failures.append("%s on %s" % (problem, where))
    failures.extend("%s on %s" % (f, where) for f in completeness(report))
    if expected_gpus is not None and report["devices"] and len(report["devices"]) != expected_gpus:
        failures.append("the job ran on %d GPUs (ranks in the device list), expected %d (processes x GPUs per "
                        "process) on %s" % (len(report["devices"]), expected_gpus, where))
    if summary["wrong_total"]:
        sizes = ", ".join("%d B %s/%s: %d" % (w["size"], w["type"], w["redop"], w["wrong"])
                          for w in summary["wrong_rows"][:5])
        failures.append("%d wrong values (#wrong) on %s: %s" % (summary["wrong_total"], where, sizes))
    if report["out_of_bounds_failed"]:
        failures.append("out of bounds values: %s FAILED on %s" % (report["out_of_bounds"], where))
    if report["avg_busbw_failed"]:
        failures.append("nccl-tests' own NCCL_TESTS_MIN_BW check FAILED (avg bus bandwidth %s) on %s"
                        % (report["avg_busbw"], where))
    value = summary["largest_size_busbw"]
    if value is not None and not _finite(value):
        failures.append("out-of-place busbw at the largest size (%d B) is %s, not a number on %s"
                        % (summary["largest_size"], value, where))
    bound, origin = bound_for(min_busbw, min_busbw_per_gpu, summary["gpu_models"])
    if bound is not None:
        if value is None:
            failures.append("no out-of-place result to compare with %s = %s GB/s on %s" % (origin, bound, where))
        elif _finite(value) and value < bound:
            failures.append("out-of-place busbw %.2f GB/s at the largest size (%d B) is below %s = %s "
                            "GB/s on %s%s" % (value, summary["largest_size"], origin, bound, where,
                                              _reduced_note(report)))
    return failures


def _finite(value):
    return not (math.isnan(value) or math.isinf(value))


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
