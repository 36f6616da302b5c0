# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""One MPI job as data: validate mpi_run's parameters and plan the command (pure),
then turn the job's output into results (per-rank lines, parsed data, checks).

``plan_job(params, implementation, local_slots, resolves, program_path) -> dict``
    ``params`` are mpi_run's parameters, the launcher options under their shared names
    (:mod:`mpi.launch_options`; the aliases are accepted as the module accepts them).
    Validates everything that can be checked before launching and returns
    ``{'argv', 'np', 'hosts', 'total_slots', 'hostfile_content', 'program', 'batch'}``
    (``batch``: :func:`sbatch.plan_batch`'s plan with launcher sbatch, whose step is
    ``argv``; None otherwise; ``launch_env``: variables to set in the launcher's own
    environment, those srun --export cannot carry); the
    hostfile path in ``argv`` is the placeholder :data:`HOSTFILE_PLACEHOLDER`, which
    the caller replaces with the real path (:func:`with_hostfile`).
    Raises :class:`MpiJobError` with a message naming the parameter and the value.
``summarize_output(stdout, launcher, implementation, tag_output)``
    -> ``(text_for_parsing, {rank: [lines]})``
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import expect as mpi_expect
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launch_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import sbatch
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.parsers import PARSE_KINDS
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.errors import MpiError

HOSTFILE_PLACEHOLDER = "@HOSTFILE@"
LAUNCHERS = ("mpirun", "srun", "sbatch")
# mpirun --map-by values that srun says with --distribution.
SRUN_DISTRIBUTION = {"node": "cyclic", "slot": "block", "core": "block"}


class MpiJobError(MpiError):
    """Bad input for a job: nothing was launched."""


