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
