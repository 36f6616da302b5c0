# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fio: the fio summary in ``nvmeof_initiator_result`` -> one record per job and direction,
IOPS, bandwidth and latency percentile metrics, fio's error checked against 0, fio.csv, and
plots of throughput and latency percentiles.

fio owns no fact: the nvmeof_initiator role runs it and publishes its summary in its own
fact, whose summary lines (benchmarks/nvmeof.py) include :func:`fio_lines`.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import (
    EXACT, HIGHER, LOWER, first, fmt_number, integer, number)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.kind import Benchmark
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.plots import _svg

FACT = "nvmeof_initiator_result"

# fio latency percentiles as the fio parser (module_utils/nvme/fio.py) publishes them.
FIO_PERCENTILES = ("p50", "p90", "p95", "p99", "p99_9")


# --------------------------------------------------------------------------- read

def _fio_side(side):
    if not isinstance(side, dict):
        return None
    iops = number(side.get("iops"))
    bw = number(first(side, "bw_bytes"))
    if bw is None and side.get("bw_mib") is not None:
        bw = number(side["bw_mib"]) * 1048576.0
    if bw is None and side.get("bw") is not None:  # fio's own KiB/s field
        bw = number(side["bw"]) * 1024.0
    if iops is None and bw is None:
        return None
    lat = {}
    for block_name in ("clat_us", "lat_us", "clat", "lat"):
        block = side.get(block_name)
        if isinstance(block, dict):
            for k in ("mean", "min", "max") + FIO_PERCENTILES:
                if number(block.get(k)) is not None:
                    lat[k] = number(block[k])
            if lat:
                lat_source = block_name.replace("_us", "")
                break
    else:
        lat_source = None
    return {"iops": iops, "bw_bytes": bw, "lat_us": lat, "lat_kind": lat_source}


def adapt_fio(host, initiator_fact):
    """The fio part of ``nvmeof_initiator_result`` -> one record per job and direction."""
    fact = initiator_fact if isinstance(initiator_fact, dict) else {}
    fio = fact.get("fio")
    if not isinstance(fio, dict):
        return []
    records = []
    device = first(fact, "device", "devices")
    if isinstance(device, list):
        device = ", ".join(str(d.get("path", d.get("device", d)) if isinstance(d, dict) else d) for d in device)
    for job in fio.get("jobs") or []:
        if not isinstance(job, dict):
            continue
        for direction in ("read", "write", "trim"):
            side = _fio_side(job.get(direction))
            if side is None:
                continue
            rec = {"host": host, "job": str(first(job, "name", "jobname", default="job")),
                   "direction": direction, "device": device,
                   "transport": fact.get("transport"), "error": integer(job.get("error"), 0)}
            rec.update(side)
            records.append(rec)
    return records


def read(host, facts, run):
    if facts.get(FACT) is None:
        return None
    return adapt_fio(host, facts[FACT])


# --------------------------------------------------------------------------- metrics

def metrics(records, add):
    for r in records:
        labels = {"job": r["job"], "direction": r["direction"], "transport": r["transport"]}
        add(r["host"], "iops", r["iops"], "IOPS", HIGHER, labels)
        if r["bw_bytes"] is not None:
            add(r["host"], "bw", round(r["bw_bytes"] / 1048576.0, 3), "MiB/s", HIGHER, labels)
        for p in ("p50", "p99", "p99_9"):
            add(r["host"], "lat_%s" % p, r["lat_us"].get(p), "us", LOWER, labels)
        add(r["host"], "error", r["error"], "errno", EXACT, labels)


# --------------------------------------------------------------------------- CSV, HTML, plots

CSV_COLUMNS = ["host", "job", "direction", "device", "transport", "error", "iops", "bw_bytes", "bw_mib", "lat_kind",
               "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p95_us", "lat_p99_us", "lat_p99_9_us", "lat_max_us"]


