# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Handing a job to Slurm with sbatch, waiting for it with a deadline, cancelling it.

The job is submitted as a batch script whose one step is the srun command line that
the direct path (``launcher: srun``) would run, so both paths run the same thing and
their output is parsed the same way. Waiting is a loop of short ``scontrol show job``
calls; nothing holds the job's output stream open, and the job lives in Slurm, not in
the module's process tree. Past the deadline the job is cancelled with ``scancel`` and
the wait continues briefly until Slurm reports it ended.

``plan_batch(sbatch, step_argv, ...) -> {'argv', 'script', 'output', 'error', 'output_parent', ...}``
    Pure: the sbatch command line (``--parsable``; the script is given on stdin) and the
    script text. ``output``/``error`` hold ``%j`` for the job id and the placeholder
    ``<private dir>`` for the job's own output directory, made when the job is submitted.
``make_output_dir(parent) -> path``      that directory: new, 0700, the running user's.
``with_output_dir(plan, directory) -> plan`` the plan with the placeholder filled in.
``read_output(path, uid) -> text``       a job output file, only if it is safe to read.
``parse_submit(stdout) -> job id``       what ``sbatch --parsable`` printed.
``parse_job_record(text) -> {Key: value}`` one ``scontrol -o show job`` line.
``job_outcome(record) -> {'state', 'finished', 'rc', 'signal', 'batch_host', 'reason'}``
``run_batch(run_command, plan, timeout, ...) -> result``
    Make the output directory, submit, wait, cancel on timeout or on a stop signal, read
    the outputs, remove them (unless kept); the result has the keys of
    :func:`runner.run_job` (rc, stdout, stderr, duration, timed_out, cancelled) plus
    ``job_id``, ``job_state``, ``batch_host``, ``reason``, ``output_dir``,
    ``output_files`` and ``output_error`` (None, or why the output cannot be used).

Where the output lands: slurmstepd on the job's batch host (the allocation's first node)
writes it, as the job's user, and the launching host reads it back from the same path.
That works when the two are one host or ``output_dir`` is a file system both mount. A
predictable name in a shared directory (``/tmp/<job>-<id>.out``) would let another local
user pre-create the files of the next job ids - or links to files only root may read -
and have them taken as the job's output, so each job writes into a directory of its own
that only the running user can enter (made with ``mkdtemp``: a random name, mode 0700),
and each file is opened without following a link and read only when the running user
owns it and the directory.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import signal
import socket
import stat
import tempfile
import time

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.launcher import slurm_task_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.errors import MpiError

BATCH_OUTPUT_DIR = "/tmp"
# Stands for the job's private output directory in a plan until run_batch makes it.
PRIVATE_DIR = "<private dir>"
_PRIVATE_PREFIX = "aiinfra-sbatch-"
# Job states after which nothing more will happen to the job (squeue(1) JOB STATE CODES).
FINISHED_STATES = frozenset((
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT",
))
_JOB_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_PARTITION = re.compile(r"^[A-Za-z0-9_.\-]+$")
# "Key=value" fields of scontrol's one-line form; a value runs up to the next " Key=".
_FIELD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(.*?)(?=\s+[A-Za-z][A-Za-z0-9_:/]*=|\s*$)")


class BatchError(MpiError):
    """Bad input for a batch job, or a Slurm command that failed; nothing is left running."""


class _Stopped(Exception):
    def __init__(self, signum):
        Exception.__init__(self, signum)
        self.signum = signum


def time_limit_minutes(timeout):
    """sbatch --time for a deadline of ``timeout`` seconds: whole minutes, one more for margin.

    It is Slurm's own backstop: if the waiting module is killed outright (SIGKILL, a lost
    host), Slurm still ends the job shortly after the deadline. None: no limit asked.
    """
    if not timeout:
        return None
    return (int(timeout) + 59) // 60 + 1


