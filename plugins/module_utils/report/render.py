# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendering a results document: CSV per benchmark, a Markdown summary, an HTML page.

:func:`render_files` returns ``{file name: text}``; writing them is the caller's
job. Plots are drawn with matplotlib (a controller requirement, imported only when
plots are asked for) and embedded in the HTML as base64 SVG images, so the page is
one self-contained file that needs no network and no JavaScript.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json

CSV_COLUMNS = {
    "nccl": ["host", "run", "test", "scope", "hosts", "nranks", "gpu_model", "size", "count", "type", "redop", "root",
             "oop_time_us", "oop_algbw", "oop_busbw", "oop_wrong", "ip_time_us", "ip_algbw", "ip_busbw", "ip_wrong"],
    "mpi": ["host", "run", "program", "test", "kind", "np", "scope", "hosts", "check_passed", "size", "latency_us",
            "bandwidth_mbps", "min_us", "max_us", "iterations"],
    "fio": ["host", "job", "direction", "device", "transport", "error", "iops", "bw_bytes", "bw_mib", "lat_kind",
            "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p95_us", "lat_p99_us", "lat_p99_9_us", "lat_max_us"],
    "nvmeof": ["host", "role", "state", "transport", "subsystem", "devices", "mount", "ports", "io_check", "io_sha256"],
}
METRIC_COLUMNS = ["id", "host", "benchmark", "metric", "labels", "value", "unit", "better", "status"]
CHECK_COLUMNS = ["host", "key", "value", "unit", "source", "status", "gated", "target", "lower_bound", "upper_bound",
                 "message"]
