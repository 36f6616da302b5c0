# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""nccl-tests (NVIDIA's NCCL performance tests): command lines, result parsing, gates.

Everything here is a pure function of its arguments, so it is unit-tested on recorded
nccl-tests outputs (tests/fixtures/nccl_tests). Launching goes through the shared
launcher (module_utils/launcher.py); this file only knows nccl-tests.

``parse_text(text)``   the printed report -> dict (rows, devices, versions, footers)
``parse_json(doc)``    the ``-J`` report (JSON_FILE_VERSION 3) -> the same dict
``summarize(report)``  peak / largest-size busbw, total wrong values, hosts
``check_gates(...)``   failure messages for wrong values, out-of-bounds, low busbw
``no_mpi_processes(report)`` how many independent runs a launcher started when the
                       binary was built without MPI (0 when it was not that mistake)
``build_test_args(...)`` the nccl-tests arguments as an argv list
"""

from __future__ import annotations

import re

TESTS = (
    "all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter",
    "alltoall", "gather", "scatter", "sendrecv", "hypercube",
)
OPS = ("sum", "prod", "min", "max", "avg", "mulsum", "all")


class NcclTestsError(ValueError):
    """Bad input; the message names the parameter and the value."""


def binary_name(test, suffix=""):
    """``all_reduce`` -> ``all_reduce_perf`` (plus the build's NAME_SUFFIX, e.g. ``_mpi``)."""
    if test not in TESTS:
        raise NcclTestsError("test must be one of %s, got %r" % (", ".join(TESTS), test))
    return "%s_perf%s" % (test, suffix or "")


# --------------------------------------------------------------------------- arguments

# nccl-tests reads sizes with an optional K/M/G suffix (powers of 1024).
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGkmg]?)\s*$")
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_to_bytes(value, parameter="size"):
    """``'1G'`` -> 1073741824; ints pass through. Raises NcclTestsError naming ``parameter``."""
    if isinstance(value, bool):
        raise NcclTestsError("%s must be a byte count such as 8, 128M or 1G, got %r" % (parameter, value))
    if isinstance(value, int):
        if value < 0:
            raise NcclTestsError("%s must not be negative, got %r" % (parameter, value))
        return value
    m = _SIZE.match(str(value))
    if not m:
        raise NcclTestsError("%s must be a byte count such as 8, 128M or 1G, got %r" % (parameter, value))
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]


def build_test_args(minbytes="8", maxbytes="128M", stepfactor=2, stepbytes=None, ngpus=1,
                    threads=1, iters=None, warmup_iters=None, check=None, op=None, datatype=None,
                    root=None, blocking=None, cudagraph=None, json_file=None, extra_args=None):
    """The nccl-tests argv (without the binary), validated. ``None`` leaves a default alone.

    Exactly one of ``stepfactor`` (-f) and ``stepbytes`` (-i) is used; ``stepbytes``
    wins when both are given, because nccl-tests itself prefers it when -f is 1.
    """
    low = size_to_bytes(minbytes, "minbytes")
    high = size_to_bytes(maxbytes, "maxbytes")
    if low > high:
        raise NcclTestsError("minbytes (%s = %d bytes) is larger than maxbytes (%s = %d bytes)"
                             % (minbytes, low, maxbytes, high))
    args = ["-b", str(minbytes).strip(), "-e", str(maxbytes).strip()]
    if stepbytes is not None:
        if size_to_bytes(stepbytes, "stepbytes") < 1:
            raise NcclTestsError("stepbytes must be at least 1 byte, got %r" % (stepbytes,))
        args += ["-i", str(stepbytes).strip()]
    elif stepfactor is not None:
        _positive("stepfactor", stepfactor, minimum=2)
        args += ["-f", str(stepfactor)]
    _positive("ngpus", ngpus)
    _positive("threads", threads)
    args += ["-g", str(ngpus), "-t", str(threads)]
    for flag, name, value, minimum in (("-n", "iters", iters, 1), ("-w", "warmup_iters", warmup_iters, 0),
                                       ("-c", "check", check, 0), ("-G", "cudagraph", cudagraph, 0)):
        if value is not None:
            _positive(name, value, minimum=minimum)
            args += [flag, str(value)]
    if op is not None:
        if op not in OPS:
            raise NcclTestsError("op must be one of %s, got %r" % (", ".join(OPS), op))
        args += ["-o", op]
    if datatype is not None:
        if not re.match(r"^[a-z0-9_]+$", str(datatype)):
            raise NcclTestsError("datatype must be an NCCL type name (float, half, bfloat16, int8, ..., or all), got %r"
                                 % (datatype,))
        args += ["-d", str(datatype)]
    if root is not None:
        _positive("root", root, minimum=0)
        args += ["-r", str(root)]
    if blocking is not None:
        if isinstance(blocking, bool):
            blocking = int(blocking)
        if blocking not in (0, 1, 2, 3):
            raise NcclTestsError("blocking must be 0, 1, 2 or 3 (nccl-tests -z), got %r" % (blocking,))
        args += ["-z", str(blocking)]
    if json_file:
        args += ["-J", json_file]
    args += [str(a) for a in (extra_args or [])]
    return args


