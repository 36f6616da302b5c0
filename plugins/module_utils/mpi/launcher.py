# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Launching parallel jobs: mpirun (Open MPI, MPICH/Intel MPI Hydra) and Slurm's srun.

Shared by the modules that run jobs (mpi_run, nccl_test, fabric_sweep): the one place
that finds the launcher and tells its MPI (:func:`resolve_launcher`), finds a program
(:func:`find_executable`) and builds the command lines. Everything here except
:func:`write_hostfile` and the file checks of :func:`find_executable` is a pure function
of its arguments, so command lines are unit-tested as exact lists. Nothing here parses
what a job prints beyond the launcher's own framing (:func:`split_tagged_output`).

Stable API (add, don't rename):

``find_executable(program, which, cwd=None) -> path or None``
    A program as it runs on the launching host: a name without ``/`` looked up with
    ``which(name)`` (``AnsibleModule.get_bin_path`` with ``required=False`` fits), a
    relative path taken from ``cwd``; only an executable regular file counts.
``resolve_launcher(launcher, params, which, run_command, host) -> dict``
    The launcher's tools (:data:`LAUNCHER_TOOLS`, from ``params``' ``<tool>_path``) and,
    for mpirun, the MPI implementation (``params['implementation']``, ``auto``: asked with
    :func:`detect_implementation`): ``{'launcher', 'paths': {tool: path},
    'implementation': {'implementation', 'version', 'banner'} or None}``.
``parse_mpirun_version(text) -> {'implementation', 'version', 'banner'}``
    What ``mpirun --version`` printed -> which MPI. ``implementation`` is one of
    :data:`IMPLEMENTATIONS` (``unknown`` when not recognised).
``detect_implementation(run_command, mpirun) -> same dict``
    Runs ``mpirun --version`` through ``run_command(argv) -> (rc, out, err)``
    (``AnsibleModule.run_command`` fits).
``normalize_hosts(hosts) -> [{'name', 'slots'}]``
    Validates a hosts list (dicts with name and optional slots, or plain names).
``total_slots(hosts) -> int``
``hostfile_content(hosts, implementation) -> str``
    Open MPI ``name slots=N`` lines, MPICH/Intel MPI ``name:N`` lines.
``write_hostfile(hosts, implementation, directory=None) -> path``
    Writes that content to a new private (0600) file; the caller removes it.
``host_resolves(name) -> bool``
    Whether a host name resolves here (the ``resolves`` of :func:`mpi.job.plan_job`).
``build_mpirun_argv(mpirun, program, ...) -> [str]``
``build_srun_argv(srun, program, ...) -> [str]``
``slurm_task_options(nodes, ntasks, ntasks_per_node, cpus_per_task) -> [str]``
    srun's and sbatch's --nodes/--ntasks/--ntasks-per-node/--cpus-per-task.
``split_tagged_output(text, launcher) -> [{'rank', 'stream', 'line'}]``
    Undo mpirun --tag-output / -prepend-rank / srun --label framing, line by line.
Running the job (and stopping all of it) is :mod:`runner`.

