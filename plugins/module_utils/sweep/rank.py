# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""From per-pair measurements to ranked suspects, with the evidence (pure).

``rank(measurements, tolerance=0.2, expectations=None, references=()) -> dict``
``low_pairs(ranking) -> [(a, b), ...]``
    The pairs with a low result in any test, each once, in the order measured.
``keep_best(measurements, again) -> measurements``
    Merges a new measurement of some pairs: each pair keeps its better value, and
    ``samples`` lists every value it got (None for a failed job), so a pair is low only
    when each of its measurements was.

A measurement is ``{'test', 'nodes': [a, b], 'value', 'better', 'unit', 'size', 'error'}``:
``better`` is ``higher`` (bandwidth) or ``lower`` (latency); ``value`` is None when the
job failed (``error`` says why) - a failed pair is a low pair.

How a node becomes a suspect, per test:

* Each node's *best* pair is what it can do with a healthy partner. The group's
  baseline is the median of the nodes' best values, which stays on the healthy value
  while fewer than half the nodes are bad (the median of all pairs would not: with 3
  nodes, 2 of the 3 pairs touch a bad node).
* A pair is low when it is worse than the baseline by more than ``tolerance`` (a
  fraction), or worse than the expectation for the test by more than the tolerance,
  or failed.
* A node whose every pair is low is a node suspect: it is the common factor. A low
  pair whose two nodes are not suspects is a link suspect (that path, not a node).
  Known-good ``references`` are never node suspects; a low pair with a reference
  points at the other node.
* Severity is how far the node's best pair (or the link's pair) is below the
  baseline or the expectation, whichever is further: 0.5 means half as good.
* Without an expectation the median is only trustworthy while most nodes are healthy.
  Too few nodes (2; 1 when a known-good reference is in every pair), or nodes that split
  in two with the better side not a majority, cannot be judged: no pair is low for being
  below the median, and the test's ``cannot_judge`` says why. With known-good references
  in the pairs the better side is the healthy one (it reaches that with a known-good
  partner), so it becomes the baseline (``baseline_from: references``).

