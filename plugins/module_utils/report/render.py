# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rendering a results document: CSV per benchmark, a Markdown summary, an HTML page.

:func:`render_files` returns ``{file name: text}``; writing them is the caller's job.
report.html and summary.md come from the Jinja2 templates beside this file (templates/;
the action plugin runs on the controller, where this file is a file of the installed
collection), report.html with autoescaping, summary.md through a Markdown-escaping filter:
no value reaches either file unescaped. Plots are embedded in the HTML as base64 SVG images,
so the page is one self-contained file that needs no network and no JavaScript. Failures
come first, then hosts (each with its metrics folded), then each benchmark's section with
its plots. What a benchmark puts in its CSV file, its section and its plots is its own
(report/benchmarks/); this file loops over the registry.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import BY_NAME, REGISTRY, sections
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.plots import make_plots

try:
    import jinja2
except ImportError:  # pragma: no cover - Jinja2 comes with ansible-core
    jinja2 = None

# report.html.j2 and summary.md.j2, beside this file.
TEMPLATE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "templates")

# Each benchmark's CSV columns, by benchmark (its file is <benchmark>.csv).
CSV_COLUMNS = dict((b.name, b.csv_columns) for b in REGISTRY)
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
    return BY_NAME[benchmark].csv_rows(records)


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
    bench = BY_NAME.get((check.get("metric") or "").split(".", 1)[0])
    wanted = bench.plot_anchor(check) if bench else None
    ids = set(p["id"] for group in plots.values() for p in group)
    return wanted if wanted in ids else None


def _sections(benchmarks, plots):
    """Each benchmark's part of report.html, in the page's order; ``present`` when it has records."""
    out = []
    for bench in sections():
        records = benchmarks.get(bench.name) or []
        part = {"name": bench.name, "present": bool(records), "plots": None, "notes": None}
        if records:
            part.update(bench.section(records))
            if bench.plot is not None:
                part["plots"] = plots.get(bench.name, [])
        out.append(part)
    return out


def _context(document, plots):
    run, summary, b = document["run"], document["summary"], document["benchmarks"]
    status = summary["metric_status"]
    plots = dict((k, [{"id": pid, "caption": caption, "data": base64.b64encode(svg).decode("ascii")}
                      for pid, caption, svg in v]) for k, v in (plots or {}).items())
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
        "document": document, "run": run, "summary": summary, "b": b, "css": _CSS,
        "colours": STATUS_COLOURS, "baseline": document.get("baseline"), "failures": failures,
        "host_rows": host_rows, "host_details": host_details, "sections": _sections(b, plots),
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
    for bench in REGISTRY:
        if document["benchmarks"].get(bench.name):
            files["%s.csv" % bench.name] = _csv(bench.csv_columns, bench.csv_rows(document["benchmarks"][bench.name]))
    status = document["summary"]["metric_status"]
    files["metrics.csv"] = _csv(METRIC_COLUMNS, [dict(m, status=status.get(m["id"])) for m in document["metrics"]])
    files["checks.csv"] = _csv(CHECK_COLUMNS, document["checks"])
    names = sorted(list(files) + ["results.json", "summary.md", "report.html"])
    document["files"] = names
    files["summary.md"] = render_markdown(document, template_dir)
    files["report.html"] = render_html(document, make_plots(document, sections()) if plots else None, template_dir)
    files["results.json"] = json.dumps(document, indent=2, sort_keys=True) + "\n"
    return files
