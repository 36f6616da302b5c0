# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Result facts -> benchmark records: one adapter per fact the roles publish.

Each benchmark role publishes one fact per host (``nccl_tests_result``,
``mpi_bench_result``, ``nvmeof_initiator_result``, ``nvmeof_target_result``). The
adapters read the shapes the roles really set (see docs/results-schema.md) and
return plain dicts in the schema of the results document. A fact whose own verdict
says it failed becomes a failed *run* record, which the checks turn into a failure.
"""

from __future__ import annotations

import json

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.model import (
    BENCHMARKS, FIO_PERCENTILES, RESULT_FACTS, ReportError, _first, _host_names, _int, _num)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.sweep import adapt_sweep


def _runs(fact, list_keys=("runs", "jobs", "results", "tests")):
    """A fact may be one run (a dict with rows), ``{"runs": [...]}`` or a list of runs."""
    if fact is None:
        return []
    if isinstance(fact, list):
        return [r for r in fact if isinstance(r, dict)]
    if isinstance(fact, dict):
        for key in list_keys:
            if isinstance(fact.get(key), list):
                return [r for r in fact[key] if isinstance(r, dict)]
            if isinstance(fact.get(key), dict):
                # {"runs": {"name": run, ...}}
                out = []
                for name, run in sorted(fact[key].items()):
                    if isinstance(run, dict):
                        run = dict(run)
                        run.setdefault("name", name)
                        out.append(run)
                return out
        return [fact]
    return []


def _text(value):
    if isinstance(value, (list, tuple)):
        return "; ".join(str(v).strip() for v in value if v not in (None, ""))
    return "" if value is None else str(value).strip()


def verdict(result):
    """``(passed, reason)`` from a result's own verdict: ``failed``, ``passed``, ``msg``, ``rc``.

    A result that says it failed (``failed: true``, ``passed: false``), or carries an error
    message without saying it passed, or a non-zero ``rc``, or ``failed_checks``, did not pass.
    """
    if not isinstance(result, dict):
        return None, ""
    reason = _text(_first(result, "failure", "failures", "failed_checks")) or _text(result.get("msg"))
    if result.get("failed") is True:
        return False, reason or "the result says failed"
    if result.get("passed") is False:
        return False, reason or "the result says passed: false"
    if _text(result.get("failed_checks")):
        return False, _text(result.get("failed_checks"))
    rc = _int(result.get("rc"))
    if rc not in (None, 0):
        return False, reason or "exit status %d" % rc
    if _text(result.get("msg")) and result.get("passed") is not True:
        return False, _text(result.get("msg"))
    return True, ""


# --------------------------------------------------------------------------- NCCL

def _nccl_side(side):
    side = side if isinstance(side, dict) else {}
    wrong = side.get("wrong")
    return {
        "time_us": _num(_first(side, "time_us", "time")),
        "algbw": _num(_first(side, "algbw", "algbw_gbps")),
        "busbw": _num(_first(side, "busbw", "busbw_gbps")),
        # None when the test ran without checking (#wrong N/A).
        "wrong": _int(wrong) if wrong is not None else None,
    }


def _nccl_row(row):
    return {
        "size": _int(_first(row, "size", "bytes")),
        "count": _int(row.get("count")),
        "type": row.get("type"),
        "redop": row.get("redop"),
        "root": _int(row.get("root")),
        "out_of_place": _nccl_side(_first(row, "out_of_place", "oop")),
        "in_place": _nccl_side(_first(row, "in_place", "ip")),
    }


def _nccl_version(version):
    """The NCCL version as printed (``2.21.5+cuda12.4``); the module returns a dict of versions."""
    if isinstance(version, dict):
        return _first(version, "nccl", "nccl_library", "nccl_tests")
    return version


def _nccl_runs(fact):
    """``(scope, run)`` pairs: the role's ``single_node``/``multi_node`` lists, else any run list.

    ``scope`` is None when the fact does not say which list a run came from.
    """
    if isinstance(fact, dict) and ("single_node" in fact or "multi_node" in fact):
        out = []
        for scope, key in (("single", "single_node"), ("multi", "multi_node")):
            runs = fact.get(key) or []
            if not isinstance(runs, list):
                raise ReportError("nccl_tests_result.%s must be a list of runs, got %s" % (key, type(runs).__name__))
            out += [(scope, r) for r in runs if isinstance(r, dict)]
        return out
    return [(None, r) for r in _runs(fact)]


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
                    "rank": _int(d.get("rank")),
                    "host": _first(d, "host", "hostname"),
                    "device": _int(_first(d, "device", "cuda_device")),
                    "busid": _first(d, "bus_id", "busid"),
                    "name": _first(d, "name", "gpu", "model"),
                })
        run_hosts = _host_names(_first(run, "hosts", "host"))
        if not run_hosts:
            run_hosts = sorted(set(d["host"] for d in devices if d.get("host")))
        test = str(_first(run, "test", "name", "binary", default="unknown"))
        if test.endswith("_perf"):
            test = test[:-len("_perf")]
        # The peak as the module computed it, else from the rows (out-of-place busbw).
        peak = _first(run, "peak_busbw", "peak")
        peak_busbw = _num(peak.get("busbw")) if isinstance(peak, dict) else _num(peak)
        peak_size = _int(peak.get("size")) if isinstance(peak, dict) else _int(_first(run, "peak_busbw_size", "peak_size"))
        oop = [r for r in rows if r["out_of_place"]["busbw"] is not None]
        if peak_busbw is None and oop:
            best = max(oop, key=lambda r: r["out_of_place"]["busbw"])
            peak_busbw, peak_size = best["out_of_place"]["busbw"], best["size"]
        largest = oop[-1] if oop else None
        at_max = _num(run.get("largest_size_busbw"))
        if at_max is None and largest:
            # Several rows per size (-d all / -o all): the slowest, as the module's gate does.
            at_max = min(r["out_of_place"]["busbw"] for r in oop if r["size"] == largest["size"])
        wrong_total = _int(run.get("wrong_total"))
        if wrong_total is None and rows:
            wrongs = [s["wrong"] for r in rows for s in (r["out_of_place"], r["in_place"]) if s["wrong"] is not None]
            wrong_total = sum(wrongs) if wrongs else None
        gpu_models = sorted(set(d["name"] for d in devices if d.get("name")))
        records.append({
            "host": host,
            "run": str(_first(run, "label", "id", default="%s#%d" % (test, idx))),
            "test": test,
            "hosts": run_hosts or [host],
            "scope": scope or ("multi" if len(run_hosts) > 1 else "single"),
            "sizes": _nccl_sizes(run),
            "nranks": _int(_first(run, "nranks", "np"), len(devices) or None),
            "version": _nccl_version(_first(run, "version", "nccl_version")),
            "devices": devices,
            "gpu_model": gpu_models[0] if len(gpu_models) == 1 else (", ".join(gpu_models) or None),
            "rows": rows,
            "avg_busbw": _num(run.get("avg_busbw")),
            "peak_busbw": peak_busbw,
            "peak_size": peak_size,
            "busbw_at_max_size": at_max,
            "max_size": _int(run.get("largest_size"), largest["size"] if largest else None),
            "wrong_total": wrong_total,
            "out_of_bounds": _int(run.get("out_of_bounds")),
            "failed": bool(run.get("failed")),
            "msg": run.get("msg"),
            # The module's catalog verdict and transport proof, as it returned them.
            "expectation": run.get("expectation") if isinstance(run.get("expectation"), dict) else None,
            "transport": run.get("transport") if isinstance(run.get("transport"), dict) else None,
        })
        records[-1]["passed"], records[-1]["failure"] = verdict(run)
    return records


# --------------------------------------------------------------------------- MPI

_LAT_KEYS = ("latency_us", "avg_latency_us", "avg_lat_us", "t_avg_usec", "t_usec", "avg_us", "latency",
             "avg_latency", "avg")
_BW_KEYS = ("bandwidth_mbs", "bandwidth_mbps", "bandwidth_MBps", "bandwidth_mb_s", "mbytes_per_sec", "bw_mbps",
            "bandwidth", "mb_s")
_COLLECTIVES = ("reduce", "gather", "bcast", "alltoall", "scatter", "barrier", "allreduce")


def _mpi_rows(rows):
    out = []
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict):
            continue
        size = _int(_first(r, "size", "bytes", "msg_size"))
        if size is None:
            continue
        out.append({"size": size,
                    "latency_us": _num(_first(r, *_LAT_KEYS)),
                    "bandwidth_mbps": _num(_first(r, *_BW_KEYS)),
                    "min_us": _num(_first(r, "min_latency_us", "min_us", "t_min_usec", "min")),
                    "max_us": _num(_first(r, "max_latency_us", "max_us", "t_max_usec", "max")),
                    "iterations": _int(_first(r, "iterations", "repetitions"))})
    out.sort(key=lambda r: r["size"])
    return out


def _mpi_tables(run):
    """The run's result tables: ``parsed.tables`` (OSU/IMB parsers), else rows on the run."""
    parsed = run.get("parsed")
    if isinstance(parsed, dict) and isinstance(parsed.get("tables"), list):
        return [t for t in parsed["tables"] if isinstance(t, dict)]
    rows = _first(run, "rows", "table")
    if rows is None and isinstance(parsed, dict):
        rows = _first(parsed, "rows", "table")
    if rows is None and isinstance(parsed, list):
        rows = parsed
    return [{"rows": rows}] if rows else []


