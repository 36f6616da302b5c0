"""The sweep's verdict (pure): who may be excluded or drained, and when the sweep must say
that the fault is not one node (group-wide) or that it cannot judge the group at all.
Numbers are synthetic, shaped like the cases of issue 35 (items 8 and 9)."""

from __future__ import annotations

import itertools

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import rank as R
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import report as V


def bw(a, b, value, test="bandwidth"):
    return {"test": test, "nodes": [a, b], "value": value, "better": "higher", "unit": "MB/s", "size": 1 << 20}


def all_pairs(nodes, good, bad_nodes=(), bad=None):
    return [bw(a, b, bad if (a in bad_nodes or b in bad_nodes) else good) for a, b in itertools.combinations(nodes, 2)]


GPUS = ["gpu%d" % i for i in range(1, 7)]


def test_a_group_wide_result_drains_nobody_and_names_the_shared_cause():
    # Issue 35 item 8: six nodes, all at 11000 against an expectation of 24000.
    ranking = R.rank(all_pairs(GPUS, 11000.0), expectations={"bandwidth": 24000.0})
    assert ranking["group_wide"] is True
    summary = V.verdict(ranking, drain_reason="fabric_sweep found this node slow")
    assert summary["drain_command"] == [] and summary["drain_nodes"] == []
    assert summary["exclude"] == "" and summary["exclude_option"] == ""
    assert summary["verdict"] == "group_wide"
    # The nodes are still named, as the evidence, and the reason says why nobody is drained.
    assert summary["suspect_nodes"] == GPUS
    reason = summary["verdict_reason"]
    assert "6 of 6 nodes" in reason and "nobody is drained" in reason
    # Every pair agrees with the others and misses the expectation alike: a shared cause.
    assert "46 % of the expected 24000" in reason
    for cause in ("switch", "fabric", "expectation"):
        assert cause in reason
    assert reason in summary["lines"]
    assert not any(line.startswith("no suspect") for line in summary["lines"])


def test_one_slow_node_is_still_drained():
    ranking = R.rank(all_pairs(GPUS, 24000.0, bad_nodes=["gpu4"], bad=11000.0), expectations={"bandwidth": 24000.0})
    summary = V.verdict(ranking, drain_reason="slow")
    assert summary["verdict"] == "suspects" and summary["drain_nodes"] == ["gpu4"]
    assert summary["drain_command"] == ["scontrol", "update", "NodeName=gpu4", "State=DRAIN", "Reason=slow"]
    assert summary["exclude_option"] == "--exclude=gpu4"


def test_a_clean_group_says_no_suspect():
    summary = V.verdict(R.rank(all_pairs(GPUS, 24000.0), expectations={"bandwidth": 24000.0}))
    assert summary["verdict"] == "no_suspect" and summary["drain_command"] == []
    assert summary["lines"][-1].startswith("no suspect")


# --- issue 35 item 9: a degraded majority, or too few nodes, without an expectation ----------

def cannot_judge(summary):
    assert summary["verdict"] == "cannot_judge", summary["verdict_reason"]
    assert not any(line.startswith("no suspect") for line in summary["lines"]), summary["lines"]
    assert summary["drain_command"] == [] and summary["exclude"] == ""
    assert "without an expectation or a known-good reference" in summary["verdict_reason"]
    return summary["verdict_reason"]


def test_a_degraded_majority_without_an_expectation_cannot_be_judged():
    # A bad firmware roll-out on 4 of 6 nodes: the median of the nodes' best pairs is the slow value.
    ranking = R.rank(all_pairs(GPUS, 1000.0, bad_nodes=GPUS[2:], bad=300.0))
    reason = cannot_judge(V.verdict(ranking))
    assert ranking["cannot_judge"] == [{"test": "bandwidth", "reason": ranking["tests"][0]["cannot_judge"]}]
    # Both groups are named, with what each reaches.
    assert "gpu[1-2] reach 1000 MB/s" in reason and "gpu[3-6] reach 300 MB/s" in reason


def test_half_the_group_slow_is_not_a_coin_toss():
    # 3 of 6: the median falls between the groups; which half is healthy is not known.
    ranking = R.rank(all_pairs(GPUS, 1000.0, bad_nodes=GPUS[3:], bad=300.0))
    cannot_judge(V.verdict(ranking))
    assert ranking["suspects"] == []


def test_two_nodes_cannot_be_judged_against_each_other():
    ranking = R.rank([bw("a", "b", 100.0)])
    reason = cannot_judge(V.verdict(ranking))
    assert "2 nodes" in reason and "too few" in reason


def test_an_expectation_judges_the_degraded_majority():
    ranking = R.rank(all_pairs(GPUS, 1000.0, bad_nodes=GPUS[2:], bad=300.0), expectations={"bandwidth": 1000.0})
    assert ranking["cannot_judge"] == []
    assert [s["node"] for s in ranking["suspects"]] == GPUS[2:]
    summary = V.verdict(ranking)
    assert summary["verdict"] == "group_wide" and summary["drain_command"] == []


def test_a_known_good_reference_judges_the_degraded_majority():
    # Reference sweep: each node with the known-good ref; 3 of 4 are slow against it.
    m = [bw("n1", "ref", 1000.0), bw("n2", "ref", 300.0), bw("n3", "ref", 310.0), bw("n4", "ref", 290.0)]
    ranking = R.rank(m, references=["ref"])
    assert ranking["cannot_judge"] == []
    assert sorted(s["node"] for s in ranking["suspects"]) == ["n2", "n3", "n4"]
    assert V.verdict(ranking)["verdict"] == "group_wide"


def test_a_failed_pair_is_low_even_when_the_values_cannot_be_judged():
    m = [bw("a", "b", 1000.0), bw("a", "c", None), bw("b", "c", None)]
    summary = V.verdict(R.rank(m))
    assert summary["suspect_nodes"] == ["c"] and summary["verdict"] == "suspects"


def test_no_suspect_without_an_expectation_says_what_it_cannot_see():
    summary = V.verdict(R.rank(all_pairs(GPUS, 1000.0)))
    assert summary["verdict"] == "no_suspect"
    assert summary["lines"][-1].startswith("no suspect") and "no expectation" in summary["lines"][-1]


def test_a_bisection_that_names_most_of_the_group_drains_nobody():
    # The whole group slow against its allreduce expectation, each node low with a known-good partner.
    bisection = {"group": ["te1", "te2", "te3"], "suspects": ["te1", "te2", "te3"], "unresolved": [],
                 "inconclusive": [], "tests": []}
    summary = V.verdict(None, bisection)
    assert summary["verdict"] == "group_wide" and summary["group_wide"] is True
    assert summary["drain_command"] == [] and summary["exclude"] == ""
    assert summary["verdict_reason"].startswith("group-wide: 3 of 3 nodes are low (bisection: each low with a "
                                                "known-good partner)")
    one = dict(bisection, suspects=["te3"])
    assert V.verdict(None, one)["drain_nodes"] == ["te3"] and V.verdict(None, one)["group_wide"] is False
