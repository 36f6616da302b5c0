# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's plots, drawn with matplotlib as SVG (a controller requirement, imported only
when plots are asked for). Each benchmark draws its own (its ``plot`` in report/benchmarks/:
NCCL bus bandwidth vs size, MPI latency/bandwidth vs size, fio IOPS, bandwidth and latency
percentiles) with the helpers here, so that every plot looks alike.
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


def make_plots(document, benchmarks):
    """``{benchmark: [(id, caption, svg bytes)]}`` for the ``benchmarks`` that draw plots; needs matplotlib."""
    plt = _pyplot()
    records = document["benchmarks"]
    return dict((b.name, b.plot(plt, records.get(b.name, []))) for b in benchmarks if b.plot is not None)