def _positive(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise NcclTestsError("%s must be an integer >= %d, got %r" % (name, minimum, value))


def supports_json(help_text):
    """Does this binary's usage (``<binary> -h``) offer ``-J`` (JSON output)?"""
    return bool(re.search(r"-J,\s*--output_file", help_text or ""))


# --------------------------------------------------------------------------- text report

# Launcher framing around each line: Open MPI --tag-output ("[1,0]<stdout>:"),
# srun --label ("  0: "). Only rank 0 prints the report of an MPI build.
_OMPI_TAG = re.compile(r"^\[(\d+),(\d+)\]<(?:stdout|stderr|stddiag)>:\s?")
_SRUN_LABEL = re.compile(r"^\s{0,8}(\d+): ")

_TESTS_VERSION = re.compile(r"#\s*nccl-tests version (\S+)(?:\s+\([^)]*\))?\s+nccl-headers=(\d+)\s+nccl-library=(\d+)")
_NCCL_VERSION = re.compile(r"NCCL version (\d+\.\d+\.\d+\S*)")
_STARTING = re.compile(r"#\s*Collective test starting:\s*(\S+)")
_CONFIG = re.compile(r"^#?\s*nThread\s+(\d+)\s+nGpus\s+(\d+)\s+minBytes\s+(\d+)\s+maxBytes\s+(\d+)\s+"
                     r"step:\s*(\d+)\((factor|bytes)\)\s+warmup iters:\s*(\d+)\s+iters:\s*(\d+)(.*)$")
_DEVICE = re.compile(r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+(\d+)\s+)?Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(\d+)\s+"
                     r"\[([^\]]*)\]\s*(.*?)\s*$")
