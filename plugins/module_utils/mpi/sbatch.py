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

``plan_batch(sbatch, step_argv, ...) -> {'argv', 'script', 'output', 'error', 'time_limit_minutes'}``
    Pure: the sbatch command line (``--parsable``; the script is given on stdin) and the
    script text. ``output``/``error`` hold ``%j`` for the job id.
``parse_submit(stdout) -> job id``       what ``sbatch --parsable`` printed.
``parse_job_record(text) -> {Key: value}`` one ``scontrol -o show job`` line.
``job_outcome(record) -> {'state', 'finished', 'rc', 'signal', 'batch_host', 'reason'}``
``run_batch(run_command, plan, timeout, ...) -> result``
    Submit, wait, cancel on timeout or on a stop signal, read the outputs; the result has
    the keys of :func:`runner.run_job` (rc, stdout, stderr, duration, timed_out,
    cancelled) plus ``job_id``, ``job_state``, ``batch_host``, ``reason``, ``output_files``.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import time

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.launcher import slurm_task_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner

BATCH_OUTPUT_DIR = "/tmp"
# Job states after which nothing more will happen to the job (squeue(1) JOB STATE CODES).
FINISHED_STATES = frozenset((
    "BOOT_FAIL", "CANCELLED", "COMPLETED", "DEADLINE", "FAILED", "NODE_FAIL", "OUT_OF_MEMORY",
    "PREEMPTED", "REVOKED", "SPECIAL_EXIT", "TIMEOUT",
))
_JOB_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_PARTITION = re.compile(r"^[A-Za-z0-9_.\-]+$")
# "Key=value" fields of scontrol's one-line form; a value runs up to the next " Key=".
_FIELD = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_:/]*)=(.*?)(?=\s+[A-Za-z][A-Za-z0-9_:/]*=|\s*$)")


class BatchError(ValueError):
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
    output = os.path.join(output_dir, "%s-%%j.out" % job_name)
    error = os.path.join(output_dir, "%s-%%j.err" % job_name)
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
    return {"argv": argv, "script": script, "output": output, "error": error, "time_limit_minutes": limit}


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


def _read(path, limit=16 * 1024 * 1024):
    with open(path, "rb") as handle:
        return handle.read(limit).decode("utf-8", "replace")


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
              cancel_grace=60.0, read_file=_read, sleep=time.sleep, now=time.time, handle_signals=True):
    """Submit ``plan`` (from :func:`plan_batch`), wait for the job, collect its outputs.

    Waits at most ``timeout`` seconds (None/0: no limit) after submission, polling every
    ``poll_interval`` seconds; past it, or on SIGTERM/SIGINT/SIGHUP to the caller, the
    job is cancelled and the wait goes on (at most ``cancel_grace`` seconds) until Slurm
    reports it over. Raises :class:`BatchError` when sbatch fails (nothing was started).
    """
    slurm = _Slurm(run_command, scontrol, scancel)
    started = now()
    job_id = slurm.submit(plan)
    result = {"job_id": job_id, "job_state": None, "batch_host": None, "reason": None, "rc": None,
              "stdout": "", "stderr": "", "timed_out": False, "cancelled": None, "duration": None,
              "output_files": [], "polls": 0, "status_error": None}
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
    for key, pattern in (("stdout", plan["output"]), ("stderr", plan["error"])):
        path = pattern.replace("%j", job_id)
        result["output_files"].append(path)
        try:
            result[key] = read_file(path)
        except (IOError, OSError):
            result[key] = ""
            result.setdefault("missing_output", []).append(path)
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
