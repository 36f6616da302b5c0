# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Bisection: find the slow node by halving a group whose whole-group result is low (pure).

The caller runs the tests and says whether each was low; this class only decides what
to test next::

    search = Bisection(names, known_good=refs)
    while not search.done:
        for test in search.next_round():          # disjoint node sets: run them together
            search.record(test['id'], low=run(test['nodes']))
    search.result()

The rules:

* The whole group is tested first. A group that is not low clears its nodes (they
  become known-good partners for later tests).
* A low group of 3 or more is split into two halves, tested in the same round.
* A low group of 2, and a half of 1, cannot tell its nodes apart by itself: each node
  is tested with a known-good partner. Low with a good partner: the node is a suspect.
* A low group whose parts all pass is a fault between the parts (a link, a switch
  path, or a load effect): reported under ``inconclusive`` with the group, for a
  pairwise sweep of it.
* While no node is known-good, two waiting nodes are tried together (a probe); a
  probe that passes clears both. A node still without a good partner when no untried
  probe is left is reported under ``unresolved``.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep.errors import SweepError


class BisectionError(SweepError):
    """Bad input or a result recorded for a test that was not asked for."""


class Bisection(object):
    def __init__(self, names, known_good=()):
        names = list(names)
        if len(names) < 2:
            raise BisectionError("a bisection needs a group of at least 2 nodes, got %r" % (names,))
        if len(set(names)) != len(names):
            raise BisectionError("the group lists a node twice: %r" % (names,))
        known_good = list(known_good or ())
        overlap = sorted(set(known_good) & set(names))
        if overlap:
            raise BisectionError("nodes %s are both in the group and known-good" % ", ".join(overlap))
        self.names = names
        self.good = list(known_good)
        self.suspects = []
        self.unresolved = []
        self.inconclusive = []
        self.steps = []
        self._next_id = 0
        self._pending = []      # [{'nodes': [...], 'parent': id|None}] not yet started
        self._running = {}      # id -> test
        self._children = {}     # low group id -> [child ids] (to spot an inconclusive split)
        self._tests = {}        # id -> test (all)
        self._tried = set()     # node pairs already tested together (as a group or a probe)
        self._queue(names, None)

    # ------------------------------------------------------------------ internals

    def _queue(self, nodes, parent):
        self._pending.append({"nodes": list(nodes), "parent": parent})

    def _partner(self, busy):
        for node in self.good:
            if node not in busy:
                return node
        return None

    def _probe(self, waiting):
        singles = [item["nodes"][0] for item in waiting if len(item["nodes"]) == 1]
        for i, a in enumerate(singles):
            for b in singles[i + 1:]:
                if frozenset((a, b)) not in self._tried:
                    self._tried.add(frozenset((a, b)))
                    return [a, b]
        return None

    @property
    def done(self):
        return not self._pending and not self._running

    def next_round(self):
        """The tests to run now: disjoint node sets. Empty when all are done."""
        if self._running:
            raise BisectionError("record the results of the running round first")
        busy = set()
        chosen = []
        waiting = []
        # A waiting node that a passing probe cleared needs no test of its own.
        self._pending = [item for item in self._pending
                         if not (len(item["nodes"]) == 1 and item["nodes"][0] in self.good)]
        for item in self._pending:
            nodes = item["nodes"]
            if busy & set(nodes):
                waiting.append(item)
                continue
            if len(nodes) == 1:
                partner = self._partner(busy | set(nodes))
                if partner is None:
                    waiting.append(item)
                    continue
                test_nodes = nodes + [partner]
                kind = "with_partner"
            else:
                test_nodes = nodes
                kind = "group"
            self._next_id += 1
            test = {"id": self._next_id, "nodes": test_nodes, "subject": list(nodes), "kind": kind,
                    "parent": item["parent"]}
            busy |= set(test_nodes)
            if len(test_nodes) == 2:
                self._tried.add(frozenset(test_nodes))
            chosen.append(test)
        if not chosen and waiting:
            probe = self._probe(waiting)
            if probe:
                # No known-good node yet: try two waiting nodes together; a pair that
                # passes clears both, and then they partner the others.
                self._next_id += 1
                chosen.append({"id": self._next_id, "nodes": probe, "subject": probe, "kind": "probe",
                               "parent": None})
            else:
                for item in waiting:
                    self.unresolved.extend(item["nodes"])
                waiting = []
        self._pending = waiting
        for test in chosen:
            self._running[test["id"]] = test
            self._tests[test["id"]] = test
            if test["parent"] is not None:
                self._children.setdefault(test["parent"], []).append(test["id"])
        return [dict(t) for t in chosen]

    def record(self, test_id, low, value=None):
        test = self._running.pop(test_id, None)
        if test is None:
            raise BisectionError("no running test with id %r" % (test_id,))
        test["low"] = bool(low)
        test["value"] = value
        self.steps.append({"id": test_id, "nodes": test["nodes"], "subject": test["subject"],
                           "kind": test["kind"], "low": bool(low), "value": value})
        subject = test["subject"]
        if not low:
            self.good.extend(n for n in subject if n not in self.good)
        elif test["kind"] == "probe":
            pass  # one of the two (or their link) is bad: both keep waiting for a good partner
        elif test["kind"] == "with_partner":
            self.suspects.extend(n for n in subject if n not in self.suspects)
        elif len(subject) >= 3:
            half = len(subject) // 2
            self._queue(subject[:half], test_id)
            self._queue(subject[half:], test_id)
        else:
            for node in subject:
                self._queue([node], test_id)
        if not self._running:
            self._close_groups()

    def _found_below(self, test_id):
        for child in self._children.get(test_id, []):
            t = self._tests[child]
            if t.get("low") and t["kind"] == "with_partner":
                return True
            if self._found_below(child):
                return True
        return False

    def _settled(self, test_id):
        for child in self._children.get(test_id, []):
            if "low" not in self._tests[child] or not self._settled(child):
                return False
        pending_parents = set(item["parent"] for item in self._pending)
        return test_id not in pending_parents

    def _close_groups(self):
        for test_id, test in self._tests.items():
            if (test.get("low") and test["kind"] == "group" and test_id in self._children
                    and not test.get("closed") and self._settled(test_id)):
                test["closed"] = True
                if not self._found_below(test_id) and not (set(test["subject"]) & set(self.unresolved)):
                    self.inconclusive.append(list(test["subject"]))

    def result(self):
        return {"group": list(self.names), "suspects": list(self.suspects), "unresolved": list(self.unresolved),
                "inconclusive": [list(g) for g in self.inconclusive], "known_good": list(self.good),
                "steps": list(self.steps)}


def run(search, measure):
    """Drive ``search`` with ``measure(tests) -> {id: (low, value)}`` per round; return (result, rounds)."""
    rounds = []
    while not search.done:
        tests = search.next_round()
        if not tests:
            break
        outcome = measure(tests)
        rounds.append([t["nodes"] for t in tests])
        for test in tests:
            low, value = outcome[test["id"]]
            search.record(test["id"], low, value)
    result = search.result()
    result["rounds"] = rounds
    return result
