# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pairwise sweep: ``fabric_sweep_result`` -> one record per sweep, a metric per pair and test,
the sweep's verdict checked against true, sweep.csv, the HTML section (the verdict, then the
pairs) and the summary lines.

The fabric_sweep role sets the same fact on every node of the sweep (``launched_from``
names the node that ran the jobs); the report counts it once, on that node. A sweep that
named a suspect node or link did not pass: its record carries ``passed: false`` and a
failure that names the suspects and the exclude list, so the report fails as it does for
a failed benchmark run. Nor did a sweep whose verdict is ``group_wide`` or
``cannot_judge``: its failure is the module's ``verdict_reason``.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import number
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.kind import Benchmark, add_run_passed

FACT = "fabric_sweep_result"


def _pair(pair):
    pair = pair if isinstance(pair, dict) else {}
    nodes = [str(n) for n in pair.get("nodes") or []]
    return {
        "test": str(pair.get("test") or "?"),
        "nodes": nodes,
        "pair": "+".join(nodes),
        "value": number(pair.get("value")),
        "unit": pair.get("unit"),
        "better": pair.get("better"),
        "size": pair.get("size"),
        "median": number(pair.get("median")),
        "expected": number(pair.get("expected")),
        "vs_median": number(pair.get("vs_median")),
        "vs_expected": number(pair.get("vs_expected")),
        "low": bool(pair.get("low")),
        "error": pair.get("error"),
    }


def _failure(fact, suspects, links):
    if fact.get("verdict") not in (None, "", "suspects", "no_suspect") and fact.get("verdict_reason"):
        # group_wide (nobody excluded) or cannot_judge (nobody named): the module's sentence says why.
        return "fabric_sweep: %s" % fact["verdict_reason"]
    named = list(suspects) + ["link %s" % "-".join(link.get("nodes") or []) for link in links]
    if not named:
        return ""
    text = "fabric_sweep named %s" % ", ".join(named)
    if fact.get("exclude_option"):
        text += " (%s)" % fact["exclude_option"]
    return text


def adapt_sweep(host, fact):
    """``fabric_sweep_result`` -> one sweep record (a list, empty for a sweep that ran nothing)."""
    if not isinstance(fact, dict):
        return []
    pairs = [_pair(p) for p in fact.get("pairs") or []]
    bisection = fact.get("bisection") if isinstance(fact.get("bisection"), dict) else None
    if not pairs and not bisection:
        return []
    suspects = [str(n) for n in fact.get("suspect_nodes") or []]
    links = [s for s in fact.get("link_suspects") or [] if isinstance(s, dict)]
    failure = _failure(fact, suspects, links)
    passed = fact.get("passed")
    if passed is None:
        passed = not failure
    return [{
        "host": host,
        "run": "fabric_sweep:%s" % (fact.get("mode") or "pairwise"),
        "mode": fact.get("mode"),
        "launcher": fact.get("launcher"),
        "nodes": [str(n) for n in fact.get("nodes") or []],
        "pairs": pairs,
        "suspects": suspects,
        "link_suspects": ["-".join(s.get("nodes") or []) for s in links],
        "bisection_suspects": [str(n) for n in (bisection or {}).get("suspects") or []],
        "exclude": fact.get("exclude") or "",
        "exclude_option": fact.get("exclude_option") or "",
        "lines": [str(line) for line in fact.get("lines") or []],
        "passed": bool(passed),
        "failure": "" if passed else (failure or "the sweep says passed: false"),
    }]


def read(host, facts, run):
    fact = facts.get(FACT)
    if fact is None or run.published_by_other(host, FACT, fact):
        return None
    return adapt_sweep(host, fact)


def metrics(records, add):
    # One metric per pair and test (the pair's nodes in the labels), and the sweep's verdict.
    for r in records:
        for p in r["pairs"]:
            add(r["host"], p["test"], p["value"], p["unit"], p["better"],
                {"pair": p["pair"], "launcher": r["launcher"], "size": p["size"]})
        add_run_passed(add, r, {"run": r["run"], "launcher": r["launcher"]})


CSV_COLUMNS = ["host", "run", "launcher", "test", "pair", "value", "unit", "better", "size", "median", "vs_median",
               "expected", "vs_expected", "low", "error"]


def csv_rows(records):
    out = []
    for r in records:
        for pair in r["pairs"]:
            flat = dict((k, r.get(k)) for k in ("host", "run", "launcher"))
            flat.update(pair)
            out.append(flat)
    return out


def section(records):
    """The sweep's verdict (and its LOW/suspect lines) above the table of pairs."""
    return {
        "title": "Pairwise sweep",
        "notes": [{"badge": "pass" if r["passed"] else "fail",
                   "text": "%s (%s) swept %s: %s; exclude: %s" % (
                       r["host"], r["launcher"], ", ".join(r["nodes"]), "no suspect" if r["passed"] else r["failure"],
                       r["exclude_option"] or "(none)"),
                   "lines": [line for line in r["lines"] if not line.startswith(("ok ", "LOW "))]}
                  for r in records],
        "columns": ["launched from", "launcher", "test", "pair", "value", "unit", "group median", "vs median",
                    "expected", "pair verdict", "error"],
        "numeric": ("value", "group median", "vs median", "expected"),
        "rows": [(r["host"], r["launcher"], p["test"], p["pair"], p["value"], p["unit"], p["median"],
                  p["vs_median"], p["expected"], {"badge": "low" if p["low"] else "ok"}, p["error"])
                 for r in records for p in r["pairs"]],
    }


def summary(host, name, fact):
    if fact.get("launched_from") not in (None, host):
        return ["sweep: ran from %s (see its lines)" % fact["launched_from"]]
    return sweep_lines(fact)


def sweep_lines(fact):
    """The report summary's lines for one sweep (without the host name)."""
    lines = []
    for r in adapt_sweep(None, fact):
        low = [p for p in r["pairs"] if p["low"]]
        head = "sweep (%s, %s) of %s: %d pair result(s), %d low" % (
            r["mode"] or "pairwise", r["launcher"] or "mpirun", ", ".join(r["nodes"]), len(r["pairs"]), len(low))
        if r["passed"]:
            lines.append(head + ": PASS, exclude: (none)")
        else:
            lines.append("%s: FAIL - %s" % (head, r["failure"]))
        lines += [line for line in r["lines"] if line.startswith(("LOW", "suspect"))]
    return lines


BENCHMARK = Benchmark(
    "sweep", facts=(FACT,), read=read, metrics=metrics, expect={"run_passed": True}, csv_columns=CSV_COLUMNS,
    csv_rows=csv_rows, section=section, summary=summary)
