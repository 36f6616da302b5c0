# -*- coding: utf-8 -*-
"""run_until_stop_file: a FAKE fio (a Python stand-in that, like fio 3.33, prints
"fio: terminating on signal 2" and its JSON results after SIGINT and exits 128) is ended
when the stop file appears, or when the timeout passes; a stale stop file does not end a
new run at once."""

from __future__ import annotations

import json
import os
import sys
import threading
import time

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fio_stop import run_until_stop_file

FAKE_FIO = r"""
import json, signal, sys, time
stop = []
signal.signal(signal.SIGINT, lambda *_: stop.append(1))
start = time.time()
while not stop and time.time() - start < float(sys.argv[1]):
    time.sleep(0.02)
if stop:
    sys.stdout.write("\nfio: terminating on signal 2\n")
sys.stdout.write(json.dumps({"fio version": "fio-3.33", "jobs": [{"jobname": "aiinfra", "error": 0}]}))
sys.exit(128 if stop else 0)
"""


def fake(tmp_path, runs_s):
    script = tmp_path / "fake_fio.py"
    script.write_text(FAKE_FIO)
    return [sys.executable, str(script), str(runs_s)]


def test_the_stop_file_ends_fio_with_sigint_and_keeps_its_results(tmp_path):
    stop = str(tmp_path / "stop")
    threading.Timer(0.5, lambda: open(stop, "w").close()).start()
    began = time.monotonic()
    run = run_until_stop_file(fake(tmp_path, 30), dict(os.environ), stop, timeout=60, poll_s=0.05)
    assert time.monotonic() - began < 10
    assert run["stopped"] and not run["timed_out"] and run["rc"] == 128
    assert "terminating on signal 2" in run["stdout"]
    assert json.loads(run["stdout"][run["stdout"].index("{"):])["jobs"][0]["error"] == 0
    assert not os.path.exists(stop)


def test_without_the_stop_file_fio_ends_by_itself(tmp_path):
    run = run_until_stop_file(fake(tmp_path, 0.2), dict(os.environ), str(tmp_path / "stop"), timeout=60, poll_s=0.05)
    assert run["rc"] == 0 and not run["stopped"] and not run["timed_out"]


def test_the_timeout_ends_fio_and_says_so(tmp_path):
    run = run_until_stop_file(fake(tmp_path, 30), dict(os.environ), str(tmp_path / "stop"), timeout=0.5, poll_s=0.05)
    assert run["timed_out"] and not run["stopped"] and run["rc"] == 128


def test_a_stale_stop_file_is_removed_before_fio_starts(tmp_path):
    stop = tmp_path / "stop"
    stop.write_text("")
    run = run_until_stop_file(fake(tmp_path, 0.3), dict(os.environ), str(stop), timeout=60, poll_s=0.05)
    assert not run["stopped"] and run["rc"] == 0 and run["seconds"] >= 0.2
