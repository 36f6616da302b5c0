# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""One nccl-tests job: from the nccl_test module's parameters to a command, and from what
the job printed to the module's result.

``plan_job(params, find, run_command, check_mode, exists, executable) -> JobPlan``
    Validates everything before anything runs: the binary, the sizes and options, the
    launcher's hosts/np/mca. The launcher and its MPI are found by the shared
    :func:`mpi.launcher.resolve_launcher` (``mpirun_path``/``srun_path``/``implementation``),
    which looks a command name up with ``find(name, None)`` (the PATH);
    ``run_command(argv, env) -> (rc, out, err)`` is used only for read-only probes
    (``mpirun --version``, ``<binary> -h``), so the plan is the same in check mode.
``read_report(job, plan, workdir)``  the parsed report (JSON when there is one)
``result_fields(report, job, plan, ...)``  the module's result, with ``failure``

The command lines themselves come from the shared launcher (module_utils/mpi/launcher.py).
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job_result as JR
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import catalog as C
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import command as N
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import gates as G
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import parse as NP
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import transport as T
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.errors import NcclError

HOSTFILE = "<hostfile>"
JSON_REPORT = "<json-report>"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class NcclJobError(NcclError):
    """Bad input or an unusable host; the message says what and what to do."""


class JobPlan(object):
    """The command to run, with placeholders for the files made just before the run."""

    def __init__(self, test, argv, binary, launcher, use_json, env, hosts, implementation, warnings, launch=None):
        self.test = test
        self.argv = argv
        self.binary = binary
        self.launcher = launcher
        self.use_json = use_json
        self.env = env
        self.hosts = hosts
        self.implementation = implementation
        self.warnings = warnings
        # resolve_launcher's answer: the tools' paths and the MPI ({implementation, version, banner}).
        self.launch = launch or {"launcher": launcher, "paths": {}, "implementation": None}

    def argv_for_display(self):
        return list(self.argv)

    def cmd_for_display(self):
        return JR.command_line(self.argv)

    def materialize(self, workdir):
        """Write the hostfile into ``workdir`` and return the real argv."""
        hostfile = None
        if HOSTFILE in self.argv:
            hostfile = L.write_hostfile(self.hosts, self.implementation, directory=workdir)
        report = os.path.join(workdir, "nccl-tests-report.json")
        return [hostfile if a == HOSTFILE else report if a == JSON_REPORT else a for a in self.argv]

    def report_path(self, workdir):
        return os.path.join(workdir, "nccl-tests-report.json")


def _environment(environment):
    env = {}
    for name, value in (environment or {}).items():
        if not _ENV_NAME.match(str(name)):
            raise NcclJobError("environment has an invalid variable name %r" % (name,))
        env[str(name)] = value
    return env