def plan_job(params, implementation, local_slots, resolves, program_path):
    """Validate ``params`` (mpi_run's parameters) and build the launcher argv.

    ``implementation``: what detection found (launcher.OPENMPI ...), ignored for srun.
    ``local_slots``: slots of the launching host when no hosts are given (its CPUs);
    not used with srun, where Slurm decides (np may then be None: srun's own default).
    ``resolves(name) -> bool``: whether a host name resolves.
    ``program_path``: the program as found on the launching host, or None when missing.
    """
    params = launch_options.with_canonical_names(params)
    launcher = params.get("launcher") or "mpirun"
    if launcher not in LAUNCHERS:
        raise MpiJobError("launcher must be one of %s, got %r" % (", ".join(LAUNCHERS), launcher))
    parse = params.get("parse") or "none"
    if parse not in PARSE_KINDS:
        raise MpiJobError("parse must be one of %s, got %r" % (", ".join(PARSE_KINDS), parse))
    try:
        mpi_expect.normalize_expect(params.get("expect"), parse)
    except mpi_expect.ExpectError as exc:
        raise MpiJobError(str(exc))

    program = params.get("program")
    if not program:
        raise MpiJobError("program is required")
    if program_path is None:
        where = (" (relative to chdir %s)" % params["chdir"]) if params.get("chdir") and "/" in program \
            and not program.startswith("/") else ""
        raise MpiJobError("program %r was not found or is not executable on the launching host%s; "
                          "build or copy it there (and at the same path on every host) first" % (program, where))

    hosts_param = params.get("hosts")
    try:
        hosts = L.normalize_hosts(hosts_param)
    except L.LauncherError as exc:
        raise MpiJobError(str(exc))
    if hosts_param is not None and not hosts:
        raise MpiJobError("hosts is empty: give at least one {name, slots}, or leave hosts out to run on "
                          "the launching host only")
    unknown = [h["name"] for h in hosts if not resolves(h["name"])]
    if unknown:
        raise MpiJobError("unknown host%s %s: the launching host cannot resolve %s (fix the names in hosts, "
                          "or /etc/hosts / DNS)" % ("s" if len(unknown) > 1 else "", ", ".join(unknown),
                                                    "them" if len(unknown) > 1 else "it"))

    np = params.get("np")
    if np is not None and (isinstance(np, bool) or not isinstance(np, int) or np < 1):
        raise MpiJobError("np must be an integer >= 1, got %r" % (np,))
    if launcher != "mpirun" and not hosts:
        # Slurm places the tasks: the launching host (often a login node) is not where
        # they run, so its CPU count neither limits np nor is np's default. Without np,
        # srun takes the task count from the allocation.
        total = None
    else:
        total = sum(h["slots"] for h in hosts) if hosts else local_slots
        if np is None:
            np = total
        if np > total and not params.get("oversubscribe"):
            if hosts:
                listed = ", ".join("%s:%d" % (h["name"], h["slots"]) for h in hosts)
                what = "hosts %s have %d slots in total" % (listed, total)
            else:
                what = "the launching host has %d slots (its CPU count; give hosts to say otherwise)" % total
            raise MpiJobError("np=%d is more than the slots available: %s. Lower np, add slots, or set "
                              "oversubscribe=true to run more ranks than slots" % (np, what))
    oversubscribe = bool(params.get("oversubscribe"))

    timeout = params.get("timeout")
    if timeout is not None and (isinstance(timeout, bool) or timeout < 0):
        raise MpiJobError("timeout must be >= 0 seconds (0: no limit), got %r" % (timeout,))

    args = [str(a) for a in (params.get("args") or [])]
    hostfile_content = None
    batch = None
    launch_env = {}
    try:
        if launcher == "mpirun":
            if implementation not in (L.OPENMPI,) + L.HYDRA:
                raise MpiJobError("could not tell which MPI %s is (detected %r); set implementation to openmpi, "
                                  "mpich or intelmpi" % (params.get("mpirun_path") or "mpirun", implementation))
            if hosts:
                hostfile_content = L.hostfile_content(hosts, implementation)
            argv = L.build_mpirun_argv(
                params.get("mpirun_path") or "mpirun", program_path, args=args, np=np, implementation=implementation,
                hostfile=HOSTFILE_PLACEHOLDER if hosts else None, mca=params.get("mca"), env=params.get("environment"),
                allow_run_as_root=bool(params.get("allow_run_as_root")), oversubscribe=oversubscribe,
                map_by=params.get("map_by"), bind_to=params.get("bind_to"),
                tag_output=bool(params.get("tag_output")), chdir=params.get("chdir"),
                extra_args=params.get("launcher_args"))
        else:
            if params.get("mca"):
                raise MpiJobError("mca parameters cannot be passed by %s; set OMPI_MCA_<name> variables in environment "
                                  "instead" % launcher)
            map_by = params.get("map_by")
            if map_by and str(map_by) not in SRUN_DISTRIBUTION:
                raise MpiJobError("map_by %r has no srun counterpart here (known: %s); pass --distribution in "
                                  "launcher_args instead" % (map_by, ", ".join(sorted(SRUN_DISTRIBUTION))))
            # srun --export cannot carry a comma inside a value (OMPI_MCA_btl=tcp,self): such
            # variables are set in srun's own environment instead, which --export=ALL passes on
            # to the tasks (and sbatch to the batch script, whose srun passes them on again).
            export, launch_env = {}, {}
            for name, value in L._check_env(params.get("environment")).items():
                if value is not None and "," in L._str_value(value):
                    launch_env[name] = L._str_value(value)
                else:
                    export[name] = value
            argv = L.build_srun_argv(
                params.get("srun_path") or "srun", program_path, args=args, nodes=len(hosts) if hosts else None,
                ntasks=np, ntasks_per_node=params.get("ntasks_per_node"),
                cpus_per_task=params.get("cpus_per_task"), mpi=params.get("srun_mpi"),
                export=dict(export, **{name: None for name in launch_env}),
                nodelist=[h["name"] for h in hosts] or None, chdir=params.get("chdir"),
                label=bool(params.get("tag_output")), extra_args=params.get("launcher_args"),
                overcommit=oversubscribe, distribution=SRUN_DISTRIBUTION.get(str(map_by)) if map_by else None)
            if launcher == "sbatch":
                # The batch script runs that same srun as its one job step, inside an
                # allocation asked for with the same shape.
                batch = sbatch.plan_batch(
                    params.get("sbatch_path") or "sbatch", argv, nodes=len(hosts) if hosts else None, ntasks=np,
                    ntasks_per_node=params.get("ntasks_per_node"), cpus_per_task=params.get("cpus_per_task"),
                    nodelist=[h["name"] for h in hosts] or None, overcommit=oversubscribe,
                    timeout=timeout, output_dir=params.get("sbatch_output_dir") or params.get("chdir"),
                    job_name=params.get("sbatch_job_name"), partition=params.get("sbatch_partition"),
                    chdir=params.get("chdir"), extra_args=params.get("sbatch_args"))
    except (L.LauncherError, sbatch.BatchError) as exc:
        raise MpiJobError(str(exc))
    return {
        "batch": batch,
        "launch_env": launch_env,
        "argv": argv,
        "np": np,
        "hosts": hosts,
        "total_slots": total,
        "hostfile_content": hostfile_content,
        "program": program_path,
    }