def _mpi_test(table):
    """``OSU MPI Allreduce Latency Test`` -> ``allreduce_latency``; IMB ``PingPong`` -> ``pingpong``."""
    name = str(_first(table, "benchmark", "name", default="") or "").lower()
    for noise in ("aiinfra.fabric", "osu", "mpi", "test", "-"):
        name = name.replace(noise, " ")
    return "_".join(name.split()) or None


def _mpi_check(run):
    """The correctness verdict of a run (the seed programs' sums), or None when none."""
    parsed = run.get("parsed") if isinstance(run.get("parsed"), dict) else {}
    explicit = _first(run, "sums_ok", "checks_passed", "check_passed", "all_match")
    if explicit is None:
        explicit = parsed.get("all_match") if parsed.get("results") else None
    check = run.get("check")
    if explicit is None and isinstance(check, dict):
        explicit = _first(check, "passed", "ok")
    if explicit is None and isinstance(check, bool):
        explicit = check
    ranks = _first(run, "sums", "ranks_checked") or parsed.get("results")
    bad = []
    for r in ranks or []:
        if isinstance(r, dict) and r.get("expected") is not None and _first(r, "received", "sum") is not None:
            if _num(_first(r, "received", "sum")) != _num(r.get("expected")):
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


def adapt_mpi(host, fact):
    """``mpi_bench_result`` -> MPI records: one per result table of each job (or one per job)."""
    records = []
    for idx, run in enumerate(_runs(fact)):
        program = str(_first(run, "program", "benchmark", "name", default="unknown")).rsplit("/", 1)[-1]
        hosts = _host_names(run.get("hosts"))
        rc = _int(run.get("rc"))
        name = str(_first(run, "label", "id", "name", default="%s#%d" % (program, idx)))
        base = {
            "host": host, "run": name, "program": program, "np": _int(run.get("np")),
            "hosts": hosts or [host], "scope": "multi" if len(hosts) > 1 else "single",
            "implementation": _implementation(_first(run, "implementation", "mpi")),
            "check_passed": _mpi_check(run), "rc": rc, "duration": _num(run.get("duration")),
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


def _mpi_kind(name, rows, declared=None):
    if declared in ("latency", "bandwidth", "bibandwidth", "message_rate", "collective"):
        return declared
    if any(r["bandwidth_mbps"] is not None for r in rows):
        return "bandwidth"
    if any(r["latency_us"] is not None for r in rows):
        return "collective" if any(w in name.lower() for w in _COLLECTIVES) else "latency"
    return "check"


# --------------------------------------------------------------------------- NVMe-oF and fio

def _fio_side(side):
    if not isinstance(side, dict):
        return None
    iops = _num(side.get("iops"))
    bw = _num(_first(side, "bw_bytes"))
    if bw is None and side.get("bw_mib") is not None:
        bw = _num(side["bw_mib"]) * 1048576.0
    if bw is None and side.get("bw") is not None:  # fio's own KiB/s field
        bw = _num(side["bw"]) * 1024.0
    if iops is None and bw is None:
        return None
    lat = {}
    for block_name in ("clat_us", "lat_us", "clat", "lat"):
        block = side.get(block_name)
        if isinstance(block, dict):
            for k in ("mean", "min", "max") + FIO_PERCENTILES:
                if _num(block.get(k)) is not None:
                    lat[k] = _num(block[k])
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
    device = _first(fact, "device", "devices")
    if isinstance(device, list):
        device = ", ".join(str(d.get("path", d.get("device", d)) if isinstance(d, dict) else d) for d in device)
    for job in fio.get("jobs") or []:
        if not isinstance(job, dict):
            continue
        for direction in ("read", "write", "trim"):
            side = _fio_side(job.get(direction))
            if side is None:
                continue
            rec = {"host": host, "job": str(_first(job, "name", "jobname", default="job")),
                   "direction": direction, "device": device,
                   "transport": fact.get("transport"), "error": _int(job.get("error"), 0)}
            rec.update(side)
            records.append(rec)
    return records


def adapt_nvmeof(host, role, fact):
    """``nvmeof_target_result`` / ``nvmeof_initiator_result`` -> one status record."""
    fact = fact if isinstance(fact, dict) else {}
    io = fact.get("io_check")
    if not isinstance(io, dict):
        io = {"passed": io} if isinstance(io, bool) else {}
    devices = fact.get("devices")
    if devices is None and fact.get("device") is not None:
        devices = [fact["device"]]
    names = []
    for d in devices or []:
        names.append(str(_first(d, "path", "device", "name", default=d)) if isinstance(d, dict) else str(d))
    ports = fact.get("ports")
    if ports is None and fact.get("port_id") is not None:
        ports = [fact["port_id"]]
    passed = _first(io, "passed", "ok", "match")
    return {
        "host": host,
        "role": role,
        "transport": _first(fact, "transport", "trtype"),
        "subsystem": _first(fact, "subsystem", "nqn", "subnqn"),
        "devices": names,
        "mount": _first(fact, "mount", "mount_point", "mountpoint"),
        "ports": len(ports) if isinstance(ports, list) else _int(ports),
        "state": fact.get("state") or "present",
        "io_check": None if passed is None else bool(passed),
        "io_sha256": _first(io, "sha256", "checksum", "sha256_read"),
        "fio_version": (fact.get("fio") or {}).get("fio_version") if isinstance(fact.get("fio"), dict) else None,
        "failed": bool(fact.get("failed")),
        "passed": verdict(fact)[0],
        "failure": verdict(fact)[1],
    }


# --------------------------------------------------------------------------- collect

def _published_by_other(host, name, fact, host_facts):
    """mpi_bench sets the same fact on every node of a job; count it once, on the launching node."""
    launcher = fact.get("launched_from") if isinstance(fact, dict) else None
    if not launcher or launcher == host or launcher not in host_facts:
        return False
    return (host_facts[launcher] or {}).get(name) == fact


def _fact_verdict(bench, host, benchmark, name, fact, records):
    """A fact that says it failed, when none of its runs' records carries that failure."""
    passed, reason = verdict(fact if isinstance(fact, dict) else {})
    if passed is not False or any(r.get("passed") is False for r in records):
        return
    bench["verdicts"].append({"host": host, "benchmark": benchmark, "fact": name, "passed": False, "failure": reason})


def collect(host_facts, host_info=None):
    """Turn ``{host: {fact_name: value}}`` into the benchmarks part of the document.

    ``host_info`` gives per-host attributes used by reference selectors
    (``host_class``, ``gpu_model``, ``transport``, ``groups``).
    Returns ``(benchmarks, hosts)``.
    """
    if not isinstance(host_facts, dict):
        raise ReportError("host facts must be a mapping of host name to facts, got %s" % type(host_facts).__name__)
    host_info = host_info or {}
    bench = dict((b, []) for b in BENCHMARKS)
    bench["verdicts"] = []
    hosts = {}
    seen_multi = set()
    for host in sorted(host_facts):
        facts = host_facts[host] or {}
        if not isinstance(facts, dict):
            raise ReportError("facts of host %r must be a mapping, got %s" % (host, type(facts).__name__))
        info = dict(host_info.get(host) or {})
        if facts.get("nvmeof_target_result") is not None:
            bench["nvmeof"].append(adapt_nvmeof(host, "target", facts["nvmeof_target_result"]))
        if facts.get("nvmeof_initiator_result") is not None:
            bench["nvmeof"].append(adapt_nvmeof(host, "initiator", facts["nvmeof_initiator_result"]))
            bench["fio"].extend(adapt_fio(host, facts["nvmeof_initiator_result"]))
        mpi = facts.get("mpi_bench_result")
        if mpi is not None and not _published_by_other(host, "mpi_bench_result", mpi, host_facts):
            records = adapt_mpi(host, mpi)
            bench["mpi"].extend(records)
            _fact_verdict(bench, host, "mpi", "mpi_bench_result", mpi, records)
        if facts.get("nccl_tests_result") is not None:
            records = adapt_nccl(host, facts["nccl_tests_result"], seen_multi)
            bench["nccl"].extend(records)
            _fact_verdict(bench, host, "nccl", "nccl_tests_result", facts["nccl_tests_result"], records)
        sweep = facts.get("fabric_sweep_result")
        if sweep is not None and not _published_by_other(host, "fabric_sweep_result", sweep, host_facts):
            bench["sweep"].extend(adapt_sweep(host, sweep))
        present = [f for f in RESULT_FACTS if facts.get(f) is not None]
        if not present:
            continue
        if not info.get("gpu_model"):
            models = sorted(set(r["gpu_model"] for r in bench["nccl"] if r["host"] == host and r["gpu_model"]))
            info["gpu_model"] = models[0] if models else None
        if not info.get("transport"):
            tr = sorted(set(r["transport"] for r in bench["nvmeof"] if r["host"] == host and r["transport"]))
            info["transport"] = tr[0] if tr else None
        info.setdefault("host_class", None)
        info["facts"] = present
        hosts[host] = info
    return bench, hosts
