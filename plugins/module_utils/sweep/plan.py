# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Rounds of a pairwise sweep: which nodes are tested together, round by round (pure).

A round is a set of disjoint pairs, so all its tests can run at the same time and the
round takes one test's time.

``normalize_nodes(nodes, parameter) -> [{'name', 'address'}]``
    ``name`` is the node's scheduler/inventory name (what an exclude list names),
    ``address`` what the launcher uses to reach it (defaults to ``name``).
``round_robin(names) -> [[(a, b), ...], ...]``
    Every node meets every other node exactly once: N-1 rounds of N/2 pairs for even
    N; for odd N, N rounds of (N-1)/2 pairs, one node sitting out each round (the bye).
``reference_rounds(names, references) -> [[(node, reference), ...], ...]``
    Every node is paired with a known-good reference node; with R references a round
    tests R nodes, so ceil(N/R) rounds.
``byes(rounds, names) -> [[name, ...], ...]``
    The nodes that sit out each round.
``disjoint_rounds(pairs) -> [[(a, b), ...], ...]``
    Some pairs (those to measure again) in as few rounds of disjoint pairs as a greedy
    pass finds, each pair once, in the order given.
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep.errors import SweepError

# Slurm node names and host names/addresses as launchers take them.
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


class SweepPlanError(SweepError):
    """Bad input for a sweep; the message names the parameter and the value."""


def normalize_nodes(nodes, parameter="nodes"):
    """``[{'name', 'address'}]`` from names or ``{name, address}`` dicts; checks names and duplicates."""
    if nodes is None:
        return []
    if not isinstance(nodes, (list, tuple)):
        raise SweepPlanError("%s must be a list of node names or {name, address}, got %r" % (parameter, nodes))
    result = []
    names = set()
    addresses = set()
    for index, node in enumerate(nodes):
        if isinstance(node, str):
            name, address = node, None
        elif isinstance(node, dict):
            unknown = set(node) - {"name", "address"}
            if unknown:
                raise SweepPlanError("%s[%d] has unknown keys %s (allowed: name, address)"
                                     % (parameter, index, sorted(unknown)))
            name, address = node.get("name"), node.get("address")
        else:
            raise SweepPlanError("%s[%d] must be a name or {name, address}, got %r" % (parameter, index, node))
        name = "" if name is None else str(name).strip()
        address = name if address in (None, "") else str(address).strip()
        for what, value in (("name", name), ("address", address)):
            if not value or not _NAME.match(value):
                raise SweepPlanError("%s[%d].%s %r is not a node name or address" % (parameter, index, what, value))
        if name in names:
            raise SweepPlanError("%s lists the node %s twice" % (parameter, name))
        if address in addresses:
            raise SweepPlanError("%s lists the address %s twice (%s)" % (parameter, address, name))
        names.add(name)
        addresses.add(address)
        result.append({"name": name, "address": address})
    return result


def round_robin(names):
    """All pairs of ``names`` in rounds of disjoint pairs (the circle method).

    The first node stays in place and the others turn around it one seat per round;
    with an odd count a placeholder joins and whoever meets it sits the round out.
    """
    names = list(names)
    if len(set(names)) != len(names):
        raise SweepPlanError("round_robin: the node names must be distinct, got %r" % (names,))
    if len(names) < 2:
        raise SweepPlanError("a pairwise sweep needs at least 2 nodes, got %d (%s)"
                             % (len(names), ", ".join(names) or "none"))
    seats = names + ([None] if len(names) % 2 else [])
    count = len(seats)
    rounds = []
    for _round in range(count - 1):
        pairs = []
        for i in range(count // 2):
            a, b = seats[i], seats[count - 1 - i]
            if a is not None and b is not None:
                pairs.append((a, b))
        rounds.append(pairs)
        seats = [seats[0], seats[-1]] + seats[1:-1]
    return rounds


def reference_rounds(names, references):
    """Pair each node of ``names`` with one of ``references`` (known-good), R pairs a round."""
    names = list(names)
    references = list(references)
    if not references:
        raise SweepPlanError("the reference sweep needs at least one known-good reference node")
    both = sorted(set(names) & set(references))
    if both:
        raise SweepPlanError("nodes %s are listed both as nodes to test and as references" % ", ".join(both))
    if not names:
        raise SweepPlanError("the reference sweep has no node to test (all nodes are references)")
    rounds = []
    for start in range(0, len(names), len(references)):
        chunk = names[start:start + len(references)]
        rounds.append([(node, references[i]) for i, node in enumerate(chunk)])
    return rounds


def byes(rounds, names):
    """The nodes of ``names`` that are in no pair of each round."""
    result = []
    for pairs in rounds:
        busy = set(n for pair in pairs for n in pair)
        result.append([n for n in names if n not in busy])
    return result


def disjoint_rounds(pairs):
    """``pairs`` split into rounds in which no node is in two pairs (greedy, order kept)."""
    rounds = []
    for pair in pairs:
        pair = tuple(pair)
        for round_pairs in rounds:
            if not any(set(pair) & set(other) for other in round_pairs):
                round_pairs.append(pair)
                break
        else:
            rounds.append([pair])
    return rounds