def plan_job(p, find, run_command, check_mode=False, exists=os.path.exists, executable=None):
    warnings = []
    binary = os.path.join(p["binary_dir"], N.binary_name(p["test"], p.get("binary_suffix")))
    env = _environment(p.get("environment"))
    try:
        require = T.normalize_requirement(p.get("require_transport"))
        if require:
            # The proof is NCCL's own INFO lines on the job's output.
            env, notes = T.debug_environment(env)
            warnings.extend(notes)
        C.merge(p.get("expectations"), p.get("expectations_overrides"))
    except (T.TransportError, C.CatalogError) as exc:
        raise NcclJobError(str(exc))
    if p.get("expectations") and (p.get("expectation_scope") or _default_scope(p)) == "multi_node" \
            and not p.get("network"):
        warnings.append("expectations are given for a multi-node run but network (for example 8x400G) is not: "
                        "the busbw is not compared with the catalog")
    launcher = p.get("launcher") or "none"
    hosts = p.get("hosts") or []
    np = p.get("np")
    if p.get("timeout") is not None and p["timeout"] < 1:
        raise NcclJobError("timeout must be at least 1 second, got %r" % (p["timeout"],))

    present = exists(binary) and (executable is None or executable(binary))
    if not present:
        message = ("nccl-tests binary %s not found or not executable: build nccl-tests (role aiinfra.fabric.nccl_tests) "
                   "or point binary_dir/binary_suffix at the build (test=%s)" % (binary, p["test"]))
        if not check_mode:
            raise NcclJobError(message)
        warnings.append(message + "; in check mode the command is shown anyway")

    if launcher == "none":
        for name in ("hosts", "np", "srun_nodes", "srun_ntasks_per_node", "srun_mpi"):
            if p.get(name):
                raise NcclJobError("%s=%r needs launcher=mpirun or launcher=srun (launcher is none)" % (name, p[name]))
        if p.get("mca"):
            raise NcclJobError("mca=%r needs launcher=mpirun (launcher is none)" % (p["mca"],))

    use_json = _use_json(p.get("json") or "auto", launcher, binary, present, env, run_command)
    args = N.build_test_args(
        minbytes=p.get("minbytes", "8"), maxbytes=p.get("maxbytes", "128M"), stepfactor=p.get("stepfactor"),
        stepbytes=p.get("stepbytes"), ngpus=p.get("ngpus", 1), threads=p.get("threads", 1), iters=p.get("iters"),
        warmup_iters=p.get("warmup_iters"), check=p.get("check"), op=p.get("op"), datatype=p.get("datatype"),
        root=p.get("root"), blocking=p.get("blocking"), cudagraph=p.get("cudagraph"),
        json_file=JSON_REPORT if use_json else None, extra_args=p.get("extra_args"),
    )

    launch = None
    implementation = None
    normalized = []
    if launcher == "mpirun":
        normalized = L.normalize_hosts(hosts)
        if not normalized:
            raise NcclJobError("launcher=mpirun needs hosts (names with slots, e.g. the gpu_nodes group)")
        slots = sum(h["slots"] for h in normalized)
        if np is None:
            np = slots
        if np < 1 or np > slots:
            raise NcclJobError("np=%s does not fit the %d slots of hosts %s" % (np, slots,
                               ", ".join("%s:%d" % (h["name"], h["slots"]) for h in normalized)))
        launch = _resolve_launcher(launcher, p, find, run_command)
        mpirun = launch["paths"]["mpirun"]
        implementation = launch["implementation"]["implementation"]
        if implementation == L.UNKNOWN:
            raise NcclJobError("%s --version names no MPI this module knows (Open MPI, MPICH, Intel MPI)" % mpirun)
        argv = L.build_mpirun_argv(
            mpirun, binary, args, np=np, implementation=implementation, hostfile=HOSTFILE,
            mca=p.get("mca") or {}, env=env, allow_run_as_root=p.get("allow_run_as_root", False),
            tag_output=(implementation == L.OPENMPI), extra_args=p.get("launcher_args"),
        )
        run_env = None
    elif launcher == "srun":
        if p.get("mca"):
            raise NcclJobError("mca=%r is for launcher=mpirun; with srun set OMPI_MCA_* in environment" % (p["mca"],))
        launch = _resolve_launcher(launcher, p, find, run_command)
        srun = launch["paths"]["srun"]
        nodelist = [h["name"] for h in L.normalize_hosts(hosts)] if hosts else None
        argv = L.build_srun_argv(
            srun, binary, args, nodes=p.get("srun_nodes"), ntasks=np,
            ntasks_per_node=p.get("srun_ntasks_per_node"), mpi=p.get("srun_mpi"), export=env,
            nodelist=nodelist, label=True, extra_args=p.get("launcher_args"),
        )
        run_env = None
    else:
        argv = [binary] + args
        run_env = dict((k, v) for k, v in env.items() if v is not None)
    return JobPlan(p["test"], argv, binary, launcher, use_json, run_env, normalized, implementation, warnings,
                   launch=launch)


def _resolve_launcher(launcher, p, find, run_command):
    """The shared launcher resolution; ``find(name, None)`` is the PATH lookup."""
    try:
        return L.resolve_launcher(launcher, p, lambda name: find(name, None), lambda argv: run_command(argv, None))
    except L.LauncherError as exc:
        raise NcclJobError(str(exc))


def _default_scope(p):
    return "single_node" if (p.get("launcher") or "none") == "none" else "multi_node"


