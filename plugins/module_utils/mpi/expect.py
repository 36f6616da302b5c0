# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Expectations on a parsed MPI job's output: pure checks, one result per check.

The ``expect`` dictionary (module parameter of mpi_run):

``sums_match: true``
    (parse=seed) at least one reduced sum was printed, every rank's received sum
    equals its expected sum, the expected sum is 0+1+...+(np-1) (so the ranks really
    formed one job of np ranks), every rank printed an Allreduce result and rank 0 a
    Reduce result.
``all_ranks: true``
    (parse=seed) ranks 0..np-1 each printed a line, and the world size was np.
``min_bandwidth: [{size, value, metric}]``
    bandwidth (default metric ``bandwidth_mbs``, MB/s) at ``size`` bytes (default:
    the largest size measured) must be >= value.
``max_latency: [{size, value, metric}]``
    latency (default ``latency_us`` for OSU, ``t_usec`` or ``t_avg_usec`` for IMB, in
    microseconds) at ``size`` (default: the smallest size) must be <= value.
``reference: [{metric, size, value, lower, upper, unit}]``
    ReFrame-style reference: the measured metric must lie within
    ``value * (1 + lower)`` and ``value * (1 + upper)``; ``lower`` (<= 0) and ``upper``
    (>= 0) are fractions, null for no bound on that side.

Without being asked: an OSU table printed with ``-c`` (a Validation column) fails
the job when any row reads ``Fail``.

Numeric checks apply to every table of the output that has the metric; an entry
with ``kind`` (latency, bandwidth, bibandwidth, message_rate, collective — the OSU
table kinds) or ``table`` (a piece of the table's title or benchmark name, any case)
applies only to the tables that match.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.errors import MpiError

EXPECT_KEYS = ("sums_match", "all_ranks", "min_bandwidth", "max_latency", "reference")
TABLE_KINDS = ("latency", "bandwidth", "bibandwidth", "message_rate", "collective", "unknown")


class ExpectError(MpiError):
    """The expect parameter itself is malformed (raised before the job runs)."""


def _num(value, where):
    if isinstance(value, bool):
        raise ExpectError("%s must be a number, got %r" % (where, value))
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ExpectError("%s must be a number, got %r" % (where, value))


def _size(value, where):
    if value is None:
        return None
    if isinstance(value, bool):
        raise ExpectError("%s must be a message size in bytes, got %r" % (where, value))
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise ExpectError("%s must be a message size in bytes, got %r" % (where, value))
    if size < 0 or str(size) != str(value).strip():
        raise ExpectError("%s must be a message size in bytes, got %r" % (where, value))
    return size


def normalize_expect(expect, parse):
    """Validate ``expect`` against the ``parse`` kind; return a normalised copy.

    Raises ExpectError naming the key and the value.
    """
    expect = expect or {}
    if not isinstance(expect, dict):
        raise ExpectError("expect must be a dictionary, got %r" % (expect,))
    unknown = sorted(set(expect) - set(EXPECT_KEYS))
    if unknown:
        raise ExpectError("expect has unknown keys %s (known: %s)" % (unknown, ", ".join(EXPECT_KEYS)))
    out = {}
    for flag in ("sums_match", "all_ranks"):
        if flag in expect and expect[flag] is not None:
            if not isinstance(expect[flag], bool):
                raise ExpectError("expect.%s must be true or false, got %r" % (flag, expect[flag]))
            if expect[flag] and parse != "seed":
                raise ExpectError("expect.%s needs parse=seed (got parse=%s)" % (flag, parse))
            out[flag] = expect[flag]
    for key in ("min_bandwidth", "max_latency", "reference"):
        items = expect.get(key)
        if items is None:
            continue
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list):
            raise ExpectError("expect.%s must be a list of dictionaries, got %r" % (key, items))
        if items and parse not in ("osu", "imb"):
            raise ExpectError("expect.%s needs parse=osu or parse=imb (got parse=%s)" % (key, parse))
        normalised = []
        for i, item in enumerate(items):
            where = "expect.%s[%d]" % (key, i)
            if not isinstance(item, dict):
                raise ExpectError("%s must be a dictionary, got %r" % (where, item))
            allowed = {"size", "value", "metric", "kind", "table"} | ({"lower", "upper", "unit"} if key == "reference" else set())
            extra = sorted(set(item) - allowed)
            if extra:
                raise ExpectError("%s has unknown keys %s (allowed: %s)" % (where, extra, ", ".join(sorted(allowed))))
            if "value" not in item:
                raise ExpectError("%s needs a value" % where)
            entry = {
                "size": _size(item.get("size"), where + ".size"),
                "value": _num(item["value"], where + ".value"),
                "metric": item.get("metric"),
            }
            if entry["metric"] is not None and not isinstance(entry["metric"], str):
                raise ExpectError("%s.metric must be a string, got %r" % (where, entry["metric"]))
            entry["kind"] = item.get("kind")
            if entry["kind"] is not None and entry["kind"] not in TABLE_KINDS:
                raise ExpectError("%s.kind must be one of %s, got %r" % (where, ", ".join(TABLE_KINDS), entry["kind"]))
            entry["table"] = item.get("table")
            if entry["table"] is not None and not isinstance(entry["table"], str):
                raise ExpectError("%s.table must be a string (part of a table's title), got %r" % (where, entry["table"]))
            if key == "reference":
                if not entry["metric"]:
                    raise ExpectError("%s needs a metric (e.g. latency_us, bandwidth_mbs)" % where)
                lower = item.get("lower")
                upper = item.get("upper")
                entry["lower"] = None if lower is None else _num(lower, where + ".lower")
                entry["upper"] = None if upper is None else _num(upper, where + ".upper")
                if entry["lower"] is not None and entry["lower"] > 0:
                    raise ExpectError("%s.lower is a fraction <= 0 (e.g. -0.1 for 10%% below), got %r" % (where, lower))
                if entry["upper"] is not None and entry["upper"] < 0:
                    raise ExpectError("%s.upper is a fraction >= 0 (e.g. 0.1 for 10%% above), got %r" % (where, upper))
                if entry["lower"] is None and entry["upper"] is None:
                    raise ExpectError("%s needs lower and/or upper" % where)
                entry["unit"] = item.get("unit")
            normalised.append(entry)
        out[key] = normalised
    return out


