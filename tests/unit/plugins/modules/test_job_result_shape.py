"""One job-result shape (issue 36): mpi_run, nccl_test and fabric_sweep, run as Ansible runs them
(a subprocess reading its arguments file), return the same keys with the same types and the
same changed rule (false: a job measures), in check mode and after a run; their RETURN docs say
the same. The launchers are FAKES written into a temporary directory (an mpirun that answers
--version like Open MPI 4.1.4 and prints an OSU-style latency table) and the nccl-tests stand-in
that replays a recorded output - this proves the modules' glue, not MPI or GPUs."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys

import pytest
import yaml

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job_result as JR
from ansible_collections.aiinfra.fabric.plugins.modules import fabric_sweep, fio_run, mpi_run, nccl_test

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
NCCL_STAND_IN = os.path.join(TOP, "tests", "fixtures", "nccl_tests", "bin", "replay_nccl_output")

FAKE_MPIRUN = r'''#!%s
import sys
if sys.argv[1:] == ["--version"]:
    print("mpirun (Open MPI) 4.1.4")
    sys.exit(0)
print("# aiinfra.fabric MPI Latency Test v1.0\n# Size          Latency (us)\n0   150.00\n8   151.00")
''' % sys.executable

# The keys of the shared shape whose type is fixed in every module (cmd's type is the module's own).
TYPES = {"changed": bool, "ran": bool, "launcher": str, "launched_from": str, "argv": list, "command": str}


@pytest.fixture
def lab(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    mpirun = bindir / "mpirun"
    mpirun.write_text(FAKE_MPIRUN)
    mpirun.chmod(0o755)
    program = bindir / "bench"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    build = tmp_path / "build"
    build.mkdir()
    os.symlink(NCCL_STAND_IN, str(build / "all_reduce_perf"))
    return {"dir": tmp_path, "mpirun": str(mpirun), "program": str(program), "build": str(build)}


def run_module(lab, name, check_mode=False, **args):
    module_args = dict(args)
    if check_mode:
        module_args["_ansible_check_mode"] = True
    path = lab["dir"] / ("%s-args.json" % name)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, ".cache", "collections"), TMPDIR=str(lab["dir"]),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.aiinfra.fabric.plugins.modules.%s" % name,
                           str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    try:
        return json.loads(proc.stdout.decode())
    except ValueError:
        raise AssertionError("module printed no JSON: rc=%s\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))


def mpi_run_args(lab):
    # The old option names: still accepted, as aliases.
    return dict(program=lab["program"], mpirun=lab["mpirun"], np=1, env={"A": "1"}, extra_args=["--report-bindings"])


def nccl_args(lab):
    return dict(test="all_reduce", binary_dir=lab["build"], maxbytes="128M", ngpus=8, json="never",
                environment={"REPLAY_NCCL_FIXTURE": "cscs_gh200_all_reduce_srun_2.17.1.txt",
                             "REPLAY_NCCL_NO_JSON": "1"})


def sweep_args(lab):
    return dict(nodes=[{"name": "te1", "address": "localhost"}, {"name": "te2", "address": "127.0.0.1"}],
                tests=[{"name": "latency", "program": lab["program"], "table": "latency"}], mpirun=lab["mpirun"],
                env={"A": "1"}, retest_low=0)


def assert_shape(r, cmd_type, one_command=True):
    assert not r.get("failed"), r.get("msg")
    for key, kind in TYPES.items():
        if key in ("argv", "command") and not one_command:
            continue
        assert isinstance(r[key], kind), (key, r[key])
    assert r["changed"] is False
    assert r["launched_from"] == socket.gethostname()
    assert "implementation" in r
    if one_command:
        assert r["argv"] and all(isinstance(a, str) for a in r["argv"])
        assert r["command"] == " ".join(shlex.quote(a) for a in r["argv"])
        assert r["cmd"] == (r["argv"] if cmd_type == "list" else r["command"])
    if r["ran"] and one_command:
        for key in JR.WHEN_RAN:
            assert key in r, key


def test_mpi_run_result_shape(lab):
    checked = run_module(lab, "mpi_run", check_mode=True, **mpi_run_args(lab))
    assert_shape(checked, "list")
    assert checked["ran"] is False and "rc" not in checked
    ran = run_module(lab, "mpi_run", **mpi_run_args(lab))
    assert_shape(ran, "list")
    assert ran["ran"] is True and ran["rc"] == 0 and ran["launcher"] == "mpirun"
    assert ran["argv"] == [lab["mpirun"], "-np", "1", "-x", "A=1", "--report-bindings", lab["program"]]
    assert ran["implementation"]["implementation"] == "openmpi"


def test_nccl_test_result_shape(lab):
    checked = run_module(lab, "nccl_test", check_mode=True, **nccl_args(lab))
    assert_shape(checked, "str")
    assert checked["ran"] is False and checked["passed"] is None
    ran = run_module(lab, "nccl_test", **nccl_args(lab))
    assert_shape(ran, "str")
    assert ran["ran"] is True and ran["rc"] == 0 and ran["launcher"] == "none" and ran["implementation"] is None
    assert ran["argv"][0] == os.path.join(lab["build"], "all_reduce_perf") and ran["cancelled"] is None


def test_nccl_test_refusal_has_the_shape_too(lab):
    r = run_module(lab, "nccl_test", test="all_reduce", binary_dir=str(lab["dir"] / "nowhere"))
    assert r["failed"] is True and r["changed"] is False and r["ran"] is False and r["argv"] == []
    assert r["command"] == r["cmd"] == "" and r["passed"] is False


def test_fabric_sweep_result_shape(lab):
    checked = run_module(lab, "fabric_sweep", check_mode=True, **sweep_args(lab))
    assert_shape(checked, None, one_command=False)
    assert checked["ran"] is False and checked["jobs"] == []
    ran = run_module(lab, "fabric_sweep", **sweep_args(lab))
    assert_shape(ran, None, one_command=False)
    assert ran["ran"] is True and ran["implementation"]["implementation"] == "openmpi"
    # A sweep runs many jobs: each record carries the job keys, argv (list) and command (string).
    job = ran["jobs"][0]["pairs"][0]["jobs"][0]
    assert job["argv"][0] == lab["mpirun"] and "<hostfile>" in job["argv"] and "A=1" in job["argv"]
    assert job["command"] == " ".join(shlex.quote(a) for a in job["argv"])
    assert {"rc", "duration", "timed_out", "cancelled"} <= set(job) and job["rc"] == 0
    assert ran["commands"] == [job["command"]]


@pytest.mark.parametrize("module", [mpi_run, nccl_test, fabric_sweep], ids=lambda m: m.__name__.split(".")[-1])
def test_return_docs_describe_the_shared_shape(module):
    returned = yaml.safe_load(module.RETURN)
    name = module.__name__.split(".")[-1]
    keys = set(JR.ALWAYS) - ({"argv", "command", "cmd"} if name == "fabric_sweep" else set())
    for key in keys:
        assert key in returned, (name, key)
        assert returned[key]["returned"] == "always", (name, key)
    assert returned["changed"]["type"] == "bool"
    if name != "fabric_sweep":
        assert returned["argv"]["type"] == "list" and returned["command"]["type"] == "str"
        assert returned["cmd"]["type"] == {"mpi_run": "list", "nccl_test": "str"}[name]
        description = returned["cmd"]["description"]
        assert "Deprecated" in " ".join(description if isinstance(description, list) else [description])


def test_fio_run_changes_only_what_it_writes(monkeypatch, tmp_path):
    from module_harness import fake_bin_path, run_main  # tests/unit/plugins/modules/module_harness.py
    fio_json = json.dumps({"fio version": "fio-3.33", "jobs": [{"jobname": "aiinfra", "error": 0}]})
    monkeypatch.setattr(fio_run.AnsibleModule, "run_command", lambda self, argv, **kw: (0, fio_json, ""))
    fake_bin_path(monkeypatch, fio_run)
    there = tmp_path / "data"
    there.write_text("x")

    def changed(**args):
        with monkeypatch.context() as m:
            r = run_main(m, fio_run, args)
        assert not r.get("failed"), r
        assert r["argv"] == r["command"]
        return r["changed"]

    assert changed(filename=str(there), rw="randread") is False
    assert changed(filename=str(there), rw="read", extra_args=["--rw=write"]) is True
    assert changed(filename=str(there), rw="randrw") is True
    assert changed(filename=str(tmp_path / "new-file"), rw="read") is True
    assert changed(job_file=str(there)) is True
    assert changed(filename=str(there), rw="write", _ansible_check_mode=True) is True
    assert changed(filename=str(there), rw="read", _ansible_check_mode=True) is False