The result ranks suspects (worst first) across tests, each with its evidence as data
and as sentences; ``group_wide`` says more than half the nodes are suspects, and
``cannot_judge`` lists ``{test, reason}`` for the tests that could not be judged.
"""

from __future__ import annotations

import statistics

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import hostlist as H
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep.errors import SweepError

HIGHER = "higher"
LOWER = "lower"


class RankError(SweepError):
    """Bad measurements or settings."""


def median(values):
    """The median (of an even count, the mean of the middle two); None for no values."""
    values = list(values)
    return statistics.median(values) if values else None


def goodness(value, base, better):
    """``value`` relative to ``base``, as 'how good' (1 = as good, 0.5 = half as good)."""
    if value is None:
        return 0.0
    if base is None or base <= 0:
        return None
    if better == HIGHER:
        return value / float(base)
    if value <= 0:
        return None
    return float(base) / value


def _best(values, better):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return max(values) if better == HIGHER else min(values)


def fmt(value):
    if value is None:
        return "n/a"
    if abs(value) >= 100:
        return "%.0f" % value
    if abs(value) >= 10:
        return "%.1f" % value
    return "%.2f" % value


def _size_words(size):
    if size is None:
        return ""
    size = int(size)
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return " at %d %s" % (size // factor, unit)
    return " at %d B" % size


def _check(measurements):
    for index, m in enumerate(measurements):
        nodes = m.get("nodes") or []
        if len(nodes) != 2 or nodes[0] == nodes[1]:
            raise RankError("measurements[%d].nodes must be two different nodes, got %r" % (index, nodes))
        if m.get("better") not in (HIGHER, LOWER):
            raise RankError("measurements[%d].better must be higher or lower, got %r" % (index, m.get("better")))
        value = m.get("value")
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise RankError("measurements[%d].value must be a number or null, got %r" % (index, value))


def _pair_sentence(p):
    a, b = p["nodes"]
    if p["value"] is None:
        return "%s-%s %s: no result (%s)" % (a, b, p["test"], p.get("error") or "the job failed")
    text = "%s-%s %s %s %s%s" % (a, b, p["test"], fmt(p["value"]), p["unit"], _size_words(p.get("size")))
    parts = []
    if p["vs_median"] is not None:
        baseline = _BASELINE_WORDS[p.get("baseline_from", "median")]
        parts.append("%.0f %% of the %s %s" % (100 * p["vs_median"], baseline, fmt(p["median"])))
    if p["vs_expected"] is not None:
        parts.append("%.0f %% of the expected %s" % (100 * p["vs_expected"], fmt(p["expected"])))
    if len(p.get("samples") or []) > 1:
        parts.append("best of %d runs" % len(p["samples"]))
    if parts:
        text += " (" + ", ".join(parts) + ")"
    return text


_BASELINE_WORDS = {"median": "group median", "references": "known-good baseline"}
# Fewer nodes with a result than this cannot be judged against each other: with 2 nodes
# (one pair) a slow one cannot be told from its partner; a known-good reference in every
# pair leaves one unknown per pair, so 2 tested nodes compare.
_FEWEST = {False: 3, True: 2}
_NO_BASIS = "without an expectation or a known-good reference"


def _judge_without_expectation(test, best, baseline, floor, better, unit, with_reference):
    """``(baseline, baseline_from, why-not or None)`` for a test that has no expectation.

    The median of the nodes' best pairs is a healthy value only while most nodes are
    healthy. When the nodes whose best is within the tolerance of the best node are not
    a majority, the results are split (a bad roll-out on half the nodes, or a topology
    where some pairs are faster) and the median cannot say which side is healthy: with
    known-good references in the pairs, the side that reaches the best value with them is;
    otherwise the group cannot be judged. Too few nodes cannot be judged either.
    """
    valued = dict((n, v) for n, v in best.items() if v is not None)
    fewest = _FEWEST[with_reference]
    if len(valued) < fewest:
        return baseline, "median", (
            "%s: %d node%s with a result, too few to judge against each other (a %s sweep needs %d); the group "
            "cannot be judged %s" % (test, len(valued), "" if len(valued) == 1 else "s",
                                     "reference" if with_reference else "pairwise", fewest, _NO_BASIS))
    top_value = _best(valued.values(), better)
    top = []
    for n in sorted(valued):
        g = goodness(valued[n], top_value, better)
        if g is None or g >= floor:
            top.append(n)
    rest = [n for n in sorted(valued) if n not in top]
    if not rest or len(top) * 2 > len(valued):
        return baseline, "median", None
    if with_reference:
        return median([valued[n] for n in top]), "references", None
    return baseline, "median", (
        "%s: the nodes split in two - %s reach %s %s, %s reach %s %s (each node's best pair) - and the better side "
        "is not a majority, so the group median cannot tell which side is healthy (a bad roll-out on part of the "
        "group, or a topology in which some pairs are faster); the group cannot be judged %s" % (
            test, H.compress(top), fmt(median([valued[n] for n in top])), unit, H.compress(rest),
            fmt(median([valued[n] for n in rest])), unit, _NO_BASIS))


def _rank_test(test, items, tolerance, expected, references):
    better = items[0]["better"]
    unit = items[0].get("unit") or ""
    size = items[0].get("size")
    nodes = sorted(set(n for m in items for n in m["nodes"]))
    tested = [n for n in nodes if n not in references]
    per_node = dict((n, [m for m in items if n in m["nodes"]]) for n in nodes)
    best = dict((n, _best([m["value"] for m in per_node[n]], better)) for n in tested)
    baseline = median([v for v in best.values() if v is not None])
    floor = 1.0 - tolerance
    with_reference = any(set(m["nodes"]) & references for m in items)
    baseline_from = "median"
    judgement = None
    if expected is None:
        baseline, baseline_from, judgement = _judge_without_expectation(test, best, baseline, floor, better, unit,
                                                                        with_reference)

    pairs = []
    for m in items:
        vs_median = goodness(m["value"], baseline, better) if baseline is not None else None
        vs_expected = goodness(m["value"], expected, better) if expected is not None else None
        reasons = []
        if m["value"] is None:
            reasons.append("failed")
        else:
            # A group that cannot be judged has no trustworthy baseline: only failures and
            # the expectation make a pair low.
            if judgement is None and vs_median is not None and vs_median < floor:
                reasons.append("below the group median")
            if vs_expected is not None and vs_expected < floor:
                reasons.append("below the expectation")
        pair = {"test": test, "nodes": list(m["nodes"]), "value": m["value"], "unit": unit, "size": size,
                "better": better, "median": baseline, "baseline_from": baseline_from, "expected": expected,
                "vs_median": None if vs_median is None else round(vs_median, 4),
                "vs_expected": None if vs_expected is None else round(vs_expected, 4),
                "low": bool(reasons), "why": reasons, "error": m.get("error"),
                "samples": list(m.get("samples") or [m["value"]])}
        pair["text"] = _pair_sentence(pair)
        pairs.append(pair)

    def severity(value):
        worst = [g for g in (goodness(value, baseline, better), goodness(value, expected, better)) if g is not None]
        return round(max(0.0, 1.0 - min(worst)), 4) if worst else 0.0

    node_suspects = []
    for n in tested:
        mine = [p for p in pairs if n in p["nodes"]]
        if mine and all(p["low"] for p in mine):
            node_suspects.append({
                "node": n, "kind": "node", "test": test, "severity": severity(best[n]),
                "best": best[n], "unit": unit, "size": size, "median": baseline, "expected": expected,
                "pairs_low": len(mine), "pairs": len(mine),
                "evidence": [p["text"] for p in mine],
            })
    suspect_names = set(s["node"] for s in node_suspects)
    links = []
    for p in pairs:
        if p["low"] and not suspect_names & set(p["nodes"]) and not set(p["nodes"]) <= set(references):
            links.append({"nodes": list(p["nodes"]), "kind": "link", "test": test, "severity": severity(p["value"]),
                          "value": p["value"], "unit": unit, "size": size, "evidence": [p["text"]]})
    # Every pair has a number and none is below the group's baseline: the pairs agree with
    # each other, so whatever they miss (the expectation) they miss together.
    agree = all(p["value"] is not None and "below the group median" not in p["why"] for p in pairs)
    return {"test": test, "better": better, "unit": unit, "size": size, "median": baseline, "expected": expected,
            "tolerance": tolerance, "pairs": pairs, "node_suspects": node_suspects, "link_suspects": links,
            "agree": agree, "nodes": len(tested), "baseline_from": baseline_from, "cannot_judge": judgement}


def rank(measurements, tolerance=0.2, expectations=None, references=()):
    """Rank node and link suspects over every test in ``measurements`` (see the module doc)."""
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise RankError("tolerance must be a fraction in [0, 1), got %r" % (tolerance,))
    expectations = expectations or {}
    measurements = list(measurements or [])
    _check(measurements)
    references = set(references or ())
    order = []
    by_test = {}
    for m in measurements:
        if m["test"] not in by_test:
            order.append(m["test"])
            by_test[m["test"]] = []
        by_test[m["test"]].append(m)
    tests = [_rank_test(t, by_test[t], tolerance, expectations.get(t), references) for t in order]

    merged = {}
    for t in tests:
        for s in t["node_suspects"]:
            entry = merged.setdefault(s["node"], {"node": s["node"], "kind": "node", "severity": 0.0,
                                                  "tests": [], "evidence": []})
            entry["severity"] = max(entry["severity"], s["severity"])
            entry["tests"].append(s["test"])
            entry["evidence"].extend(s["evidence"])
    suspects = sorted(merged.values(), key=lambda s: (-s["severity"], s["node"]))
    links = {}
    for t in tests:
        for link in t["link_suspects"]:
            key = tuple(sorted(link["nodes"]))
            entry = links.setdefault(key, {"nodes": list(key), "kind": "link", "severity": 0.0, "tests": [],
                                           "evidence": []})
            entry["severity"] = max(entry["severity"], link["severity"])
            entry["tests"].append(link["test"])
            entry["evidence"].extend(link["evidence"])
    link_list = sorted(links.values(), key=lambda s: (-s["severity"], s["nodes"]))
    for position, s in enumerate(suspects + link_list, 1):
        s["rank"] = position
    all_nodes = set(n for m in measurements for n in m["nodes"]) - references
    return {
        "tests": tests,
        "suspects": suspects,
        "link_suspects": link_list,
        "nodes": sorted(all_nodes),
        # Tests whose numbers cannot name anyone (see _judge_without_expectation): the
        # verdict must say so instead of "no suspect".
        "cannot_judge": [{"test": t["test"], "reason": t["cannot_judge"]} for t in tests if t["cannot_judge"]],
        # More than half the nodes low: the fault is not one node (a switch, the whole
        # fabric, or a wrong expectation); an exclude list would empty the cluster.
        "group_wide": bool(all_nodes) and len(suspects) * 2 > len(all_nodes),
    }


def low_pairs(ranking):
    """The pairs that are low in any test of ``ranking``, each once, in the order measured."""
    seen = []
    for test in (ranking or {}).get("tests", []):
        for pair in test["pairs"]:
            key = tuple(pair["nodes"])
            if pair["low"] and key not in seen:
                seen.append(key)
    return seen


def keep_best(measurements, again):
    """``measurements`` with the pairs of ``again`` merged: the better value wins, all are kept as samples."""
    _check(again)
    fresh = {}
    for m in again:
        fresh.setdefault((m["test"], frozenset(m["nodes"])), []).append(m)
    merged = []
    for m in measurements:
        newer = fresh.get((m["test"], frozenset(m["nodes"])), [])
        if not newer:
            merged.append(m)
            continue
        runs = [m] + newer
        best = _best([r["value"] for r in runs], m["better"])
        # The first run with the best value (the original when every run failed) gives value, error, size.
        chosen = next((r for r in runs if best is not None and r["value"] == best), m)
        entry = dict(m, value=chosen["value"], error=chosen.get("error"), size=chosen.get("size"))
        entry["samples"] = list(m.get("samples") or [m["value"]]) + [n["value"] for n in newer]
        merged.append(entry)
    return merged
