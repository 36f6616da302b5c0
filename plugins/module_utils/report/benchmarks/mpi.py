# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""MPI: ``mpi_bench_result`` -> one record per result table of each job (OSU/IMB tables, or
the seed programs' sums), latency and bandwidth metrics, the sums checked, mpi.csv, plots of
latency and bandwidth against size, and summary lines per job.

mpi_bench sets the same fact on every node of a job; it is read once, on the node named in
its ``launched_from``.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import (
    EXACT, HIGHER, LOWER, failed_line, first, fmt_number, fmt_size, host_names, integer, number, runs, verdict)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.kind import Benchmark, add_run_passed
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.plots import _size_axis, _svg

FACT = "mpi_bench_result"

_LAT_KEYS = ("latency_us", "avg_latency_us", "avg_lat_us", "t_avg_usec", "t_usec", "avg_us", "latency",
             "avg_latency", "avg")
_BW_KEYS = ("bandwidth_mbs", "bandwidth_mbps", "bandwidth_MBps", "bandwidth_mb_s", "mbytes_per_sec", "bw_mbps",
            "bandwidth", "mb_s")
_COLLECTIVES = ("reduce", "gather", "bcast", "alltoall", "scatter", "barrier", "allreduce")


# --------------------------------------------------------------------------- read

def _mpi_rows(rows):
    out = []
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict):
            continue
        size = integer(first(r, "size", "bytes", "msg_size"))
        if size is None:
            continue
        out.append({"size": size,
                    "latency_us": number(first(r, *_LAT_KEYS)),
                    "bandwidth_mbps": number(first(r, *_BW_KEYS)),
                    "min_us": number(first(r, "min_latency_us", "min_us", "t_min_usec", "min")),
                    "max_us": number(first(r, "max_latency_us", "max_us", "t_max_usec", "max")),
                    "iterations": integer(first(r, "iterations", "repetitions"))})
    out.sort(key=lambda r: r["size"])
    return out


def _mpi_tables(run):
    """The run's result tables: ``parsed.tables`` (OSU/IMB parsers), else rows on the run."""
    parsed = run.get("parsed")
    if isinstance(parsed, dict) and isinstance(parsed.get("tables"), list):
        return [t for t in parsed["tables"] if isinstance(t, dict)]
    rows = first(run, "rows", "table")
    if rows is None and isinstance(parsed, dict):
        rows = first(parsed, "rows", "table")
    if rows is None and isinstance(parsed, list):
        rows = parsed
    return [{"rows": rows}] if rows else []


def _mpi_test(table):
    """``OSU MPI Allreduce Latency Test`` -> ``allreduce_latency``; IMB ``PingPong`` -> ``pingpong``."""
    name = str(first(table, "benchmark", "name", default="") or "").lower()
    for noise in ("aiinfra.fabric", "osu", "mpi", "test", "-"):
        name = name.replace(noise, " ")
    return "_".join(name.split()) or None


def _mpi_check(run):
    """The correctness verdict of a run (the seed programs' sums), or None when none."""
    parsed = run.get("parsed") if isinstance(run.get("parsed"), dict) else {}
    explicit = first(run, "sums_ok", "checks_passed", "check_passed", "all_match")
    if explicit is None:
        explicit = parsed.get("all_match") if parsed.get("results") else None
    check = run.get("check")
    if explicit is None and isinstance(check, dict):
        explicit = first(check, "passed", "ok")
    if explicit is None and isinstance(check, bool):
        explicit = check
    ranks = first(run, "sums", "ranks_checked") or parsed.get("results")
    bad = []
    for r in ranks or []:
        if isinstance(r, dict) and r.get("expected") is not None and first(r, "received", "sum") is not None:
            if number(first(r, "received", "sum")) != number(r.get("expected")):
                bad.append(r)
    if explicit is None and ranks:
        explicit = not bad
    elif explicit and bad:
        explicit = False
    return None if explicit is None else bool(explicit)


