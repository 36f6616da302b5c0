# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NCCL: ``nccl_tests_result`` -> one record per nccl-tests run, its bus bandwidth metrics,
``#wrong`` checked against 0, nccl.csv, the HTML section with the catalog verdicts, a plot
of bus bandwidth against size per test, and a summary line per run.

The nccl_tests role publishes ``{single_node: [run, ...], multi_node: [run, ...]}`` (the
size matrix runs a test once per size range); any list of runs is read too.
"""

from __future__ import annotations

import json

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import (
    EXACT, HIGHER, ReportError, failed_line, first, fmt_number, fmt_size, host_names, integer, number, runs,
    verdict)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.kind import Benchmark
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.plots import _size_axis, _size_label, _svg

FACT = "nccl_tests_result"


# --------------------------------------------------------------------------- read

def _nccl_side(side):
    side = side if isinstance(side, dict) else {}
    wrong = side.get("wrong")
    return {
        "time_us": number(first(side, "time_us", "time")),
        "algbw": number(first(side, "algbw", "algbw_gbps")),
        "busbw": number(first(side, "busbw", "busbw_gbps")),
        # None when the test ran without checking (#wrong N/A).
        "wrong": integer(wrong) if wrong is not None else None,
    }


def _nccl_row(row):
    return {
        "size": integer(first(row, "size", "bytes")),
        "count": integer(row.get("count")),
        "type": row.get("type"),
        "redop": row.get("redop"),
        "root": integer(row.get("root")),
        "out_of_place": _nccl_side(first(row, "out_of_place", "oop")),
        "in_place": _nccl_side(first(row, "in_place", "ip")),
    }


def _nccl_version(version):
    """The NCCL version as printed (``2.21.5+cuda12.4``); the module returns a dict of versions."""
    if isinstance(version, dict):
        return first(version, "nccl", "nccl_library", "nccl_tests")
    return version


def _nccl_runs(fact):
    """``(scope, run)`` pairs: the role's ``single_node``/``multi_node`` lists, else any run list.

    ``scope`` is None when the fact does not say which list a run came from.
    """
    if isinstance(fact, dict) and ("single_node" in fact or "multi_node" in fact):
        out = []
        for scope, key in (("single", "single_node"), ("multi", "multi_node")):
            listed = fact.get(key) or []
            if not isinstance(listed, list):
                raise ReportError("nccl_tests_result.%s must be a list of runs, got %s" % (key, type(listed).__name__))
            out += [(scope, r) for r in listed if isinstance(r, dict)]
        return out
    return [(None, r) for r in runs(fact)]


def _nccl_sizes(run):
    """``8-128M`` from the run's minbytes/maxbytes (the size matrix runs a test once per range)."""
    lo, hi = run.get("minbytes"), run.get("maxbytes")
    return "%s-%s" % (lo, hi) if lo is not None and hi is not None else None