def with_hostfile(argv, path):
    """``argv`` with the hostfile placeholder replaced by ``path``."""
    return [path if a == HOSTFILE_PLACEHOLDER else a for a in argv]


def summarize_output(stdout, launcher, implementation, tag_output):
    """Split tagged output per rank; return (text to parse, {rank: [lines]}).

    Without tag_output the text is returned as is and the per-rank dict is empty.
    With it, the text to parse is every line without its tag (stdout and stderr
    streams that mpirun folded into stdout alike, in the order printed).
    """
    if not tag_output:
        return stdout, {}
    framing = "srun" if launcher in ("srun", "sbatch") else implementation
    entries = L.split_tagged_output(stdout, framing)
    per_rank = {}
    for entry in entries:
        if entry["rank"] is not None:
            per_rank.setdefault(str(entry["rank"]), []).append(entry["line"])
    text = "\n".join(e["line"] for e in entries)
    return text + ("\n" if text else ""), dict(sorted(per_rank.items(), key=lambda kv: int(kv[0])))


def describe_transport(launcher, implementation, mca, env):
    """What the job was told to carry MPI messages over, from its MCA/env settings.

    ``{'kind', 'pml', 'btl', 'ucx_tls', 'ucx_net_devices', 'summary'}``. ``kind`` is
    ``tcp`` (Open MPI ob1 with only the tcp/self/shared-memory BTLs: kernel sockets, not
    RDMA even on InfiniBand/RoCE hosts), ``ucx`` (pml ucx: UCX picks verbs/RC/DC where an
    RDMA device is usable, TCP otherwise — ``ucx_tls`` narrows it), ``verbs`` (the old
    openib BTL), or ``auto`` when nothing was pinned and the MPI chooses at run time.
    It is the request, not a measurement: a pinned choice that cannot work fails the
    job instead of silently changing transport.
    """
    mca = dict(mca or {})
    env = dict(env or {})
    # OMPI_MCA_<name> in the ranks' environment is the same setting as --mca <name>.
    for name, value in env.items():
        if str(name).startswith("OMPI_MCA_") and value is not None:
            mca.setdefault(str(name)[len("OMPI_MCA_"):], value)
    pml = mca.get("pml")
    btl = mca.get("btl")
    pml = None if pml in (None, "") else str(pml)
    btl = None if btl in (None, "") else str(btl)
    ucx_tls = env.get("UCX_TLS")
    ucx_devices = env.get("UCX_NET_DEVICES")
    if implementation not in (None, "openmpi") and launcher == "mpirun":
        kind = "auto"
    elif pml == "ucx":
        kind = "ucx"
    elif btl is not None and not btl.startswith("^"):
        parts = set(p.strip() for p in btl.split(","))
        if "openib" in parts:
            kind = "verbs"
        elif parts <= {"tcp", "self", "vader", "sm"} and "tcp" in parts and pml in (None, "ob1"):
            kind = "tcp"
        else:
            kind = "auto"
    else:
        kind = "auto"
    words = {
        "tcp": "TCP sockets (Open MPI pml ob1, btl %s)" % btl,
        "ucx": "UCX (pml ucx%s%s)" % ((", UCX_TLS=%s" % ucx_tls) if ucx_tls else "",
                                      (", UCX_NET_DEVICES=%s" % ucx_devices) if ucx_devices else ""),
        "verbs": "InfiniBand verbs (btl %s)" % btl,
        "auto": "chosen by the MPI at run time (no pml/btl pinned)",
    }
    return {"kind": kind, "pml": pml, "btl": btl, "ucx_tls": ucx_tls, "ucx_net_devices": ucx_devices,
            "summary": words[kind]}
