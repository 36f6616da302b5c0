"""Suspect ranking from per-pair numbers: node vs link suspects, median and expectation evidence."""

from __future__ import annotations

import itertools

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import rank as R


def bw(a, b, value, test="bandwidth"):
    return {"test": test, "nodes": [a, b], "value": value, "better": "higher", "unit": "MB/s", "size": 1 << 20}


def lat(a, b, value, test="latency"):
    return {"test": test, "nodes": [a, b], "value": value, "better": "lower", "unit": "us", "size": 8}


def all_pairs(nodes, good, bad_nodes=(), bad=None, make=bw):
    return [make(a, b, bad if (a in bad_nodes or b in bad_nodes) else good)
            for a, b in itertools.combinations(nodes, 2)]


def test_three_nodes_one_slow_node_is_named_although_most_pairs_touch_it():
    # 2 of the 3 pairs involve te3: the median of all pairs would be the slow value.
    result = R.rank([lat("te2", "te3", 5100.0), lat("te1", "te3", 5050.0), lat("te1", "te2", 120.0)])
    assert [s["node"] for s in result["suspects"]] == ["te3"]
    assert result["link_suspects"] == []
    test = result["tests"][0]
    assert test["median"] == 120.0
    suspect = result["suspects"][0]
    assert suspect["rank"] == 1 and suspect["severity"] > 0.9
    assert any("te1-te3 latency 5050 us at 8 B" in e and "of the group median 120" in e for e in suspect["evidence"])


def test_a_bad_link_between_good_nodes_is_a_link_suspect_not_a_node():
    nodes = ["n1", "n2", "n3", "n4"]
    measurements = [bw(a, b, 300.0 if {a, b} == {"n1", "n2"} else 1000.0) for a, b in itertools.combinations(nodes, 2)]
    result = R.rank(measurements)
    assert result["suspects"] == []
    assert [s["nodes"] for s in result["link_suspects"]] == [["n1", "n2"]]
    assert result["link_suspects"][0]["severity"] == pytest.approx(0.7)


@pytest.mark.parametrize("n", [4, 9, 16, 64])
def test_one_bad_node_among_many(n):
    nodes = ["gpu%02d" % i for i in range(1, n + 1)]
    result = R.rank(all_pairs(nodes, 1000.0, bad_nodes=["gpu03"], bad=400.0))
    assert [s["node"] for s in result["suspects"]] == ["gpu03"]
    assert result["link_suspects"] == []
    assert result["group_wide"] is False


def test_suspects_are_ranked_worst_first_and_evidence_merges_tests():
    nodes = ["a", "b", "c", "d", "e"]
    m = all_pairs(nodes, 1000.0) + all_pairs(nodes, 10.0, make=lat)
    for entry in m:
        if "b" in entry["nodes"] and entry["test"] == "bandwidth":
            entry["value"] = 700.0
        if "d" in entry["nodes"] and entry["test"] == "bandwidth":
            entry["value"] = 200.0
        if "d" in entry["nodes"] and entry["test"] == "latency":
            entry["value"] = 50.0
    # b-d is both: the lowest of the two applies.
    result = R.rank(m)
    assert [s["node"] for s in result["suspects"]] == ["d", "b"]
    assert result["suspects"][0]["tests"] == ["bandwidth", "latency"]
    assert result["suspects"][0]["severity"] == pytest.approx(0.8)
    assert result["suspects"][1]["severity"] == pytest.approx(0.3)


def test_within_tolerance_is_not_a_suspect():
    nodes = ["a", "b", "c", "d"]
    result = R.rank(all_pairs(nodes, 1000.0, bad_nodes=["c"], bad=850.0), tolerance=0.2)
    assert result["suspects"] == []
    result = R.rank(all_pairs(nodes, 1000.0, bad_nodes=["c"], bad=850.0), tolerance=0.1)
    assert [s["node"] for s in result["suspects"]] == ["c"]