def adapt_nccl(host, fact, seen=None):
    """``nccl_tests_result`` -> NCCL run records (one per test run).

    ``seen`` (a set shared across hosts) drops multi-node runs already taken from another
    host: the role runs the group's matrix once and registers it on every host.
    """
    records = []
    for idx, (scope, run) in enumerate(_nccl_runs(fact)):
        if scope == "multi" and seen is not None:
            fingerprint = json.dumps(run, sort_keys=True, default=str)
            if fingerprint in seen:
                continue
            seen.add(fingerprint)
        rows = run.get("rows") if isinstance(run.get("rows"), list) else []
        rows = [_nccl_row(r) for r in rows if isinstance(r, dict)]
        rows = [r for r in rows if r["size"] is not None]
        rows.sort(key=lambda r: r["size"])
        devices = []
        for d in run.get("devices") or []:
            if isinstance(d, dict):
                devices.append({
                    "rank": integer(d.get("rank")),
                    "host": first(d, "host", "hostname"),
                    "device": integer(first(d, "device", "cuda_device")),
                    "busid": first(d, "bus_id", "busid"),
                    "name": first(d, "name", "gpu", "model"),
                })
        run_hosts = host_names(first(run, "hosts", "host"))
        if not run_hosts:
            run_hosts = sorted(set(d["host"] for d in devices if d.get("host")))
        test = str(first(run, "test", "name", "binary", default="unknown"))
        if test.endswith("_perf"):
            test = test[:-len("_perf")]
        # The peak as the module computed it, else from the rows (out-of-place busbw).
        peak = first(run, "peak_busbw", "peak")
        peak_busbw = number(peak.get("busbw")) if isinstance(peak, dict) else number(peak)
        peak_size = integer(peak.get("size")) if isinstance(peak, dict) else integer(first(run, "peak_busbw_size",
                                                                                           "peak_size"))
        oop = [r for r in rows if r["out_of_place"]["busbw"] is not None]
        if peak_busbw is None and oop:
            best = max(oop, key=lambda r: r["out_of_place"]["busbw"])
            peak_busbw, peak_size = best["out_of_place"]["busbw"], best["size"]
        largest = oop[-1] if oop else None
        at_max = number(run.get("largest_size_busbw"))
        if at_max is None and largest:
            # Several rows per size (-d all / -o all): the slowest, as the module's gate does.
            at_max = min(r["out_of_place"]["busbw"] for r in oop if r["size"] == largest["size"])
        wrong_total = integer(run.get("wrong_total"))
        if wrong_total is None and rows:
            wrongs = [s["wrong"] for r in rows for s in (r["out_of_place"], r["in_place"]) if s["wrong"] is not None]
            wrong_total = sum(wrongs) if wrongs else None
        gpu_models = sorted(set(d["name"] for d in devices if d.get("name")))
        records.append({
            "host": host,
            "run": str(first(run, "label", "id", default="%s#%d" % (test, idx))),
            "test": test,
            "hosts": run_hosts or [host],
            "scope": scope or ("multi" if len(run_hosts) > 1 else "single"),
            "sizes": _nccl_sizes(run),
            "nranks": integer(first(run, "nranks", "np"), len(devices) or None),
            "version": _nccl_version(first(run, "version", "nccl_version")),
            "devices": devices,
            "gpu_model": gpu_models[0] if len(gpu_models) == 1 else (", ".join(gpu_models) or None),
            "rows": rows,
            "avg_busbw": number(run.get("avg_busbw")),
            "peak_busbw": peak_busbw,
            "peak_size": peak_size,
            "busbw_at_max_size": at_max,
            "max_size": integer(run.get("largest_size"), largest["size"] if largest else None),
            "wrong_total": wrong_total,
            "out_of_bounds": integer(run.get("out_of_bounds")),
            "failed": bool(run.get("failed")),
            "msg": run.get("msg"),
            # The module's catalog verdict and transport proof, as it returned them.
            "expectation": run.get("expectation") if isinstance(run.get("expectation"), dict) else None,
            "transport": run.get("transport") if isinstance(run.get("transport"), dict) else None,
        })
        records[-1]["passed"], records[-1]["failure"] = verdict(run)
    return records


def read(host, facts, run):
    if facts.get(FACT) is None:
        return None
    return adapt_nccl(host, facts[FACT], run.seen("nccl"))


# --------------------------------------------------------------------------- metrics

def metrics(records, add):
    for r in records:
        labels = {"test": r["test"], "scope": r["scope"], "nranks": r["nranks"], "sizes": r.get("sizes")}
        if r["scope"] == "multi":
            labels["hosts"] = "+".join(r["hosts"])
        # The run's own GPU model, over the host's, for the outlier check's peer groups.
        info = {"gpu_model": r["gpu_model"]} if r.get("gpu_model") else None
        for name, value in (("busbw_peak", r["peak_busbw"]), ("busbw_max_size", r["busbw_at_max_size"]),
                            ("avg_busbw", r["avg_busbw"])):
            add(r["host"], name, value, "GB/s", HIGHER, labels, info=info)
        add(r["host"], "wrong", r["wrong_total"], "count", EXACT, labels, info=info)
        if r.get("passed") is not None:
            add(r["host"], "run_passed", bool(r["passed"]), "bool", EXACT, labels, r.get("failure"), info=info)


# --------------------------------------------------------------------------- CSV and HTML

CSV_COLUMNS = ["host", "run", "test", "scope", "hosts", "nranks", "gpu_model", "size", "count", "type", "redop",
               "root", "oop_time_us", "oop_algbw", "oop_busbw", "oop_wrong", "ip_time_us", "ip_algbw", "ip_busbw",
               "ip_wrong"]


