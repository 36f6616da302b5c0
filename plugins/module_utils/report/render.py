# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendering a results document: CSV per benchmark, a Markdown summary, an HTML page.

:func:`render_files` returns ``{file name: text}``; writing them is the caller's job.
report.html and summary.md come from Jinja2 templates shipped in the collection
(roles/fabric_report/templates), report.html with autoescaping, summary.md through a
Markdown-escaping filter: no value reaches either file unescaped. Plots (plots.py) are
embedded in the HTML as base64 SVG images, so the page is one self-contained file that
needs no network and no JavaScript. Failures come first, then hosts (each with its
metrics folded), then each benchmark with its plots.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.plots import _size_label, make_plots

try:
    import jinja2
except ImportError:  # pragma: no cover - Jinja2 comes with ansible-core
    jinja2 = None

# The collection's root, from plugins/module_utils/report/render.py.
TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "roles", "fabric_report",
                            "templates")

CSV_COLUMNS = {
    "nccl": ["host", "run", "test", "scope", "hosts", "nranks", "gpu_model", "size", "count", "type", "redop", "root",
             "oop_time_us", "oop_algbw", "oop_busbw", "oop_wrong", "ip_time_us", "ip_algbw", "ip_busbw", "ip_wrong"],
    "mpi": ["host", "run", "program", "test", "kind", "np", "scope", "hosts", "check_passed", "size", "latency_us",
            "bandwidth_mbps", "min_us", "max_us", "iterations"],
    "fio": ["host", "job", "direction", "device", "transport", "error", "iops", "bw_bytes", "bw_mib", "lat_kind",
            "lat_mean_us", "lat_p50_us", "lat_p90_us", "lat_p95_us", "lat_p99_us", "lat_p99_9_us", "lat_max_us"],
    "nvmeof": ["host", "role", "state", "transport", "subsystem", "devices", "mount", "ports", "io_check", "io_sha256"],
    "sweep": ["host", "run", "launcher", "test", "pair", "value", "unit", "better", "size", "median", "vs_median",
              "expected", "vs_expected", "low", "error"],
}
METRIC_COLUMNS = ["id", "host", "benchmark", "metric", "labels", "value", "unit", "better", "status"]
CHECK_COLUMNS = ["host", "key", "value", "unit", "source", "status", "gated", "target", "lower_bound", "upper_bound",
                 "message"]
STATUS_COLOURS = {"pass": "#1a7f37", "warn": "#9a6700", "fail": "#cf222e", "below": "#cf222e",
                  "ok": "#1a7f37", "low": "#cf222e"}


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
        elif benchmark == "sweep":
            for pair in r["pairs"]:
                flat = dict((k, r.get(k)) for k in ("host", "run", "launcher"))
                flat.update(pair)
                out.append(flat)
        else:
            out.append(r)
    return out


