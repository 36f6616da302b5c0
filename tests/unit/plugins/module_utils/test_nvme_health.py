"""nvme/health.py: configured paths against a FAKE sysfs (nvme_multipath_fake's two-path tree,
each fabrics controller also under class/nvme-fabrics/ctl as on Linux 6.12), and the records
the nvmeof_initiator role writes. The lab runs it on the real kernel (molecule nvmeof_multipath)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import health
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs

sys.path.insert(0, os.path.dirname(__file__))
from nvme_multipath_fake import NQN, two_path_tree, write  # noqa: E402

PATH_A = {"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "nqn": NQN, "host_traddr": "", "host_iface": ""}
PATH_B = dict(PATH_A, traddr="10.99.1.1")


def fabrics(root, controllers=(1, 2), loss="600", hostnqn="nqn.2014-08.org.nvmexpress:uuid:te2"):
    """Make the fake's controllers fabrics controllers: the attributes FabricsSysfs reads, and
    class/nvme-fabrics/ctl/nvme<C> linked to class/nvme/nvme<C>, as the kernel links them."""
    ctl = os.path.join(str(root), "sys", "class", "nvme-fabrics", "ctl")
    os.makedirs(ctl, exist_ok=True)
    for c in controllers:
        base = "sys/class/nvme/nvme%d" % c
        write(root, base + "/subsysnqn", NQN)
        write(root, base + "/hostnqn", hostnqn)
        write(root, base + "/ctrl_loss_tmo", loss)
        write(root, base + "/reconnect_delay", "2")
        write(root, base + "/fast_io_fail_tmo", "off")
        write(root, base + "/kato", "5")
        os.symlink(os.path.join("..", "..", "nvme", "nvme%d" % c), os.path.join(ctl, "nvme%d" % c))
    return FabricsSysfs(sys_root=os.path.join(str(root), "sys"))


def judge(root, paths, controllers=(1, 2), **tree):
    multipath = two_path_tree(root, **tree)
    sysfs = fabrics(root, controllers)
    configured = health.configured_from_records([("rec.json", {"connections": paths})])
    return health.host_health(configured, sysfs.controllers(), multipath.subsystems())


def test_two_live_optimized_paths_are_ok(tmp_path):
    result = judge(tmp_path, [PATH_A, PATH_B])
    assert result["status"] == "ok"
    assert result["problems"] == [] and result["degraded"] == []
    sub = result["subsystems"][0]
    assert (sub["configured_paths"], sub["live_paths"], sub["usable_paths"]) == (2, 2, 2)
    assert sub["subsystem"] == "nvme-subsys1" and sub["heads"] == ["nvme1n1", "nvme1n2"]
    first = sub["paths"][0]
    assert first["controller"] == "nvme1" and first["state"] == "live"
    assert first["ana_states"] == {"nvme1n1": "optimized", "nvme1n2": "non-optimized"}
    assert (first["ctrl_loss_tmo"], first["reconnect_delay"], first["fast_io_fail_tmo"], first["keep_alive_tmo"]) == (
        600, 2, "off", 5)
    # The local PCIe drive is no fabrics controller: not listed at all.
    assert result["other_controllers"] == []
    assert health.summary_line(result) == "ok, 1 subsystem, 2/2 paths usable"


def test_a_path_the_kernel_removed_is_missing_and_the_subsystem_degraded(tmp_path):
    # Controller 2 is gone from sysfs (the kernel removed it after a DNR status).
    result = judge(tmp_path, [PATH_A, PATH_B], controllers=(1,))
    sub = result["subsystems"][0]
    assert result["status"] == "degraded" and result["degraded"] == [NQN]
    assert sub["paths"][1]["state"] == "missing" and sub["paths"][1]["controller"] is None
    assert sub["usable_paths"] == 1
    assert result["problems"][0].startswith(NQN + " tcp 10.99.1.1:4420: missing: the kernel holds no controller")
    assert "1 of 2 configured paths usable" in result["problems"][1]
    assert health.summary_line(result).startswith("degraded, 1 subsystem, 1/2 paths usable; ")


def test_a_reconnecting_path_is_live_no_more(tmp_path):
    result = judge(tmp_path, [PATH_A, PATH_B], second_state="connecting")
    path = result["subsystems"][0]["paths"][1]
    assert result["status"] == "degraded"
    assert path["state"] == "connecting" and path["usable"] is False
    assert "reconnecting" in path["problem"]
    assert result["subsystems"][0]["live_paths"] == 1


def test_a_live_path_in_an_inaccessible_ana_group_is_not_usable(tmp_path):
    result = judge(tmp_path, [PATH_A, PATH_B], second_ana="inaccessible")
    sub = result["subsystems"][0]
    assert (sub["live_paths"], sub["usable_paths"], sub["status"]) == (2, 1, "degraded")
    assert "ANA state is nvme1n1 inaccessible" in sub["paths"][1]["problem"]


def test_min_live_paths_one_keeps_a_subsystem_with_one_usable_path_degraded_but_says_no_shortfall(tmp_path):
    multipath = two_path_tree(tmp_path)
    sysfs = fabrics(tmp_path, (1,))
    configured = health.configured_from_params([{"nqn": NQN, "min_live_paths": 1, "paths": [PATH_A, PATH_B]}])
    result = health.host_health(configured, sysfs.controllers(), multipath.subsystems())
    sub = result["subsystems"][0]
    # A configured path is still missing: degraded, but no line about min_live_paths.
    assert sub["status"] == "degraded" and sub["min_live_paths"] == 1
    assert not any("min_live_paths" in line for line in sub["problems"])


def test_no_usable_path_is_down(tmp_path):
    result = judge(tmp_path, [PATH_A, PATH_B], controllers=())
    assert result["status"] == "down"
    assert result["subsystems"][0]["usable_paths"] == 0


def test_controllers_of_another_tool_are_listed_and_never_judged(tmp_path):
    result = judge(tmp_path, [PATH_A])
    assert result["status"] == "ok"
    assert result["other_controllers"] == [{"controller": "nvme2", "nqn": NQN, "transport": "tcp",
                                            "traddr": "10.99.1.1", "trsvcid": "4420", "state": "live"}]


def test_a_path_recorded_with_another_host_identity_does_not_match_this_hosts_controller(tmp_path):
    other = dict(PATH_A, hostnqn="nqn.2014-08.org.nvmexpress:uuid:tenant-b")
    result = judge(tmp_path, [PATH_A, other])
    paths = result["subsystems"][0]["paths"]
    assert paths[0]["state"] == "live" and paths[1]["state"] == "missing"
    assert paths[1]["label"].endswith(" as nqn.2014-08.org.nvmexpress:uuid:tenant-b")


def test_records_are_read_each_path_once_and_a_damaged_record_is_named(tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    (records / "nvmeof_initiator-aaa.json").write_text(json.dumps({"connections": [PATH_A, PATH_B]}))
    (records / "nvmeof_initiator-bbb.json").write_text(json.dumps({"connections": [PATH_B]}))
    (records / "other-tool.json").write_text("not ours")
    configured = health.configured_from_records(health.read_records(str(records)))
    assert [len(c["paths"]) for c in configured] == [2]
    assert [os.path.basename(s) for s in configured[0]["sources"]] == ["nvmeof_initiator-aaa.json",
                                                                       "nvmeof_initiator-bbb.json"]
    (records / "nvmeof_initiator-ccc.json").write_text("{cut")
    with pytest.raises(health.HealthError, match="cannot read the nvmeof_initiator record .*ccc.json"):
        health.read_records(str(records))


def test_no_records_is_unconfigured(tmp_path):
    result = health.host_health(health.configured_from_records(health.read_records(str(tmp_path))), [], [])
    assert result["status"] == "unconfigured"
    assert "no configured NVMe-oF paths" in health.summary_line(result)


def test_the_report_fails_a_degraded_subsystem_naming_host_subsystem_and_path(tmp_path):
    from report_doc import report_document  # tests/unit/plugins/module_utils/report_doc.py
    from ansible_collections.aiinfra.fabric.plugins.module_utils.report.summary import summary_lines

    degraded = judge(tmp_path / "a", [PATH_A, PATH_B], controllers=(1,))
    degraded["summary"] = health.summary_line(degraded)
    ok = judge(tmp_path / "b", [PATH_A, PATH_B])
    ok["summary"] = health.summary_line(ok)
    facts = {"te2": {"fabric_health_result": degraded}, "te3": {"fabric_health_result": ok}}
    doc = report_document(facts)
    failed = [c for c in doc["checks"] if c["status"] == "fail"]
    assert len(failed) == 1, doc["checks"]
    assert failed[0]["host"] == "te2"
    assert failed[0]["labels"] == {"subsystem": NQN}
    assert "unusable_paths = 1, expected 0" in failed[0]["message"]
    assert "tcp 10.99.1.1:4420: missing" in failed[0]["message"]
    passed = [c for c in doc["checks"] if c["host"] == "te3"]
    assert [c["status"] for c in passed] == ["pass"]
    lines = summary_lines(facts)
    assert any(line.startswith("te2") and "Fabric health: degraded, 1 subsystem, 1/2 paths usable" in line
               for line in lines), lines


def test_the_targets_view_names_each_host_and_its_paths_state(tmp_path):
    from ansible_collections.aiinfra.fabric.plugins.filter.fabric_health_connections import fabric_health_connections

    te2 = judge(tmp_path / "a", [PATH_A, PATH_B], controllers=(1,))
    te3 = judge(tmp_path / "b", [PATH_A])
    hostvars = {"te2": {"fabric_health_result": te2}, "te3": {"fabric_health_result": te3}, "te9": {}}
    lines = fabric_health_connections(["te2", "te3", "te9"], hostvars)
    assert lines == [
        NQN + " tcp 10.99.0.1:4420: te2 live, te3 live",
        NQN + " tcp 10.99.1.1:4420: te2 missing, te3 live (not configured by aiinfra.fabric)",
    ]