def csv_rows(records):
    """One row per row of nccl-tests' table (size, and type/redop/root with -d/-o all)."""
    out = []
    for r in records:
        for row in r["rows"] or [{}]:
            oop, ip = row.get("out_of_place") or {}, row.get("in_place") or {}
            flat = dict((k, r.get(k)) for k in ("host", "run", "test", "scope", "hosts", "nranks", "gpu_model"))
            flat.update(dict((k, row.get(k)) for k in ("size", "count", "type", "redop", "root")))
            for prefix, side in (("oop_", oop), ("ip_", ip)):
                for k in ("time_us", "algbw", "busbw", "wrong"):
                    flat[prefix + k] = side.get(k)
            out.append(flat)
    return out


def _catalog_cell(record):
    """The nccl_test module's catalog verdict of a run: a status badge and its sentence."""
    expectation = record.get("expectation") or {}
    if not expectation.get("status"):
        return None
    return {"badge": expectation["status"], "text": expectation.get("text") or ""}


def section(records):
    return {
        "title": "NCCL collectives",
        "columns": ["host", "test", "sizes", "scope", "ranks", "GPU", "peak busbw (GB/s)", "at size",
                    "busbw at max size", "avg busbw", "#wrong", "passed", "NCCL", "expected busbw (GB/s)",
                    "catalog verdict"],
        "numeric": ("ranks", "peak busbw (GB/s)", "busbw at max size", "avg busbw", "#wrong", "expected busbw (GB/s)"),
        "rows": [(r["host"] if r["scope"] == "single" else "+".join(r["hosts"]), r["test"], r.get("sizes"),
                  r["scope"], r["nranks"], r["gpu_model"], r["peak_busbw"],
                  _size_label(r["peak_size"]) if r["peak_size"] else None, r["busbw_at_max_size"], r["avg_busbw"],
                  r["wrong_total"], r.get("passed"), r["version"],
                  (r.get("expectation") or {}).get("expected_busbw"), _catalog_cell(r)) for r in records],
    }


def plot(plt, records):
    plots = []
    for test in sorted(set(r["test"] for r in records)):
        with_rows = [r for r in records if r["test"] == test and r["rows"]]
        if not with_rows:
            continue
        fig, ax = plt.subplots(figsize=(7.5, 4.2))
        sizes = []
        for r in with_rows:
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


def plot_anchor(check):
    test = (check.get("labels") or {}).get("test")
    return "nccl-%s" % test if test else None


# --------------------------------------------------------------------------- summary

def _explained(host, r):
    """The catalog verdict in its own words (the module wrote it), and the transport NCCL proved."""
    out = []
    expectation = r.get("expectation") or {}
    said = " ".join(str(expectation.get("text") or "").split())
    if said:
        # The verdict names its host (or hosts); host_lines puts this host in front.
        out.append(said[len(host) + 2:] if said.startswith(host + ": ") else said)
    transport = r.get("transport") or {}
    if transport.get("summary"):
        proof = ""
        if transport.get("passed") is True:
            proof = ", requirement proven"
        elif transport.get("passed") is False:
            proof = ", requirement NOT proven"
        out.append("NCCL %s transport: %s%s" % (r["test"], transport["summary"], proof))
    return out


def summary(host, name, fact):
    lines = []
    for r in adapt_nccl(host, fact):
        where = "on this node" if r["scope"] == "single" else "across %s" % "+".join(r["hosts"])
        line = "NCCL %s %s %s (%s ranks): busbw %s GB/s at %s, peak %s GB/s, #wrong %s: %s" % (
            r["test"], r.get("sizes") or "", where, r["nranks"] if r["nranks"] is not None else "?",
            fmt_number(r["busbw_at_max_size"]), fmt_size(r["max_size"]), fmt_number(r["peak_busbw"]),
            r["wrong_total"] if r["wrong_total"] is not None else "n/a",
            "PASS" if r.get("passed") is not False else "FAIL - %s" % " ".join((r.get("failure") or "").split()))
        lines.append(" ".join(line.split()))
        lines += _explained(host, r)
    if not lines:
        lines.append("NCCL: no runs")
    if failed_line(fact) and all("FAIL" not in x for x in lines):
        lines.append(failed_line(fact))
    return lines


BENCHMARK = Benchmark(
    "nccl", facts=(FACT,), read=read, fact_verdict=True, host_info=("gpu_model",), metrics=metrics,
    expect={"wrong": 0, "run_passed": True}, csv_columns=CSV_COLUMNS, csv_rows=csv_rows, section=section,
    summary=summary, plot=plot, plot_anchor=plot_anchor)
