# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Running a launcher (mpirun, srun, or one program) and making sure the whole job stops.

``run_job(argv, timeout=None, env=None, cwd=None, grace=5.0) -> {'rc', 'stdout', 'stderr',
'duration', 'timed_out', 'cancelled'}``

The job runs in its own session, so the launcher and its ranks outlive nothing by
accident and everything it started can be found again. It is stopped, on every
host, however the module ends:

- its own timeout: SIGTERM to the launcher (mpirun then stops its ranks everywhere,
  and its remote daemons stop theirs), then after ``grace`` seconds SIGKILL to
  every process of the job;
- a signal to the module (SIGTERM, SIGINT, SIGHUP: a cancelled AWX job, Ctrl-C):
  the same teardown, and the result says ``cancelled: SIGTERM``;
- SIGKILL of the module (Ansible's async timeout kills the module's process group
  with SIGKILL; no handler runs): a guard process, forked into a session of its
  own before the job starts, holds the read end of a pipe whose write end only the
  module has. The job's leader tells the guard its pid before it runs anything. When
  the pipe closes without the module's "done", the guard does the same teardown.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.launcher import _str_value


def _proc_table():
    """``{pid: (ppid, session id)}`` for every process, read from /proc (empty elsewhere)."""
    table = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return table
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                stat = handle.read()
        except (IOError, OSError):
            continue
        # The command name is in parentheses and may contain spaces: parse after it.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 3:
            table[int(entry)] = (int(fields[1]), int(fields[3]))
    return table


def _job_processes(leader):
    """Live processes of the job led by ``leader``: its descendants and its session's members."""
    table = _proc_table()
    children = {}
    for pid, (ppid, _sid) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), [leader]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    # Processes whose parent already died were re-parented; the session still names them.
    found.update(pid for pid, (_ppid, sid) in table.items() if sid == leader and pid != leader)
    return sorted(found)