def _tables(parsed):
    return (parsed or {}).get("tables") or []


def _table_name(table):
    name = table.get("title") or table.get("benchmark") or "table"
    if table.get("processes"):
        name += " (%d processes)" % table["processes"]
    return name


def _default_latency_metric(table):
    for metric in ("latency_us", "t_usec", "t_avg_usec"):
        if table["rows"] and metric in table["rows"][0]:
            return metric
    return "latency_us"


def _unit(metric):
    if metric.endswith("_us") or metric.endswith("usec"):
        return "us"
    if metric.endswith("_mbs"):
        return "MB/s"
    return ""


def _numeric_checks(parsed, key, entry):
    """Yield (table, metric, size, measured) for one expectation, or (table, metric, size, None)."""
    found_metric = False
    for table in _tables(parsed):
        if not table["rows"]:
            continue
        if entry.get("kind") and table.get("kind") != entry["kind"]:
            continue
        if entry.get("table") and entry["table"].lower() not in _table_name(table).lower():
            continue
        if entry["metric"]:
            metric = entry["metric"]
        elif key == "min_bandwidth":
            metric = "bandwidth_mbs"
        else:
            metric = _default_latency_metric(table)
        if metric not in table["rows"][0]:
            continue
        found_metric = True
        sizes = [r.get("size") for r in table["rows"] if r.get("size") is not None]
        size = entry["size"]
        if size is None and sizes:
            size = max(sizes) if key == "min_bandwidth" else min(sizes)
        if size is None:
            row = table["rows"][0]
        else:
            row = next((r for r in table["rows"] if r.get("size") == size), None)
        yield table, metric, size, (None if row is None else row[metric])
    if not found_metric:
        metric = entry["metric"] or ("bandwidth_mbs" if key == "min_bandwidth" else "latency_us")
        yield None, metric, entry["size"], None


def _no_table(metric, entry):
    which = "table"
    if entry.get("kind"):
        which = entry["kind"] + " table"
    if entry.get("table"):
        which += " matching %r" % entry["table"]
    return "no %s in the output has the metric %s" % (which, metric)


def _fmt(value):
    return ("%.6g" % value) if isinstance(value, float) else str(value)


