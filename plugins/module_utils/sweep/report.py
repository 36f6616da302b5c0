# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The sweep's verdict in a few readable lines, and the exclude/drain lists (pure).

``verdict(ranking, bisection, drain_reason, notes) -> dict`` with ``verdict`` (one word,
below), ``verdict_reason`` (one sentence), ``cannot_judge`` (``[{test, reason}]``, the
tests whose numbers cannot name anyone), ``suspect_nodes``, ``exclude`` (Slurm hostlist),
``exclude_option`` (``--exclude=...``), ``drain_nodes``, ``drain_command`` (argv; run only
when asked) and ``lines``.

``verdict`` is one of

* ``suspects`` - some nodes or links are named; the node suspects are the exclude and
  drain lists;
* ``group_wide`` - more than half the nodes are low (named by the ranking or the
  bisection): the fault is something they share
  (a switch, the fabric, a roll-out, the expectation itself), not the nodes. They are
  still named as the evidence, but nobody is excluded or drained: that would take the
  group out of service for a cause draining cannot fix;
* ``cannot_judge`` - nobody is named, but the numbers cannot show a bad node: a test
  without an expectation on too few nodes, or whose nodes split in two with the better
  side not a majority (see :mod:`rank`). Never reported as "no suspect";
* ``no_suspect`` - every pair is within the tolerance.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import hostlist as H
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import rank as R


def _pct(severity):
    return "%.0f %%" % (100 * severity)


def pair_lines(ranking):
    lines = []
    for test in ranking.get("tests", []):
        for pair in test["pairs"]:
            lines.append(("LOW  " if pair["low"] else "ok   ") + pair["text"])
    return lines


def _group_wide_reason(ranking, names, nodes, bisection_only):
    """Why nobody is drained when more than half the nodes are low, and the likely shared cause."""
    evidence = []
    shared = False
    if bisection_only:
        evidence.append("bisection: each low with a known-good partner")
    for test in ranking.get("tests", []):
        low = [p for p in test["pairs"] if p["low"]]
        if not low:
            continue
        failed = [p for p in low if p["value"] is None]
        if test["agree"] and test["expected"] is not None and len(low) == len(test["pairs"]):
            # Every pair about the same and all below the expectation: one cause they share.
            shared = True
            evidence.append("%s: every pair about %.0f %% of the expected %s %s and the pairs agree with each "
                            "other" % (test["test"], 100 * R.goodness(test["median"], test["expected"], test["better"]),
                                       R.fmt(test["expected"]), test["unit"]))
        elif failed and len(failed) == len(low):
            evidence.append("%s: %d of %d pairs failed" % (test["test"], len(failed), len(test["pairs"])))
        else:
            evidence.append("%s: %d of %d pairs low" % (test["test"], len(low), len(test["pairs"])))
    if shared:
        cause = ("the likely cause is something they share - the switch or fabric between them (link speed, MTU, "
                 "congestion control, a firmware or driver roll-out) - or an expectation that does not fit this "
                 "hardware")
    else:
        cause = ("the fault is not one node but likely a switch, the whole fabric, a change rolled out to these "
                 "nodes, or a wrong expectation")
    return ("group-wide: %d of %d nodes are low (%s): %s; nobody is drained or excluded, check what the nodes "
            "share first" % (len(names), len(nodes), "; ".join(evidence), cause))


def verdict(ranking, bisection=None, drain_reason="fabric_sweep", notes=None):
    """The verdict (see the module doc); ``notes`` says per test why it has no expectation (the catalog's why-not)."""
    ranking = ranking or {}
    notes = notes or {}
    cannot_judge = [{"test": c["test"],
                     "reason": c["reason"] + (" (%s)" % notes[c["test"]] if c["test"] in notes else "")}
                    for c in ranking.get("cannot_judge", [])]
    suspects = [s["node"] for s in ranking.get("suspects", [])]
    if bisection:
        suspects += [n for n in bisection.get("suspects", []) if n not in suspects]
    lines = []
    for s in ranking.get("suspects", []):
        lines.append("suspect #%d %s (node, %s worse; %s): %s" % (
            s["rank"], s["node"], _pct(s["severity"]), ", ".join(s["tests"]), "; ".join(s["evidence"])))
    for s in ranking.get("link_suspects", []):
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
    removable = suspects
    unjudged = [c["reason"] for c in cannot_judge]
    nodes = sorted(set(ranking.get("nodes") or []) | set((bisection or {}).get("group") or []))
    group_wide = bool(ranking.get("group_wide")) or (bool(nodes) and len(suspects) * 2 > len(nodes))
    if group_wide:
        word = "group_wide"
        bisection_only = not ranking.get("suspects")
        reason = _group_wide_reason(ranking, suspects, nodes, bisection_only)
        removable = []
    elif suspects or ranking.get("link_suspects"):
        word = "suspects"
        named = suspects + ["link %s" % "-".join(s["nodes"]) for s in ranking.get("link_suspects", [])]
        reason = "suspects: %s" % ", ".join(named)
    elif unjudged:
        word = "cannot_judge"
        reason = "cannot judge: " + "; ".join(unjudged)
    else:
        word = "no_suspect"
        if ranking.get("tests") and all(t["expected"] is None for t in ranking["tests"]):
            reason = ("no suspect: every pair is within the tolerance of the group median (no expectation was "
                      "given: a group slow as a whole would look the same)")
        else:
            reason = "no suspect: every pair is within the tolerance of the group median and the expectation"
    if word == "suspects" and unjudged:
        # What the other tests could not judge is part of the answer, not a footnote.
        reason += "; cannot judge: " + "; ".join(unjudged)
    if word == "group_wide" or word == "suspects":
        lines += ["cannot judge %s" % r for r in unjudged]
    if word != "suspects":
        lines.append(reason)
    return {
        "verdict": word,
        "verdict_reason": reason,
        "group_wide": group_wide,
        "cannot_judge": cannot_judge,
        "suspect_nodes": suspects,
        "exclude": H.compress(removable) if removable else "",
        "exclude_option": H.exclude_option(removable),
        "drain_nodes": removable,
        "drain_command": H.drain_argv(removable, drain_reason) if removable else [],
        "lines": lines,
    }
