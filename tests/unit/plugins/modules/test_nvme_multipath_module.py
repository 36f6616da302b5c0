# -*- coding: utf-8 -*-
"""nvme_multipath module glue: refusals before any write, check mode, changed from the
plan, the wait for live paths; on a temporary sysfs tree (the layout of the fake in
tests/unit/plugins/module_utils/test_nvme_multipath.py)."""

from __future__ import annotations

import os
import sys

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import multipath
from ansible_collections.aiinfra.fabric.plugins.modules import nvme_multipath
from module_harness import run_main  # tests/unit/plugins/modules/module_harness.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
from nvme_multipath_fake import NQN, two_path_tree, write  # noqa: E402


def run(monkeypatch, tmp_path, args, release="6.12.48+deb12-amd64", native="Y", second_state="live"):
    two_path_tree(tmp_path, second_state=second_state)
    if native is not None:
        write(tmp_path, "sys/module/nvme_core/parameters/multipath", native)
    real = multipath.MultipathSysfs
    sys_root = os.path.join(str(tmp_path), "sys")
    dev_root = os.path.join(str(tmp_path), "dev")
    monkeypatch.setattr(nvme_multipath, "MultipathSysfs", lambda: real(sys_root=sys_root, dev_root=dev_root))
    # A real os.uname_result: the patch reaches every user of os (ctypes.util reads .machine).
    fake = os.uname_result(("Linux", "te2", release, "#1", "x86_64"))
    monkeypatch.setattr(nvme_multipath.os, "uname", lambda: fake)
    return run_main(monkeypatch, nvme_multipath, args)


def iopolicy(tmp_path):
    with open(os.path.join(str(tmp_path), "sys/class/nvme-subsystem/nvme-subsys1/iopolicy")) as handle:
        return handle.read().strip()


def test_sets_round_robin_then_reports_no_change(monkeypatch, tmp_path):
    result = run(monkeypatch, tmp_path, {"nqn": [NQN], "iopolicy": "round-robin", "_ansible_diff": True})
    assert result["changed"] is True and not result.get("failed")
    assert result["operations"] == ["nvme-subsys1 iopolicy numa -> round-robin"]
    assert result["diff"] == {"before": {"iopolicy": {NQN: "numa"}}, "after": {"iopolicy": {NQN: "round-robin"}}}
    assert iopolicy(tmp_path) == "round-robin"
    assert [h["path"] for h in result["subsystems"][0]["heads"]] == ["/dev/nvme1n1", "/dev/nvme1n2"]


def test_check_mode_writes_nothing(monkeypatch, tmp_path):
    result = run(monkeypatch, tmp_path, {"nqn": [NQN], "iopolicy": "round-robin", "_ansible_check_mode": True})
    assert result["changed"] is True and result["subsystems"][0]["iopolicy"] == "round-robin"
    assert iopolicy(tmp_path) == "numa"


def test_queue_depth_on_an_old_kernel_is_refused_before_any_write(monkeypatch, tmp_path):
    result = run(monkeypatch, tmp_path, {"nqn": [NQN], "iopolicy": "queue-depth"}, release="6.1.0-28-amd64")
    assert result["failed"] and "Linux 6.11" in result["msg"]
    assert iopolicy(tmp_path) == "numa"


def test_multipath_off_is_an_error_unless_allowed(monkeypatch, tmp_path):
    result = run(monkeypatch, tmp_path, {"nqn": [NQN], "iopolicy": "round-robin"}, native="N")
    assert result["failed"] and "multipath=N" in result["msg"] and "modprobe.d" in result["msg"]
    assert iopolicy(tmp_path) == "numa"


def test_unknown_subsystem_and_bad_nqn(monkeypatch, tmp_path):
    result = run(monkeypatch, tmp_path, {"nqn": [NQN, "nqn.2024-04.io.aiinfra.lab:gone"]})
    assert result["failed"] and "not connected to nqn.2024-04.io.aiinfra.lab:gone" in result["msg"]
    result = run(monkeypatch, tmp_path / "b", {"nqn": ["not-an-nqn"]})
    assert result["failed"] and "not a valid NQN" in result["msg"]


def test_waits_for_live_paths_and_fails_with_what_is_missing(monkeypatch, tmp_path):
    # Without min_live_paths a lost path is only reported.
    result = run(monkeypatch, tmp_path / "a", {"nqn": [NQN]}, second_state="connecting")
    assert not result.get("failed") and result["waited_s"] == 0.0
    assert [p["state"] for p in result["subsystems"][0]["paths"]] == ["live", "connecting"]
    result = run(monkeypatch, tmp_path / "b", {"nqn": [NQN], "min_live_paths": 2, "wait_timeout": 1},
                 second_state="connecting")
    assert result["failed"] and "/dev/nvme1n1" in result["msg"] and "has 1 usable path(s), wanted 2" in result["msg"]
    assert result["waited_s"] >= 1
    result = run(monkeypatch, tmp_path / "c", {"nqn": [NQN], "min_live_paths": 2, "wait_timeout": 5})
    assert not result.get("failed") and result["waited_s"] < 1
