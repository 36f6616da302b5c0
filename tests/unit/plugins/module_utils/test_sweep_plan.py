"""Sweep planning: round-robin rounds of disjoint pairs, reference rounds, byes, node lists."""

from __future__ import annotations

import itertools
import math

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import plan as P


def names(n):
    return ["node%02d" % i for i in range(1, n + 1)]


@pytest.mark.parametrize("n", list(range(2, 65)))
def test_round_robin_covers_every_pair_once_in_disjoint_rounds(n):
    nodes = names(n)
    rounds = P.round_robin(nodes)
    # Even N: N-1 rounds of N/2 pairs. Odd N: N rounds of (N-1)/2 pairs (one bye each).
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    seen = []
    for pairs in rounds:
        assert len(pairs) == n // 2
        busy = [x for pair in pairs for x in pair]
        assert len(busy) == len(set(busy)), "a node is in two pairs of one round"
        seen.extend(frozenset(p) for p in pairs)
    assert len(seen) == len(set(seen)) == n * (n - 1) // 2
    assert set(seen) == set(frozenset(p) for p in itertools.combinations(nodes, 2))


@pytest.mark.parametrize("n", [3, 5, 7, 63])
def test_odd_counts_give_each_node_exactly_one_bye(n):
    nodes = names(n)
    rounds = P.round_robin(nodes)
    sat_out = P.byes(rounds, nodes)
    assert all(len(b) == 1 for b in sat_out)
    assert sorted(b[0] for b in sat_out) == sorted(nodes)


def test_even_counts_have_no_bye():
    nodes = names(6)
    assert P.byes(P.round_robin(nodes), nodes) == [[]] * 5


def test_three_lab_nodes():
    assert P.round_robin(["te1", "te2", "te3"]) == [[("te2", "te3")], [("te1", "te3")], [("te1", "te2")]]


@pytest.mark.parametrize("bad", [[], ["te1"], ["te1", "te1"]])
def test_round_robin_rejects_too_few_or_repeated_nodes(bad):
    with pytest.raises(P.SweepPlanError):
        P.round_robin(bad)


@pytest.mark.parametrize("n,refs", [(2, 1), (7, 1), (10, 3), (64, 4), (5, 8)])
def test_reference_rounds_pair_every_node_with_a_free_reference(n, refs):
    nodes = names(n)
    references = ["good%d" % i for i in range(refs)]
    rounds = P.reference_rounds(nodes, references)
    assert len(rounds) == math.ceil(n / float(refs))
    tested = []
    for pairs in rounds:
        used = [pair[1] for pair in pairs]
        assert len(used) == len(set(used)), "a reference is in two pairs of one round"
        assert set(used) <= set(references)
        tested.extend(pair[0] for pair in pairs)
    assert tested == nodes


def test_reference_rounds_reject_overlap_and_missing_references():
    with pytest.raises(P.SweepPlanError, match="both as nodes to test and as references"):
        P.reference_rounds(["a", "b"], ["b"])
    with pytest.raises(P.SweepPlanError, match="at least one known-good"):
        P.reference_rounds(["a", "b"], [])
    with pytest.raises(P.SweepPlanError, match="no node to test"):
        P.reference_rounds([], ["a"])


def test_normalize_nodes_takes_names_and_dicts_and_defaults_the_address():
    assert P.normalize_nodes(["te1", {"name": "te2", "address": "10.99.0.2"}]) == [
        {"name": "te1", "address": "te1"}, {"name": "te2", "address": "10.99.0.2"}]


@pytest.mark.parametrize("bad,message", [
    ("te1", "must be a list"),
    ([{"name": "te1", "addr": "x"}], "unknown keys"),
    (["te 1"], "not a node name"),
    (["te1", "te1"], "twice"),
    ([{"name": "a", "address": "10.0.0.1"}, {"name": "b", "address": "10.0.0.1"}], "address 10.0.0.1 twice"),
    ([3.5], "must be a name"),
])
def test_normalize_nodes_rejects_bad_input(bad, message):
    with pytest.raises(P.SweepPlanError, match=message):
        P.normalize_nodes(bad)


def test_disjoint_rounds_never_put_a_node_in_two_pairs_of_a_round():
    pairs = [("te2", "te3"), ("te1", "te3"), ("te1", "te2"), ("te4", "te5"), ("te3", "te4")]
    rounds = P.disjoint_rounds(pairs)
    assert rounds == [[("te2", "te3"), ("te4", "te5")], [("te1", "te3")], [("te1", "te2"), ("te3", "te4")]]
    for round_pairs in rounds:
        nodes = [n for pair in round_pairs for n in pair]
        assert len(nodes) == len(set(nodes))
    assert sorted(p for r in rounds for p in r) == sorted(pairs)
    assert P.disjoint_rounds([]) == []
