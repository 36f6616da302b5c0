"""run_job stops the whole job however the module ends: its own timeout, a signal
(SIGTERM/SIGINT/SIGHUP, as AWX's cancel or a shell's Ctrl-C), or SIGKILL (what
Ansible's async_wrapper sends to the module's process group at an async timeout).

The "module" here is a child Python process calling run_job, so it can be
signalled and killed like the real one; the job is a shell with a background
child, both in the job's own session (as mpirun and its ranks are).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner as R

MODULE = r'''
import json, sys
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner as R
token = sys.argv[1]
# The "launcher" and a "rank" it started in the background, both marked with the token.
res = R.run_job(["sh", "-c", "sleep 300 %s & sleep 300 %s; wait" % (token, token)], grace=1)
print(json.dumps(res))
'''


def _processes_with(token):
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if token in cmdline and "python" not in cmdline:
            found.append(int(entry))
    return found


def _start_module(processes=2, poll=0.1):
    """Start the "module" and return once ``processes`` job processes exist."""
    # sleep adds its arguments: a unique fraction of a second marks this test's processes.
    token = "0.%012d" % (uuid.uuid4().int % 10 ** 12)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    module = subprocess.Popen([sys.executable, "-c", MODULE, token], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env=env, start_new_session=True)
    deadline = time.time() + 20
    while time.time() < deadline and len(_processes_with(token)) < processes:
        time.sleep(poll)
    assert len(_processes_with(token)) >= processes, "the job did not start"
    return module, token


def _sigkill_module_and_expect_the_job_gone(module, token):
    try:
        os.killpg(module.pid, signal.SIGKILL)
        module.wait(timeout=10)
        left = _wait_gone(token)
        assert left == [], "job processes %s outlived the SIGKILLed module" % (left,)
    finally:
        _cleanup(token)


def _wait_gone(token, seconds=10):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if not _processes_with(token):
            return []
        time.sleep(0.2)
    return _processes_with(token)


def _cleanup(token):
    for pid in _processes_with(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_to_the_module_stops_the_whole_job(sig):
    module, token = _start_module()
    try:
        module.send_signal(sig)
        out, err = module.communicate(timeout=30)
        left = _wait_gone(token)
        assert left == [], "job processes %s outlived the module (signal %s)" % (left, sig)
        # The module got to report it: the job was cancelled by that signal, not timed out.
        result = json.loads(out.decode().strip().splitlines()[-1])
        assert result["cancelled"] == signal.Signals(sig).name, (out, err)
        assert result["timed_out"] is False
    finally:
        _cleanup(token)


def test_sigkill_of_the_module_stops_the_whole_job():
    # async_wrapper: os.killpg(module, SIGKILL); no handler can run, the guard must act.
    _sigkill_module_and_expect_the_job_gone(*_start_module())


def test_sigkill_the_moment_the_job_appears_still_stops_it():
    # The guard must already stand apart when the first job process exists: a guard
    # forked after the job, still in the module's process group, died with the module
    # (CI, under load: "job processes [...] outlived the SIGKILLed module").
    for _round in range(5):
        _sigkill_module_and_expect_the_job_gone(*_start_module(processes=1, poll=0.005))


def test_a_launcher_that_cannot_start_leaves_no_guard_behind():
    with pytest.raises(OSError):
        R.run_job(["/nonexistent/launcher-%s" % uuid.uuid4().hex])
    # The guard was reaped: no zombie or live child of this process is left.
    assert [pid for pid, (ppid, _sid) in R._proc_table().items() if ppid == os.getpid()] == []


def test_a_job_that_ends_normally_leaves_the_guard_quiet(tmp_path):
    # The guard must not kill anything once the job has ended by itself (a new job
    # started later in a reused session id must never be its target).
    res = R.run_job([sys.executable, "-c", "print('done')"])
    assert res["rc"] == 0 and res["stdout"].strip() == "done"
    assert res["cancelled"] is None and res["timed_out"] is False
