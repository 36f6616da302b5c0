# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A few readable lines per host from its result facts, for the end of each playbook.

What was set up (target, initiator, its device and mount), the I/O check's outcome, fio
IOPS/bandwidth/p99 latency, the MPI jobs and their key numbers, and each NCCL run's bus
bandwidth and verdict. Used by the ``result_summary`` filter; the records come from the
report's own adapters (collect.py), so the summary and the report read the facts alike.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.checks import FAIL, check_builtin
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.collect import (
    adapt_fio, adapt_mpi, adapt_nccl, collect, verdict)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.model import (
    RESULT_FACTS, _first, _host_names, _num, derive_metrics)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.sweep import sweep_lines


def _n(value, unit=""):
    value = _num(value)
    if value is None:
        return "?"
    text = ("%.3g" % value) if abs(value) < 1000 else ("%.0f" % value)
    return text + unit


def _size(n):
    if n is None:
        return "?"
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return "%dB" % n


def _failed(fact):
    passed, reason = verdict(fact)
    return "FAILED: %s" % " ".join(reason.split()) if passed is False else ""


def target_lines(fact):
    if fact.get("state") == "absent":
        if fact.get("check_mode"):
            return ["NVMe-oF target: --check, nothing changed: would remove %s (hosts: %d%s)" % (
                fact.get("nqn"), len(fact.get("hosts_removed") or []),
                ", backing file too" if fact.get("backing_file_removed") else "")]
        return ["NVMe-oF target: removed %s (hosts removed: %d%s)" % (
            fact.get("nqn"), len(fact.get("hosts_removed") or []),
            ", backing file deleted" if fact.get("backing_file_removed") else "")]
    ns = ", ".join("ns %s %s (%s bytes)" % (n.get("nsid"), n.get("device_path"), n.get("size_bytes"))
                   for n in fact.get("namespaces") or [] if isinstance(n, dict))
    hosts = "any host" if fact.get("allow_any_host") else "%d host(s)" % len(fact.get("allowed_hosts") or [])
    line = "NVMe-oF target: %s %s:%s %s, %s, allows %s" % (
        fact.get("transport"), fact.get("address"), fact.get("trsvcid"), fact.get("nqn"), ns or "no namespace", hosts)
    if fact.get("dhchap_hosts"):
        line += ", DH-HMAC-CHAP for %d" % len(fact["dhchap_hosts"])
    if fact.get("save_file"):
        line += ", persisted in %s" % fact["save_file"]
    return [line] + ([_failed(fact)] if _failed(fact) else [])


def initiator_lines(host, fact):
    target = fact.get("target") or {}
    if fact.get("state") == "absent":
        return ["NVMe-oF initiator: %s %s at %s:%s" % (
            "--check, nothing changed: would disconnect from" if fact.get("check_mode") else "disconnected from",
            target.get("nqn"), target.get("address"), target.get("trsvcid"))]
    mount = fact.get("mount_point")
    lines = ["NVMe-oF initiator: %s to %s at %s:%s -> %s%s" % (
        fact.get("transport"), target.get("nqn"), target.get("address"), target.get("trsvcid"),
        fact.get("device") or "no device",
        " (%s on %s)" % (fact.get("filesystem") or "mounted", mount) if mount else "")]
    io = fact.get("io_check")
    if isinstance(io, dict) and io:
        ok = _first(io, "passed", "ok", "match")
        lines.append("I/O check: %s (%s bytes written with O_DIRECT, read back, sha256 %s)" % (
            "PASS" if ok else "FAIL", io.get("bytes", "?"), "match" if ok else "MISMATCH"))
    else:
        lines.append("I/O check: not run")
    for rec in adapt_fio(host, fact):
        lat = rec["lat_us"].get("p99")
        lines.append("fio %s %s: %s IOPS, %s MiB/s, p99 %s latency %s us%s" % (
            rec["job"], rec["direction"], _n(rec["iops"]), _n((rec["bw_bytes"] or 0) / 1048576.0),
            rec.get("lat_kind") or "completion", _n(lat), ", error %s" % rec["error"] if rec["error"] else ""))
    if _failed(fact):
        lines.append(_failed(fact))
    return lines