_OUT_OF_BOUNDS = re.compile(r"^#\s*Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG_BUSBW = re.compile(r"^#\s*Avg bus bandwidth\s*:\s*(\S+)\s*(OK|FAILED)?")
_REDUCED = re.compile(r"Reducing maxBytes to (\d+)")
_TEST_FAILURE = re.compile(r"Test (?:NCCL |CUDA )?failure\b.*|Test timeout .*|Invalid number of GPUs.*")

# Column names of the prefix of a row (before the first time column).
_PREFIX_NAMES = ("size", "count", "type", "redop", "root")
_TIME_NAMES = ("time", "cputime")


def strip_launcher_prefix(line):
    """``(rank or None, line)`` without mpirun --tag-output / srun --label framing."""
    m = _OMPI_TAG.match(line)
    if m:
        return int(m.group(2)), line[m.end():]
    m = _SRUN_LABEL.match(line)
    if m:
        return int(m.group(1)), line[m.end():]
    return None, line


def _header_columns(line):
    """Column layout from a table header line, or None when it is not one.

    Returns ``{'prefix': [...], 'halves': [[...], [...]]}``: the names before the first
    time column, then the out-of-place and in-place groups (time, algbw, busbw,
    #wrong|error and, with -I, the per-iteration columns).
    """
    body = line.lstrip("#").split()
    if not body or body[0] != "size" or "count" not in body or "busbw" not in body:
        return None
    starts = [i for i, name in enumerate(body) if name in _TIME_NAMES]
    if len(starts) < 2:
        return None
    prefix = body[:starts[0]]
    first = body[starts[0]:starts[1]]
    second = body[starts[1]:starts[1] + len(first)]
    return {"prefix": prefix, "halves": [first, second]}


def _number(token):
    try:
        return float(token)
    except ValueError:
        return None


def _result_half(names, tokens):
    half = {}
    for name, token in zip(names, tokens):
        if name in _TIME_NAMES:
            half["time_us"] = _number(token)
            if name == "cputime":
                half["cputime"] = True
        elif name == "algbw":
            half["algbw"] = _number(token)
        elif name == "busbw":
            half["busbw"] = _number(token)
        elif name == "#wrong":
            value = _number(token)
            half["wrong"] = None if value is None else int(value)
        elif name == "error":
            # Older nccl-tests print the largest deviation, not a count; the verdict
            # is the out-of-bounds footer.
            half["error"] = _number(token)
            half["wrong"] = None
        elif name.startswith("i_"):
            half[name[2:].rstrip("%") + ("_pct" if name.endswith("%") else "_us")] = _number(token)
    return half


def _parse_row(columns, tokens):
    prefix, (first, second) = columns["prefix"], columns["halves"]
    need = len(prefix) + len(first) + len(second)
    if len(tokens) < need - len(first) or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None
    row = {"size": int(tokens[0]), "count": int(tokens[1]), "type": None, "redop": None, "root": None}
    for name, token in zip(prefix[2:], tokens[2:len(prefix)]):
        if name == "root":
            row["root"] = int(token) if re.match(r"^-?\d+$", token) else None
        elif name in ("type", "redop"):
            row[name] = token
    rest = tokens[len(prefix):]
    if len(rest) >= len(first) + len(second):
        row["out_of_place"] = _result_half(first, rest[:len(first)])
        row["in_place"] = _result_half(second, rest[len(first):len(first) + len(second)])
    else:
        # Only in place (nccl-tests leaves the out-of-place columns blank in trace replay).
        row["out_of_place"] = None
        row["in_place"] = _result_half(second, rest[:len(second)])
    for half in (row["out_of_place"], row["in_place"]):
        if half is not None and (half.get("time_us") is None or half.get("busbw") is None):
            return None
    return row


def _empty_report():
    return {
        "source": "text",
        "test": None,
        "version": {"nccl_tests": None, "nccl_headers": None, "nccl_library": None, "nccl": None},
        "config": None,
        "headers": 0,
        "header_ranks": [],
        "devices": [],
        "layout": None,
        "rows": [],
        "out_of_bounds": None,
        "out_of_bounds_failed": None,
        "avg_busbw": None,
        "avg_busbw_failed": None,
        "max_bytes_reduced_to": None,
        "errors": [],
    }


def parse_text(text):
    """Parse what an nccl-tests binary (and its launcher) printed.

    Unknown lines (NCCL INFO/WARN, launcher messages) are skipped wherever they
    appear, launcher prefixes are removed, and columns are taken from the table
    header, so the modern layout (root, #wrong), the older one (error, no root) and
    the per-test variants (no redop for all_gather, ...) all parse.
    """
    report = _empty_report()
    columns = None
    for raw in (text or "").splitlines():
        rank, line = strip_launcher_prefix(raw.rstrip("\r"))
        stripped = line.strip()
        if not stripped:
            continue
        m = _TESTS_VERSION.search(stripped)
        if m:
            report["version"].update(nccl_tests=m.group(1), nccl_headers=int(m.group(2)),
                                     nccl_library=int(m.group(3)))
            continue
        m = _STARTING.match(stripped)
        if m:
            report["test"] = m.group(1)
            continue
        m = _CONFIG.match(stripped)
        if m:
            report["headers"] += 1
            report["header_ranks"].append(rank)
            if report["config"] is None:
                report["config"] = _config(m)
            continue
        m = _DEVICE.match(stripped)
        if m:
            report["devices"].append({
                "rank": int(m.group(1)), "group": None if m.group(2) is None else int(m.group(2)),
                "pid": int(m.group(3)), "host": m.group(4), "device": int(m.group(5)),
                "bus_id": m.group(6), "name": m.group(7),
            })
            continue
        m = _OUT_OF_BOUNDS.match(stripped)
        if m:
            report["out_of_bounds"] = (report["out_of_bounds"] or 0) + int(m.group(1))
            report["out_of_bounds_failed"] = bool(report["out_of_bounds_failed"]) or m.group(2) == "FAILED" \
                or int(m.group(1)) > 0
            continue
        m = _AVG_BUSBW.match(stripped)
        if m:
            if report["avg_busbw"] is None:
                report["avg_busbw"] = _number(m.group(1))
            report["avg_busbw_failed"] = bool(report["avg_busbw_failed"]) or m.group(2) == "FAILED"
            continue
        if report["version"]["nccl"] is None:
            m = _NCCL_VERSION.search(stripped)
            if m:
                report["version"]["nccl"] = m.group(1)
                continue
        m = _REDUCED.search(stripped)
        if m:
            report["max_bytes_reduced_to"] = int(m.group(1))
            continue
        if stripped.startswith("#"):
            found = _header_columns(stripped)
            if found:
                columns = found
                report["layout"] = "modern" if "#wrong" in found["halves"][0] else "legacy"
            continue
        m = _TEST_FAILURE.search(stripped)
        if m:
            report["errors"].append(stripped[:500])
            continue
        if columns is not None:
            row = _parse_row(columns, stripped.split())
            if row is not None:
                report["rows"].append(row)
    return report


def _config(m):
    rest = m.group(9)
    extra = dict((k.replace(" ", "_"), int(v)) for k, v in re.findall(r"([a-z][a-z ]*?):\s*(\d+)", rest))
    config = {
        "threads": int(m.group(1)), "ngpus": int(m.group(2)), "minbytes": int(m.group(3)),
        "maxbytes": int(m.group(4)), "warmup_iters": int(m.group(7)), "iters": int(m.group(8)),
        "stepfactor": int(m.group(5)) if m.group(6) == "factor" else None,
        "stepbytes": int(m.group(5)) if m.group(6) == "bytes" else None,
    }
    for key in ("agg_iters", "validation", "graph", "unalign"):
        if key in extra:
            config[key] = extra[key]
    return config


# --------------------------------------------------------------------------- JSON report

def _json_bool(value):
    # nccl-tests writes booleans as the strings "true"/"false".
    if isinstance(value, str):
        return value.lower() == "true"
    return None if value is None else bool(value)


def _json_half(half):
    if half is None:
        return None
    wrong = half.get("nwrong")
    return {
        "time_us": half.get("time", half.get("cpu_time")),
        "algbw": half.get("alg_bw"),
        "busbw": half.get("bus_bw"),
        "wrong": None if wrong is None else int(wrong),
    }


def parse_json(doc):
    """The ``-J`` report (dict) -> the same shape as :func:`parse_text`.

    The report's ``env`` (the whole environment of rank 0) and ``args`` are dropped:
    they can hold secrets and are not results.
    """
    if not isinstance(doc, dict) or "results" not in doc:
        raise NcclTestsError("the nccl-tests JSON report has no 'results' list")
    report = _empty_report()
    report["source"] = "json"
    report["layout"] = "json"
    library = doc.get("nccl_version")
    report["version"]["nccl_library"] = library if isinstance(library, int) else None
    config = doc.get("config") or {}
    if config:
        report["headers"] = 1
        report["header_ranks"] = [None]
        report["config"] = {
            "threads": config.get("nthreads"), "ngpus": config.get("ngpus"),
            "minbytes": config.get("minimum_bytes"), "maxbytes": config.get("maximum_bytes"),
            "stepfactor": config.get("step_factor"), "stepbytes": config.get("step_bytes"),
            "warmup_iters": config.get("warmup_iters"), "iters": config.get("iterations"),
            "agg_iters": config.get("aggregated_iterations"), "validation": config.get("validation"),
            "graph": config.get("graph"),
        }
    for dev in config.get("devices") or []:
        report["devices"].append({
            "rank": dev.get("rank"), "group": dev.get("group"), "pid": dev.get("pid"),
            "host": dev.get("hostname"), "device": dev.get("device"),
            "bus_id": dev.get("device_hex"), "name": dev.get("device_info"),
        })
    for item in doc.get("results") or []:
        root = str(item.get("root", "")).strip()
        report["rows"].append({
            "size": item.get("size"), "count": item.get("count"), "type": item.get("type"),
            "redop": item.get("redop"), "root": int(root) if re.match(r"^-?\d+$", root) else None,
            "out_of_place": _json_half(item.get("out_of_place")),
            "in_place": _json_half(item.get("in_place")),
        })
    oob = doc.get("out_of_bounds")
    if isinstance(oob, dict):
        report["out_of_bounds"] = oob.get("count")
        okay = _json_bool(oob.get("okay"))
        report["out_of_bounds_failed"] = (okay is False) or bool(oob.get("count"))
    avg = doc.get("average_bus_bandwidth")
    if isinstance(avg, dict):
        report["avg_busbw"] = avg.get("bandwidth")
        report["avg_busbw_failed"] = avg.get("okay") in (False, "false")
    report["errors"] = [str(e)[:500] for e in (doc.get("errors") or []) if e]
    return report


# --------------------------------------------------------------------------- summary, gates

def summarize(report):
    """Figures a gate or a dashboard wants, from a parsed report."""
    rows = report["rows"]
    oop = [r for r in rows if r.get("out_of_place")]
    peak = max(oop, key=lambda r: r["out_of_place"]["busbw"]) if oop else None
    largest = max(r["size"] for r in oop) if oop else None
    at_largest = [r for r in oop if r["size"] == largest]
    # With -d all / -o all there are several rows per size; the gate uses the slowest.
    slowest = min(at_largest, key=lambda r: r["out_of_place"]["busbw"]) if at_largest else None
    wrong = 0
    wrong_rows = []
    for row in rows:
        count = 0
        for half in (row.get("out_of_place"), row.get("in_place")):
            if half and half.get("wrong"):
                count += half["wrong"]
        if count:
            wrong += count
            wrong_rows.append({"size": row["size"], "type": row["type"], "redop": row["redop"], "wrong": count})
    hosts = []
    for dev in report["devices"]:
        if dev["host"] not in hosts:
            hosts.append(dev["host"])
    models = sorted(set(d["name"] for d in report["devices"] if d.get("name")))
    return {
        "rows": len(rows),
        "peak_busbw": peak["out_of_place"]["busbw"] if peak else None,
        "peak_busbw_size": peak["size"] if peak else None,
        "largest_size": largest,
        "largest_size_busbw": slowest["out_of_place"]["busbw"] if slowest else None,
        "wrong_total": wrong,
        "wrong_rows": wrong_rows,
        "nranks": len(report["devices"]) or None,
        "hosts": hosts,
        "gpu_models": models,
    }


def no_mpi_processes(report):
    """How many separate single-process runs are in this output (0: not that mistake).

    A binary built without MPI=1 that a launcher starts N times runs N independent
    jobs: each prints its own header and its own rank 0, and none talks to the others.
    """
    ranks = [d["rank"] for d in report["devices"]]
    zeros = ranks.count(0)
    runs = max(report["headers"], zeros)
    return runs if runs > 1 else 0


def bound_for(min_busbw=None, min_busbw_per_gpu=None, gpu_models=()):
    """The busbw bound in GB/s for these GPUs: the first ``min_busbw_per_gpu`` key found
    (case-insensitively) in a GPU name, the strictest if models differ; else ``min_busbw``.
    Returns ``(bound or None, what it came from)``.
    """
    chosen = None
    for pattern, value in (min_busbw_per_gpu or {}).items():
        for model in gpu_models:
            if str(pattern).lower() in model.lower():
                if chosen is None or float(value) > chosen[0]:
                    chosen = (float(value), "min_busbw_per_gpu[%s] (%s)" % (pattern, model))
    if chosen:
        return chosen
    if min_busbw is not None:
        return float(min_busbw), "min_busbw"
    return None, None


def check_gates(report, summary, host, min_busbw=None, min_busbw_per_gpu=None):
    """Failure messages (empty list: every gate passed)."""
    failures = []
    where = "%s (devices: %s)" % (host, describe_devices(report["devices"]) or "not listed")
    if summary["wrong_total"]:
        sizes = ", ".join("%d B %s/%s: %d" % (w["size"], w["type"], w["redop"], w["wrong"])
                          for w in summary["wrong_rows"][:5])
        failures.append("%d wrong values (#wrong) on %s: %s" % (summary["wrong_total"], where, sizes))
    if report["out_of_bounds_failed"]:
        failures.append("out of bounds values: %s FAILED on %s" % (report["out_of_bounds"], where))
    if report["avg_busbw_failed"]:
        failures.append("nccl-tests' own NCCL_TESTS_MIN_BW check FAILED (avg bus bandwidth %s) on %s"
                        % (report["avg_busbw"], where))
    bound, origin = bound_for(min_busbw, min_busbw_per_gpu, summary["gpu_models"])
    if bound is not None:
        value = summary["largest_size_busbw"]
        if value is None:
            failures.append("no out-of-place result to compare with %s = %s GB/s on %s" % (origin, bound, where))
        elif value < bound:
            failures.append("out-of-place busbw %.2f GB/s at the largest size (%d B) is below %s = %s GB/s on %s"
                            % (value, summary["largest_size"], origin, bound, where))
    return failures


def describe_devices(devices):
    """``host0: 0,1 NVIDIA H100; host1: 0 NVIDIA H100`` — compact, for messages."""
    per_host = {}
    order = []
    for dev in devices:
        key = (dev["host"], dev.get("name") or "")
        if key not in per_host:
            per_host[key] = []
            order.append(key)
        per_host[key].append(str(dev["device"]))
    return "; ".join("%s: %s %s" % (h, ",".join(per_host[(h, n)]), n) for h, n in order).strip()
