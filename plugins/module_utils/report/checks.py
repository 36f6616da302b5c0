# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judging a run: the check record, built-in correctness checks and references.

Every judgement is a *check* on one metric (see report.model.derive_metrics)::

    {"id", "host", "key", "metric", "value", "unit", "source", "status", "gated",
     "target", "lower_bound", "upper_bound", "bound", "message"}

``source`` is ``builtin`` (correctness: no wrong NCCL results, MPI sums right, fio
without errors, NVMe-oF I/O check passed), ``reference`` (a thresholds entry),
``baseline`` (the same metric in a previous results.json) or ``outlier`` (far from
the median of the host's peers in this run). ``status`` is pass, warn or fail; a
check fails only when it is gated, otherwise an out-of-bounds value warns.

References follow ReFrame's ``(target, lower, upper, unit)``: ``lower`` and
``upper`` are fractions of the target (``-0.1`` = 10 % below), ``None`` leaves that
side open. ``min``/``max`` give absolute bounds instead, for metrics whose target
is 0. Pure functions; runs on the controller.
"""

from __future__ import annotations

import fnmatch

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import EXACT, HIGHER, LOWER, ReportError
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import builtin_expect

PASS = "pass"
WARN = "warn"
FAIL = "fail"
_RANK = {PASS: 0, WARN: 1, FAIL: 2}

# Correctness metrics and the value they must have (NCCL's #wrong 0, the MPI sums right, every
# run, job or fact passed, ...): each benchmark's own expectations, from the registry.
BUILTIN_EXPECT = builtin_expect()

# Selector keys a reference may match on besides the metric labels.
HOST_SELECTORS = ("host", "host_class", "gpu_model", "transport")
_REF_KEYS = frozenset(("metric", "match", "target", "lower", "upper", "unit", "min", "max", "gate",
                       "warn_lower", "warn_upper", "reference", "name", "description"))


def worst(statuses):
    out = PASS
    for s in statuses:
        if _RANK.get(s, 0) > _RANK[out]:
            out = s
    return out


def _fmt(value, unit=None):
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float):
        text = ("%.4g" % value) if abs(value) < 1e4 else ("%.0f" % value)
    else:
        text = str(value)
    return text + (" " + unit if unit and unit not in ("bool", "count", "errno") else "")


def _num_or_none(value, what):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            return float(str(value))
        except ValueError:
            raise ReportError("%s must be a number or null, got %r" % (what, value))
    return float(value)


# --------------------------------------------------------------------------- references

def normalize_references(entries, origin="thresholds"):
    """Validate reference entries (list of dicts, or ``{"references": [...]}``)."""
    if entries is None:
        return []
    if isinstance(entries, dict):
        if "references" not in entries:
            raise ReportError("%s: a mapping must have a 'references' list, got keys %s"
                              % (origin, ", ".join(sorted(entries)) or "none"))
        entries = entries["references"]
    if not isinstance(entries, list):
        raise ReportError("%s must be a list of references, got %s" % (origin, type(entries).__name__))
    out = []
    for idx, entry in enumerate(entries):
        where = "%s[%d]" % (origin, idx)
        if not isinstance(entry, dict):
            raise ReportError("%s must be a mapping, got %r" % (where, entry))
        unknown = sorted(set(entry) - _REF_KEYS)
        if unknown:
            raise ReportError("%s has unknown keys %s (allowed: %s)" % (where, ", ".join(unknown), ", ".join(sorted(_REF_KEYS))))
        metric = entry.get("metric")
        if not isinstance(metric, str) or "." not in metric:
            raise ReportError("%s.metric must be '<benchmark>.<metric>' (globs allowed), got %r" % (where, metric))
        ref = dict(entry)
        if "reference" in ref:  # ReFrame's tuple form
            tup = ref.pop("reference")
            if not isinstance(tup, (list, tuple)) or len(tup) not in (3, 4):
                raise ReportError("%s.reference must be [target, lower, upper(, unit)], got %r" % (where, tup))
            ref["target"], ref["lower"], ref["upper"] = tup[0], tup[1], tup[2]
            if len(tup) == 4:
                ref["unit"] = tup[3]
        for k in ("target", "lower", "upper", "min", "max", "warn_lower", "warn_upper"):
            ref[k] = _num_or_none(ref.get(k), "%s.%s" % (where, k))
        if ref["target"] is None and ref["min"] is None and ref["max"] is None:
            raise ReportError("%s needs a target (with lower/upper tolerances) or min/max bounds" % where)
        if ref["target"] is not None and ref["lower"] is None and ref["upper"] is None:
            raise ReportError("%s: target %s without lower or upper tolerance bounds nothing" % (where, _fmt(ref["target"])))
        for k in ("lower", "warn_lower"):
            if ref[k] is not None and ref[k] > 0:
                raise ReportError("%s.%s is a fraction below the target and must be <= 0, got %s" % (where, k, ref[k]))
        for k in ("upper", "warn_upper"):
            if ref[k] is not None and ref[k] < 0:
                raise ReportError("%s.%s is a fraction above the target and must be >= 0, got %s" % (where, k, ref[k]))
        match = ref.get("match") or {}
        if not isinstance(match, dict):
            raise ReportError("%s.match must be a mapping of selector to pattern, got %r" % (where, match))
        ref["match"] = dict((str(k), str(v)) for k, v in match.items())
        gate = ref.get("gate", True)
        if not isinstance(gate, bool):
            raise ReportError("%s.gate must be true or false, got %r" % (where, gate))
        ref["gate"] = gate
        ref["index"] = len(out)
        ref["origin"] = "%s[%d]" % (origin, idx)
        out.append(ref)
    return out


def _matches(ref, metric):
    if not fnmatch.fnmatchcase("%s.%s" % (metric["benchmark"], metric["metric"]), ref["metric"]):
        return False
    for sel, pattern in ref["match"].items():
        if sel in HOST_SELECTORS:
            value = metric.get(sel)
        else:
            value = metric["labels"].get(sel)
        if value is None or not fnmatch.fnmatchcase(str(value), pattern):
            return False
    return True


def select_reference(refs, metric):
    """The most specific matching reference (most selectors); later entries win ties."""
    best = None
    for ref in refs:
        if _matches(ref, metric):
            score = (len(ref["match"]) + (0 if any(c in ref["metric"] for c in "*?[") else 1), ref["index"])
            if best is None or score >= best[0]:
                best = (score, ref)
    return best[1] if best else None


def _bounds(target, lower, upper):
    """ReFrame: bound = target * (1 + fraction), for a positive or negative target."""
    lo = hi = None
    if lower is not None:
        lo = target * (1 + lower) if target >= 0 else target * (1 - lower)
    if upper is not None:
        hi = target * (1 + upper) if target >= 0 else target * (1 - upper)
    return lo, hi


def _describe(lo, hi, unit):
    if lo is not None and hi is not None:
        return "[%s, %s]" % (_fmt(lo), _fmt(hi, unit))
    if lo is not None:
        return ">= %s" % _fmt(lo, unit)
    if hi is not None:
        return "<= %s" % _fmt(hi, unit)
    return "unbounded"


def _check(metric, source, status, gated, target, lo, hi, message, detail=None):
    return {"detail": detail or message, "id": metric["id"], "host": metric["host"], "key": metric["key"],
            "metric": "%s.%s" % (metric["benchmark"], metric["metric"]), "labels": metric["labels"],
            "value": metric["value"], "unit": metric["unit"], "source": source, "status": status,
            "gated": gated, "target": target, "lower_bound": lo, "upper_bound": hi,
            "bound": _describe(lo, hi, metric["unit"]) if (lo is not None or hi is not None) else
            ("== %s" % _fmt(target) if target is not None else ""),
            "message": message}


def _judge_range(metric, source, gate, target, lo, hi, warn_lo, warn_hi, detail):
    value = metric["value"]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _check(metric, source, FAIL if gate else WARN, gate, target, lo, hi,
                      "%s: value %r is not a number (%s)" % (source, value, detail), detail)
    if (lo is not None and value < lo) or (hi is not None and value > hi):
        side = "below the lower bound %s" % _fmt(lo, metric["unit"]) if (lo is not None and value < lo) \
            else "above the upper bound %s" % _fmt(hi, metric["unit"])
        return _check(metric, source, FAIL if gate else WARN, gate, target, lo, hi,
                      "%s %s (%s)" % (_fmt(value, metric["unit"]), side, detail), detail)
    if (warn_lo is not None and value < warn_lo) or (warn_hi is not None and value > warn_hi):
        return _check(metric, source, WARN, gate, target, lo, hi,
                      "%s within bounds %s but outside the warning band %s (%s)"
                      % (_fmt(value, metric["unit"]), _describe(lo, hi, metric["unit"]),
                         _describe(warn_lo, warn_hi, metric["unit"]), detail),
                      "%s; warning band %s" % (detail, _describe(warn_lo, warn_hi, metric["unit"])))
    return _check(metric, source, PASS, gate, target, lo, hi,
                  "%s within %s (%s)" % (_fmt(value, metric["unit"]), _describe(lo, hi, metric["unit"]), detail), detail)


def check_references(metrics, refs):
    checks = []
    for m in metrics:
        ref = select_reference(refs, m)
        if ref is None:
            continue
        if ref.get("unit") and ref["unit"] != m["unit"]:
            raise ReportError("%s: unit %r does not match the unit of %s (%r)" % (ref["origin"], ref["unit"], m["id"], m["unit"]))
        if ref["target"] is not None:
            lo, hi = _bounds(ref["target"], ref["lower"], ref["upper"])
            wlo, whi = _bounds(ref["target"], ref["warn_lower"], ref["warn_upper"])
            detail = "reference %s: target %s, tolerance %s/%s" % (
                ref["origin"], _fmt(ref["target"], m["unit"]),
                "%+g%%" % (ref["lower"] * 100) if ref["lower"] is not None else "open",
                "%+g%%" % (ref["upper"] * 100) if ref["upper"] is not None else "open")
        else:
            lo, hi, wlo, whi = ref["min"], ref["max"], None, None
            detail = "reference %s" % ref["origin"]
        checks.append(_judge_range(m, "reference", ref["gate"], ref["target"], lo, hi, wlo, whi, detail))
    return checks


# --------------------------------------------------------------------------- built-in

def check_builtin(metrics, gate=True):
    checks = []
    for m in metrics:
        name = "%s.%s" % (m["benchmark"], m["metric"])
        if name not in BUILTIN_EXPECT:
            continue
        want = BUILTIN_EXPECT[name]
        ok = (m["value"] is want) if isinstance(want, bool) else (m["value"] == want)
        status = PASS if ok else (FAIL if gate else WARN)
        msg = "%s = %s, expected %s" % (name, _fmt(m["value"]), _fmt(want))
        detail = "builtin correctness check"
        if not ok and m.get("note"):
            detail = "builtin: %s" % " ".join(str(m["note"]).split())
            msg += " (%s)" % detail
        checks.append(_check(m, "builtin", status, gate, want, None, None, msg, detail))
    return checks


def check_missing_references(metrics, refs, hosts):
    """A gated reference that applies to a host but found no metric there: the metric is missing.

    A reference applies to a host that has results of the reference's benchmark and matches
    its host selectors (host, host_class, gpu_model, transport); the label selectors (test,
    job, ...) then have to find a metric, or the check fails: a gate must not pass because
    what it gates was never measured.
    """
    checks = []
    hosts = hosts or {}
    for ref in refs:
        if not ref["gate"]:
            continue
        bench = ref["metric"].split(".", 1)[0]
        for host in sorted(hosts):
            info = dict(hosts[host] or {}, host=host)
            own = [m for m in metrics if m["host"] == host and fnmatch.fnmatchcase(m["benchmark"], bench)]
            if not own:
                continue
            if any(sel in HOST_SELECTORS and (info.get(sel) is None or not fnmatch.fnmatchcase(str(info[sel]), pat))
                   for sel, pat in ref["match"].items()):
                continue
            if any(_matches(ref, m) for m in own):
                continue
            labels = dict((k, v) for k, v in ref["match"].items() if k not in HOST_SELECTORS)
            key = ref["metric"] + ("[" + ",".join("%s=%s" % (k, labels[k]) for k in sorted(labels)) + "]" if labels else "")
            ghost = {"id": "%s/%s" % (host, key), "host": host, "key": key, "benchmark": bench,
                     "metric": ref["metric"].split(".", 1)[1], "labels": labels, "value": None, "unit": ref.get("unit")}
            checks.append(_check(ghost, "reference", FAIL, True, ref["target"], ref["min"], ref["max"],
                                 "reference %s: not measured on %s" % (ref["origin"], host),
                                 "reference %s: no such metric was measured" % ref["origin"]))
    return checks


__all__ = ["PASS", "WARN", "FAIL", "EXACT", "normalize_references", "select_reference", "check_references",
           "check_builtin", "check_missing_references", "worst", "HIGHER", "LOWER"]
