# -*- coding: utf-8 -*-
"""nvme_health module glue: the records or the given subsystems, read only, on a temporary
sysfs tree (the fake of tests/unit/plugins/module_utils/nvme_multipath_fake.py)."""

from __future__ import annotations

import json
import os
import sys

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import multipath, sysfs
from ansible_collections.aiinfra.fabric.plugins.modules import nvme_health
from module_harness import run_main  # tests/unit/plugins/modules/module_harness.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
from nvme_multipath_fake import NQN, two_path_tree  # noqa: E402
from test_nvme_health import PATH_A, PATH_B, fabrics  # noqa: E402


def run(monkeypatch, tmp_path, args, controllers=(1, 2), build=True):
    if build:
        two_path_tree(tmp_path)
        fabrics(tmp_path, controllers)
    sys_root = os.path.join(str(tmp_path), "sys")
    real_mp, real_fab = multipath.MultipathSysfs, sysfs.FabricsSysfs
    monkeypatch.setattr(nvme_health, "MultipathSysfs", lambda: real_mp(sys_root=sys_root))
    monkeypatch.setattr(nvme_health, "FabricsSysfs", lambda: real_fab(sys_root=sys_root))
    return run_main(monkeypatch, nvme_health, args)


def snapshot(root):
    out = {}
    for base, _dirs, files in os.walk(str(root)):
        for name in files:
            if os.path.islink(os.path.join(base, name)):
                continue
            with open(os.path.join(base, name)) as handle:
                out[os.path.join(base, name)] = handle.read()
    return out


def test_reads_the_records_and_reports_a_missing_path_changing_nothing(monkeypatch, tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    (records / "nvmeof_initiator-0123.json").write_text(json.dumps({"connections": [PATH_A, PATH_B]}))
    result = run(monkeypatch, tmp_path, {"record_dir": str(records)}, controllers=(1,))
    assert result["changed"] is False and not result.get("failed")
    health = result["nvme_health"]
    assert health["status"] == "degraded"
    assert health["summary"].startswith("degraded, 1 subsystem, 1/2 paths usable; " + NQN + " tcp 10.99.1.1:4420: missing")


def test_given_subsystems_are_judged_instead_of_the_records(monkeypatch, tmp_path):
    paths = [{"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420"},
             {"transport": "tcp", "traddr": "10.99.1.1", "trsvcid": "4420"}]
    args = {"record_dir": str(tmp_path / "none"), "_ansible_check_mode": True,
            "subsystems": [{"nqn": NQN, "paths": paths}]}
    two_path_tree(tmp_path)
    fabrics(tmp_path)
    before = snapshot(tmp_path)
    assert len(before) > 20
    result = run(monkeypatch, tmp_path, args, build=False)
    assert result["nvme_health"]["status"] == "ok"
    assert result["nvme_health"]["subsystems"][0]["sources"] == ["subsystems"]
    assert snapshot(tmp_path) == before


def test_a_damaged_record_fails_with_its_name(monkeypatch, tmp_path):
    records = tmp_path / "records"
    records.mkdir()
    (records / "nvmeof_initiator-0123.json").write_text("{")
    result = run(monkeypatch, tmp_path, {"record_dir": str(records)})
    assert result["failed"] is True
    assert "nvmeof_initiator-0123.json" in result["msg"]