Errors in input raise :class:`LauncherError` with a message that names the
parameter and the value.
"""

from __future__ import annotations

import os
import re
import socket
import tempfile

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.errors import MpiError

OPENMPI = "openmpi"
MPICH = "mpich"
INTELMPI = "intelmpi"
UNKNOWN = "unknown"
IMPLEMENTATIONS = (OPENMPI, MPICH, INTELMPI, UNKNOWN)
# Implementations whose mpirun is MPICH's Hydra process manager (same flags).
HYDRA = (MPICH, INTELMPI)

# Environment variable names as both launchers accept them.
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# MCA parameter names: letters, digits and underscores (e.g. btl_tcp_if_include).
_MCA_NAME = re.compile(r"^[A-Za-z0-9_]+$")
# A host name or address as it may appear in a hostfile: no spaces, no ':' except
# in IPv6 (not supported in hostfiles by these launchers), no '=' or '#'.
_HOST_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


class LauncherError(MpiError):
    """Bad input for a launcher command line; the message names parameter and value."""


# --------------------------------------------------------------------------- detection

def parse_mpirun_version(text):
    """Tell the MPI implementation from what ``mpirun --version`` printed.

    Open MPI:  ``mpirun (Open MPI) 4.1.4``
    MPICH:     ``HYDRA build details:`` then ``Version: 4.0.2``
    Intel MPI: ``Intel(R) MPI Library for Linux* OS, Version 2021.10 Build ...``
    MVAPICH and other Hydra-based MPIs report as MPICH (they take its flags).
    """
    text = text or ""
    banner = next((line.strip() for line in text.splitlines() if line.strip()), "")
    m = re.search(r"\(Open MPI\)\s+(\S+)", text) or re.search(r"Open MPI\s+v?(\d[\w.]*)", text)
    if m:
        return {"implementation": OPENMPI, "version": m.group(1), "banner": banner}
    m = re.search(r"Intel\(R\) MPI Library.*?Version\s+([\w.]+)", text)
    if m:
        return {"implementation": INTELMPI, "version": m.group(1), "banner": banner}
    if "HYDRA" in text or "MPICH" in text:
        m = re.search(r"^\s*Version:\s*(\S+)", text, re.MULTILINE)
        return {"implementation": MPICH, "version": m.group(1) if m else "", "banner": banner}
    return {"implementation": UNKNOWN, "version": "", "banner": banner}


def detect_implementation(run_command, mpirun):
    """Run ``mpirun --version`` and parse it; raises LauncherError when it fails."""
    rc, out, err = run_command([mpirun, "--version"])
    if rc != 0:
        raise LauncherError(
            "'%s --version' failed (rc=%s): %s" % (mpirun, rc, (err or out or "").strip()[:500])
        )
    return parse_mpirun_version((out or "") + "\n" + (err or ""))


# --------------------------------------------------------------------------- finding the tools

# The tools each launcher needs on the launching host (sbatch's job step is an srun).
LAUNCHER_TOOLS = {"none": (), "mpirun": ("mpirun",), "srun": ("srun",), "sbatch": ("srun", "sbatch")}


def find_executable(program, which, cwd=None):
    """``program`` as an executable path on this (the launching) host, or None when missing.

    A name without ``/`` is looked up with ``which(name)`` (the PATH); a relative path is
    taken relative to ``cwd`` (default: the current directory) and normalised.
    """
    if not program:
        return None
    if "/" not in program:
        return which(program) or None
    path = program if os.path.isabs(program) else os.path.join(cwd or os.getcwd(), program)
    path = os.path.normpath(path)
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path
    return None


def _missing_tool(tool, given, host, launcher):
    if tool == "mpirun":
        fix = "install an MPI (e.g. openmpi-bin) or set mpirun_path to its path"
    else:
        fix = "launcher=%s needs Slurm's client commands (slurm-client), or set %s_path to its path" % (launcher, tool)
    return "%s %r was not found on %s: %s" % (tool, given, host, fix)


def resolve_launcher(launcher, params, which, run_command, host="the launching host"):
    """Find the launcher's tools and tell which MPI mpirun is, before anything runs.

    ``params`` holds the job module's launcher options (``mpirun_path``, ``srun_path``,
    ``sbatch_path``: a command name or a path; ``implementation``: ``auto`` or a name).
    ``run_command(argv) -> (rc, out, err)`` runs the read-only ``mpirun --version``.
    Raises :class:`LauncherError` naming the tool, the value and the fix.
    """
    if launcher not in LAUNCHER_TOOLS:
        raise LauncherError("launcher must be one of %s, got %r" % (", ".join(sorted(LAUNCHER_TOOLS)), launcher))
    paths = {}
    for tool in LAUNCHER_TOOLS[launcher]:
        given = params.get("%s_path" % tool) or tool
        found = find_executable(given, which)
        if not found:
            raise LauncherError(_missing_tool(tool, given, host, launcher))
        paths[tool] = found
    implementation = None
    if launcher == "mpirun":
        wanted = params.get("implementation") or "auto"
        if wanted == "auto":
            implementation = detect_implementation(run_command, paths["mpirun"])
        else:
            implementation = {"implementation": wanted, "version": "", "banner": ""}
    return {"launcher": launcher, "paths": paths, "implementation": implementation}


# --------------------------------------------------------------------------- hosts

def normalize_hosts(hosts):
    """Return ``[{'name': str, 'slots': int}]`` from dicts (name, slots) or names.

    A host without slots gets 1. Duplicate names, empty names, names with spaces
    and slots < 1 are rejected.
    """
    if hosts is None:
        return []
    if not isinstance(hosts, (list, tuple)):
        raise LauncherError("hosts must be a list of {name, slots}, got %r" % (hosts,))
    result = []
    seen = set()
    for index, host in enumerate(hosts):
        if isinstance(host, str):
            name, slots = host, 1
        elif isinstance(host, dict):
            unknown = set(host) - {"name", "slots"}
            if unknown:
                raise LauncherError("hosts[%d] has unknown keys %s (allowed: name, slots)" % (index, sorted(unknown)))
            name = host.get("name")
            slots = host.get("slots", 1)
            if slots is None:
                slots = 1
        else:
            raise LauncherError("hosts[%d] must be a name or {name, slots}, got %r" % (index, host))
        name = "" if name is None else str(name).strip()
        if not name or not _HOST_NAME.match(name):
            raise LauncherError("hosts[%d].name %r is not a host name or address" % (index, name))
        try:
            slots_int = int(slots)
        except (TypeError, ValueError):
            raise LauncherError("hosts[%d].slots for %s must be an integer, got %r" % (index, name, slots))
        if isinstance(slots, bool) or slots_int < 1 or str(slots_int) != str(slots).strip():
            raise LauncherError("hosts[%d].slots for %s must be an integer >= 1, got %r" % (index, name, slots))
        if name in seen:
            raise LauncherError("hosts lists %s twice; give it once with its total slots" % name)
        seen.add(name)
        result.append({"name": name, "slots": slots_int})
    return result


def total_slots(hosts):
    return sum(h["slots"] for h in normalize_hosts(hosts))


def hostfile_content(hosts, implementation):
    """The hostfile text for ``implementation`` (Open MPI or Hydra syntax)."""
    hosts = normalize_hosts(hosts)
    if not hosts:
        raise LauncherError("hosts is empty: a hostfile needs at least one host")
    if implementation == OPENMPI:
        lines = ["%s slots=%d" % (h["name"], h["slots"]) for h in hosts]
    elif implementation in HYDRA:
        lines = ["%s:%d" % (h["name"], h["slots"]) for h in hosts]
    else:
        raise LauncherError("cannot write a hostfile for MPI implementation %r (known: %s)"
                            % (implementation, ", ".join(IMPLEMENTATIONS[:-1])))
    return "\n".join(lines) + "\n"


def write_hostfile(hosts, implementation, directory=None):
    """Write the hostfile to a new 0600 file in ``directory`` (default: TMPDIR); return its path."""
    content = hostfile_content(hosts, implementation)
    fd, path = tempfile.mkstemp(prefix="aiinfra-hostfile-", suffix=".txt", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(content)
    except Exception:
        os.unlink(path)
        raise
    return path


def host_resolves(name):
    """Whether ``name`` resolves to an address on this (the launching) host."""
    try:
        socket.getaddrinfo(name, None)
    except (socket.gaierror, UnicodeError):
        return False
    return True


# --------------------------------------------------------------------------- argv

def _check_env(env, parameter="env"):
    env = env or {}
    if not isinstance(env, dict):
        raise LauncherError("%s must be a dict of NAME: value (null to pass the current value), got %r" % (parameter, env))
    for name in env:
        if not _ENV_NAME.match(str(name)):
            raise LauncherError("%s has an invalid variable name %r" % (parameter, name))
    return env


def _str_value(value):
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


def build_mpirun_argv(mpirun, program, args=None, np=None, implementation=OPENMPI,
                      hostfile=None, mca=None, env=None, allow_run_as_root=False,
                      oversubscribe=False, map_by=None, bind_to=None, tag_output=False,
                      chdir=None, extra_args=None):
    """Return the mpirun argv as a list.

    ``env`` maps NAME to a value, or to None to pass the launcher's own value of NAME
    to the ranks (Open MPI ``-x NAME``, Hydra ``-genvlist NAME``).
    ``mca`` maps Open MPI MCA parameter names to values (``--mca k v``); Hydra has no
    MCA, so a non-empty ``mca`` with MPICH/Intel MPI is an error.
    ``allow_run_as_root`` and ``oversubscribe`` are Open MPI flags; Hydra runs as root
    and places more ranks than slots without being asked, so they add nothing there.
    ``extra_args`` go verbatim before the program.
    """
    if implementation not in (OPENMPI,) + HYDRA:
        raise LauncherError("unsupported MPI implementation %r for mpirun (supported: %s)"
                            % (implementation, ", ".join((OPENMPI,) + HYDRA)))
    if not program:
        raise LauncherError("program is empty")
    if np is not None:
        if isinstance(np, bool) or not isinstance(np, int) or np < 1:
            raise LauncherError("np must be an integer >= 1, got %r" % (np,))
    env = _check_env(env)
    mca = mca or {}
    if not isinstance(mca, dict):
        raise LauncherError("mca must be a dict of parameter: value, got %r" % (mca,))
    openmpi = implementation == OPENMPI
    argv = [mpirun]
    if openmpi:
        if allow_run_as_root:
            argv.append("--allow-run-as-root")
        if np is not None:
            argv += ["-np", str(np)]
        if hostfile:
            argv += ["--hostfile", hostfile]
        if oversubscribe:
            argv.append("--oversubscribe")
        if map_by:
            argv += ["--map-by", str(map_by)]
        if bind_to:
            argv += ["--bind-to", str(bind_to)]
        if tag_output:
            argv.append("--tag-output")
        if chdir:
            argv += ["--wdir", chdir]
        for name in sorted(mca):
            if not _MCA_NAME.match(str(name)):
                raise LauncherError("mca has an invalid parameter name %r" % (name,))
            argv += ["--mca", str(name), _str_value(mca[name])]
        for name in sorted(env):
            value = env[name]
            argv += ["-x", name if value is None else "%s=%s" % (name, _str_value(value))]
    else:
        if mca:
            raise LauncherError("mca parameters %s are Open MPI settings; %s's mpirun (Hydra) has none — "
                                "use env (e.g. MPIR_CVAR_* / I_MPI_* variables) instead"
                                % (sorted(mca), implementation))
        if np is not None:
            argv += ["-np", str(np)]
        if hostfile:
            argv += ["-f", hostfile]
        if map_by:
            argv += ["-map-by", str(map_by)]
        if bind_to:
            argv += ["-bind-to", str(bind_to)]
        if tag_output:
            argv.append("-prepend-rank")
        if chdir:
            argv += ["-wdir", chdir]
        passthrough = []
        for name in sorted(env):
            value = env[name]
            if value is None:
                passthrough.append(name)
            else:
                argv += ["-genv", name, _str_value(value)]
        if passthrough:
            argv += ["-genvlist", ",".join(passthrough)]
    argv += [str(a) for a in (extra_args or [])]
    argv.append(program)
    argv += [str(a) for a in (args or [])]
    return argv


def build_srun_argv(srun, program, args=None, nodes=None, ntasks=None, ntasks_per_node=None,
                    cpus_per_task=None, mpi=None, export=None, nodelist=None, chdir=None,
                    label=False, extra_args=None, overcommit=False, distribution=None):
    """Return the srun argv as a list.

    ``export`` maps NAME to a value (or None: pass the current value) and becomes
    ``--export=ALL,NAME=VALUE,...``: the job keeps the caller's environment plus these.
    srun cannot carry commas inside an --export value, so such values are rejected.
    ``nodelist`` is a list of node names (``--nodelist=a,b``). ``label`` prefixes each
    output line with the task number (``--label``). ``overcommit`` lets Slurm place
    more tasks than CPUs (``--overcommit``, srun's counterpart of mpirun's
    --oversubscribe); ``distribution`` is ``--distribution`` (``cyclic`` spreads
    consecutive ranks over the nodes, as mpirun's ``--map-by node`` does).
    """
    if not program:
        raise LauncherError("program is empty")
    for pname, value in (("nodes", nodes), ("ntasks", ntasks), ("ntasks_per_node", ntasks_per_node),
                         ("cpus_per_task", cpus_per_task)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise LauncherError("%s must be an integer >= 1, got %r" % (pname, value))
    export = _check_env(export, "export")
    argv = [srun]
    if nodes is not None:
        argv.append("--nodes=%d" % nodes)
    if ntasks is not None:
        argv.append("--ntasks=%d" % ntasks)
    if ntasks_per_node is not None:
        argv.append("--ntasks-per-node=%d" % ntasks_per_node)
    if cpus_per_task is not None:
        argv.append("--cpus-per-task=%d" % cpus_per_task)
    if nodelist:
        names = [str(n) for n in nodelist]
        for name in names:
            if not _HOST_NAME.match(name):
                raise LauncherError("nodelist has an invalid node name %r" % (name,))
        argv.append("--nodelist=%s" % ",".join(names))
    if overcommit:
        argv.append("--overcommit")
    if distribution:
        if not re.match(r"^[A-Za-z0-9*:,]+$", str(distribution)):
            raise LauncherError("distribution %r is not a srun --distribution value (e.g. block, cyclic)"
                                % (distribution,))
        argv.append("--distribution=%s" % distribution)
    if mpi:
        argv.append("--mpi=%s" % mpi)
    if export:
        items = ["ALL"]
        for name in sorted(export):
            value = export[name]
            if value is None:
                items.append(name)
            else:
                value = _str_value(value)
                if "," in value:
                    raise LauncherError("export %s=%r: srun --export cannot carry a comma in a value" % (name, value))
                items.append("%s=%s" % (name, value))
        argv.append("--export=%s" % ",".join(items))
    if label:
        argv.append("--label")
    if chdir:
        argv.append("--chdir=%s" % chdir)
    argv += [str(a) for a in (extra_args or [])]
    argv.append(program)
    argv += [str(a) for a in (args or [])]
    return argv


def slurm_task_options(nodes=None, ntasks=None, ntasks_per_node=None, cpus_per_task=None):
    """The task geometry options srun and sbatch share, for the counts given (None: left out).

    ``--nodes``, ``--ntasks``, ``--ntasks-per-node``, ``--cpus-per-task``, in that order;
    the caller has checked the counts.
    """
    return ["%s=%d" % (option, value) for option, value in (
        ("--nodes", nodes), ("--ntasks", ntasks), ("--ntasks-per-node", ntasks_per_node),
        ("--cpus-per-task", cpus_per_task)) if value is not None]


# --------------------------------------------------------------------------- output framing

# Open MPI 4: "[1,3]<stdout>:text"; Open MPI 5 adds a space after the colon.
_OMPI_TAG = re.compile(r"^\[(\d+),(\d+)\]<(stdout|stderr|stddiag)>:\s?(.*)$")
# Hydra -prepend-rank: "[3] text"
_HYDRA_TAG = re.compile(r"^\[(\d+)\]\s?(.*)$")
# srun --label: "3: text" (right-aligned number)
_SRUN_TAG = re.compile(r"^\s*(\d+):\s?(.*)$")


def split_tagged_output(text, launcher=OPENMPI):
    """Split launcher-tagged output into ``[{'rank': int|None, 'stream', 'line'}]``.

    ``launcher`` is ``openmpi`` (--tag-output), ``mpich``/``intelmpi``
    (-prepend-rank) or ``srun`` (--label). Lines without a tag keep ``rank: None``
    (launcher messages, or output of ranks the launcher did not tag).
    """
    result = []
    for raw in (text or "").splitlines():
        line = raw.rstrip("\r")
        if launcher == OPENMPI:
            m = _OMPI_TAG.match(line)
            if m:
                result.append({"rank": int(m.group(2)), "stream": m.group(3), "line": m.group(4)})
                continue
        elif launcher in HYDRA:
            m = _HYDRA_TAG.match(line)
            if m:
                result.append({"rank": int(m.group(1)), "stream": "stdout", "line": m.group(2)})
                continue
        elif launcher == "srun":
            m = _SRUN_TAG.match(line)
            if m:
                result.append({"rank": int(m.group(1)), "stream": "stdout", "line": m.group(2)})
                continue
        result.append({"rank": None, "stream": "stdout", "line": line})
    return result
