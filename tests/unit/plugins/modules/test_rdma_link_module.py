# -*- coding: utf-8 -*-
"""rdma_link module glue: check mode runs no change, changed comes from the plan, diff."""

from __future__ import annotations

import json

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aiinfra.fabric.plugins.modules import rdma_link

RXE0 = '[{"ifindex":0,"ifname":"rxe0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"eth1","netdev_index":3}]'


class Exit(Exception):
    pass


def run(monkeypatch, args, replies, hardware=None):
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        return replies.pop(0)

    result = {}

    def exit_json(self, **kw):
        result.update(kw)
        raise Exit()

    def fail_json(self, **kw):
        result.update(kw, failed=True)
        raise Exit()

    monkeypatch.setattr(rdma_link.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(rdma_link.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(rdma_link.AnsibleModule, "fail_json", fail_json)
    monkeypatch.setattr(rdma_link.AnsibleModule, "get_bin_path", lambda self, name, required=False: "/usr/bin/" + name)
    monkeypatch.setattr(rdma_link, "read_devices", lambda: hardware or {})
    with patch_module_args(args):
        with pytest.raises(Exit):
            rdma_link.main()
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
