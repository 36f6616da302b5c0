# -*- coding: utf-8 -*-
"""fio_run glue for timeline_interval_ms: the IOPS-log options reach fio, the logs fio
wrote are read back as a timeline with its pauses, and the temporary folder is removed.
fio itself is replaced by a stand-in that writes a log the way fio 3.33 does."""

from __future__ import annotations

import json
import os

from ansible_collections.aiinfra.fabric.plugins.modules import fio_run
from module_harness import fake_bin_path, run_main  # tests/unit/plugins/modules/module_harness.py

T0 = 1764560000000
FIO_JSON = json.dumps({"fio version": "fio-3.33", "jobs": [
    {"jobname": "aiinfra", "error": 0, "write": {"iops": 100.0, "bw_bytes": 409600, "io_bytes": 4096000,
                                                  "total_ios": 1000, "runtime": 10000}}]})


def run(monkeypatch, args, log_rows=None):
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        prefix = [a.split("=", 1)[1] for a in argv if a.startswith("--write_iops_log=")]
        if prefix and log_rows is not None:
            with open(prefix[0] + "_iops.1.log", "w") as handle:
                handle.writelines("%d, %d, %d, 4096, 0, 0\n" % row for row in log_rows)
        return 0, FIO_JSON, ""

    monkeypatch.setattr(fio_run.AnsibleModule, "run_command", run_command)
    fake_bin_path(monkeypatch, fio_run)
    result = run_main(monkeypatch, fio_run, dict({"filename": "/dev/nvme1n1"}, **args))
    return result, calls


def test_timeline_and_pause_from_the_iops_log(monkeypatch):
    rows = [(T0 + i * 500, iops, 1) for i, iops in enumerate([80, 80, 0, 0, 0, 0, 0, 0, 75, 80])]
    result, calls = run(monkeypatch, {"timeline_interval_ms": 500}, rows)
    assert not result.get("failed"), result
    argv = calls[0]
    assert "--log_avg_msec=500" in argv and "--log_unix_epoch=1" in argv
    log_dir = os.path.dirname([a for a in argv if a.startswith("--write_iops_log=")][0].split("=", 1)[1])
    assert not os.path.exists(log_dir)
    assert len(result["timeline"]["points"]) == 10
    assert result["timeline"]["pauses"] == [{"start_ms": T0 + 500, "end_ms": T0 + 4000, "seconds": 3.5}]
    assert result["timeline"]["longest_pause_s"] == 3.5


def test_no_timeline_unless_asked(monkeypatch):
    result, calls = run(monkeypatch, {})
    assert "timeline" not in result
    assert not [a for a in calls[0] if a.startswith("--write_iops_log")]


def test_negative_interval_is_refused_before_fio_runs(monkeypatch):
    result, calls = run(monkeypatch, {"timeline_interval_ms": -1})
    assert result["failed"] and "timeline_interval_ms=-1" in result["msg"] and calls == []


def test_a_run_ended_by_the_stop_file_is_not_a_failure(monkeypatch):
    def stopped(argv, env, stop_file, timeout):
        return {"rc": 128, "stdout": "\nfio: terminating on signal 2\n" + FIO_JSON, "stderr": "", "stopped": True,
                "timed_out": False, "seconds": 42.0}

    monkeypatch.setattr(fio_run, "run_until_stop_file", stopped)
    result, calls = run(monkeypatch, {"stop_file": "/run/stop-fio"})
    # rc 128 stays fio's own; failed=false is explicit, or Ansible would take the rc for a failure
    # (lab: async_status said "Action failed" on exactly this result).
    assert result["failed"] is False and result["rc"] == 128, result
    assert result["stopped"] is True and result["seconds"] == 42.0 and calls == []


def test_rc_128_without_the_stop_file_is_a_failure(monkeypatch):
    def interrupted(argv, env, stop_file, timeout):
        return {"rc": 128, "stdout": FIO_JSON, "stderr": "", "stopped": False, "timed_out": False, "seconds": 1.0}

    monkeypatch.setattr(fio_run, "run_until_stop_file", interrupted)
    result, _calls = run(monkeypatch, {"stop_file": "/run/stop-fio"})
    assert result["failed"] and "rc=128" in result["msg"]


def test_a_run_the_stop_file_never_ended_fails_on_its_timeout(monkeypatch):
    def late(argv, env, stop_file, timeout):
        return {"rc": 128, "stdout": FIO_JSON, "stderr": "", "stopped": False, "timed_out": True, "seconds": 9.0}

    monkeypatch.setattr(fio_run, "run_until_stop_file", late)
    result, _calls = run(monkeypatch, {"stop_file": "/run/stop-fio", "timeout": 9})
    assert result["failed"] and "timeout=9" in result["msg"] and "/run/stop-fio never appeared" in result["msg"]