def _use_json(mode, launcher, binary, present, env, run_command):
    if mode == "never":
        return False
    if mode == "auto" and launcher != "none":
        # Rank 0 writes the report on its own host, which need not be this one.
        return False
    if not present:
        return mode == "always"
    rc, out, err = run_command([binary, "-h"], dict((k, v) for k, v in env.items() if v is not None))
    supported = N.supports_json((out or "") + (err or ""))
    if mode == "always" and not supported:
        raise NcclJobError("json=always but %s -h does not offer -J (nccl-tests before 2.17?): use json=auto or "
                           "never, or rebuild a newer nccl-tests (rc=%s)" % (binary, rc))
    return supported


def read_report(job, plan, workdir):
    """The parsed report: the -J report's rows when there is one, the printed table otherwise."""
    text_report = NP.parse_text(job["stdout"])
    if not plan.use_json:
        return text_report
    path = plan.report_path(workdir)
    if not os.path.exists(path):
        text_report["json_missing"] = True
        return text_report
    try:
        with open(path) as handle:
            doc = json.load(handle)
        report = NP.parse_json(doc)
    except (ValueError, N.NcclTestsError):
        text_report["json_missing"] = True
        return text_report
    # The JSON lacks what only the text has: versions as printed, extra headers.
    for key, value in text_report["version"].items():
        if report["version"].get(key) is None:
            report["version"][key] = value
    if not report["devices"]:
        report["devices"] = text_report["devices"]
    report["headers"] = max(report["headers"], text_report["headers"])
    report["header_ranks"] = text_report["header_ranks"] or report["header_ranks"]
    report["errors"] = report["errors"] + text_report["errors"]
    report["other_rank_rows"] = text_report["other_rank_rows"]
    if report["max_bytes_reduced_to"] is None:
        report["max_bytes_reduced_to"] = text_report["max_bytes_reduced_to"]
    return report


def _tail(text, lines=20):
    return "\n".join((text or "").strip().splitlines()[-lines:])


def expected_gpus(p):
    """GPUs the job should run on: processes x threads x GPUs per thread (None: unknown).

    ``expected_gpus`` when given; otherwise one process (launcher none) or ``np``
    processes (mpirun/srun, when np is known), each with ``threads`` x ``ngpus`` GPUs.
    """
    if p.get("expected_gpus") is not None:
        return p["expected_gpus"]
    per_process = (p.get("ngpus") or 1) * (p.get("threads") or 1)
    launcher = p.get("launcher") or "none"
    if launcher == "none":
        return per_process
    np = p.get("np")
    if np is None and launcher == "mpirun" and p.get("hosts"):
        np = sum(h["slots"] for h in L.normalize_hosts(p["hosts"]))
    return None if np is None else np * per_process


def expectation_fields(report, summary, p, host):
    """The catalog verdict for this run (None without a catalog)."""
    if not p.get("expectations"):
        return None
    catalog = C.merge(p["expectations"], p.get("expectations_overrides"))
    scope = p.get("expectation_scope") or _default_scope(p)
    hosts = summary["hosts"] or [host]
    per_node = None
    if summary["nranks"]:
        per_node = summary["nranks"] // len(hosts) if summary["nranks"] % len(hosts) == 0 else None
    expectation, model, why_not = C.select(catalog, summary["gpu_models"], p["test"], scope,
                                           gpus_per_node=per_node, network=p.get("network"))
    where = host if scope == "single_node" else "+".join(hosts)
    return C.verdict(where, p["test"], summary["largest_size_busbw"], summary["largest_size"], expectation, model,
                     why_not)


def transport_fields(job, p):
    """``(facts or None, failures)``: NCCL's INFO lines parsed; failures only when a requirement is set."""
    require = T.normalize_requirement(p.get("require_transport"))
    text = (job.get("stdout") or "") + "\n" + (job.get("stderr") or "")
    facts = T.parse(text)
    if not facts["lines"] and not require:
        return None, []
    facts["summary"] = T.summary(facts)
    facts["required"] = require
    failures = T.check(facts, require) if require else []
    facts["passed"] = not failures if require else None
    return facts, failures