def _implementation(value):
    """mpi_run returns ``{implementation, version, banner}``; keep ``openmpi 4.1.4``."""
    if isinstance(value, dict):
        return " ".join(str(value[k]) for k in ("implementation", "version") if value.get(k)) or None
    return value


def _mpi_kind(name, rows, declared=None):
    if declared in ("latency", "bandwidth", "bibandwidth", "message_rate", "collective"):
        return declared
    if any(r["bandwidth_mbps"] is not None for r in rows):
        return "bandwidth"
    if any(r["latency_us"] is not None for r in rows):
        return "collective" if any(w in name.lower() for w in _COLLECTIVES) else "latency"
    return "check"


def adapt_mpi(host, fact):
    """``mpi_bench_result`` -> MPI records: one per result table of each job (or one per job)."""
    records = []
    for idx, run in enumerate(runs(fact)):
        program = str(first(run, "program", "benchmark", "name", default="unknown")).rsplit("/", 1)[-1]
        hosts = host_names(run.get("hosts"))
        rc = integer(run.get("rc"))
        name = str(first(run, "label", "id", "name", default="%s#%d" % (program, idx)))
        base = {
            "host": host, "run": name, "program": program, "np": integer(run.get("np")),
            "hosts": hosts or [host], "scope": "multi" if len(hosts) > 1 else "single",
            "implementation": _implementation(first(run, "implementation", "mpi")),
            "check_passed": _mpi_check(run), "rc": rc, "duration": number(run.get("duration")),
            "failed": bool(run.get("failed")) or (rc is not None and rc != 0), "msg": run.get("msg"),
        }
        base["passed"], base["failure"] = verdict(run)
        tables = _mpi_tables(run) or [{}]
        for table in tables:
            rec = dict(base)
            rec["rows"] = _mpi_rows(table.get("rows"))
            rec["test"] = _mpi_test(table) or program
            rec["kind"] = _mpi_kind(rec["test"] + " " + program, rec["rows"], table.get("kind"))
            records.append(rec)
    return records


def read(host, facts, run):
    fact = facts.get(FACT)
    if fact is None or run.published_by_other(host, FACT, fact):
        return None
    return adapt_mpi(host, fact)


# --------------------------------------------------------------------------- metrics

def metrics(records, add):
    jobs_seen = set()
    for r in records:
        labels = {"program": r["program"], "test": r["test"], "np": r["np"], "scope": r["scope"]}
        if r["scope"] == "multi":
            labels["hosts"] = "+".join(r["hosts"])
        lat = [x for x in r["rows"] if x["latency_us"] is not None]
        bw = [x for x in r["rows"] if x["bandwidth_mbps"] is not None]
        if lat:
            add(r["host"], "latency_min_size", lat[0]["latency_us"], "us", LOWER, dict(labels, size=lat[0]["size"]))
            if len(lat) > 1:
                add(r["host"], "latency_max_size", lat[-1]["latency_us"], "us", LOWER,
                    dict(labels, size=lat[-1]["size"]))
        if bw:
            best = max(bw, key=lambda x: x["bandwidth_mbps"])
            add(r["host"], "bandwidth_peak", best["bandwidth_mbps"], "MB/s", HIGHER, labels)
        if r["check_passed"] is not None:
            add(r["host"], "check_passed", bool(r["check_passed"]), "bool", EXACT, labels)
        if (r["host"], r["run"]) not in jobs_seen:  # one verdict per job, not per result table
            jobs_seen.add((r["host"], r["run"]))
            add_run_passed(add, r, {"job": r["run"], "np": r["np"], "scope": r["scope"]})


# --------------------------------------------------------------------------- CSV, HTML, plots

CSV_COLUMNS = ["host", "run", "program", "test", "kind", "np", "scope", "hosts", "check_passed", "size", "latency_us",
               "bandwidth_mbps", "min_us", "max_us", "iterations"]


def csv_rows(records):
    out = []
    for r in records:
        for row in r["rows"] or [{}]:
            flat = dict((k, r.get(k)) for k in ("host", "run", "program", "test", "kind", "np", "scope", "hosts",
                                                "check_passed"))
            flat.update(row)
            out.append(flat)
    return out