def plan_batch(sbatch, step_argv, nodes=None, ntasks=None, ntasks_per_node=None, cpus_per_task=None,
               nodelist=None, overcommit=False, timeout=None, output_dir=None, job_name=None,
               partition=None, chdir=None, extra_args=None):
    """The sbatch argv and batch script that run ``step_argv`` (an srun command) as the job's step."""
    if not step_argv:
        raise BatchError("the job step (srun command) is empty")
    job_name = job_name or "aiinfra-mpi"
    if not _JOB_NAME.match(str(job_name)):
        raise BatchError("sbatch_job_name %r may hold letters, digits, '_', '.' and '-' only" % (job_name,))
    if partition and not _PARTITION.match(str(partition)):
        raise BatchError("sbatch_partition %r is not a partition name" % (partition,))
    output_dir = output_dir or BATCH_OUTPUT_DIR
    if not os.path.isabs(output_dir):
        raise BatchError("sbatch_output_dir %r must be an absolute path (the batch host writes the job's "
                         "output there)" % (output_dir,))
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 0):
        raise BatchError("timeout must be >= 0 seconds (0: no limit), got %r" % (timeout,))
    output = os.path.join(output_dir, PRIVATE_DIR, "%s-%%j.out" % job_name)
    error = os.path.join(output_dir, PRIVATE_DIR, "%s-%%j.err" % job_name)
    argv = [sbatch, "--parsable", "--job-name=%s" % job_name, "--output=%s" % output, "--error=%s" % error]
    if partition:
        argv.append("--partition=%s" % partition)
    argv += slurm_task_options(nodes, ntasks, ntasks_per_node, cpus_per_task)
    if nodelist:
        argv.append("--nodelist=%s" % ",".join(str(n) for n in nodelist))
    if overcommit:
        argv.append("--overcommit")
    limit = time_limit_minutes(timeout)
    if limit is not None:
        argv.append("--time=%d" % limit)
    if chdir:
        argv.append("--chdir=%s" % chdir)
    argv += [str(a) for a in (extra_args or [])]
    # exec: the step is the script's only process, so the batch step's exit status is srun's.
    script = "#!/bin/sh\n# submitted by aiinfra.fabric mpi_run\nexec %s\n" % " ".join(
        shlex.quote(str(a)) for a in step_argv)
    return {"argv": argv, "script": script, "output": output, "error": error, "output_parent": output_dir,
            "time_limit_minutes": limit}


def with_output_dir(plan, directory):
    """A copy of ``plan`` whose output files are in ``directory`` (from :func:`make_output_dir`)."""
    placeholder = os.path.join(plan["output_parent"], PRIVATE_DIR)
    done = dict(plan)
    done["output"] = plan["output"].replace(placeholder, directory, 1)
    done["error"] = plan["error"].replace(placeholder, directory, 1)
    done["argv"] = ["--output=%s" % done["output"] if a == "--output=%s" % plan["output"] else
                    "--error=%s" % done["error"] if a == "--error=%s" % plan["error"] else a for a in plan["argv"]]
    done["output_dir"] = directory
    return done


def make_output_dir(parent, uid=None):
    """A new directory under ``parent`` for one job's output: random name, mode 0700, the running user's.

    Raises :class:`BatchError` when it cannot be made, or comes out owned by someone else
    (an NFS export that squashes root makes it nobody's): the output could not be trusted.
    """
    uid = os.geteuid() if uid is None else uid
    if not os.path.isdir(parent):
        raise BatchError("sbatch_output_dir %s is not a directory on %s: it must exist here and on the job's batch "
                         "host (the same host, or a shared file system)" % (parent, socket.gethostname()))
    try:
        directory = tempfile.mkdtemp(prefix=_PRIVATE_PREFIX, dir=parent)
    except OSError as exc:
        raise BatchError("cannot make the job's output directory in sbatch_output_dir %s: %s" % (parent, exc))
    st = os.lstat(directory)
    if st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o077:
        os.rmdir(directory)
        raise BatchError("the job's output directory %s came out owned by uid %d with mode %o, not uid %d and 0700 "
                         "(an NFS export that squashes root?): set sbatch_output_dir to a directory where the "
                         "running user's files are its own" % (directory, st.st_uid, stat.S_IMODE(st.st_mode), uid))
    return directory


class UnsafeOutput(BatchError):
    """An output file that is not what the job wrote: a link, another user's, not a plain file."""