def csv_rows(records):
    out = []
    for r in records:
        flat = dict(r)
        flat["bw_mib"] = round(r["bw_bytes"] / 1048576.0, 3) if r.get("bw_bytes") is not None else None
        for k in ("mean", "p50", "p90", "p95", "p99", "p99_9", "max"):
            flat["lat_%s_us" % k] = (r.get("lat_us") or {}).get(k)
        out.append(flat)
    return out


def section(records):
    return {
        "title": "fio",
        "columns": ["host", "job", "dir", "device", "transport", "IOPS", "MiB/s", "p50 us", "p99 us", "p99.9 us",
                    "error"],
        "numeric": ("IOPS", "MiB/s", "p50 us", "p99 us", "p99.9 us", "error"),
        "rows": [(r["host"], r["job"], r["direction"], r["device"], r["transport"], r["iops"],
                  round(r["bw_bytes"] / 1048576.0, 3) if r["bw_bytes"] is not None else None,
                  r["lat_us"].get("p50"), r["lat_us"].get("p99"), r["lat_us"].get("p99_9"), r["error"])
                 for r in records],
    }


def plot(plt, records):
    if not records:
        return []
    plots = []
    labels = ["%s\n%s %s" % (r["host"], r["job"], r["direction"]) for r in records]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.8))
    xs = list(range(len(records)))
    colours = ["#1f77b4" if r["direction"] == "read" else "#d62728" if r["direction"] == "write" else "#7f7f7f"
               for r in records]
    ax1.bar(xs, [r["iops"] or 0 for r in records], color=colours)
    ax1.set_title("IOPS")
    ax2.bar(xs, [(r["bw_bytes"] or 0) / 1048576.0 for r in records], color=colours)
    ax2.set_title("bandwidth (MiB/s)")
    for ax in (ax1, ax2):
        ax.set_xticks(xs)
        ax.set_xticklabels(labels, fontsize=7)
        ax.grid(True, axis="y", alpha=0.3)
    fig.suptitle("fio: IOPS and bandwidth per host, job and direction")
    plots.append(("fio-throughput", "fio IOPS and bandwidth per host, job and direction", _svg(plt, fig)))
    with_lat = [r for r in records if any(r["lat_us"].get(p) is not None for p in FIO_PERCENTILES)]
    if with_lat:
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        for r in with_lat:
            pts = [(i, r["lat_us"][p]) for i, p in enumerate(FIO_PERCENTILES) if r["lat_us"].get(p) is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label="%s %s %s" % (r["host"], r["job"], r["direction"]))
        ax.set_xticks(range(len(FIO_PERCENTILES)))
        ax.set_xticklabels(["p50", "p90", "p95", "p99", "p99.9"])
        ax.set_yscale("log")
        ax.set_ylabel("%s latency (us)" % (with_lat[0].get("lat_kind") or "completion"))
        ax.set_title("fio: latency percentiles")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        plots.append(("fio-latency", "fio latency percentiles per host, job and direction", _svg(plt, fig)))
    return plots


def plot_anchor(check):
    return "fio-latency" if "lat" in check["metric"] else "fio-throughput"


# --------------------------------------------------------------------------- summary

def fio_lines(host, initiator_fact):
    """A line per fio job and direction, for the initiator's summary."""
    lines = []
    for rec in adapt_fio(host, initiator_fact):
        lat = rec["lat_us"].get("p99")
        lines.append("fio %s %s: %s IOPS, %s MiB/s, p99 %s latency %s us%s" % (
            rec["job"], rec["direction"], fmt_number(rec["iops"]), fmt_number((rec["bw_bytes"] or 0) / 1048576.0),
            rec.get("lat_kind") or "completion", fmt_number(lat), ", error %s" % rec["error"] if rec["error"] else ""))
    return lines


BENCHMARK = Benchmark(
    "fio", facts=(), read=read, metrics=metrics, expect={"error": 0}, csv_columns=CSV_COLUMNS, csv_rows=csv_rows,
    section=section, plot=plot, plot_anchor=plot_anchor)