def section(records):
    return {
        "title": "MPI",
        "columns": ["host", "program", "test", "kind", "np", "hosts", "sums checked", "passed", "rows", "rc",
                    "duration (s)"],
        "numeric": ("np", "rows", "rc", "duration (s)"),
        "rows": [(r["host"], r["program"], r["test"], r["kind"], r["np"], " ".join(r["hosts"]), r["check_passed"],
                  r.get("passed"), len(r["rows"]), r["rc"], r["duration"]) for r in records],
    }


def _series_label(r):
    """A plot legend's name for a job: its host, or its hosts, and np."""
    if r.get("scope") == "multi":
        return "+".join(r["hosts"]) + (" (np %s)" % r["np"] if r.get("np") else "")
    label = r["host"]
    if r.get("np"):
        label += " (np %s)" % r["np"]
    return label


def plot(plt, records):
    plots = []
    for program, test in sorted(set((r["program"], r["test"]) for r in records)):
        with_rows = [r for r in records if r["program"] == program and r["test"] == test and r["rows"]]
        title = test if test == program else "%s %s" % (program, test)
        for field, ylabel, what in (("latency_us", "latency (us)", "latency"),
                                    ("bandwidth_mbps", "bandwidth (MB/s)", "bandwidth")):
            series = []
            for r in with_rows:
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


def plot_anchor(check):
    labels = check.get("labels") or {}
    if not (labels.get("program") and labels.get("test")):
        return None
    what = "bandwidth" if "bandwidth" in check["metric"] else "latency"
    return "mpi-%s-%s-%s" % (labels["program"], labels["test"], what)


# --------------------------------------------------------------------------- summary

def summary(host, name, fact):
    if fact.get("launched_from") not in (None, host):
        return ["MPI: ran from %s (see its lines)" % fact["launched_from"]]
    records = adapt_mpi(host, fact)
    jobs = {}
    for r in records:
        jobs.setdefault(r["run"], r)
    bad = [r for r in jobs.values() if r.get("passed") is False or r.get("check_passed") is False]
    impl = first(fact, "implementation")
    if isinstance(impl, dict):
        impl = " ".join(str(impl[k]) for k in ("implementation", "version") if impl.get(k))
    lines = ["MPI%s: %d job(s) on %s, %s" % (
        " (%s)" % impl if impl else "", len(jobs), ", ".join(host_names(fact.get("hosts"))),
        "all passed" if not bad else "%d FAILED (%s)" % (len(bad), ", ".join(r["run"] for r in bad)))]
    if fact.get("sums_ok") is not None:
        lines[0] += ", sums %s" % ("right" if fact["sums_ok"] else "WRONG")
    for r in records:
        rows = r["rows"]
        if r["kind"] == "bandwidth":
            best = max((x for x in rows if x["bandwidth_mbps"] is not None), key=lambda x: x["bandwidth_mbps"],
                       default=None)
            if best:
                lines.append("MPI %s (np %s): peak %s MB/s at %s"
                             % (r["test"], r["np"], fmt_number(best["bandwidth_mbps"]), fmt_size(best["size"])))
        elif r["kind"] in ("latency", "collective"):
            lat = [x for x in rows if x["latency_us"] is not None]
            if lat:
                lines.append("MPI %s (np %s): %s us at %s, %s us at %s" % (
                    r["test"], r["np"], fmt_number(lat[0]["latency_us"]), fmt_size(lat[0]["size"]),
                    fmt_number(lat[-1]["latency_us"]), fmt_size(lat[-1]["size"])))
    if failed_line(fact) and not bad:
        lines.append(failed_line(fact))
    return lines


BENCHMARK = Benchmark(
    "mpi", facts=(FACT,), read=read, fact_verdict=True, metrics=metrics,
    expect={"check_passed": True, "run_passed": True}, csv_columns=CSV_COLUMNS, csv_rows=csv_rows,
    section=section, summary=summary, plot=plot, plot_anchor=plot_anchor)
