# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Parsers for what MPI jobs print: OSU Micro-Benchmarks, Intel MPI Benchmarks (IMB)
and the hello/reduce/allreduce check programs. Pure functions of text.

``parse_osu(text) -> {'tables': [...], plus the first table's keys}``
``parse_imb(text) -> {'version', 'tables': [...]}``
``parse_seed(text) -> {'hello', 'contributions', 'results', 'world_size', ...}``
``parse_output(kind, text)`` dispatches on ``none|osu|imb|seed``.

Every table has ``rows``: a list of dicts whose keys are normalised column names
(``size``, ``latency_us``, ``min_latency_us``, ``max_latency_us``, ``iterations``,
``bandwidth_mbs``, ``messages_per_s``, ``repetitions``, ``t_usec``, ``t_min_usec``,
``t_max_usec``, ``t_avg_usec``...), numbers as int or float.
"""

from __future__ import annotations

import re

PARSE_KINDS = ("none", "osu", "imb", "seed")

# OSU column headers -> result keys. The pt2pt latency column was "Latency (us)"
# up to OMB 6 and is "Avg Latency(us)" since 7; both are the mean.
_OSU_COLUMNS = {
    "size": "size",
    "latency (us)": "latency_us",
    "avg latency(us)": "latency_us",
    "min latency(us)": "min_latency_us",
    "max latency(us)": "max_latency_us",
    "iterations": "iterations",
    "bandwidth (mb/s)": "bandwidth_mbs",
    "mb/s": "bandwidth_mbs",
    "messages/s": "messages_per_s",
}

_IMB_COLUMNS = {
    "#bytes": "size",
    "#repetitions": "repetitions",
    "t[usec]": "t_usec",
    "t_min[usec]": "t_min_usec",
    "t_max[usec]": "t_max_usec",
    "t_avg[usec]": "t_avg_usec",
    "mbytes/sec": "bandwidth_mbs",
    "msg/sec": "messages_per_s",
    "defects": "defects",
}

# "# OSU MPI Latency Test v7.5"; also this collection's OSU-style benchmark
# (roles/mpi_bench/files/fabric_mpi_bench.c): "# aiinfra.fabric MPI Latency Test v1.0".
_OSU_TITLE = re.compile(r"^#\s*((?:OSU|aiinfra\.fabric)\b.*?)(?:\s+v(\d[\w.\-]*))?\s*$")
_NUMBER = re.compile(r"^-?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


def _slug(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def _number(text):
    if re.match(r"^-?\d+$", text):
        return int(text)
    return float(text)


_COLLECTIVE_WORD = re.compile(
    r"\b(allreduce|reduce|reduce_scatter|reduce-scatter|allgatherv?|gatherv?|all-to-all|alltoallv?|"
    r"alltoallw|broadcast|bcast|barrier|scatterv?|scan|exscan)\b")


def _osu_kind(title):
    t = title.lower()
    if "bi-directional bandwidth" in t:
        return "bibandwidth"
    if "message rate" in t:
        return "message_rate"
    if "bandwidth" in t:
        return "bandwidth"
    if _COLLECTIVE_WORD.search(t):
        return "collective"
    if "latency" in t:
        return "latency"
    return "unknown"


def _osu_columns(header):
    names = [c for c in re.split(r"\s{2,}", header.lstrip("#").strip()) if c]
    return [_OSU_COLUMNS.get(n.lower(), _slug(n)) for n in names]


# What osu_* -c prints in its "Validation" column (VALIDATION_STATUS in osu_util_mpi.h).
_VALIDATION = ("Pass", "Fail")


def _osu_row(columns, fields):
    """One table row as a dict, or None when the line is not a row of this table."""
    if len(fields) != len(columns):
        return None
    row = {}
    for name, field in zip(columns, fields):
        if name == "validation":
            if field not in _VALIDATION:
                return None
            row[name] = field
        elif _NUMBER.match(field):
            row[name] = _number(field)
        else:
            return None
    return row


def parse_osu(text):
    """Parse OSU Micro-Benchmarks output (one or several benchmarks, any OMB version).

    Lines that are not part of a table (launcher banners, UCX messages, blank lines,
    tag-output prefixes already removed by the caller) are skipped. Returns
    ``{'tables': [table, ...]}`` and, for convenience, the first table's keys at the
    top level. A table is ``{'title', 'benchmark', 'version', 'kind', 'datatype',
    'columns', 'rows', 'validation_failures'}``; ``kind`` is latency, bandwidth, bibandwidth, message_rate,
    collective or unknown. With ``-c`` each row also has ``validation`` (``Pass`` or
    ``Fail``) and ``validation_failures`` lists the sizes that failed. Raises ValueError when no OSU table is found.
    """
    tables = []
    table = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _OSU_TITLE.match(line)
        if m:
            table = {
                "title": line.lstrip("#").strip(),
                "benchmark": m.group(1).strip(),
                "version": m.group(2) or "",
                "kind": _osu_kind(m.group(1)),
                "datatype": None,
                "columns": [],
                "rows": [],
                # Sizes whose -c (validation) cell reads Fail: wrong data, whatever the speed.
                "validation_failures": [],
            }
            tables.append(table)
            continue
        if table is None:
            continue
        if line.startswith("#"):
            body = line.lstrip("#").strip()
            dm = re.match(r"^Datatype:\s*(\S+?)\.?$", body)
            if dm:
                table["datatype"] = dm.group(1)
            elif body.startswith("Size") or "Latency" in body or "MB/s" in body:
                table["columns"] = _osu_columns(line)
            # Other comment lines ([ pairs: 1 ] [ window size: 64 ], notes) are kept out.
            continue
        if not table["columns"]:
            continue
        row = _osu_row(table["columns"], line.split())
        if row is None:
            continue
        table["rows"].append(row)
        if row.get("validation") == "Fail":
            table["validation_failures"].append(row.get("size"))
    tables = [t for t in tables if t["rows"]]
    if not tables:
        raise ValueError("no OSU Micro-Benchmarks table found in the output (expected a '# OSU MPI ... Test' "
                         "header, a column header and rows)")
    result = dict(tables[0])
    result["tables"] = tables
    return result


_IMB_VERSION = re.compile(r"Intel\s*\(R\)\s*MPI Benchmarks?(?: Suite)?\s+(.*?),\s*(.*?)\s+part", re.IGNORECASE)


def parse_imb(text):
    """Parse Intel MPI Benchmarks output (IMB-MPI1, -NBC, -RMA... text tables).

    Returns ``{'version', 'part', 'tables': [{'benchmark', 'processes',
    'waiting_processes', 'columns', 'rows'}]}``. Raises ValueError when no table is found.
    """
    version = part = ""
    tables = []
    table = None
    pending = None
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line:
            continue
        m = _IMB_VERSION.search(line)
        if m:
            version, part = m.group(1).strip(), m.group(2).strip()
            continue
        m = re.match(r"^#\s*Benchmarking\s+(\S+)", line)
        if m:
            pending = {"benchmark": m.group(1), "processes": None, "waiting_processes": 0,
                       "mode": None, "columns": [], "rows": []}
            table = None
            continue
        if pending is not None:
            m = re.match(r"^#\s*#processes\s*=\s*(\d+)", line)
            if m:
                pending["processes"] = int(m.group(1))
                continue
            m = re.match(r"^#\s*\(\s*(\d+)\s+additional processes waiting", line)
            if m:
                pending["waiting_processes"] = int(m.group(1))
                continue
            m = re.match(r"^#\s*MODE:\s*(\S+)", line)
            if m:
                pending["mode"] = m.group(1)
                continue
            if line.startswith(("#bytes", "#repetitions")):
                pending["columns"] = [_IMB_COLUMNS.get(c.lower(), _slug(c)) for c in line.split()]
                table = pending
                tables.append(table)
                pending = None
                continue
            continue
        if table is None or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != len(table["columns"]) or not all(_NUMBER.match(f) for f in fields):
            continue
        table["rows"].append(dict(zip(table["columns"], (_number(f) for f in fields))))
    tables = [t for t in tables if t["rows"]]
    if not tables:
        raise ValueError("no Intel MPI Benchmarks table found in the output (expected '# Benchmarking NAME', "
                         "'# #processes = N', a column header and rows)")
    return {"version": version, "part": part, "tables": tables}


# The check programs (the seed's hello/reduce/allreduce, and this collection's
# rewrite of them, which also names the host). The host part is optional.
_HELLO = re.compile(r"Hello from processor (\S+), rank (\d+) out of (\d+) processors")
_CONTRIB = re.compile(r"Process (\d+)(?: on (\S+))? contributing(?: data)? (-?\d+)")
_REDUCE = re.compile(r"Process (\d+)(?: on (\S+))? \(root\) received reduced sum: (-?\d+) \(Expected: (-?\d+)\)")
_ALLREDUCE = re.compile(r"Process (\d+)(?: on (\S+))? received reduced sum (-?\d+) via Allreduce \(Expected: (-?\d+)\)")


def parse_seed(text):
    """Parse the hello/reduce/allreduce programs' lines.

    Returns ``{'hello': [{'rank', 'size', 'host'}], 'contributions': [{'rank', 'host',
    'value'}], 'results': [{'op', 'rank', 'host', 'received', 'expected', 'match'}],
    'world_size', 'ranks', 'hosts', 'all_match'}``. ``world_size`` comes from the
    hello lines, or is the number of contributing ranks. ``all_match`` is true when
    there is at least one result and every received sum equals its expected sum.
    Raises ValueError when no such line is found.
    """
    hello, contributions, results = [], [], []
    for raw in (text or "").splitlines():
        line = raw.strip()
        m = _HELLO.search(line)
        if m:
            hello.append({"rank": int(m.group(2)), "size": int(m.group(3)), "host": m.group(1)})
            continue
        m = _REDUCE.search(line)
        if m:
            results.append({"op": "reduce", "rank": int(m.group(1)), "host": m.group(2),
                            "received": int(m.group(3)), "expected": int(m.group(4))})
            continue
        m = _ALLREDUCE.search(line)
        if m:
            results.append({"op": "allreduce", "rank": int(m.group(1)), "host": m.group(2),
                            "received": int(m.group(3)), "expected": int(m.group(4))})
            continue
        m = _CONTRIB.search(line)
        if m:
            contributions.append({"rank": int(m.group(1)), "host": m.group(2), "value": int(m.group(3))})
    if not (hello or contributions or results):
        raise ValueError("no hello/reduce/allreduce lines found in the output")
    for r in results:
        r["match"] = r["received"] == r["expected"]
    hello.sort(key=lambda h: h["rank"])
    contributions.sort(key=lambda c: c["rank"])
    results.sort(key=lambda r: (r["op"], r["rank"]))
    sizes = sorted({h["size"] for h in hello})
    world_size = sizes[-1] if sizes else len({c["rank"] for c in contributions}) or None
    ranks = sorted({x["rank"] for x in hello + contributions + results})
    hosts = {}
    for x in hello + contributions + results:
        if x.get("host"):
            hosts[x["rank"]] = x["host"]
    return {
        "hello": hello,
        "contributions": contributions,
        "results": results,
        "world_size": world_size,
        "ranks": ranks,
        "hosts": dict(sorted(hosts.items())),
        "all_match": bool(results) and all(r["match"] for r in results),
    }


def parse_output(kind, text):
    """Parse ``text`` as ``kind`` (one of PARSE_KINDS); ``none`` returns None."""
    if kind == "none":
        return None
    if kind == "osu":
        return parse_osu(text)
    if kind == "imb":
        return parse_imb(text)
    if kind == "seed":
        return parse_seed(text)
    raise ValueError("parse must be one of %s, got %r" % (", ".join(PARSE_KINDS), kind))