def result_fields(report, job, plan, host, min_busbw=None, min_busbw_per_gpu=None, timeout=None, gpus=None,
                  p=None):
    p = p or {}
    summary = G.summarize(report)
    bound, origin = G.bound_for(min_busbw, min_busbw_per_gpu, summary["gpu_models"])
    fields = {
        "test": plan.test,
        "program": report.get("test") or os.path.basename(plan.binary),
        "binary": plan.binary,
        "launcher": plan.launcher,
        "rows": report["rows"],
        "avg_busbw": report["avg_busbw"],
        "peak_busbw": summary["peak_busbw"],
        "peak_busbw_size": summary["peak_busbw_size"],
        "largest_size": summary["largest_size"],
        "largest_size_busbw": summary["largest_size_busbw"],
        "wrong_total": summary["wrong_total"],
        "out_of_bounds": report["out_of_bounds"],
        "devices": report["devices"],
        "hosts": summary["hosts"],
        "nranks": summary["nranks"],
        "version": report["version"],
        "config": report["config"],
        "layout": report["layout"],
        "result_source": report["source"],
        "duration": job["duration"],
        "rc": job["rc"],
        "timed_out": job["timed_out"],
        "stdout": job["stdout"],
        "stderr": job["stderr"],
        "errors": report["errors"],
        "problems": report["problems"],
        "footer": report["footer"],
        "requested_maxbytes": (report["config"] or {}).get("maxbytes"),
        "max_bytes_reduced_to": report["max_bytes_reduced_to"],
        "expected_gpus": gpus,
        "other_rank_rows": report["other_rank_rows"],
    }
    fields["transport"], transport_failures = transport_fields(job, p)
    expectation = expectation_fields(report, summary, p, host) if p.get("test") else None
    fields["expectation"] = expectation
    failures = []
    failure = None
    runs = G.no_mpi_processes(report)
    if job["timed_out"]:
        failure = ("nccl-tests did not finish within timeout=%s s on %s; the launcher and every process it started "
                   "were stopped. Last output:\n%s" % (timeout, host, _tail(job["stdout"]) or _tail(job["stderr"])))
    elif runs:
        failure = ("%s printed %d separate headers, each with its own rank 0 (hosts: %s): the binary was built "
                   "without MPI support, so %s started %d independent single-process runs that never talked to "
                   "each other. Rebuild nccl-tests with MPI=1 MPI_HOME=<your MPI prefix> (role variable "
                   "nccl_tests_build_mpi: true) and run it again."
                   % (os.path.basename(plan.binary), runs, ", ".join(summary["hosts"]) or "unknown",
                      plan.launcher if plan.launcher != "none" else "the launcher", runs))
    elif job["rc"] != 0:
        failure = ("%s exited with rc=%s on %s%s. %s:\n%s"
                   % (os.path.basename(plan.binary), job["rc"], host,
                      (" (" + "; ".join(report["errors"][:3]) + ")") if report["errors"] else "",
                      "stderr" if job["stderr"].strip() else "Last output",
                      _tail(job["stderr"]) or _tail(job["stdout"])))
    elif not report["rows"]:
        failure = ("%s printed no result rows on %s. Last output:\n%s"
                   % (os.path.basename(plan.binary), host, _tail(job["stdout"])))
    else:
        failures = G.check_gates(report, summary, host, min_busbw=min_busbw, min_busbw_per_gpu=min_busbw_per_gpu,
                                 expected_gpus=gpus)
        failures += ["transport: %s" % f for f in transport_failures]
        if expectation and expectation["status"] == C.BELOW and p.get("expectation_gate", True):
            failures.append(expectation["text"])
        if failures:
            failure = "nccl-tests %s: %s" % (fields["test"], "; ".join(failures))
    fields["gates"] = {
        "passed": failure is None,
        "failures": failures if failures else ([failure] if failure else []),
        "min_busbw": bound,
        "bound_source": origin,
        # Where the busbw bound was compared: the largest size measured, which is below
        # requested_maxbytes when nccl-tests reduced maxBytes for lack of GPU memory.
        "size": G.gate_size(report, summary) if bound is not None else None,
    }
    fields["warnings"] = []
    if report["max_bytes_reduced_to"] is not None:
        fields["warnings"].append(
            "nccl-tests reduced maxBytes to %d B (requested %s B) for lack of GPU memory on %s: the largest size "
            "measured is %s B" % (report["max_bytes_reduced_to"], fields["requested_maxbytes"], host,
                                  summary["largest_size"]))
    if gpus is not None and not report["devices"]:
        fields["warnings"].append("this nccl-tests build printed no device list, so the number of GPUs (expected "
                                  "%d) could not be checked" % gpus)
    fields["failure"] = failure
    return fields
