"""The transport proof from NCCL's own INFO lines.

Each fixture in tests/fixtures/nccl_info is a short excerpt of a real NCCL_DEBUG=INFO log
posted publicly (the README there names the thread of each); the EKS one is the existing
tests/fixtures/nccl_tests/eks_t4_all_reduce_tag_output_info.txt (mpirun --tag-output).
The excerpts are partial logs, so tests that want "every rank" say all_ranks where the
excerpt holds every rank's lines, and all_ranks: false where it does not.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import gates as G
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import parse as NP
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import transport as T

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def info(name):
    with open(os.path.join(FIXTURES, "nccl_info", name)) as handle:
        return handle.read()


def results(name):
    with open(os.path.join(FIXTURES, "nccl_tests", name)) as handle:
        return handle.read()


def rank(facts, number=None, pid=None):
    for r in facts["ranks"]:
        if (number is None or r["rank"] == number) and (pid is None or r["pid"] == pid):
            return r
    raise AssertionError("no rank %s pid %s in %r" % (number, pid, facts["ranks"]))


# --------------------------------------------------------------------------- facts

def test_ib_with_gpudirect_rdma_on_every_channel():
    facts = T.parse(info("aks_ib_gdrdma_2nodes.txt"))
    r0 = rank(facts, 0)
    assert (r0["host"], r0["pid"], r0["device"]) == ("leader-h2nng", 523, 0)
    assert r0["transports"] == {"NET/IB": 2} and r0["net_channels"] == 2 and r0["gdr"] is True
    assert rank(facts, 5)["transports"] == {"NET/IB": 1}    # a [send] line: the sender is the rank
    # Rail by rail: rank 4's and rank 6's channels go through NIC 4 and NIC 6 (no device list in the excerpt).
    assert (rank(facts, 4)["nics_used"], rank(facts, 6)["nics_used"]) == (["#4"], ["#6"])
    assert facts["transports"] == ["NET/IB"] and facts["gdr"] is True
    assert T.check(facts, {"network": "ib", "gdr": True, "all_ranks": False}) == []


def test_p2p_and_ib_channels_are_counted_per_transport_and_channel():
    facts = T.parse(info("nccl820_p2p_ipc_and_ib_gdrdma.txt"))
    r0 = rank(facts, 0)
    # Ten distinct channel numbers over P2P/IPC (14 and 15 appear for two peers), two over IB.
    assert r0["transports"] == {"NET/IB": 2, "P2P/IPC": 10}
    assert r0["network_used"] == "IB" and r0["gdr"] is True and r0["nics_used"] == ["#1"]
    assert T.summary(facts) == "IB on 1 rank(s); channels via NET/IB, P2P/IPC; GDR on; NVLS not reported"


def test_nic_list_link_layer_and_gdr_disabled_for_roce():
    facts = T.parse(info("nccl1537_roce_gdr_disabled.txt"))
    r0 = rank(facts, 0)
    assert r0["nics"] == ["mlx5_0:1/RoCE", "mlx5_1:1/RoCE"] and r0["network"] == "IB"
    assert r0["gdr"] is False and r0["nranks"] == 16
    assert T.check(facts, {"network": "ib", "all_ranks": False}) == []
    assert T.check(facts, {"gdr": True, "all_ranks": False}) == [
        "rank 0 (hostname1 pid 25668 dev 0): NCCL says GPU Direct RDMA Disabled for HCA 0 'mlx5_0'; HCA 1 'mlx5_1'"]
    assert T.check(facts, {"min_nics": 4, "all_ranks": False}) == [
        "rank 0 (hostname1 pid 25668 dev 0): NCCL found 2 NIC(s) (mlx5_0:1/RoCE mlx5_1:1/RoCE), required at least 4"]


def test_every_rank_must_prove_it_when_all_ranks():
    facts = T.parse(info("nccl1537_roce_gdr_disabled.txt"))
    assert T.check(facts, {"network": "ib"}) == [
        "ranks 1-15 of 16 printed no NCCL INFO lines, so their transport is not proven"]


def test_nvls_in_use_from_the_nvls_heads():
    facts = T.parse(info("nccl1453_h100_nvls_3nodes.txt"))
    r0 = rank(facts, 0)
    assert r0["nvls_support"] is True and r0["nvls"] is True and facts["nranks"] == 24
    assert T.check(facts, {"nvls": True, "all_ranks": False}) == []


def test_channel_counts_line_and_tag_output_prefixes():
    text = results("eks_t4_all_reduce_tag_output_info.txt")
    facts = T.parse(text)
    assert [r["rank"] for r in facts["ranks"]] == [0, 1]
    r1 = rank(facts, 1)
    assert (r1["host"], r1["network"], r1["coll_channels"], r1["p2p_channels"], r1["nvls_channels"]) == (
        "test-nccl-efa-worker-1", "AWS Libfabric", 2, 2, None)
    assert r1["transports"] == {"NET/AWS Libfabric": 2} and r1["net_channels"] == 4
    assert T.check(facts, {"network": "AWS Libfabric"}) == []
    # EFA on T4 runs without GPUDirect RDMA: no channel says /GDRDMA.
    assert T.check(facts, {"gdr": True}) == [
        "rank 0 (test-nccl-efa-worker-0 pid 21 dev 0): 4 of 4 network channel(s) without GPUDirect RDMA (no /GDRDMA): "
        "data is staged through host memory",
        "rank 1 (test-nccl-efa-worker-1 pid 21 dev 0): 4 of 4 network channel(s) without GPUDirect RDMA (no /GDRDMA): "
        "data is staged through host memory"]


# --------------------------------------------------------------------------- fallback fails

def test_socket_channels_fail_an_ib_requirement():
    facts = T.parse(info("issue166_socket_channels.txt"))
    assert rank(facts, 8)["transports"] == {"NET/Socket": 14}
    assert T.check(facts, {"network": "ib"}) == [
        "rank 8 (ubuntu pid 9621 dev 0) used NET/Socket on 14 channel(s) - a silent fallback to TCP sockets; "
        "required network ib"]


def test_using_network_socket_fails_an_ib_requirement_on_every_rank():
    facts = T.parse(info("nccl1609_using_network_socket.txt"))
    failures = T.check(facts, {"network": "ib", "all_ranks": False})
    assert len(failures) == 4 and all("used NET/Socket - a silent fallback to TCP sockets" in f for f in failures)
    assert facts["networks"] == ["Socket"]
    # Asking for sockets is allowed (a lab without RDMA), and then this passes.
    assert T.check(facts, {"network": "socket", "all_ranks": False}) == []


def test_one_rank_on_sockets_among_ib_ranks_is_named():
    facts = T.parse(info("nccl_tests29_mixed_socket_ib.txt"))
    assert T.check(facts, {"network": "ib", "all_ranks": False}) == [
        "rank ? (server1 pid 117945 dev 1) used NET/Socket - a silent fallback to TCP sockets; required network ib"]
    assert rank(facts, pid=117953)["nics"] == ["mlx5_1:1/IB"]


def test_no_info_lines_cannot_prove_anything():
    facts = T.parse(results("cscs_gh200_all_reduce_srun_2.17.1.txt"))
    assert facts["lines"] == 0
    assert T.check(facts, {"network": "ib", "gdr": True}) == [
        "the transport requirement network=ib, gdr=true cannot be proven: NCCL printed no INFO lines "
        "(NCCL_DEBUG=INFO did not reach the ranks, or NCCL_DEBUG_FILE sent them elsewhere)"]


def test_a_single_node_log_does_not_prove_a_network():
    facts = T.parse(info("sidero566_p2p_cumem.txt"))
    assert rank(facts, 5)["transports"] == {"P2P/CUMEM": 1}
    failures = T.check(facts, {"network": "ib", "gdr": True, "all_ranks": False})
    assert failures == [
        "no rank reported a network transport, so network=ib is not proven (a single-node run uses none: require "
        "a network on multi-node runs)",
        "no rank printed a channel over the network, so gdr=true is not proven (NCCL_DEBUG_SUBSYS must include INIT; "
        "a single-node run has no network channel)"]


def test_no_requirement_checks_nothing():
    assert T.check(T.parse(info("issue166_socket_channels.txt")), {}) == []
    assert T.normalize_requirement({"gdr": False}) is None


@pytest.mark.parametrize("require, message", [
    ({"netwrk": "ib"}, "require_transport has unknown keys netwrk"),
    ({"gdr": "yes"}, "require_transport.gdr must be true or false, got 'yes'"),
    ({"min_nics": 0}, "require_transport.min_nics must be a positive integer, got 0"),
    ("ib", "require_transport must be a mapping"),
])
def test_bad_requirement_is_refused(require, message):
    with pytest.raises(T.TransportError) as err:
        T.normalize_requirement(require)
    assert message in str(err.value)


def test_ibext_plugin_counts_as_ib():
    assert T.normalize_requirement({"network": "IBext_v8"})["network"] == "ib"


# --------------------------------------------------------------------------- the results stay as they were

def test_info_lines_do_not_change_the_parsed_results():
    """INFO lines interleaved with a real table (the EKS output has them inside it) leave the rows alone."""
    table = results("cscs_gh200_all_reduce_srun_2.17.1.txt")
    noise = info("aks_ib_gdrdma_2nodes.txt").splitlines()
    lines = table.splitlines()
    mixed = []
    for i, line in enumerate(lines):
        mixed.append(line)
        mixed.append(noise[i % len(noise)])
    clean, dirty = NP.parse_text(table), NP.parse_text("\n".join(mixed))
    assert clean["rows"] and dirty["rows"] == clean["rows"]
    assert dirty["devices"] == clean["devices"] and dirty["problems"] == [] and dirty["footer"]
    assert G.summarize(dirty) == G.summarize(clean)
    assert T.parse("\n".join(mixed))["transports"] == ["NET/IB"]


# --------------------------------------------------------------------------- environment

def test_debug_environment_raises_the_level_and_adds_the_subsystems():
    env, notes = T.debug_environment({"NCCL_DEBUG": "WARN", "NCCL_IB_HCA": "mlx5"})
    assert env == {"NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5"}    # NCCL's default subsystems include INIT
    assert notes == ["NCCL_DEBUG=WARN was raised to INFO to prove the transport"]
    env, notes = T.debug_environment({"NCCL_DEBUG": "info", "NCCL_DEBUG_SUBSYS": "COLL"})
    assert env["NCCL_DEBUG"] == "info" and env["NCCL_DEBUG_SUBSYS"] == "COLL,INIT"
    assert notes == ["NCCL_DEBUG_SUBSYS=COLL was extended with INIT to prove the transport"]
    env, notes = T.debug_environment({"NCCL_DEBUG_SUBSYS": "INIT,NET"})
    assert env == {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET"}
    assert notes == ["NCCL_DEBUG=unset was raised to INFO to prove the transport"]
    assert T.debug_environment({"NCCL_DEBUG_SUBSYS": "ALL"})[0]["NCCL_DEBUG_SUBSYS"] == "ALL"


def test_debug_file_is_refused():
    with pytest.raises(T.TransportError) as err:
        T.debug_environment({"NCCL_DEBUG_FILE": "/tmp/nccl.%h.%p"})
    assert "remove NCCL_DEBUG_FILE" in str(err.value)