def check(expect, parsed, np=None, where=""):
    """Evaluate normalised ``expect`` on ``parsed``; return a list of check results.

    Each result: ``{'check', 'ok', 'message', ...measured/bound details}``. ``where``
    (e.g. "on te1 (hosts te1,te2)") is appended to failure messages.
    """
    results = []
    suffix = (" " + where) if where else ""

    def add(name, ok, message, **details):
        entry = {"check": name, "ok": ok, "message": message + ("" if ok else suffix)}
        entry.update(details)
        results.append(entry)

    if expect.get("sums_match"):
        seed = parsed or {}
        sums = seed.get("results") or []
        if not sums:
            add("sums_match", False, "no reduced sum was printed: expected 'received reduced sum' lines")
        want = None if np is None else np * (np - 1) // 2
        for r in sums:
            label = "rank %d%s (%s)" % (r["rank"], (" on " + r["host"]) if r.get("host") else "", r["op"])
            add("sums_match", r["match"],
                "%s received sum %d, expected %d" % (label, r["received"], r["expected"]),
                rank=r["rank"], host=r.get("host"), measured=r["received"], bound=r["expected"])
            if want is not None and r["expected"] != want:
                add("sums_match", False,
                    "%s expected sum %d, but %d ranks sum to %d: the ranks did not form one job of np=%d"
                    % (label, r["expected"], np, want, np),
                    rank=r["rank"], host=r.get("host"), measured=r["expected"], bound=want)
        if np is not None and sums:
            allreduce = sorted(r["rank"] for r in sums if r["op"] == "allreduce")
            if allreduce and allreduce != list(range(np)):
                add("sums_match", False, "Allreduce results came from ranks %s, expected every rank 0..%d"
                    % (allreduce, np - 1), measured=allreduce, bound=list(range(np)))
            reduce_ranks = sorted(r["rank"] for r in sums if r["op"] == "reduce")
            if reduce_ranks and reduce_ranks != [0]:
                add("sums_match", False, "Reduce results came from ranks %s, expected only the root, rank 0"
                    % reduce_ranks, measured=reduce_ranks, bound=[0])
    if expect.get("all_ranks"):
        seed = parsed or {}
        seen = seed.get("ranks") or []
        if np is None:
            ok = bool(seen) and seen == list(range(len(seen)))
            add("all_ranks", ok, "ranks that printed: %s" % seen, measured=seen)
        else:
            add("all_ranks", seen == list(range(np)),
                "ranks that printed: %s, expected 0..%d" % (seen, np - 1), measured=seen, bound=list(range(np)))
            if seed.get("world_size") not in (None, np):
                add("all_ranks", False, "the programs reported a world size of %s, expected np=%d"
                    % (seed.get("world_size"), np), measured=seed.get("world_size"), bound=np)
    for key in ("min_bandwidth", "max_latency"):
        for entry in expect.get(key) or []:
            for table, metric, size, measured in _numeric_checks(parsed, key, entry):
                at = "" if size is None else " at %d bytes" % size
                details = {"metric": metric, "size": size, "measured": measured, "bound": entry["value"],
                           "table": None if table is None else _table_name(table)}
                if table is None:
                    add(key, False, _no_table(metric, entry), **details)
                    continue
                if measured is None:
                    add(key, False, "%s: %s%s was not measured" % (_table_name(table), metric, at), **details)
                    continue
                unit = _unit(metric)
                if key == "min_bandwidth":
                    ok = measured >= entry["value"]
                    relation = ">=" if ok else "below the minimum"
                else:
                    ok = measured <= entry["value"]
                    relation = "<=" if ok else "above the maximum"
                add(key, ok, "%s: %s%s = %s %s, %s %s %s" % (
                    _table_name(table), metric, at, _fmt(measured), unit, relation, _fmt(entry["value"]), unit),
                    **details)
    # OSU -c: a Fail is a wrong result, so it fails the job without being asked for.
    for table in _tables(parsed):
        if "validation" not in (table.get("columns") or []):
            continue
        failed = table.get("validation_failures") or []
        if failed:
            sizes = ", ".join("%s bytes" % size for size in failed)
            add("validation", False, "%s: validation (-c) failed at %s" % (_table_name(table), sizes),
                table=_table_name(table), measured=failed)
        else:
            add("validation", True, "%s: validation (-c) passed at every size" % _table_name(table),
                table=_table_name(table), measured=[])
    for entry in expect.get("reference") or []:
        for table, metric, size, measured in _numeric_checks(parsed, "reference", entry):
            at = "" if size is None else " at %d bytes" % size
            ref = entry["value"]
            low = None if entry["lower"] is None else ref * (1 + entry["lower"])
            high = None if entry["upper"] is None else ref * (1 + entry["upper"])
            details = {"metric": metric, "size": size, "measured": measured, "reference": ref,
                       "bound": [low, high], "table": None if table is None else _table_name(table)}
            if table is None:
                add("reference", False, _no_table(metric, entry), **details)
                continue
            if measured is None:
                add("reference", False, "%s: %s%s was not measured" % (_table_name(table), metric, at), **details)
                continue
            unit = entry.get("unit") or _unit(metric)
            ok = (low is None or measured >= low) and (high is None or measured <= high)
            add("reference", ok, "%s: %s%s = %s %s, reference %s %s, allowed [%s, %s]" % (
                _table_name(table), metric, at, _fmt(measured), unit, _fmt(ref), unit,
                "-inf" if low is None else _fmt(low), "inf" if high is None else _fmt(high)), **details)
    return results


def failures(results):
    return [r for r in results if not r["ok"]]
