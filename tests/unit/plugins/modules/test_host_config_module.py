# -*- coding: utf-8 -*-
"""host_config module glue on files under tmp_path (the module's root is "/", so the
paths are absolute tmp_path paths): check mode, converge, no-op, secrets kept out of the
result and the log, every argument error at once. No systemctl or modprobe runs: the
FAKE probe answers for units and modules, and run_command fails the test if called."""

from __future__ import annotations

import json
import os
import stat

from ansible.module_utils.common.parameters import remove_values

from ansible_collections.aiinfra.fabric.plugins.modules import host_config
from module_harness import run_main, tree_listing  # tests/unit/plugins/modules/module_harness.py

SECRET = "DHHC-1:00:c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0:"


class FakeProbe(object):
    """FAKE SystemProbe: nothing is loaded, no unit is known, enabled or active."""

    def __init__(self, run, systemctl, sys_root="/sys"):
        pass

    def loaded(self, name):
        return False

    def known_unit(self, name):
        return False

    def enabled(self, name):
        return False

    def can_disable(self, name):
        return False

    def active(self, name):
        return False


def run(monkeypatch, args, check=False, diff=False):
    """Run main(); return (result, argv of each command run, messages sent to the host's log).

    The result is masked with the module's no_log values as the real exit_json/fail_json
    mask it (the harness's fakes return it unmasked), and carries the invocation they add."""
    calls, logged, modules = [], [], []
    init = host_config.AnsibleModule.__init__

    def recording_init(self, *a, **kw):
        modules.append(self)
        init(self, *a, **kw)

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        raise AssertionError("host_config ran a command in a files-only test: %r" % (argv,))

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return "/usr/bin/" + name

    monkeypatch.setattr(host_config.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(host_config.AnsibleModule, "get_bin_path", get_bin_path)
    monkeypatch.setattr(host_config.AnsibleModule, "log", lambda self, msg, log_args=None: logged.append(
        (msg, log_args)))
    monkeypatch.setattr(host_config.AnsibleModule, "__init__", recording_init)
    monkeypatch.setattr(host_config, "SystemProbe", FakeProbe)
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    result = run_main(monkeypatch, host_config, args)
    result["invocation"] = dict(module_args=modules[0].params)
    return remove_values(result, modules[0].no_log_values), calls, logged


def files_args(tmp_path):
    return {
        "directories": [{"path": str(tmp_path / "srv" / "app"), "mode": "0700"}],
        "files": [{"path": str(tmp_path / "srv" / "app" / "app.conf"), "content": "a = 1\n", "mode": "0640"},
                  {"path": str(tmp_path / "srv" / "app" / "key"), "content": SECRET, "mode": "0600",
                   "secret": True}],
        "absent": [str(tmp_path / "old.conf")],
        "read": [str(tmp_path / "srv" / "app" / "app.conf"), str(tmp_path / "status.json")],
    }


def test_check_mode_changes_nothing_and_reports_the_operations(monkeypatch, tmp_path):
    (tmp_path / "old.conf").write_text("old\n")
    before = tree_listing(tmp_path)
    result, calls, logged = run(monkeypatch, files_args(tmp_path), check=True, diff=True)
    assert tree_listing(tmp_path) == before
    assert result["changed"] is True
    assert result["operations"] == [
        "mkdir %s 0755" % (tmp_path / "srv"),
        "mkdir %s 0700" % (tmp_path / "srv" / "app"),
        "create %s 0640 (6 bytes)" % (tmp_path / "srv" / "app" / "app.conf"),
        "create %s 0600 (%d bytes)" % (tmp_path / "srv" / "app" / "key", len(SECRET)),
        "remove %s" % (tmp_path / "old.conf"),
    ]
    assert str(tmp_path / "srv" / "app" / "key") in result["changed_paths"]
    assert result["diff"]["before"][str(tmp_path / "srv" / "app")] is None
    assert result["diff"]["after"][str(tmp_path / "old.conf")] is None
    assert result["diff"]["after"][str(tmp_path / "srv" / "app" / "app.conf")]["content"] == "a = 1\n"
    assert result["diff"]["after"][str(tmp_path / "srv" / "app" / "key")]["content"] == "(secret)"
    assert result["read"] == {str(tmp_path / "srv" / "app" / "app.conf"): None, str(tmp_path / "status.json"): None}
    assert SECRET not in str(result) and SECRET not in json.dumps(result)
    assert calls == []


def test_run_writes_files_then_second_run_is_unchanged(monkeypatch, tmp_path):
    (tmp_path / "old.conf").write_text("old\n")
    args = files_args(tmp_path)
    first, calls, logged = run(monkeypatch, args, diff=True)
    assert first["changed"] is True and "failed" not in first
    assert (tmp_path / "srv" / "app" / "app.conf").read_text() == "a = 1\n"
    assert (tmp_path / "srv" / "app" / "key").read_text() == SECRET
    assert stat.S_IMODE(os.lstat(str(tmp_path / "srv" / "app")).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(str(tmp_path / "srv" / "app" / "key")).st_mode) == 0o600
    assert not (tmp_path / "old.conf").exists()
    assert first["read"][str(tmp_path / "srv" / "app" / "app.conf")] == "a = 1\n"
    assert first["kernel_modules"] == {}
    assert SECRET not in str(first)
    second, calls, logged = run(monkeypatch, args, diff=True)
    assert second["changed"] is False and second["operations"] == [] and second["changed_paths"] == []
    assert second["diff"]["before"] == second["diff"]["after"]
    assert SECRET not in str(second)
    assert calls == []


def test_secret_content_is_not_in_the_result_nor_the_hosts_log(monkeypatch, tmp_path):
    args = {"files": [{"path": str(tmp_path / "key"), "content": SECRET, "mode": "0600", "secret": True}]}
    result, calls, logged = run(monkeypatch, args, diff=True)
    assert result["changed"] is True
    assert result["diff"]["after"][str(tmp_path / "key")]["content"] == "(secret)"
    assert SECRET not in str(result)
    assert logged, "the module logs its invocation on the host"
    assert SECRET not in str(logged)
    assert (tmp_path / "key").read_text() == SECRET


def test_bad_arguments_fail_with_every_problem_and_create_nothing(monkeypatch, tmp_path):
    args = {"directories": [{"path": str(tmp_path / "d"), "mode": "rwx"}],
            "files": [{"path": "relative/file", "content": "x"},
                      {"path": str(tmp_path / "f"), "content": "x", "owner": "no-such-user-hostconfig"}],
            "kernel_modules": ["bad module"],
            "units": [{"name": "not-a-unit", "enabled": True}]}
    result, calls, logged = run(monkeypatch, args)
    assert result["failed"] is True and result["changed"] is False
    assert len(result["errors"]) == 5
    for piece in ("'rwx' is not an octal mode", "'relative/file' must be absolute", "no-such-user-hostconfig",
                  "'bad module' is not a kernel module name", "'not-a-unit' is not a systemd unit name"):
        assert piece in result["msg"]
    assert result["operations"] == []
    assert os.listdir(str(tmp_path)) == []
    assert calls == []


def test_a_plan_error_fails_before_any_change(monkeypatch, tmp_path):
    (tmp_path / "dir").mkdir()
    args = {"directories": [{"path": str(tmp_path / "new")}], "absent": [str(tmp_path / "dir")]}
    result, calls, logged = run(monkeypatch, args)
    assert result["failed"] is True and result["changed"] is False
    assert "which is a directory" in result["msg"]
    assert sorted(os.listdir(str(tmp_path))) == ["dir"]


def test_argument_type_error_keeps_the_secret_out_of_the_result(monkeypatch, tmp_path):
    args = {"files": [{"path": str(tmp_path / "key"), "content": SECRET, "secret": True}],
            "units": [{"name": "x.service", "enabled": "maybe"}]}
    result, calls, logged = run(monkeypatch, args)
    assert result["failed"] is True and "enabled" in result["msg"]
    assert SECRET not in str(result)
    assert os.listdir(str(tmp_path)) == []
