# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fio: build the command line and turn ``--output-format=json`` into a compact summary.

:func:`parse_fio_json` is pure (unit-tested on JSON captured from fio 3.33 in the lab);
:func:`build_argv` turns plain options into an argv list. Runs on managed nodes:
Python 3.9+, standard library only.
"""

from __future__ import annotations

import json
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError

# The clat percentiles fio prints by default, under the names we publish.
PERCENTILES = (("p50", "50.000000"), ("p90", "90.000000"), ("p95", "95.000000"),
               ("p99", "99.000000"), ("p99_9", "99.900000"))
DIRECTIONS = ("read", "write", "trim")
_SIZE_RE = re.compile(r"^[0-9]+(\.[0-9]+)?[kKmMgGtTpP]?(i?[bB])?%?$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


class FioError(NvmeError):
    def __init__(self, msg, **details):
        super(FioError, self).__init__(msg)
        self.msg = msg
        self.details = details


def _load(text):
    """fio may print warnings ("fio: ...") before the JSON document on stdout."""
    text = text or ""
    start = text.find("{")
    if start < 0:
        raise FioError("fio printed no JSON document", stdout=text)
    try:
        return json.JSONDecoder().raw_decode(text[start:])[0]
    except ValueError as exc:
        raise FioError("cannot parse fio JSON output: %s" % exc, stdout=text)


def _us(ns):
    return round(float(ns) / 1000.0, 3)


def _latency(block):
    """A ``clat_ns``/``lat_ns`` block -> microseconds: mean, max and the percentiles."""
    if not block or not block.get("N"):
        return None
    out = {"mean": _us(block.get("mean", 0)), "min": _us(block.get("min", 0)), "max": _us(block.get("max", 0))}
    pct = block.get("percentile") or {}
    for name, key in PERCENTILES:
        if key in pct:
            out[name] = _us(pct[key])
    return out


def _direction(d):
    if not d or not d.get("total_ios") and not d.get("io_bytes"):
        return None
    return {
        "iops": round(float(d.get("iops", 0.0)), 3),
        "bw_bytes": int(d.get("bw_bytes", int(d.get("bw", 0)) * 1024)),
        "bw_mib": round(float(d.get("bw_bytes", int(d.get("bw", 0)) * 1024)) / 1048576.0, 3),
        "io_bytes": int(d.get("io_bytes", int(d.get("io_kbytes", 0)) * 1024)),
        "total_ios": int(d.get("total_ios", 0)),
        "runtime_ms": int(d.get("runtime", 0)),
        # clat: completion latency (what fio's percentiles are computed on by default);
        # lat: submission + completion.
        "clat_us": _latency(d.get("clat_ns")),
        "lat_us": _latency(d.get("lat_ns")),
    }


def parse_fio_json(text):
    """Summarise fio JSON output.

    Returns ``{"fio_version", "jobs": [...], "totals": {...}, "errors": [...]}``. Each job:
    ``name``, ``error`` (fio's errno for the job, 0 when fine), and ``read``/``write``/``trim``
    (``None`` when the job did no I/O in that direction) with ``iops``, ``bw_bytes``,
    ``bw_mib``, ``io_bytes``, ``total_ios``, ``runtime_ms``, ``clat_us`` and ``lat_us``
    (mean/min/max and p50/p90/p95/p99/p99_9 in microseconds).
    """
    data = text if isinstance(text, dict) else _load(text)
    if not isinstance(data.get("jobs"), list):
        raise FioError("fio JSON has no 'jobs' list")
    jobs, errors = [], []
    totals = {"read_iops": 0.0, "write_iops": 0.0, "read_bw_bytes": 0, "write_bw_bytes": 0,
              "read_io_bytes": 0, "write_io_bytes": 0}
    for job in data["jobs"]:
        summary = {"name": job.get("jobname"), "groupid": job.get("groupid", 0), "error": int(job.get("error", 0))}
        for direction in DIRECTIONS:
            summary[direction] = _direction(job.get(direction))
        for direction in ("read", "write"):
            s = summary[direction]
            if s:
                totals[direction + "_iops"] += s["iops"]
                totals[direction + "_bw_bytes"] += s["bw_bytes"]
                totals[direction + "_io_bytes"] += s["io_bytes"]
        if summary["error"]:
            errors.append({"job": summary["name"], "error": summary["error"]})
        jobs.append(summary)
    totals["read_iops"] = round(totals["read_iops"], 3)
    totals["write_iops"] = round(totals["write_iops"], 3)
    return {"fio_version": data.get("fio version"), "jobs": jobs, "totals": totals, "errors": errors}


def validate_options(opts):
    """Check the job options before running fio; raise FioError naming the bad one."""
    if not opts.get("job_file") and not opts.get("filename"):
        raise FioError("either filename or job_file is required")
    if opts.get("name") is not None and not _NAME_RE.match(opts["name"]):
        raise FioError("name=%r is not a valid fio job name (letters, digits, '_.:-', at most 64)" % (opts["name"],))
    for key in ("bs", "size"):
        val = opts.get(key)
        if val is not None and not _SIZE_RE.match(str(val)):
            raise FioError("%s=%r is not a fio size (e.g. 4k, 64M, 1G, 50%%)" % (key, val))
    for key in ("iodepth", "numjobs"):
        val = opts.get(key)
        if val is not None and int(val) < 1:
            raise FioError("%s=%r must be at least 1" % (key, val))
    if opts.get("runtime") is not None and int(opts["runtime"]) < 0:
        raise FioError("runtime=%r must not be negative" % (opts["runtime"],))


def build_argv(fio_bin, opts):
    """fio argv for the given options (a job file, or one job described by options)."""
    argv = [fio_bin, "--output-format=json"]
    if opts.get("job_file"):
        argv.append(opts["job_file"])
    else:
        argv += ["--name=%s" % (opts.get("name") or "aiinfra"), "--filename=%s" % opts["filename"]]
        for key in ("rw", "bs", "size", "iodepth", "numjobs", "ioengine", "verify"):
            if opts.get(key) not in (None, ""):
                argv.append("--%s=%s" % (key, opts[key]))
        if opts.get("direct") is not None:
            argv.append("--direct=%d" % (1 if opts["direct"] else 0))
        if opts.get("runtime"):
            argv.append("--runtime=%d" % int(opts["runtime"]))
            if opts.get("time_based"):
                argv.append("--time_based")
        if opts.get("numjobs") and int(opts["numjobs"]) > 1:
            argv.append("--group_reporting=0")
    argv += list(opts.get("extra_args") or [])
    return argv


# I/O patterns that only read: such a job on a file or device that is there changes nothing.
READ_ONLY_PATTERNS = ("read", "randread")
# fio options in extra_args that can turn a read job into one that writes.
_WRITE_OPTIONS = ("rw", "readwrite", "fill_device", "fill_fs")


def writes_data(opts, exists):
    """Whether the job changes what is on the target - fio_run's ``changed``, from the options alone.

    True for a write or trim pattern, for a job file (its jobs are not read here), for
    extra_args that set an option of :data:`_WRITE_OPTIONS`, and for a read job on a file
    that is not there yet (fio creates and lays it out first). ``exists(path) -> bool``.
    """
    if opts.get("job_file"):
        return True
    if opts.get("rw") not in READ_ONLY_PATTERNS:
        return True
    for arg in opts.get("extra_args") or []:
        if str(arg).lstrip("-").split("=", 1)[0] in _WRITE_OPTIONS:
            return True
    return not exists(opts["filename"])
