# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judging a run: built-in correctness checks, references, baselines and outliers.

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

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.model import (
    EXACT, HIGHER, LOWER, SCHEMA, ReportError)

PASS = "pass"
WARN = "warn"
FAIL = "fail"
_RANK = {PASS: 0, WARN: 1, FAIL: 2}

# Correctness metrics and the value they must have.
BUILTIN_EXPECT = {
    "nccl.wrong": 0,
    "fio.error": 0,
    "mpi.check_passed": True,
    "nvmeof.io_check": True,
}

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
        checks.append(_check(m, "builtin", status, gate, want, None, None, msg, "builtin correctness check"))
    return checks


# --------------------------------------------------------------------------- baseline

def load_baseline(document, origin="baseline"):
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise ReportError("%s is not a fabric_report results.json (schema %r, expected %r)"
                          % (origin, (document or {}).get("schema") if isinstance(document, dict) else None, SCHEMA))
    metrics = document.get("metrics")
    if not isinstance(metrics, list):
        raise ReportError("%s has no metrics list" % origin)
    return dict((m["id"], m) for m in metrics if isinstance(m, dict) and "id" in m)


def check_baseline(metrics, baseline, tolerance=0.1, warn=0.05, gate=True, run_id=None, hosts=None):
    """Compare each numeric metric with the same id in the baseline, in its worse direction."""
    checks = []
    seen = set()
    label = "baseline %s" % (run_id or "")
    for m in metrics:
        old = baseline.get(m["id"])
        seen.add(m["id"])
        if old is None or m["better"] not in (HIGHER, LOWER):
            continue
        target = old.get("value")
        if isinstance(target, bool) or not isinstance(target, (int, float)):
            continue
        if m["better"] == HIGHER:
            lo, hi = _bounds(target, -tolerance, None)
            wlo, whi = _bounds(target, -warn, None) if warn else (None, None)
        else:
            lo, hi = _bounds(target, None, tolerance)
            wlo, whi = _bounds(target, None, warn) if warn else (None, None)
        change = ((m["value"] / target - 1) * 100) if target else 0.0
        detail = "%s: %s, %+.1f%%" % (label.strip(), _fmt(target, m["unit"]), change)
        checks.append(_judge_range(m, "baseline", gate, target, lo, hi, wlo, whi, detail))
    for mid in sorted(set(baseline) - seen):
        old = baseline[mid]
        if hosts is not None and old.get("host") not in hosts:
            continue
        ghost = {"id": mid, "host": old.get("host"), "key": old.get("key"), "benchmark": old.get("benchmark"),
                 "metric": old.get("metric"), "labels": old.get("labels") or {}, "value": None, "unit": old.get("unit")}
        checks.append(_check(ghost, "baseline", WARN, False, old.get("value"), None, None,
                             "in the %s but not measured in this run" % label.strip(),
                             "%s: not measured in this run" % label.strip()))
    return checks


# --------------------------------------------------------------------------- outliers

def _median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else (values[n // 2 - 1] + values[n // 2]) / 2.0


def check_outliers(metrics, threshold=0.3, min_peers=2, gate=False, peer_keys=("gpu_model", "host_class")):
    """Flag a host whose metric is ``threshold`` worse than the median of its peers.

    Peers: the other hosts with the same metric key and the same ``peer_keys``
    attributes, in this run. Needs at least ``min_peers`` peers.
    """
    groups = {}
    for m in metrics:
        if m["better"] not in (HIGHER, LOWER) or isinstance(m["value"], bool):
            continue
        if m["labels"].get("scope") == "multi":
            continue  # one run across hosts has no per-host peers
        gk = (m["key"],) + tuple(m.get(k) for k in peer_keys)
        groups.setdefault(gk, []).append(m)
    checks = []
    for gk in sorted(groups, key=lambda k: tuple(str(x) for x in k)):
        members = groups[gk]
        by_host = {}
        for m in members:
            by_host.setdefault(m["host"], []).append(m)
        if len(by_host) < min_peers + 1:
            continue
        for m in members:
            peers = [p["value"] for p in members if p["host"] != m["host"]]
            med = _median(peers)
            if med == 0:
                continue
            dev = m["value"] / med - 1
            worse = dev < -threshold if m["better"] == HIGHER else dev > threshold
            lo, hi = _bounds(med, -threshold, None) if m["better"] == HIGHER else _bounds(med, None, threshold)
            detail = "median of %d peer host(s) %s, %+.1f%%" % (len(peers), _fmt(med, m["unit"]), dev * 100)
            if worse:
                checks.append(_check(m, "outlier", FAIL if gate else WARN, gate, med, lo, hi,
                                     "%s, %s (outlier)" % (_fmt(m["value"], m["unit"]), detail), detail))
            else:
                checks.append(_check(m, "outlier", PASS, gate, med, lo, hi, "%s, %s" % (_fmt(m["value"], m["unit"]), detail),
                                     detail))
    return checks


# --------------------------------------------------------------------------- summary

def failure_line(check):
    """One line per failure: host, metric, value, bound, and where the bound came from."""
    bound = check["bound"] or "expected %s" % _fmt(check["target"])
    detail = check.get("detail") or check["message"]
    if not detail.startswith(check["source"]):
        detail = "%s: %s" % (check["source"], detail)
    return "%s: %s = %s, bound %s (%s)" % (
        check["host"], check["key"], _fmt(check["value"], check["unit"]) if check["value"] is not None else "missing",
        bound, detail)


def summarize(metrics, checks):
    status_by_metric = {}
    for c in checks:
        status_by_metric[c["id"]] = worst([status_by_metric.get(c["id"], PASS), c["status"]])
    counts = {PASS: 0, WARN: 0, FAIL: 0}
    for c in checks:
        counts[c["status"]] += 1
    failures = [failure_line(c) for c in checks if c["status"] == FAIL]
    warnings = [failure_line(c) for c in checks if c["status"] == WARN]
    return {
        "status": worst(c["status"] for c in checks) if checks else PASS,
        "metrics": len(metrics),
        "checks": counts,
        "metric_status": status_by_metric,
        "failures": failures,
        "warnings": warnings,
        "outliers": [c["id"] for c in checks if c["source"] == "outlier" and c["status"] != PASS],
    }


def evaluate(metrics, refs=None, baseline=None, baseline_opts=None, outlier_opts=None, builtin_gate=True, hosts=None):
    """All checks of a run and its summary."""
    checks = check_builtin(metrics, gate=builtin_gate)
    checks += check_references(metrics, refs or [])
    if baseline is not None:
        checks += check_baseline(metrics, baseline, hosts=hosts, **(baseline_opts or {}))
    if outlier_opts is not None:
        checks += check_outliers(metrics, **outlier_opts)
    order = {"builtin": 0, "reference": 1, "baseline": 2, "outlier": 3}
    checks.sort(key=lambda c: (c["host"] or "", c["key"] or "", order.get(c["source"], 9)))
    return checks, summarize(metrics, checks)


__all__ = ["PASS", "WARN", "FAIL", "EXACT", "normalize_references", "select_reference", "check_references",
           "check_builtin", "load_baseline", "check_baseline", "check_outliers", "summarize", "evaluate",
           "failure_line", "worst"]