def test_expectation_catches_a_uniformly_slow_group_and_flags_it_group_wide():
    nodes = ["a", "b", "c"]
    measurements = all_pairs(nodes, 400.0)
    assert R.rank(measurements)["suspects"] == []
    result = R.rank(measurements, expectations={"bandwidth": 1000.0})
    assert sorted(s["node"] for s in result["suspects"]) == nodes
    assert result["group_wide"] is True
    assert "40 % of the expected 1000" in result["suspects"][0]["evidence"][0]


def test_two_nodes_one_pair_needs_an_expectation_and_then_names_both():
    assert R.rank([bw("a", "b", 100.0)])["suspects"] == []
    result = R.rank([bw("a", "b", 100.0)], expectations={"bandwidth": 1000.0})
    assert sorted(s["node"] for s in result["suspects"]) == ["a", "b"]


def test_failed_pairs_count_as_low_and_say_why():
    m = [bw("a", "b", 1000.0), bw("a", "c", None), bw("b", "c", None)]
    m[1]["error"] = "rc=1: connection refused"
    result = R.rank(m)
    assert [s["node"] for s in result["suspects"]] == ["c"]
    assert result["suspects"][0]["severity"] == 1.0
    assert "no result (rc=1: connection refused)" in result["suspects"][0]["evidence"][0]


def test_reference_mode_blames_the_tested_node_never_the_reference():
    m = [bw("n1", "ref", 1000.0), bw("n2", "ref", 990.0), bw("n3", "ref", 300.0), bw("n4", "ref", 1010.0)]
    result = R.rank(m, references=["ref"])
    assert [s["node"] for s in result["suspects"]] == ["n3"]
    assert result["link_suspects"] == []


@pytest.mark.parametrize("bad,message", [
    ([{"test": "x", "nodes": ["a"], "value": 1.0, "better": "higher"}], "two different nodes"),
    ([{"test": "x", "nodes": ["a", "b"], "value": 1.0, "better": "up"}], "higher or lower"),
    ([{"test": "x", "nodes": ["a", "b"], "value": "fast", "better": "higher"}], "number or null"),
])
def test_bad_measurements_are_rejected(bad, message):
    with pytest.raises(R.RankError, match=message):
        R.rank(bad)


@pytest.mark.parametrize("tolerance", [-0.1, 1.0, True, "0.2"])
def test_bad_tolerance_is_rejected(tolerance):
    with pytest.raises(R.RankError, match="tolerance"):
        R.rank([], tolerance=tolerance)


def test_keep_best_takes_the_better_value_per_direction_and_keeps_every_sample():
    first = [lat("a", "b", 300.0), lat("a", "c", 100.0), bw("a", "b", 10.0)]
    failed = dict(lat("a", "b", None), error="rc=1: gone")
    merged = R.keep_best(first, [lat("b", "a", 120.0), bw("a", "b", 40.0)])
    assert [m["value"] for m in merged] == [120.0, 100.0, 40.0]
    assert merged[0]["samples"] == [300.0, 120.0] and "samples" not in merged[1]
    # a failed run again never replaces a number, and a number replaces a failure
    assert R.keep_best(merged, [failed])[0]["value"] == 120.0
    assert R.keep_best(merged, [failed])[0]["samples"] == [300.0, 120.0, None]
    recovered = R.keep_best([failed], [lat("a", "b", 90.0)])[0]
    assert recovered["value"] == 90.0 and recovered["error"] is None and recovered["samples"] == [None, 90.0]
    # slower again: the better first value stays
    assert R.keep_best([lat("a", "b", 100.0)], [lat("a", "b", 500.0)])[0]["value"] == 100.0


def test_low_pairs_lists_each_low_pair_once_over_all_tests():
    measurements = [lat("te2", "te3", 5000.0), lat("te1", "te3", 5000.0), lat("te1", "te2", 100.0),
                    bw("te2", "te3", 1.0), bw("te1", "te3", 1.0), bw("te1", "te2", 50.0)]
    assert R.low_pairs(R.rank(measurements)) == [("te2", "te3"), ("te1", "te3")]
    assert R.low_pairs(R.rank([lat("a", "b", 1.0), lat("a", "c", 1.0), lat("b", "c", 1.0)])) == []
