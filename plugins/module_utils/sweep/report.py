# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The sweep's verdict in a few readable lines, and the exclude/drain lists (pure).

``verdict(ranking, bisection, names_of, drain_reason) -> dict`` with ``exclude`` (Slurm
hostlist), ``exclude_option`` (``--exclude=...``), ``drain_nodes``, ``drain_command``
(argv; run only when asked) and ``lines``.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import hostlist as H


def _pct(severity):
    return "%.0f %%" % (100 * severity)


def pair_lines(ranking):
    lines = []
    for test in ranking.get("tests", []):
        for pair in test["pairs"]:
            lines.append(("LOW  " if pair["low"] else "ok   ") + pair["text"])
    return lines


def verdict(ranking, bisection=None, drain_reason="fabric_sweep"):
    suspects = [s["node"] for s in (ranking or {}).get("suspects", [])]
    if bisection:
        suspects += [n for n in bisection.get("suspects", []) if n not in suspects]
    lines = []
    for s in (ranking or {}).get("suspects", []):
        lines.append("suspect #%d %s (node, %s worse; %s): %s" % (
            s["rank"], s["node"], _pct(s["severity"]), ", ".join(s["tests"]), "; ".join(s["evidence"])))
    for s in (ranking or {}).get("link_suspects", []):
        lines.append("suspect #%d link %s (%s worse; %s): %s" % (
            s["rank"], "-".join(s["nodes"]), _pct(s["severity"]), ", ".join(s["tests"]), "; ".join(s["evidence"])))
    if bisection:
        for step in bisection.get("tests", []):
            lines.append("bisection %s [%s]: %s %s (expected %s) -> %s" % (
                step["kind"], ",".join(step["nodes"]),
                "n/a" if step["value"] is None else "%.2f" % step["value"], step["unit"],
                step["expected"], "LOW" if step["low"] else "ok"))
        for n in bisection.get("suspects", []):
            lines.append("bisection suspect %s: low with a known-good partner" % n)
        for group in bisection.get("inconclusive", []):
            lines.append("bisection inconclusive for %s: the group is low but its parts pass (a link or path "
                         "between them): run the pairwise sweep on it" % ",".join(group))
        if bisection.get("unresolved"):
            lines.append("bisection unresolved: %s (no known-good partner to test them with; give references)"
                         % ",".join(bisection["unresolved"]))
    if (ranking or {}).get("group_wide"):
        lines.append("more than half the nodes are low: the fault is not one node (a switch, the whole fabric, "
                     "or a wrong expectation); the exclude list would empty the group")
    if not lines:
        lines.append("no suspect: every pair is within the tolerance of the group median and the expectation")
    exclude = H.compress(suspects) if suspects else ""
    return {
        "suspect_nodes": suspects,
        "exclude": exclude,
        "exclude_option": H.exclude_option(suspects),
        "drain_nodes": suspects,
        "drain_command": H.drain_argv(suspects, drain_reason) if suspects else [],
        "lines": lines,
    }