def read_output(path, uid=None, limit=16 * 1024 * 1024):
    """The text of the job output file ``path``, read only if it is safe.

    The directory must be the running user's and closed to others, the file a plain file
    of the running user, opened without following a link (``O_NOFOLLOW``, relative to the
    directory opened the same way). Raises :class:`UnsafeOutput` otherwise, and OSError
    (ENOENT) when the file is not there.
    """
    uid = os.geteuid() if uid is None else uid
    directory, name = os.path.split(path)
    flags = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    try:
        dir_fd = os.open(directory, flags | os.O_DIRECTORY)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise UnsafeOutput("the output directory %s is a link or not a directory: not read" % directory)
        raise
    try:
        st = os.fstat(dir_fd)
        if st.st_uid != uid or stat.S_IMODE(st.st_mode) & 0o077:
            raise UnsafeOutput("the output directory %s is owned by uid %d with mode %o, not private to uid %d: "
                               "not read" % (directory, st.st_uid, stat.S_IMODE(st.st_mode), uid))
        try:
            # O_NONBLOCK: a FIFO put in the file's place must not hang the read.
            fd = os.open(name, flags | os.O_NONBLOCK, dir_fd=dir_fd)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UnsafeOutput("%s is a symbolic link, not the job's output: not read" % path)
            raise
        with os.fdopen(fd, "rb") as handle:
            st = os.fstat(handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise UnsafeOutput("%s is not a plain file: not read" % path)
            if st.st_uid != uid:
                raise UnsafeOutput("%s is owned by uid %d, not by the job's user (uid %d): not read"
                                   % (path, st.st_uid, uid))
            return handle.read(limit).decode("utf-8", "replace")
    finally:
        os.close(dir_fd)


def remove_output(directory, paths):
    """Remove the job's output files (never following a link) and its directory, when empty."""
    for path in paths:
        try:
            os.unlink(path)
        except OSError:
            pass
    try:
        os.rmdir(directory)
    except OSError:
        pass


def parse_submit(stdout):
    """The job id from ``sbatch --parsable`` (``123`` or ``123;cluster``)."""
    line = next((ln.strip() for ln in (stdout or "").splitlines() if ln.strip()), "")
    job_id = line.split(";", 1)[0]
    if not job_id.isdigit():
        raise BatchError("sbatch printed no job id (got %r)" % ((stdout or "")[:200],))
    return job_id


def parse_job_record(text):
    """``{Key: value}`` from ``scontrol -o show job ID`` (the first job line)."""
    line = next((ln for ln in (text or "").splitlines() if "JobId=" in ln), "")
    return {m.group(1): m.group(2) for m in _FIELD.finditer(line)}


def job_outcome(record):
    """What a job record says: state, whether it is over, and the step's exit status.

    ``rc`` is the exit code of the batch script (srun's), or minus the signal that ended
    it, like a local process's return code; None until the job is over.
    """
    state = (record.get("JobState") or "UNKNOWN").split()[0]
    finished = state in FINISHED_STATES
    rc = sig = None
    m = re.match(r"^(\d+):(\d+)$", record.get("ExitCode") or "")
    if finished and m:
        code, sig = int(m.group(1)), int(m.group(2))
        rc = -sig if sig else code
    batch_host = record.get("BatchHost") or None
    if batch_host in ("(null)", ""):
        batch_host = None
    return {"state": state, "finished": finished, "rc": rc, "signal": sig, "batch_host": batch_host,
            "reason": record.get("Reason") or None}


class _Slurm(object):
    """The three Slurm commands, through ``run_command(argv, data=None) -> (rc, out, err)``."""

    def __init__(self, run_command, scontrol="scontrol", scancel="scancel"):
        self.run_command = run_command
        self.scontrol = scontrol
        self.scancel_cmd = scancel

    def submit(self, plan):
        rc, out, err = self.run_command(plan["argv"], data=plan["script"])
        if rc != 0:
            raise BatchError("sbatch failed (rc=%s): %s" % (rc, (err or out or "").strip()[:1000]))
        return parse_submit(out)

    def record(self, job_id):
        rc, out, err = self.run_command([self.scontrol, "-o", "show", "job", job_id])
        if rc != 0:
            return None, (err or out or "").strip()
        return parse_job_record(out), ""

    def cancel(self, job_id):
        return self.run_command([self.scancel_cmd, job_id])


def run_batch(run_command, plan, timeout=None, poll_interval=10.0, scontrol="scontrol", scancel="scancel",
              cancel_grace=60.0, read_file=read_output, sleep=time.sleep, now=time.time, handle_signals=True,
              make_dir=make_output_dir, keep_output=False, remove=remove_output, launching_host=None):
    """Submit ``plan`` (from :func:`plan_batch`), wait for the job, collect its outputs.

    The job's output goes into a new private directory (``make_dir``) under the plan's
    output directory. Waits at most ``timeout`` seconds (None/0: no limit) after submission,
    polling every ``poll_interval`` seconds; past it, or on SIGTERM/SIGINT/SIGHUP to the
    caller, the job is cancelled and the wait goes on (at most ``cancel_grace`` seconds)
    until Slurm reports it over. The outputs are read (``read_file``), then removed with
    their directory unless ``keep_output``. Raises :class:`BatchError` when the directory
    cannot be made or sbatch fails (nothing was started).
    """
    slurm = _Slurm(run_command, scontrol, scancel)
    directory = make_dir(plan["output_parent"])
    plan = with_output_dir(plan, directory)
    try:
        started = now()
        job_id = slurm.submit(plan)
    except BatchError:
        remove(directory, [])
        raise
    result = {"job_id": job_id, "job_state": None, "batch_host": None, "reason": None, "rc": None,
              "stdout": "", "stderr": "", "timed_out": False, "cancelled": None, "duration": None,
              "output_dir": directory, "output_files": [], "output_error": None, "polls": 0, "status_error": None}
    deadline = started + timeout if timeout else None

    def on_signal(signum, _frame):
        raise _Stopped(signum)

    previous = runner.catch_stop_signals(on_signal) if handle_signals else {}
    outcome = None
    cancel_sent = False
    try:
        try:
            outcome = _wait(slurm, job_id, deadline, poll_interval, sleep, now, result)
            if outcome is None:
                result["timed_out"] = True
        except _Stopped as exc:
            result["cancelled"] = signal.Signals(exc.signum).name
        if outcome is None:
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)
            slurm.cancel(job_id)
            cancel_sent = True
            outcome = _wait(slurm, job_id, now() + cancel_grace, min(poll_interval, 2.0), sleep, now, result)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    result["duration"] = round(now() - started, 3)
    if outcome is None:
        result["job_state"] = result["job_state"] or "UNKNOWN"
        if cancel_sent:
            result["reason"] = "scancel sent; Slurm did not report the job over within %d s" % cancel_grace
    else:
        result.update(job_state=outcome["state"], rc=outcome["rc"], batch_host=outcome["batch_host"],
                      reason=outcome["reason"])
    refused = []
    for key, pattern in (("stdout", plan["output"]), ("stderr", plan["error"])):
        path = pattern.replace("%j", job_id)
        result["output_files"].append(path)
        try:
            result[key] = read_file(path)
        except UnsafeOutput as exc:
            refused.append(str(exc))
        except (IOError, OSError):
            result.setdefault("missing_output", []).append(path)
    if not keep_output:
        remove(directory, result["output_files"])
    if refused:
        result["output_error"] = "batch job %s: refused to read its output - %s" % (job_id, "; ".join(refused))
    elif result["output_files"][0] in result.get("missing_output", []) and not result["timed_out"] \
            and not result["cancelled"]:
        # The error file may be absent when nothing was written to it; the output file may not.
        result["output_error"] = (
            "batch job %s ended (%s) but its output %s is not on %s: it ran on batch host %s, which wrote it to "
            "its own disk; set sbatch_output_dir to a file system the batch host and this host share, or launch "
            "from that host" % (job_id, result["job_state"], result["output_files"][0],
                                launching_host or socket.gethostname(), result["batch_host"] or "(unknown)"))
    return result


def _wait(slurm, job_id, deadline, poll_interval, sleep, now, result):
    """Poll until the job is over (its outcome) or ``deadline`` passes (None)."""
    while True:
        record, error = slurm.record(job_id)
        result["polls"] += 1
        if record is None:
            result["status_error"] = error
            if "invalid job id" in error.lower():
                # slurmctld forgets a finished job MinJobAge (default 300 s) after it
                # ended: it is over, how it ended is no longer known.
                return {"state": "UNKNOWN", "finished": True, "rc": None, "signal": None,
                        "batch_host": result.get("batch_host"), "reason": error}
        else:
            result["status_error"] = None
            outcome = job_outcome(record)
            result["job_state"] = outcome["state"]
            result["batch_host"] = outcome["batch_host"]
            if outcome["finished"]:
                return outcome
        if deadline is not None and now() >= deadline:
            return None
        pause = poll_interval if deadline is None else max(0.0, min(poll_interval, deadline - now()))
        sleep(pause)
