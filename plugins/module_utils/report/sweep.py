# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``fabric_sweep_result`` -> sweep records of the results document, and its summary lines.

The fabric_sweep role sets the same fact on every node of the sweep (``launched_from``
names the node that ran the jobs); the report counts it once, on that node. A sweep that
named a suspect node or link did not pass: its record carries ``passed: false`` and a
failure that names the suspects and the exclude list, so the report fails as it does for
a failed benchmark run. Nor did a sweep whose verdict is ``group_wide`` or
``cannot_judge``: its failure is the module's ``verdict_reason``.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.model import _num


def _pair(pair):
    pair = pair if isinstance(pair, dict) else {}
    nodes = [str(n) for n in pair.get("nodes") or []]
    return {
        "test": str(pair.get("test") or "?"),
        "nodes": nodes,
        "pair": "+".join(nodes),
        "value": _num(pair.get("value")),
        "unit": pair.get("unit"),
        "better": pair.get("better"),
        "size": pair.get("size"),
        "median": _num(pair.get("median")),
        "expected": _num(pair.get("expected")),
        "vs_median": _num(pair.get("vs_median")),
        "vs_expected": _num(pair.get("vs_expected")),
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
