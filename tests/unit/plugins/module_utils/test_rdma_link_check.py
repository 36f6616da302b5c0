# -*- coding: utf-8 -*-
"""Unit tests for nvme.rdma_link_check: the soft_roce role's probe lines (written here the way
roles/soft_roce/files/probe.sh prints them on a host; the rdma JSON is the shape of
iproute2's `rdma -j link show` for a soft-RoCE link) judged against rdma_link's own plan."""

from __future__ import annotations

import hashlib
import json

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import rdma_link_check
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.rdma_link import boot_unit_text

PARAMS = dict(name="rxe0", netdev="eth1", type="rxe", when_hardware="skip", persistent=True,
              unit_name="aiinfra-soft-roce-rxe0.service", state="present")
UNIT = "/etc/systemd/system/aiinfra-soft-roce-rxe0.service"
LINK = dict(ifindex=1, ifname="rxe0", port=1, state="ACTIVE", physical_state="LINK_UP", netdev="eth1", netdev_index=3)


def lines(links=(LINK,), unit_text=None, enablement="enabled", devices=("virt rxe0",)):
    text = boot_unit_text("rxe0", "eth1", "rxe") if unit_text is None else unit_text
    out = ["s 644 root root f %s" % UNIT, "h %s  %s" % (hashlib.sha256(text.encode()).hexdigest(), UNIT),
           "u %s active aiinfra-soft-roce-rxe0.service" % enablement,
           "rdmajson " + json.dumps(list(links))]
    return out + ["ibdev " + d for d in devices]


def test_probe_args_read_the_unit_file_and_state():
    assert rdma_link_check.probe_args(PARAMS) == ["f:" + UNIT, "u:aiinfra-soft-roce-rxe0.service"]
    assert rdma_link_check.probe_args(dict(PARAMS, persistent=False)) == []


def test_link_and_unit_in_place_is_not_pending_and_gives_the_module_result():
    out = rdma_link_check.check(PARAMS, lines())
    assert out["pending"] == []
    assert out["result"]["link"] == dict(name="rxe0", port=1, state="ACTIVE", physical_state="LINK_UP", netdev="eth1")
    assert out["result"]["boot_unit"] == "aiinfra-soft-roce-rxe0.service"
    assert out["result"]["skipped_for_hardware"] is False and out["result"]["changed"] is False


def test_a_missing_link_is_pending():
    out = rdma_link_check.check(PARAMS, lines(links=[], devices=()))
    assert out["pending"] == ["link rxe0: add"] and out["result"] is None


def test_a_link_on_another_netdev_is_left_to_the_module():
    out = rdma_link_check.check(PARAMS, lines(links=[dict(LINK, netdev="eth2")]))
    assert len(out["pending"]) == 1 and out["pending"][0].startswith("link: RDMA link rxe0 exists on netdev eth2")


def test_a_changed_or_disabled_unit_is_pending():
    assert rdma_link_check.check(PARAMS, lines(unit_text="edited\n"))["pending"] == [UNIT + ": content differs"]
    assert rdma_link_check.check(PARAMS, lines(enablement="disabled"))["pending"] == [
        "unit aiinfra-soft-roce-rxe0.service: disabled, wants enabled"]


def test_hardware_with_skip_is_not_pending_and_says_so():
    out = rdma_link_check.check(PARAMS, lines(links=[], devices=("hw mlx5_0",)))
    assert out["pending"] == [] and out["result"]["skipped_for_hardware"] is True
    assert out["result"]["hardware_devices"] == ["mlx5_0"]
    assert rdma_link_check.check(dict(PARAMS, when_hardware="create"), lines(links=[], devices=("hw mlx5_0",)))[
        "pending"] == ["link rxe0: add"]


def test_doubt_runs_the_module():
    assert rdma_link_check.check(PARAMS, lines()[:2])["pending"] == ["rdma link show was not probed"]
    assert rdma_link_check.check(dict(PARAMS, force=True), lines())["pending"]
    assert rdma_link_check.check(dict(PARAMS, state="absent"), lines())["pending"]
    assert rdma_link_check.check(dict(PARAMS, netdev="bad name"), lines())["pending"][0].startswith("arguments refused")
    assert rdma_link_check.check(PARAMS, ["rdmajson {not json"])["pending"][0].startswith("link: cannot parse")
