# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's plots, drawn with matplotlib as SVG (a controller requirement, imported only
when plots are asked for): NCCL bus bandwidth vs size, MPI latency/bandwidth vs size, fio
IOPS, bandwidth and latency percentiles.
"""

from __future__ import annotations

import io


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise ImportError("matplotlib is needed on the controller to draw the report's plots "
                          "(pip install matplotlib, see requirements/controller.txt), or set plots to false")
    matplotlib.use("Agg", force=True)
    matplotlib.rcParams["svg.hashsalt"] = "aiinfra.fabric"  # stable ids, reproducible files
    import matplotlib.pyplot as plt
    return plt


def _svg(plt, fig):
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    return buf.getvalue()


def _size_label(n):
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return str(n)


def _size_axis(ax, sizes):
    ax.set_xscale("log", base=2)
    ticks = sorted(set(s for s in sizes if s > 0))
    if len(ticks) > 12:
        step = (len(ticks) + 11) // 12
        ticks = ticks[::step]
    ax.set_xticks(ticks)
    ax.set_xticklabels([_size_label(t) for t in ticks], rotation=45, ha="right", fontsize=8)
    ax.minorticks_off()
    ax.grid(True, which="major", alpha=0.3)


def _series_label(r):
    if r.get("scope") == "multi":
        return "+".join(r["hosts"]) + (" (np %s)" % r["np"] if r.get("np") else "")
    label = r["host"]
    if r.get("np"):
        label += " (np %s)" % r["np"]
    return label


def plot_nccl(plt, records):
    plots = []
    for test in sorted(set(r["test"] for r in records)):
        runs = [r for r in records if r["test"] == test and r["rows"]]
        if not runs:
            continue
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        sizes = []
        for r in runs:
            pts = [(x["size"], x["out_of_place"]["busbw"]) for x in r["rows"]
                   if x["out_of_place"]["busbw"] is not None and x["size"] > 0]
            if not pts:
                continue
            sizes += [p[0] for p in pts]
            name = "+".join(r["hosts"]) if r["scope"] == "multi" else r["host"]
            if r.get("sizes"):
                name += " [%s]" % r["sizes"]
            if r.get("gpu_model"):
                name += " · %s x%s" % (r["gpu_model"], r["nranks"] or len(r["devices"]) or "?")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=name)
        if not sizes:
            plt.close(fig)
            continue
        _size_axis(ax, sizes)
        ax.set_xlabel("message size (bytes)")
        ax.set_ylabel("bus bandwidth, out-of-place (GB/s)")
        ax.set_title("NCCL %s: bus bandwidth vs size" % test)
        ax.legend(fontsize=7, loc="upper left")
        plots.append(("nccl-%s" % test, "NCCL %s bus bandwidth vs message size, per host" % test, _svg(plt, fig)))
    return plots


def plot_mpi(plt, records):
    plots = []
    for program, test in sorted(set((r["program"], r["test"]) for r in records)):
        runs = [r for r in records if r["program"] == program and r["test"] == test and r["rows"]]
        title = test if test == program else "%s %s" % (program, test)
        for field, ylabel, what in (("latency_us", "latency (us)", "latency"),
                                    ("bandwidth_mbps", "bandwidth (MB/s)", "bandwidth")):
            series = []
            for r in runs:
                pts = [(x["size"], x[field]) for x in r["rows"] if x[field] is not None and x["size"] > 0]
                if pts:
                    series.append((_series_label(r), pts))
            if not series:
                continue
            fig, ax = plt.subplots(figsize=(7.5, 4.2))
            sizes = []
            for label, pts in series:
                sizes += [p[0] for p in pts]
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, label=label)
            _size_axis(ax, sizes)
            if what == "latency":
                ax.set_yscale("log")
            ax.set_xlabel("message size (bytes)")
            ax.set_ylabel(ylabel)
            ax.set_title("MPI %s: %s vs size" % (title, what))
            ax.legend(fontsize=7, loc="upper left")
            plots.append(("mpi-%s-%s-%s" % (program, test, what), "MPI %s %s vs message size" % (title, what),
                          _svg(plt, fig)))
    return plots


def plot_fio(plt, records):
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
    pct_names = ("p50", "p90", "p95", "p99", "p99_9")
    with_lat = [r for r in records if any(r["lat_us"].get(p) is not None for p in pct_names)]
    if with_lat:
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        for r in with_lat:
            pts = [(i, r["lat_us"][p]) for i, p in enumerate(pct_names) if r["lat_us"].get(p) is not None]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label="%s %s %s" % (r["host"], r["job"], r["direction"]))
        ax.set_xticks(range(len(pct_names)))
        ax.set_xticklabels(["p50", "p90", "p95", "p99", "p99.9"])
        ax.set_yscale("log")
        ax.set_ylabel("%s latency (us)" % (with_lat[0].get("lat_kind") or "completion"))
        ax.set_title("fio: latency percentiles")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, loc="upper left")
        plots.append(("fio-latency", "fio latency percentiles per host, job and direction", _svg(plt, fig)))
    return plots


def make_plots(document):
    """``{benchmark: [(id, caption, svg bytes)]}``; needs matplotlib."""
    plt = _pyplot()
    b = document["benchmarks"]
    return {"nccl": plot_nccl(plt, b.get("nccl", [])), "mpi": plot_mpi(plt, b.get("mpi", [])),
            "fio": plot_fio(plt, b.get("fio", []))}
