# -*- coding: utf-8 -*-
"""rdma_link module glue: check mode runs no change, changed comes from the plan, diff."""

from __future__ import annotations

import json

from ansible_collections.aiinfra.fabric.plugins.modules import rdma_link
from module_harness import fake_bin_path, run_main  # tests/unit/plugins/modules/module_harness.py

RXE0 = '[{"ifindex":0,"ifname":"rxe0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"eth1","netdev_index":3}]'


def run(monkeypatch, args, replies, hardware=None):
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        return replies.pop(0)

    monkeypatch.setattr(rdma_link.AnsibleModule, "run_command", run_command)
    fake_bin_path(monkeypatch, rdma_link)
    monkeypatch.setattr(rdma_link, "read_devices", lambda: hardware or {})
    result = run_main(monkeypatch, rdma_link, args)
    return result, calls


def test_present_existing_link_is_unchanged(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe0", "netdev": "eth1"}, [(0, RXE0, "")])
    assert result["changed"] is False
    assert calls == [["/usr/bin/rdma", "-j", "link", "show"]]


def test_check_mode_reports_add_without_running_it(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe0", "netdev": "eth1", "_ansible_check_mode": True,
                                      "_ansible_diff": True}, [(0, "[]", "")])
    assert result["changed"] is True
    assert result["operations"] == [{"op": "add", "name": "rxe0", "type": "rxe", "netdev": "eth1"}]
    assert calls == [["/usr/bin/rdma", "-j", "link", "show"]]
    assert result["diff"]["before"] == {"link": None}
    assert result["diff"]["after"]["link"]["netdev"] == "eth1"


def test_add_runs_rdma_link_add_and_rereads(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe0", "netdev": "eth1"}, [(0, "[]", ""), (0, "", ""), (0, RXE0, "")])
    assert result["changed"] is True
    assert calls[1] == ["/usr/bin/rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "eth1"]
    assert result["link"]["state"] == "ACTIVE"


def test_hardware_skip_changes_nothing(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe0", "netdev": "eth1", "when_hardware": "skip"}, [(0, "[]", "")],
                        hardware={"mlx5_0": {"hardware": True, "driver": "mlx5_core"}})
    assert result["changed"] is False
    assert result["skipped_for_hardware"] is True
    assert result["hardware_devices"] == ["mlx5_0"]
    assert len(calls) == 1


def test_bad_name_fails_before_any_command(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe 0", "netdev": "eth1"}, [])
    assert result["failed"] is True
    assert "name='rxe 0'" in result["msg"]
    assert calls == []


def test_kernel_error_is_reported_with_output(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe1", "netdev": "eth2"},
                        [(0, "[]", ""), (1, "", "error: Operation not supported\n")])
    assert result["failed"] is True
    assert "Operation not supported" in result["msg"]
    assert json.dumps(result["cmd"]).count("rxe1") == 1
