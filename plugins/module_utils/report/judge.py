# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""All checks of a run, and its summary: failures and warnings as one line each.

An empty run fails: a report that proves nothing must not read as a pass.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.baseline import check_baseline
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import RESULT_FACTS
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.checks import (
    FAIL, PASS, WARN, _fmt, check_builtin, check_missing_references, check_references, worst)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.outliers import check_outliers


def failure_line(check):
    """One line per failure: host, metric, value, bound, and where the bound came from."""
    bound = check["bound"] or "expected %s" % _fmt(check["target"])
    detail = check.get("detail") or check["message"]
    if not detail.startswith(check["source"]):
        detail = "%s: %s" % (check["source"], detail)
    return "%s: %s = %s, bound %s (%s)" % (
        check["host"], check["key"], _fmt(check["value"], check["unit"]) if check["value"] is not None else "missing",
        bound, detail)


NO_RESULTS = "no results to report: no host has a result fact (%s)" % ", ".join(RESULT_FACTS)


def summarize(metrics, checks, empty_hint=None):
    status_by_metric = {}
    for c in checks:
        status_by_metric[c["id"]] = worst([status_by_metric.get(c["id"], PASS), c["status"]])
    counts = {PASS: 0, WARN: 0, FAIL: 0}
    for c in checks:
        counts[c["status"]] += 1
    failures = [failure_line(c) for c in checks if c["status"] == FAIL]
    warnings = [failure_line(c) for c in checks if c["status"] == WARN]
    status = worst(c["status"] for c in checks) if checks else PASS
    if not metrics:
        # An empty report must not pass: nothing was proven.
        failures.insert(0, NO_RESULTS + ("; " + empty_hint if empty_hint else ""))
        status = FAIL
    return {
        "status": status,
        "metrics": len(metrics),
        "checks": counts,
        "metric_status": status_by_metric,
        "failures": failures,
        "warnings": warnings,
        "outliers": [c["id"] for c in checks if c["source"] == "outlier" and c["status"] != PASS],
    }


def _host_info(metrics, hosts):
    if isinstance(hosts, dict):
        return hosts
    info = {}
    for m in metrics:
        if hosts is None or m["host"] in hosts:
            info.setdefault(m["host"], {"host_class": m.get("host_class"), "gpu_model": m.get("gpu_model"),
                                        "transport": m.get("transport")})
    return info


def evaluate(metrics, refs=None, baseline=None, baseline_opts=None, outlier_opts=None, builtin_gate=True, hosts=None,
             empty_hint=None):
    """All checks of a run and its summary. ``hosts``: the run's host names, or its hosts mapping."""
    checks = check_builtin(metrics, gate=builtin_gate)
    checks += check_references(metrics, refs or [])
    checks += check_missing_references(metrics, refs or [], _host_info(metrics, hosts))
    if baseline is not None:
        checks += check_baseline(metrics, baseline, hosts=set(hosts) if hosts is not None else None,
                                 **(baseline_opts or {}))
    if outlier_opts is not None:
        checks += check_outliers(metrics, **outlier_opts)
    order = {"builtin": 0, "reference": 1, "baseline": 2, "outlier": 3}
    checks.sort(key=lambda c: (c["host"] or "", c["key"] or "", order.get(c["source"], 9)))
    return checks, summarize(metrics, checks, empty_hint)


__all__ = ["summarize", "evaluate", "failure_line", "NO_RESULTS"]