def mpi_lines(host, fact):
    records = adapt_mpi(host, fact)
    jobs = {}
    for r in records:
        jobs.setdefault(r["run"], r)
    bad = [r for r in jobs.values() if r.get("passed") is False or r.get("check_passed") is False]
    impl = _first(fact, "implementation") if isinstance(fact, dict) else None
    if isinstance(impl, dict):
        impl = " ".join(str(impl[k]) for k in ("implementation", "version") if impl.get(k))
    lines = ["MPI%s: %d job(s) on %s, %s" % (
        " (%s)" % impl if impl else "", len(jobs), ", ".join(_host_names(fact.get("hosts"))) if isinstance(fact, dict) else "",
        "all passed" if not bad else "%d FAILED (%s)" % (len(bad), ", ".join(r["run"] for r in bad)))]
    if isinstance(fact, dict) and fact.get("sums_ok") is not None:
        lines[0] += ", sums %s" % ("right" if fact["sums_ok"] else "WRONG")
    for r in records:
        rows = r["rows"]
        if r["kind"] == "bandwidth":
            best = max((x for x in rows if x["bandwidth_mbps"] is not None), key=lambda x: x["bandwidth_mbps"], default=None)
            if best:
                lines.append("MPI %s (np %s): peak %s MB/s at %s"
                             % (r["test"], r["np"], _n(best["bandwidth_mbps"]), _size(best["size"])))
        elif r["kind"] in ("latency", "collective"):
            lat = [x for x in rows if x["latency_us"] is not None]
            if lat:
                lines.append("MPI %s (np %s): %s us at %s, %s us at %s" % (
                    r["test"], r["np"], _n(lat[0]["latency_us"]), _size(lat[0]["size"]),
                    _n(lat[-1]["latency_us"]), _size(lat[-1]["size"])))
    if _failed(fact) and not bad:
        lines.append(_failed(fact))
    return lines


def _nccl_explained(host, r):
    """The catalog verdict in its own words (the module wrote it), and the transport NCCL proved."""
    out = []
    expectation = r.get("expectation") or {}
    text = " ".join(str(expectation.get("text") or "").split())
    if text:
        # The verdict names its host (or hosts); host_lines puts this host in front.
        out.append(text[len(host) + 2:] if text.startswith(host + ": ") else text)
    transport = r.get("transport") or {}
    if transport.get("summary"):
        proof = ""
        if transport.get("passed") is True:
            proof = ", requirement proven"
        elif transport.get("passed") is False:
            proof = ", requirement NOT proven"
        out.append("NCCL %s transport: %s%s" % (r["test"], transport["summary"], proof))
    return out


def nccl_lines(host, fact):
    lines = []
    for r in adapt_nccl(host, fact):
        where = "on this node" if r["scope"] == "single" else "across %s" % "+".join(r["hosts"])
        line = "NCCL %s %s %s (%s ranks): busbw %s GB/s at %s, peak %s GB/s, #wrong %s: %s" % (
            r["test"], r.get("sizes") or "", where, r["nranks"] if r["nranks"] is not None else "?",
            _n(r["busbw_at_max_size"]), _size(r["max_size"]), _n(r["peak_busbw"]),
            r["wrong_total"] if r["wrong_total"] is not None else "n/a",
            "PASS" if r.get("passed") is not False else "FAIL - %s" % " ".join((r.get("failure") or "").split()))
        lines.append(" ".join(line.split()))
        lines += _nccl_explained(host, r)
    if not lines:
        lines.append("NCCL: no runs")
    if _failed(fact) and all("FAIL" not in x for x in lines):
        lines.append(_failed(fact))
    return lines


def host_lines(host, facts):
    """The summary lines of one host, each starting with the host's name."""
    lines = []
    for name in RESULT_FACTS:
        fact = facts.get(name)
        if not isinstance(fact, dict):
            continue
        if name == "nvmeof_target_result":
            lines += target_lines(fact)
        elif name == "nvmeof_initiator_result":
            lines += initiator_lines(host, fact)
        elif name == "mpi_bench_result":
            if fact.get("launched_from") not in (None, host):
                lines.append("MPI: ran from %s (see its lines)" % fact["launched_from"])
            else:
                lines += mpi_lines(host, fact)
        elif name == "nccl_tests_result":
            lines += nccl_lines(host, fact)
        elif name == "fabric_sweep_result":
            if fact.get("launched_from") not in (None, host):
                lines.append("sweep: ran from %s (see its lines)" % fact["launched_from"])
            else:
                lines += sweep_lines(fact)
    return ["%s: %s" % (host, line) for line in lines] or ["%s: no results" % host]


def host_failed(host, facts):
    """Whether the host's results fail the report's built-in checks (a failed run, a wrong sum, ...)."""
    benchmarks, hosts = collect({host: facts})
    return any(c["status"] == FAIL for c in check_builtin(derive_metrics(benchmarks, hosts)))


def summary_lines(host_facts, failed_only=False):
    """``{host: {fact: value}}`` -> lines, hosts in the order given; ``failed_only``: hosts that failed."""
    out = []
    for host, facts in host_facts.items():
        if failed_only and not host_failed(host, facts or {}):
            continue
        out += host_lines(host, facts or {})
    return out
