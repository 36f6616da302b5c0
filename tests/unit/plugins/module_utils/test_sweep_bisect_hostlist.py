"""Bisection (halving a low group) and Slurm hostlist / exclude / drain formatting."""

from __future__ import annotations

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import bisect as B
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import hostlist as H


def simulate(names, bad_nodes=(), bad_links=(), known_good=()):
    """A group is low when it holds a bad node, or both ends of a bad link."""
    calls = []

    def measure(tests):
        nodes_in_round = [n for t in tests for n in t["nodes"]]
        assert len(nodes_in_round) == len(set(nodes_in_round)), "tests of one round share a node"
        calls.append([list(t["nodes"]) for t in tests])
        out = {}
        for t in tests:
            low = bool(set(t["nodes"]) & set(bad_nodes)) or any(set(link) <= set(t["nodes"]) for link in bad_links)
            out[t["id"]] = (low, 1.0 if low else 10.0)
        return out

    result = B.run(B.Bisection(names, known_good), measure)
    return result, calls


@pytest.mark.parametrize("n", [3, 4, 8, 13, 64])
@pytest.mark.parametrize("where", ["first", "middle", "last"])
def test_one_bad_node_is_found(n, where):
    names = ["n%d" % i for i in range(n)]
    bad = {"first": names[0], "middle": names[n // 2], "last": names[-1]}[where]
    result, calls = simulate(names, bad_nodes=[bad])
    assert result["suspects"] == [bad]
    assert result["unresolved"] == [] and result["inconclusive"] == []
    # Halving: about log2(n) rounds, plus the final partner test (with 3 nodes, up to two
    # probes first, as no node is known-good when the 2-node half is low).
    assert len(calls) <= n.bit_length() + 3


def test_a_healthy_group_takes_one_test():
    result, calls = simulate(["a", "b", "c", "d"])
    assert calls == [[["a", "b", "c", "d"]]]
    assert result["suspects"] == [] and sorted(result["known_good"]) == ["a", "b", "c", "d"]


def test_halves_run_in_the_same_round():
    calls = simulate(["a", "b", "c", "d"], bad_nodes=["d"])[1]
    assert calls[1] == [["a", "b"], ["c", "d"]]


def test_two_bad_nodes_in_different_halves_are_both_found():
    names = ["n%d" % i for i in range(8)]
    result = simulate(names, bad_nodes=["n1", "n6"])[0]
    assert sorted(result["suspects"]) == ["n1", "n6"]


def test_two_node_group_with_a_reference_tells_the_nodes_apart():
    result, calls = simulate(["a", "b"], bad_nodes=["b"], known_good=["ref"])
    assert result["suspects"] == ["b"]
    assert calls[1] == [["a", "ref"]] and calls[2] == [["b", "ref"]]


def test_two_node_group_without_a_reference_is_unresolved():
    result = simulate(["a", "b"], bad_nodes=["b"])[0]
    assert result["suspects"] == [] and sorted(result["unresolved"]) == ["a", "b"]


def test_a_bad_link_across_halves_is_inconclusive_not_a_wrong_node():
    result = simulate(["a", "b", "c", "d"], bad_links=[("a", "d")])[0]
    assert result["suspects"] == []
    assert result["inconclusive"] == [["a", "b", "c", "d"]]


def test_bisection_rejects_bad_input_and_unknown_results():
    with pytest.raises(B.BisectionError):
        B.Bisection(["a"])
    with pytest.raises(B.BisectionError):
        B.Bisection(["a", "a"])
    with pytest.raises(B.BisectionError, match="both in the group and known-good"):
        B.Bisection(["a", "b"], known_good=["b"])
    search = B.Bisection(["a", "b", "c"])
    search.next_round()
    with pytest.raises(B.BisectionError, match="no running test"):
        search.record(99, True)
    with pytest.raises(B.BisectionError, match="record the results"):
        search.next_round()


@pytest.mark.parametrize("names,expected", [
    (["te3"], "te3"),
    (["te1", "te2", "te3", "te5"], "te[1-3,5]"),
    (["gpu07", "gpu01", "gpu02", "gpu03"], "gpu[01-03,07]"),
    (["login", "te2", "te1"], "login,te[1-2]"),
    (["a1", "a01"], "a1,a01"),
    (["rack1-node9", "rack1-node10", "rack1-node11"], "rack1-node[9-11]"),
])
def test_compress(names, expected):
    assert H.compress(names) == expected
    assert sorted(H.expand(expected)) == sorted(set(names))


@pytest.mark.parametrize("expression,names", [
    ("te[1-3,5]", ["te1", "te2", "te3", "te5"]),
    ("gpu[08-10],login", ["gpu08", "gpu09", "gpu10", "login"]),
])
def test_expand(expression, names):
    assert H.expand(expression) == names


@pytest.mark.parametrize("bad", ["te[3-1]", "te[1-3", "te[a-b]"])
def test_expand_rejects_what_slurm_would_not_take(bad):
    with pytest.raises(H.HostlistError):
        H.expand(bad)


def test_exclude_option_and_drain_argv():
    assert H.exclude_option([]) == ""
    assert H.exclude_option(["te3", "te1"]) == "--exclude=te[1,3]"
    assert H.drain_argv(["te3"], "fabric_sweep:  latency 50x\nthe median") == [
        "scontrol", "update", "NodeName=te3", "State=DRAIN", "Reason=fabric_sweep: latency 50x the median"]
    with pytest.raises(H.HostlistError, match="reason"):
        H.drain_argv(["te3"], " ")
    with pytest.raises(H.HostlistError, match="no node"):
        H.drain_argv([], "x")
    with pytest.raises(H.HostlistError, match="not a node name"):
        H.exclude_option(["te3;reboot"])
