# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A previous results.json as the baseline: loading it, comparing with it, storing the next one.

The stored baseline keeps, per metric, the best value seen so far (:func:`merge_baseline`),
so a run a little worse than the last one, still inside the tolerance, does not lower the
bar for the next: the baseline cannot ratchet down run by run.
"""

from __future__ import annotations

import copy

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.checks import (
    FAIL, WARN, _bounds, _check, _fmt, _judge_range)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.model import HIGHER, LOWER, SCHEMA, ReportError


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
        # A gated metric that was not measured fails: a regression must not pass by vanishing.
        checks.append(_check(ghost, "baseline", FAIL if gate else WARN, gate, old.get("value"), None, None,
                             "in the %s but not measured in this run" % label.strip(),
                             "%s: not measured in this run" % label.strip()))
    return checks


def _better(old, new, better):
    """The better of two metric values in the metric's direction (non-numbers: the new one)."""
    for v in (old, new):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return new
    if better == HIGHER:
        return max(old, new)
    if better == LOWER:
        return min(old, new)
    return new


def merge_baseline(document, previous=None):
    """The results document to store as the next baseline.

    It is this run's document, with each metric's value replaced by the better of this run's
    and the previous baseline's (``previous``, a results.json document or None). Metrics only
    in the previous baseline are kept, so a host that was not part of this run keeps its bar.
    Each merged metric records ``baseline_runs`` (the run ids its value comes from).
    """
    out = copy.deepcopy(document)
    run_id = (out.get("run") or {}).get("id")
    old = load_baseline(previous, origin="the stored baseline") if previous else {}
    old_run = ((previous or {}).get("run") or {}).get("id")
    merged = []
    for m in out.get("metrics", []):
        m = dict(m)
        prev = old.pop(m["id"], None)
        if prev is not None:
            best = _better(prev.get("value"), m["value"], m.get("better"))
            if best != m["value"]:
                m["value"] = best
                m["baseline_from"] = prev.get("baseline_from") or old_run
            else:
                m["baseline_from"] = run_id
        else:
            m["baseline_from"] = run_id
        merged.append(m)
    merged += [old[k] for k in sorted(old)]
    out["metrics"] = sorted(merged, key=lambda m: m["id"])
    out["baseline_merged_from"] = [r for r in (old_run, run_id) if r]
    return out


__all__ = ["load_baseline", "check_baseline", "merge_baseline"]