# --------------------------------------------------------------------------- templates

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
details{margin:.3em 0}summary{cursor:pointer;font-size:13px}
.meta{color:#57606a;font-size:13px}
"""

_MD_SPECIAL = str.maketrans({"|": "\\|", "<": "&lt;", ">": "&gt;", "&": "&amp;", "`": "\\`", "\n": " ", "\r": " "})


def _fmt_value(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "%.4g" % value if abs(value) < 1e4 else "%.0f" % value
    return str(value)


def _md(value):
    """A value for a Markdown table cell or list item: no table breaks, no live HTML."""
    return "" if value is None else str(value).translate(_MD_SPECIAL)


def _environment(template_dir=None, html=True):
    if jinja2 is None:
        raise ImportError("Jinja2 is needed on the controller to render the report (it comes with ansible-core)")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir or TEMPLATE_DIR),
                             autoescape=html, undefined=jinja2.ChainableUndefined, keep_trailing_newline=True,
                             trim_blocks=not html, lstrip_blocks=not html)
    env.filters["fmt"] = _fmt_value
    env.filters["md"] = _md
    return env


def _plot_anchor(check, plots):
    """The id of the plot a failed check's metric is drawn in, for a link from the failure."""
    labels = check.get("labels") or {}
    bench = (check.get("metric") or "").split(".", 1)[0]
    wanted = None
    if bench == "nccl" and labels.get("test"):
        wanted = "nccl-%s" % labels["test"]
    elif bench == "fio":
        wanted = "fio-latency" if "lat" in check["metric"] else "fio-throughput"
    elif bench == "mpi" and labels.get("program") and labels.get("test"):
        what = "bandwidth" if "bandwidth" in check["metric"] else "latency"
        wanted = "mpi-%s-%s-%s" % (labels["program"], labels["test"], what)
    ids = set(p["id"] for group in plots.values() for p in group)
    return wanted if wanted in ids else None


def _catalog_cell(record):
    """The nccl_test module's catalog verdict of a run: a status badge and its sentence."""
    expectation = record.get("expectation") or {}
    if not expectation.get("status"):
        return None
    return {"badge": expectation["status"], "text": expectation.get("text") or ""}


def _context(document, plots):
    run, summary, b = document["run"], document["summary"], document["benchmarks"]
    status = summary["metric_status"]
    plots = dict((k, [{"id": pid, "caption": caption, "data": base64.b64encode(svg).decode("ascii")}
                      for pid, caption, svg in v]) for k, v in (plots or {}).items())
    for k in ("nccl", "mpi", "fio"):
        plots.setdefault(k, [])
    failed_checks = [c for c in document["checks"] if c["status"] == "fail"]
    # summary["failures"]: any run-level lines (no results) first, then one per failed check, in order.
    first = len(summary["failures"]) - len(failed_checks)
    failures = [{"line": line, "plot": None} for line in summary["failures"][:first]]
    failures += [{"line": line, "plot": _plot_anchor(c, plots)}
                 for line, c in zip(summary["failures"][first:], failed_checks)]
    host_details, host_rows = [], []
    rank = {"pass": 0, "warn": 1, "fail": 2}
    for host, info in sorted(document["hosts"].items()):
        ms = [m for m in document["metrics"] if m["host"] == host]
        worst = max([status.get(m["id"], "pass") for m in ms] or ["pass"], key=lambda s: rank.get(s, 0))
        saved = ", ".join(sorted(set("%s %s" % (v.get("playbook") or "?", v.get("saved") or "")
                                     for v in (info.get("saved") or {}).values())))
        host_rows.append((host, info.get("host_class"), info.get("gpu_model"), info.get("transport"),
                          ", ".join(info.get("facts", [])), saved or "this run", {"badge": worst}))
        ms.sort(key=lambda m: (-rank.get(status.get(m["id"], "pass"), 0), m["key"]))
        host_details.append({"host": host, "status": worst,
                             "failed": len([m for m in ms if status.get(m["id"]) == "fail"]),
                             "metrics": [(m["key"], m["value"], m["unit"],
                                          {"badge": status[m["id"]]} if m["id"] in status else "-") for m in ms]})
    return {
        "document": document, "run": run, "summary": summary, "b": b, "plots": plots, "css": _CSS,
        "colours": STATUS_COLOURS, "baseline": document.get("baseline"), "failures": failures,
        "host_rows": host_rows, "host_details": host_details,
        "nccl_rows": [(r["host"] if r["scope"] == "single" else "+".join(r["hosts"]), r["test"], r.get("sizes"),
                       r["scope"], r["nranks"], r["gpu_model"], r["peak_busbw"],
                       _size_label(r["peak_size"]) if r["peak_size"] else None, r["busbw_at_max_size"], r["avg_busbw"],
                       r["wrong_total"], r.get("passed"), r["version"],
                       (r.get("expectation") or {}).get("expected_busbw"), _catalog_cell(r)) for r in b.get("nccl", [])],
        "mpi_rows": [(r["host"], r["program"], r["test"], r["kind"], r["np"], " ".join(r["hosts"]), r["check_passed"],
                      r.get("passed"), len(r["rows"]), r["rc"], r["duration"]) for r in b.get("mpi", [])],
        "fio_rows": [(r["host"], r["job"], r["direction"], r["device"], r["transport"], r["iops"],
                      round(r["bw_bytes"] / 1048576.0, 3) if r["bw_bytes"] is not None else None,
                      r["lat_us"].get("p50"), r["lat_us"].get("p99"), r["lat_us"].get("p99_9"), r["error"])
                     for r in b.get("fio", [])],
        "sweep_rows": [(r["host"], r["launcher"], p["test"], p["pair"], p["value"], p["unit"], p["median"],
                        p["vs_median"], p["expected"], {"badge": "low" if p["low"] else "ok"}, p["error"])
                       for r in b.get("sweep", []) for p in r["pairs"]],
        "sweep_verdicts": [{"host": r["host"], "launcher": r["launcher"], "nodes": r["nodes"], "passed": r["passed"],
                            "failure": r["failure"], "exclude_option": r["exclude_option"],
                            "lines": [line for line in r["lines"] if not line.startswith(("ok ", "LOW "))]}
                           for r in b.get("sweep", [])],
        "nvmeof_rows": [(r["host"], r["role"], r["transport"], r["subsystem"], " ".join(r["devices"]), r["mount"],
                         r["io_check"], r.get("passed"), r["io_sha256"]) for r in b.get("nvmeof", [])],
        # Failures first, then warnings, then the rest.
        "check_rows": [(c["host"], c["key"], c["value"], c["unit"], c["source"], {"badge": c["status"]}, c["gated"],
                        c["bound"], c["message"])
                       for c in sorted(document["checks"], key=lambda c: -rank.get(c["status"], 0))],
        "metric_rows": [(m["host"], m["key"], m["value"], m["unit"], m["better"],
                         {"badge": status[m["id"]]} if m["id"] in status else "-") for m in document["metrics"]],
        "hosts": sorted(document["hosts"].items()), "metrics": document["metrics"], "status": status,
    }


def render_markdown(document, template_dir=None):
    return _environment(template_dir, html=False).get_template("summary.md.j2").render(_context(document, None))


def render_html(document, plots=None, template_dir=None):
    return _environment(template_dir, html=True).get_template("report.html.j2").render(_context(document, plots))


# --------------------------------------------------------------------------- all files

def render_files(document, plots=True, template_dir=None):
    """``{file name: text}`` for the results folder. ``document["files"]`` is filled in."""
    files = {}
    for bench in ("nccl", "mpi", "fio", "nvmeof", "sweep"):
        if document["benchmarks"].get(bench):
            files["%s.csv" % bench] = _csv(CSV_COLUMNS[bench], csv_rows(bench, document["benchmarks"][bench]))
    status = document["summary"]["metric_status"]
    files["metrics.csv"] = _csv(METRIC_COLUMNS, [dict(m, status=status.get(m["id"])) for m in document["metrics"]])
    files["checks.csv"] = _csv(CHECK_COLUMNS, document["checks"])
    names = sorted(list(files) + ["results.json", "summary.md", "report.html"])
    document["files"] = names
    files["summary.md"] = render_markdown(document, template_dir)
    files["report.html"] = render_html(document, make_plots(document) if plots else None, template_dir)
    files["results.json"] = json.dumps(document, indent=2, sort_keys=True) + "\n"
    return files
