# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVMe-oF: ``nvmeof_target_result`` and ``nvmeof_initiator_result`` -> one status record per
host and role, the I/O check checked against true, nvmeof.csv, and the summary lines of what
was set up (target, initiator, device, mount) with the I/O check and fio's numbers.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import (
    EXACT, failed_line, first, integer, verdict)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.fio import fio_lines
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.kind import Benchmark, add_run_passed

TARGET = "nvmeof_target_result"
INITIATOR = "nvmeof_initiator_result"


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
        names.append(str(first(d, "path", "device", "name", default=d)) if isinstance(d, dict) else str(d))
    ports = fact.get("ports")
    if ports is None and fact.get("port_id") is not None:
        ports = [fact["port_id"]]
    passed = first(io, "passed", "ok", "match")
    return {
        "host": host,
        "role": role,
        "transport": first(fact, "transport", "trtype"),
        "subsystem": first(fact, "subsystem", "nqn", "subnqn"),
        "devices": names,
        "mount": first(fact, "mount", "mount_point", "mountpoint"),
        "ports": len(ports) if isinstance(ports, list) else integer(ports),
        "state": fact.get("state") or "present",
        "io_check": None if passed is None else bool(passed),
        "io_sha256": first(io, "sha256", "checksum", "sha256_read"),
        "fio_version": (fact.get("fio") or {}).get("fio_version") if isinstance(fact.get("fio"), dict) else None,
        "failed": bool(fact.get("failed")),
        "passed": verdict(fact)[0],
        "failure": verdict(fact)[1],
    }


def read(host, facts, run):
    records = [adapt_nvmeof(host, role, facts[name]) for role, name in (("target", TARGET), ("initiator", INITIATOR))
               if facts.get(name) is not None]
    return records or None


def metrics(records, add):
    for r in records:
        labels = {"role": r["role"], "transport": r["transport"]}
        if r["io_check"] is not None:
            add(r["host"], "io_check", r["io_check"], "bool", EXACT, labels)
        add_run_passed(add, r, labels)


CSV_COLUMNS = ["host", "role", "state", "transport", "subsystem", "devices", "mount", "ports", "io_check",
               "io_sha256"]


def section(records):
    return {
        "title": "NVMe over Fabrics",
        "columns": ["host", "role", "transport", "subsystem", "devices", "mount", "I/O check", "passed", "sha256"],
        "numeric": (),
        "rows": [(r["host"], r["role"], r["transport"], r["subsystem"], " ".join(r["devices"]), r["mount"],
                  r["io_check"], r.get("passed"), r["io_sha256"]) for r in records],
    }


# --------------------------------------------------------------------------- summary

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
    return [line] + ([failed_line(fact)] if failed_line(fact) else [])


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
        ok = first(io, "passed", "ok", "match")
        lines.append("I/O check: %s (%s bytes written with O_DIRECT, read back, sha256 %s)" % (
            "PASS" if ok else "FAIL", io.get("bytes", "?"), "match" if ok else "MISMATCH"))
    else:
        lines.append("I/O check: not run")
    lines += fio_lines(host, fact)
    if failed_line(fact):
        lines.append(failed_line(fact))
    return lines


def summary(host, name, fact):
    return target_lines(fact) if name == TARGET else initiator_lines(host, fact)


BENCHMARK = Benchmark(
    "nvmeof", facts=(TARGET, INITIATOR), read=read, host_info=("transport",), metrics=metrics,
    expect={"io_check": True, "run_passed": True}, csv_columns=CSV_COLUMNS, section=section, summary=summary)
