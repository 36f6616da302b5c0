# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run fio until a stop file appears, then end it the way Ctrl-C does.

A failover test does not know in advance how long its rounds take. fio runs
``time_based`` with a long runtime; when the playbook is done it creates the stop file,
and fio gets SIGINT: it stops its jobs and still prints its JSON results (with any
verify error), so the run costs what the rounds cost. Only the fio process started here
is signalled, by its own pid. Runs on managed nodes: Python 3.9+, standard library only.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import time

# After SIGINT fio finishes its in-flight I/O and writes its results; give it this long
# before it is killed.
GRACE_S = 60


def run_until_stop_file(argv, env, stop_file, timeout, poll_s=0.5, clock=time.monotonic, sleep=time.sleep,
                        popen=subprocess.Popen):
    """Run argv; SIGINT it when stop_file exists or after timeout seconds (0: no limit).

    Returns a dict: rc, stdout, stderr, stopped (the stop file ended it), timed_out,
    seconds (how long fio ran). A stale stop file is removed before fio starts, and the
    stop file is removed after fio ended.
    """
    _remove(stop_file)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = clock()
        proc = popen(argv, stdout=out, stderr=err, env=env)
        stopped = timed_out = False
        while proc.poll() is None:
            if os.path.exists(stop_file):
                stopped = True
            elif timeout and clock() - start >= timeout:
                timed_out = True
            if stopped or timed_out:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(timeout=GRACE_S)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                break
            sleep(poll_s)
        seconds = round(clock() - start, 1)
        out.seek(0)
        err.seek(0)
        result = {"rc": proc.returncode, "stdout": out.read().decode("utf-8", "replace"),
                  "stderr": err.read().decode("utf-8", "replace"), "stopped": stopped, "timed_out": timed_out,
                  "seconds": seconds}
    _remove(stop_file)
    return result


def _remove(path):
    try:
        os.unlink(path)
    except OSError:
        pass