def _signal(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except OSError:
            pass


# Signals that mean "stop": AWX cancel / kill (TERM), Ctrl-C (INT), a closed terminal (HUP).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_DONE = b"done"


class _Cancelled(Exception):
    def __init__(self, signum):
        Exception.__init__(self, signum)
        self.signum = signum


def _start_time(pid):
    """The process's start time (clock ticks since boot), to tell it from a reused pid."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
        return int(stat[stat.rfind(")") + 2:].split()[19])
    except (IOError, OSError, ValueError, IndexError):
        return None


def _teardown(leader, grace, started=None, wait=None):
    """SIGTERM the launcher, give it ``grace`` seconds, then SIGKILL whatever is left of the job.

    ``wait(seconds)`` waits for the launcher to exit (the module's Popen); without it
    (in the guard) the launcher is polled through /proc. ``started`` is the launcher's
    start time: a pid that now names another process is never signalled.
    """
    if started is None or _start_time(leader) == started:
        _signal([leader], signal.SIGTERM)
    if wait is not None:
        wait(grace)
    else:
        deadline = time.time() + grace
        while time.time() < deadline and _start_time(leader) == started:
            time.sleep(0.1)
    # Whatever is left (the launcher itself, ranks that ignored SIGTERM, ssh sessions
    # to other nodes) is killed outright. The session id is the launcher's pid
    # (start_new_session), so this finds exactly what the job started, including
    # ranks in their own process group and processes re-parented after the launcher died.
    leftovers = _job_processes(leader)
    if started is None or _start_time(leader) == started:
        leftovers.append(leader)
    _signal(leftovers, signal.SIGKILL)


def _read_all(fd):
    data = b""
    while True:
        try:
            chunk = os.read(fd, 256)
        except OSError:
            break
        if not chunk:
            break
        data += chunk
    return data


def _guard_main(grace, lifeline, job_info):
    """The guard's life: learn the job's leader, wait for the lifeline to close, act."""
    # The leader's first step (before exec) writes "pid start-time" here and closes it.
    words = _read_all(job_info).split()
    os.close(job_info)
    data = _read_all(lifeline)
    if data.endswith(_DONE) or len(words) != 2:
        return  # the job ended normally, or never started: nothing to stop
    try:
        leader, started = int(words[0]), int(words[1])
    except ValueError:
        return
    _teardown(leader, grace, started=started)


def _start_guard(grace):
    """Fork the guard before the job exists; return ((lifeline write end, guard pid),
    job-info write end), or (None, None) where /proc is missing.

    The guard is in a session of its own before this returns, so a SIGKILL sent to the
    module's process group at any time after it (async_wrapper's) spares it; and the
    job's leader tells the guard who it is before it runs anything (see _tell_guard),
    so there is no moment when a job runs that the guard does not know of.
    """
    if _start_time(os.getpid()) is None:
        return None, None
    read_end, write_end = os.pipe()
    info_read, info_write = os.pipe()
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the guard
        try:
            os.setsid()
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_IGN)
            os.write(ready_write, b"r")
            # Keep only the lifeline and the job-info pipe: no copy of the module's output.
            devnull = os.open(os.devnull, os.O_RDWR)
            for fd in (0, 1, 2):
                os.dup2(devnull, fd)
            low, high = min(read_end, info_read), max(read_end, info_read)
            os.closerange(3, low)
            os.closerange(low + 1, high)
            os.closerange(high + 1, 65536)
            _guard_main(grace, read_end, info_read)
        finally:
            os._exit(0)
    os.close(read_end)
    os.close(info_read)
    os.close(ready_write)
    try:
        os.read(ready_read, 1)  # returns once the guard has its own session (or has died)
    except OSError:
        pass
    os.close(ready_read)
    # The guard is reaped by nobody if the module dies first; if the module lives it
    # is reaped after "done" (see _release_guard).
    return (write_end, pid), info_write


def _tell_guard(info_write):
    """The job leader's preexec step (after setsid, before exec): tell the guard its pid
    and start time, then close the pipe so the job keeps no copy of it."""
    def tell():
        me = os.getpid()
        started = _start_time(me)
        if started is not None:
            try:
                os.write(info_write, b"%d %d" % (me, started))
            except OSError:
                pass
        os.close(info_write)
    return tell


def _release_guard(guard):
    if guard is None:
        return
    write_end, pid = guard
    try:
        os.write(write_end, _DONE)
    except OSError:
        pass
    os.close(write_end)
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass


def catch_stop_signals(on_signal):
    """Send STOP_SIGNALS to on_signal; return the handlers they replaced, by signal.

    Signals can only be caught in the main thread: elsewhere nothing is installed and the
    result is empty."""
    previous = {}
    try:
        for sig in STOP_SIGNALS:
            previous[sig] = signal.signal(sig, on_signal)
    except ValueError:
        pass
    return previous


def run_job(argv, timeout=None, env=None, cwd=None, grace=5.0, guard=True):
    """Run a launcher and wait for it, at most ``timeout`` seconds (None: no limit).

    Returns ``{'rc', 'stdout', 'stderr', 'duration', 'timed_out', 'cancelled'}``:
    ``cancelled`` is the name of the signal that stopped the module (``SIGTERM``...),
    None otherwise. ``rc`` is the launcher's (negative signal number when it was
    killed). ``env`` is merged over os.environ; LC_ALL=C is set so output is parseable.
    """
    run_env = dict(os.environ)
    run_env.update({k: _str_value(v) for k, v in (env or {}).items()})
    run_env["LC_ALL"] = "C"
    started = time.time()
    lifeline, info_write = _start_guard(grace) if guard else (None, None)
    extra = {}
    if info_write is not None:
        extra = {"preexec_fn": _tell_guard(info_write), "pass_fds": (info_write,)}
    try:
        try:
            proc = subprocess.Popen(
                [str(a) for a in argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                cwd=cwd, env=run_env, start_new_session=True, **extra
            )
        finally:
            # The guard reads this pipe to its end (the leader has written, or no job
            # started) before it watches the lifeline: close it before any release.
            if info_write is not None:
                os.close(info_write)
    except BaseException:
        _release_guard(lifeline)
        raise

    def on_signal(signum, _frame):
        raise _Cancelled(signum)

    # Off the main thread nothing is caught; the guard still acts when the module dies.
    previous = catch_stop_signals(on_signal)
    timed_out = False
    cancelled = None
    out = err = None
    try:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
        except _Cancelled as exc:
            cancelled = signal.Signals(exc.signum).name
        if timed_out or cancelled:
            # A second signal must not cut the teardown short.
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)

            def wait(seconds):
                try:
                    proc.wait(timeout=seconds)
                except subprocess.TimeoutExpired:
                    pass

            _teardown(proc.pid, grace, wait=wait)
            try:
                out, err = proc.communicate(timeout=grace + 5)
            except (subprocess.TimeoutExpired, ValueError, OSError):
                pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _release_guard(lifeline)
    duration = time.time() - started
    return {
        "rc": proc.returncode,
        "stdout": (out or b"").decode("utf-8", "replace"),
        "stderr": (err or b"").decode("utf-8", "replace"),
        "duration": round(duration, 3),
        "timed_out": timed_out,
        "cancelled": cancelled,
    }