STATUS_COLOURS = {"pass": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e"}


# A spreadsheet runs a cell starting with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _cell(value):
    """A CSV cell: numbers as they are, text that a spreadsheet would evaluate quoted with ``'``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, (list, tuple)):
        value = " ".join(str(v) for v in value)
    elif isinstance(value, dict):
        value = ",".join("%s=%s" % (k, value[k]) for k in sorted(value))
    text = str(value)
    if text.startswith(_FORMULA_START) and not _is_number(text):
        return "'" + text
    return text


def _csv(columns, rows):
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row.get(c)) for c in columns])
    return buf.getvalue()


def csv_rows(benchmark, records):
    """Flatten a benchmark's records into CSV rows (one per table row of the tool)."""
    out = []
    for r in records:
        if benchmark == "nccl":
            for row in r["rows"] or [{}]:
                oop, ip = row.get("out_of_place") or {}, row.get("in_place") or {}
                flat = dict((k, r.get(k)) for k in ("host", "run", "test", "scope", "hosts", "nranks", "gpu_model"))
                flat.update(dict((k, row.get(k)) for k in ("size", "count", "type", "redop", "root")))
                for prefix, side in (("oop_", oop), ("ip_", ip)):
                    for k in ("time_us", "algbw", "busbw", "wrong"):
                        flat[prefix + k] = side.get(k)
                out.append(flat)
        elif benchmark == "mpi":
            for row in r["rows"] or [{}]:
                flat = dict((k, r.get(k)) for k in ("host", "run", "program", "test", "kind", "np", "scope", "hosts",
                                                    "check_passed"))
                flat.update(row)
                out.append(flat)
        elif benchmark == "fio":
            flat = dict(r)
            flat["bw_mib"] = round(r["bw_bytes"] / 1048576.0, 3) if r.get("bw_bytes") is not None else None
            for k in ("mean", "p50", "p90", "p95", "p99", "p99_9", "max"):
                flat["lat_%s_us" % k] = (r.get("lat_us") or {}).get(k)
            out.append(flat)
        else:
            out.append(r)
    return out


# --------------------------------------------------------------------------- plots

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


# --------------------------------------------------------------------------- Markdown

def _md_escape(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def _fmt_value(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "%.4g" % value if abs(value) < 1e4 else "%.0f" % value
    return str(value)


def render_markdown(document):
    run, summary = document["run"], document["summary"]
    lines = ["# Fabric report %s" % run["id"], "",
             "**Status: %s** - %d metrics, checks: %d pass, %d warn, %d fail." % (
                 summary["status"].upper(), summary["metrics"], summary["checks"]["pass"],
                 summary["checks"]["warn"], summary["checks"]["fail"]), ""]
    lines.append("- generated: %s on %s" % (run["generated"], run.get("controller") or "controller"))
    if run.get("label"):
        lines.append("- label: %s" % run["label"])
    if document.get("baseline"):
        lines.append("- baseline: %s (%s)" % (document["baseline"].get("run_id"), document["baseline"].get("source")))
    lines.append("")
    if summary["failures"]:
        lines += ["## Failures", ""] + ["- %s" % _md_escape(f) for f in summary["failures"]] + [""]
    if summary["warnings"]:
        lines += ["## Warnings", ""] + ["- %s" % _md_escape(f) for f in summary["warnings"]] + [""]
    lines += ["## Hosts", "", "| host | class | GPU model | transport | results |", "| --- | --- | --- | --- | --- |"]
    for host, info in sorted(document["hosts"].items()):
        lines.append("| %s | %s | %s | %s | %s |" % tuple(_md_escape(x or "") for x in (
            host, info.get("host_class"), info.get("gpu_model"), info.get("transport"), ", ".join(info.get("facts", [])))))
    lines += ["", "## Metrics", "", "| host | metric | value | unit | status |", "| --- | --- | --- | --- | --- |"]
    status = summary["metric_status"]
    for m in document["metrics"]:
        lines.append("| %s | %s | %s | %s | %s |" % (
            _md_escape(m["host"]), _md_escape(m["key"]), _fmt_value(m["value"]), m["unit"], status.get(m["id"], "-")))
    lines += ["", "Files: %s" % ", ".join(document.get("files", [])), ""]
    return "\n".join(lines)


# --------------------------------------------------------------------------- HTML

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em;color:#1f2328;background:#fff}
h1{margin-bottom:.2em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;color:#fff;font-weight:600;font-size:12px}
.status{font-size:20px;padding:4px 14px}
figure{margin:1em 0;display:inline-block;vertical-align:top}
figure img{max-width:100%;height:auto;border:1px solid #eaeef2}
figcaption{font-size:12px;color:#57606a}
ul.lines li{font-family:ui-monospace,monospace;font-size:12px}
.meta{color:#57606a;font-size:13px}
"""


def _e(text):
    return html.escape("" if text is None else str(text), quote=True)


def _badge(status, extra=""):
    return '<span class="badge %s" style="background:%s">%s</span>' % (
        extra, STATUS_COLOURS.get(status, "#57606a"), _e(status))


def _table(columns, rows, numeric=()):
    out = ["<table><thead><tr>%s</tr></thead><tbody>" % "".join("<th>%s</th>" % _e(c) for c in columns)]
    for row in rows:
        cells = []
        for c, v in zip(columns, row):
            if isinstance(v, tuple) and v and v[0] == "raw":
                cells.append("<td>%s</td>" % v[1])
            else:
                cells.append('<td%s>%s</td>' % (' class="num"' if c in numeric else "", _e(_fmt_value(v))))
        out.append("<tr>%s</tr>" % "".join(cells))
    out.append("</tbody></table>")
    return "\n".join(out)


def _figures(plots):
    out = []
    for pid, caption, svg in plots:
        data = base64.b64encode(svg).decode("ascii")
        out.append('<figure id="%s"><img alt="%s" src="data:image/svg+xml;base64,%s"><figcaption>%s</figcaption>'
                   '</figure>' % (_e(pid), _e(caption), data, _e(caption)))
    return "\n".join(out)


def render_html(document, plots=None):
    run, summary, b = document["run"], document["summary"], document["benchmarks"]
    plots = plots or {}
    status = summary["metric_status"]
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             "<title>Fabric report %s: %s</title>" % (_e(run["id"]), _e(summary["status"])),
             "<style>%s</style></head><body>" % _CSS,
             "<h1>Fabric report %s</h1>" % _e(run["id"]),
             '<p>%s <span class="meta">%d metrics; checks: %d pass, %d warn, %d fail. Generated %s on %s%s.</span></p>' % (
                 _badge(summary["status"], "status"), summary["metrics"], summary["checks"]["pass"],
                 summary["checks"]["warn"], summary["checks"]["fail"], _e(run["generated"]),
                 _e(run.get("controller") or "the controller"),
                 (", baseline %s" % _e(document["baseline"]["run_id"])) if document.get("baseline") else "")]
    if run.get("label"):
        parts.append('<p class="meta">%s</p>' % _e(run["label"]))
    if summary["failures"]:
        parts.append("<h2>Failures</h2><ul class=\"lines\">%s</ul>" % "".join("<li>%s</li>" % _e(f) for f in summary["failures"]))
    if summary["warnings"]:
        parts.append("<h2>Warnings</h2><ul class=\"lines\">%s</ul>" % "".join("<li>%s</li>" % _e(f) for f in summary["warnings"]))
    parts.append("<h2>Hosts</h2>")
    parts.append(_table(["host", "class", "GPU model", "transport", "results"], [
        (h, i.get("host_class"), i.get("gpu_model"), i.get("transport"), ", ".join(i.get("facts", [])))
        for h, i in sorted(document["hosts"].items())]))

    if b.get("nccl"):
        parts.append("<h2>NCCL collectives</h2>")
        parts.append(_figures(plots.get("nccl", [])))
        parts.append(_table(["host", "test", "scope", "ranks", "GPU", "peak busbw (GB/s)", "at size", "busbw at max size",
                             "avg busbw", "#wrong", "NCCL"],
                            [(r["host"] if r["scope"] == "single" else "+".join(r["hosts"]), r["test"], r["scope"],
                              r["nranks"], r["gpu_model"], r["peak_busbw"], _size_label(r["peak_size"]) if r["peak_size"] else None,
                              r["busbw_at_max_size"], r["avg_busbw"], r["wrong_total"], r["version"]) for r in b["nccl"]],
                            numeric=("ranks", "peak busbw (GB/s)", "busbw at max size", "avg busbw", "#wrong")))
    if b.get("mpi"):
        parts.append("<h2>MPI</h2>")
        parts.append(_figures(plots.get("mpi", [])))
        parts.append(_table(["host", "program", "test", "kind", "np", "hosts", "sums checked", "rows", "rc",
                             "duration (s)"],
                            [(r["host"], r["program"], r["test"], r["kind"], r["np"], " ".join(r["hosts"]),
                              r["check_passed"], len(r["rows"]), r["rc"], r["duration"]) for r in b["mpi"]],
                            numeric=("np", "rows", "rc", "duration (s)")))
    if b.get("fio"):
        parts.append("<h2>fio</h2>")
        parts.append(_figures(plots.get("fio", [])))
        parts.append(_table(["host", "job", "dir", "device", "transport", "IOPS", "MiB/s", "p50 us", "p99 us", "p99.9 us",
                             "error"],
                            [(r["host"], r["job"], r["direction"], r["device"], r["transport"], r["iops"],
                              round(r["bw_bytes"] / 1048576.0, 3) if r["bw_bytes"] is not None else None,
                              r["lat_us"].get("p50"), r["lat_us"].get("p99"), r["lat_us"].get("p99_9"), r["error"])
                             for r in b["fio"]],
                            numeric=("IOPS", "MiB/s", "p50 us", "p99 us", "p99.9 us", "error")))
    if b.get("nvmeof"):
        parts.append("<h2>NVMe over Fabrics</h2>")
        parts.append(_table(["host", "role", "transport", "subsystem", "devices", "mount", "I/O check", "sha256"],
                            [(r["host"], r["role"], r["transport"], r["subsystem"], " ".join(r["devices"]), r["mount"],
                              r["io_check"], r["io_sha256"]) for r in b["nvmeof"]]))
    parts.append("<h2>Checks</h2>")
    parts.append(_table(["host", "metric", "value", "unit", "source", "status", "gated", "bound", "detail"],
                        [(c["host"], c["key"], c["value"], c["unit"], c["source"], ("raw", _badge(c["status"])),
                          c["gated"], c["bound"], c["message"]) for c in document["checks"]],
                        numeric=("value",)))
    parts.append("<h2>All metrics</h2>")
    parts.append(_table(["host", "metric", "value", "unit", "better", "status"],
                        [(m["host"], m["key"], m["value"], m["unit"], m["better"],
                          ("raw", _badge(status[m["id"]])) if m["id"] in status else "-") for m in document["metrics"]],
                        numeric=("value",)))
    parts.append('<p class="meta">Schema %s v%s. Files: %s.</p></body></html>' % (
        _e(document["schema"]), _e(document["schema_version"]), _e(", ".join(document.get("files", [])))))
    return "\n".join(parts) + "\n"


# --------------------------------------------------------------------------- all files

def render_files(document, plots=True):
    """``{file name: text}`` for the results folder. ``document["files"]`` is filled in."""
    files = {}
    for bench in ("nccl", "mpi", "fio", "nvmeof"):
        if document["benchmarks"].get(bench):
            files["%s.csv" % bench] = _csv(CSV_COLUMNS[bench], csv_rows(bench, document["benchmarks"][bench]))
    status = document["summary"]["metric_status"]
    files["metrics.csv"] = _csv(METRIC_COLUMNS, [dict(m, status=status.get(m["id"])) for m in document["metrics"]])
    files["checks.csv"] = _csv(CHECK_COLUMNS, document["checks"])
    names = sorted(list(files) + ["results.json", "summary.md", "report.html"])
    document["files"] = names
    files["summary.md"] = render_markdown(document)
    files["report.html"] = render_html(document, make_plots(document) if plots else None)
    files["results.json"] = json.dumps(document, indent=2, sort_keys=True) + "\n"
    return files
