# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The result shape every job module returns (mpi_run, nccl_test; fabric_sweep per job).

A job module measures: running the job changes nothing on the hosts (the hostfile and
the job's scratch files are private and removed), so ``changed`` is always false, also
in check mode, and a converge that runs a benchmark again stays at changed=0. What the
job did is in ``ran``, ``rc`` and the module's own keys.

``job_result(launcher, launched_from, cmd_type) -> dict``
    The keys every job module returns always (:data:`ALWAYS`): ``changed`` (false),
    ``ran`` (false until the job ran), ``launcher``, ``launched_from``,
    ``implementation`` (the MPI mpirun is; None without mpirun), ``argv`` (the command as
    a list), ``command`` (the same as one shell-quoted string) and ``cmd``, kept for
    playbooks written before ``argv``/``command`` were shared: a list in mpi_run, a string
    in nccl_test (``cmd_type`` ``list`` or ``str``), deprecated in favour of those two.
``set_command(result, argv, cmd_type)``
    Fill ``argv``, ``command`` and ``cmd`` (of ``cmd_type``) from one argv.
``set_run(result, run)``
    Copy what :func:`mpi.runner.run_job` measured (:data:`WHEN_RAN`) and set ``ran``.
``job_record(argv, run) -> dict``
    The same keys for one job among several (fabric_sweep's ``jobs``).
``command_line(argv) -> str``
    The argv as one shell-quoted string.
"""

from __future__ import annotations

import shlex

ALWAYS = ("changed", "ran", "launcher", "launched_from", "implementation", "argv", "command", "cmd")
WHEN_RAN = ("rc", "stdout", "stderr", "duration", "timed_out", "cancelled")
CMD_TYPES = ("list", "str")


def command_line(argv):
    return " ".join(shlex.quote(str(a)) for a in argv)


def job_result(launcher, launched_from, cmd_type="list"):
    if cmd_type not in CMD_TYPES:
        raise ValueError("cmd_type must be one of %s, got %r" % (", ".join(CMD_TYPES), cmd_type))
    return {
        "changed": False,
        "ran": False,
        "launcher": launcher,
        "launched_from": launched_from,
        "implementation": None,
        "argv": [],
        "command": "",
        "cmd": [] if cmd_type == "list" else "",
    }


def set_command(result, argv, cmd_type="list"):
    argv = [str(a) for a in argv]
    result["argv"] = argv
    result["command"] = command_line(argv)
    result["cmd"] = list(argv) if cmd_type == "list" else result["command"]
    return result


def set_run(result, run):
    for key in WHEN_RAN:
        result[key] = run.get(key)
    result["ran"] = True
    return result


def job_record(argv, run):
    record = {"argv": [str(a) for a in argv], "command": command_line(argv)}
    for key in ("rc", "duration", "timed_out", "cancelled"):
        record[key] = run.get(key)
    return record
