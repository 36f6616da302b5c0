# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""What nccl-tests printed (the text table) or wrote (the ``-J`` JSON report) -> one dict.

``parse_text(text)``  the printed report -> rows, devices, versions, footers, problems
``parse_json(doc)``   the ``-J`` report (JSON_FILE_VERSION 3) -> the same dict
"""

from __future__ import annotations

import math
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.command import NcclTestsError

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


def _finite(value):
    return value is not None and not math.isnan(value) and not math.isinf(value)


def _result_half(names, tokens, problems):
    """One half (out-of-place or in-place) of a row; what is wrong goes to ``problems``."""
    half = {}
    for name, token in zip(names, tokens):
        value = _number(token)
        if name in _TIME_NAMES or name in ("algbw", "busbw"):
            key = "time_us" if name in _TIME_NAMES else name
            half[key] = value
            if name == "cputime":
                half["cputime"] = True
            if value is None:
                problems.append("%s %r is not a number" % (name, token))
            elif not _finite(value):
                problems.append("%s is %s" % (name, token))
        elif name == "#wrong":
            if token == "N/A":
                # Checking was off (-c 0), or this half is not checked (alltoall in place).
                half["wrong"] = None
            elif value is None or not _finite(value) or value != int(value) or value < 0:
                half["wrong"] = None
                problems.append("#wrong %r is not a count" % (token,))
            else:
                half["wrong"] = int(value)
        elif name == "error":
            # Older nccl-tests print the largest deviation, not a count; the verdict
            # is the out-of-bounds footer. N/A: checking was off.
            half["error"] = value
            half["wrong"] = None
            if value is None and token != "N/A":
                problems.append("error %r is not a number" % (token,))
        elif name.startswith("i_"):
            half[name[2:].rstrip("%") + ("_pct" if name.endswith("%") else "_us")] = value
    return half


def _parse_row(columns, tokens, line=""):
    """``(row or None, problem or None)`` for a line in the table.

    ``(None, None)``: not a row at all (an NCCL INFO line, a launcher message).
    ``(None, problem)``: a row that cannot be trusted (cut short, a value that is not
    a number): it is reported, never filed or silently dropped.
    """
    prefix, (first, second) = columns["prefix"], columns["halves"]
    if len(tokens) < 2 or not tokens[0].isdigit() or not tokens[1].isdigit():
        return None, None
    size = int(tokens[0])
    full = len(prefix) + len(first) + len(second)
    if len(tokens) < len(prefix) + len(second):
        return None, _cut_short(size, len(tokens), full, line)
    row = {"size": size, "count": int(tokens[1]), "type": None, "redop": None, "root": None}
    for name, token in zip(prefix[2:], tokens[2:len(prefix)]):
        if name == "root":
            row["root"] = int(token) if re.match(r"^-?\d+$", token) else None
        elif name in ("type", "redop"):
            row[name] = token
    rest = tokens[len(prefix):]
    problems = []
    if len(rest) >= len(first) + len(second):
        row["out_of_place"] = _result_half(first, rest[:len(first)], problems)
        row["in_place"] = _result_half(second, rest[len(first):len(first) + len(second)], problems)
    elif _blank_out_of_place(line, len(prefix)):
        # Trace replay: nccl-tests prints blanks instead of the out-of-place numbers
        # (writeBenchMarkLineNullBody in src/util.cu) and measures in place only.
        row["out_of_place"] = None
        row["in_place"] = _result_half(second, rest[:len(second)], problems)
    else:
        # The numbers follow the prefix directly: the line stopped after the
        # out-of-place half (a kill or a full disk mid-line); they are not in-place ones.
        return None, _cut_short(size, len(tokens), full, line)
    if problems:
        return None, "the row for size %d %s: %s" % (size, "; ".join(problems), line.strip()[:200])
    return row, None


def _cut_short(size, got, full, line):
    return "the row for size %d is cut short (%d of %d columns): %s" % (size, got, full, line.strip()[:200])


def _blank_out_of_place(line, prefix_columns):
    """Whether a wide run of blanks (the 32 nccl-tests prints) follows the row's prefix."""
    m = re.match(r"^\s*(?:\S+\s+){%d}" % (prefix_columns - 1) + r"\S+(\s*)", line)
    return bool(m) and len(m.group(1)) >= 20


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
        # What makes the result untrustworthy (rows that are cut short or hold a value
        # that is not a number): each fails the run, with this message.
        "problems": [],
        # Whether the footer (# Out of bounds values / # Avg bus bandwidth) was printed:
        # a table without it was cut off.
        "footer": False,
        # Rows printed by ranks other than the one that prints the report (rank 0).
        "other_rank_rows": 0,
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
    # The rank whose table this is: the first that printed the configuration header
    # (rank 0 of an MPI build). Rows and footers of other ranks are not merged in.
    report_rank = None
    for raw in (text or "").splitlines():
        rank, line = strip_launcher_prefix(raw.rstrip("\r"))
        stripped = line.strip()
        if not stripped:
            continue
        other_rank = rank is not None and report_rank is not None and rank != report_rank
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
                report_rank = rank
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
        if m and not other_rank:
            report["footer"] = True
            report["out_of_bounds"] = (report["out_of_bounds"] or 0) + int(m.group(1))
            report["out_of_bounds_failed"] = bool(report["out_of_bounds_failed"]) or m.group(2) == "FAILED" \
                or int(m.group(1)) > 0
            continue
        m = _AVG_BUSBW.match(stripped)
        if m and not other_rank:
            report["footer"] = True
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
            row, problem = _parse_row(columns, stripped.split(), line)
            if other_rank:
                if row is not None or problem is not None:
                    report["other_rank_rows"] += 1
                continue
            if problem:
                report["problems"].append(problem)
            elif row is not None:
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


def _json_half(half, problems):
    if half is None:
        return None
    wrong = half.get("nwrong")
    out = {
        "time_us": half.get("time", half.get("cpu_time")),
        "algbw": half.get("alg_bw"),
        "busbw": half.get("bus_bw"),
        "wrong": None,
    }
    for key in ("time_us", "algbw", "busbw"):
        value = out[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(float(value)):
            problems.append("%s is %r" % (key, value))
    if wrong is not None:
        if isinstance(wrong, (int, float)) and not isinstance(wrong, bool) and _finite(float(wrong)) \
                and wrong == int(wrong) and wrong >= 0:
            out["wrong"] = int(wrong)
        else:
            problems.append("nwrong %r is not a count" % (wrong,))
    return out


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
        problems = []
        row = {
            "size": item.get("size"), "count": item.get("count"), "type": item.get("type"),
            "redop": item.get("redop"), "root": int(root) if re.match(r"^-?\d+$", root) else None,
            "out_of_place": _json_half(item.get("out_of_place"), problems),
            "in_place": _json_half(item.get("in_place"), problems),
        }
        if problems:
            report["problems"].append("the row for size %s %s" % (row["size"], "; ".join(problems)))
        else:
            report["rows"].append(row)
    # The writer closes the report only at the end of the run.
    report["footer"] = True
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
