"""The nccl_test module run as Ansible runs it (a subprocess reading its arguments file),
against tests/fixtures/nccl_tests/bin/replay_nccl_output: a FAKE nccl-tests binary that
replays recorded real outputs. These tests prove the execution path (argv, environment,
JSON report handling, timeouts, exit codes, check mode, guards, gates); they are not
GPU measurements.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
STAND_IN = os.path.join(TOP, "tests", "fixtures", "nccl_tests", "bin", "replay_nccl_output")


@pytest.fixture
def bindir(tmp_path):
    """A binary_dir whose *_perf programs are the stand-in."""
    d = tmp_path / "build"
    d.mkdir()
    for test in ("all_reduce", "alltoall", "all_gather"):
        os.symlink(STAND_IN, str(d / ("%s_perf" % test)))
    return d


def run_module(tmp_path, check_mode=False, **args):
    path = tmp_path / "args.json"
    module_args = dict(args)
    if check_mode:
        module_args["_ansible_check_mode"] = True
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    # The stand-in's "#!/usr/bin/env python" finds this interpreter first.
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, ".cache", "collections"), TMPDIR=str(tmp_path),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.aiinfra.fabric.plugins.modules.nccl_test",
                           str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    try:
        return json.loads(proc.stdout.decode())
    except ValueError:
        raise AssertionError("module printed no JSON: rc=%s\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))


def replay(fixture, **more):
    env = {"REPLAY_NCCL_FIXTURE": fixture}
    env.update(more)
    return env


def test_single_node_run_reads_the_json_report(tmp_path, bindir):
    record = tmp_path / "record.json"
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(bindir), maxbytes="128M", ngpus=8, min_busbw=100,
                   environment=replay("cscs_gh200_all_reduce_srun_2.17.1.txt",
                                      REPLAY_NCCL_JSON="constructed_gh200_all_reduce.json",
                                      REPLAY_NCCL_RECORD=str(record), NCCL_DEBUG="WARN"))
    assert not r.get("failed"), r.get("msg")
    assert r["changed"] is False
    assert r["result_source"] == "json" and len(r["rows"]) == 25
    assert r["largest_size_busbw"] == 122.57 and r["gates"]["passed"] is True
    called = json.loads(record.read_text())
    assert called["argv"][:10] == ["-b", "8", "-e", "128M", "-f", "2", "-g", "8", "-t", "1"]
    assert called["argv"][10] == "-J"
    assert called["env"]["NCCL_DEBUG"] == "WARN"
    # The private directory with the report (and its copy of the environment) is gone.
    assert not os.path.exists(os.path.dirname(called["argv"][11]))
    assert "do-not-leak-this" not in json.dumps(r)


def test_binary_without_json_is_parsed_from_text(tmp_path, bindir):
    # The replayed output is a 16-GPU job: say so, or the GPU count check fails it.
    r = run_module(tmp_path, test="alltoall", binary_dir=str(bindir), maxbytes="8G", expected_gpus=16,
                   environment=replay("rtx6000d_alltoall_mpirun_2.18.3.txt", REPLAY_NCCL_NO_JSON="1"))
    assert not r.get("failed"), r.get("msg")
    assert r["result_source"] == "text" and "-J" not in r["argv"]
    assert r["version"]["nccl"] == "2.30.3+cuda13.0" and r["peak_busbw"] == 35.9


def test_gate_failure_names_value_and_bound(tmp_path, bindir):
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(bindir), min_busbw=130,
                   environment=replay("cscs_gh200_all_reduce_srun_2.17.1.txt", REPLAY_NCCL_NO_JSON="1"))
    assert r["failed"] is True
    assert "out-of-place busbw 122.57 GB/s at the largest size (134217728 B) is below min_busbw = 130.0" in r["msg"]
    assert r["rows"] and r["gates"]["passed"] is False


def test_nonzero_exit_and_stderr(tmp_path, bindir):
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(bindir),
                   environment=replay("rtx5090_alltoall_wide_numbers.txt", REPLAY_NCCL_EXIT="2",
                                      REPLAY_NCCL_STDERR="Invalid number of GPUs: 2 requested but only 1 were found.",
                                      REPLAY_NCCL_NO_JSON="1"))
    assert r["failed"] is True and r["rc"] == 2
    assert "exited with rc=2" in r["msg"] and "Invalid number of GPUs" in r["msg"]


def test_timeout_stops_the_job(tmp_path, bindir):
    started = time.time()
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(bindir), timeout=1,
                   environment=replay("rtx5090_alltoall_wide_numbers.txt", REPLAY_NCCL_SLEEP="60",
                                      REPLAY_NCCL_NO_JSON="1"))
    assert time.time() - started < 30
    assert r["failed"] is True and r["timed_out"] is True
    assert "did not finish within timeout=1 s" in r["msg"]


def test_check_mode_reports_the_command_and_runs_nothing(tmp_path, bindir):
    record = tmp_path / "record.json"
    r = run_module(tmp_path, check_mode=True, test="all_reduce", binary_dir=str(bindir), ngpus=2, maxbytes="1G",
                   environment=replay("rtx5090_alltoall_wide_numbers.txt", REPLAY_NCCL_NO_JSON="1",
                                      REPLAY_NCCL_RECORD=str(record)))
    assert r["changed"] is False and not r.get("failed")
    # argv (list) and command (string) as in every job module; cmd stays nccl_test's string (issue 36).
    assert r["argv"] == [str(bindir / "all_reduce_perf"), "-b", "8", "-e", "1G", "-f", "2", "-g", "2", "-t", "1"]
    assert r["command"] == r["cmd"] == " ".join(r["argv"])
    # Only the usage probe (-h) ran, which is read-only.
    assert json.loads(record.read_text())["argv"] == ["-h"]


def test_missing_binary_fails_before_running(tmp_path):
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(tmp_path / "nowhere"))
    assert r["failed"] is True and "not found or not executable" in r["msg"]


def test_creates_guard(tmp_path, bindir):
    marker = tmp_path / "done"
    marker.write_text("")
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(bindir), creates=str(marker),
                   environment=replay("rtx5090_alltoall_wide_numbers.txt", REPLAY_NCCL_EXIT="9"))
    assert r["skipped"] is True and r["changed"] is False and "exists" in r["msg"]


def test_mpirun_path_detects_a_binary_built_without_mpi(tmp_path, bindir):
    # A FAKE mpirun: answers --version like Open MPI, records its argv and the hostfile,
    # exports -x NAME=VALUE as mpirun does for its ranks, then starts the program once
    # (which replays the constructed two-process output).
    fake = tmp_path / "fake_mpirun"
    fake.write_text(
        "#!/bin/sh\n"
        "if [ \"$1\" = --version ]; then echo 'mpirun (Open MPI) 4.1.4'; exit 0; fi\n"
        "echo \"$@\" > \"%s/mpirun.argv\"\n"
        "while [ $# -gt 0 ]; do\n"
        "  case \"$1\" in --hostfile) cp \"$2\" \"%s/hostfile.seen\"; shift 2;;\n"
        "    -x) export \"$2\"; shift 2;;\n"
        "    *_perf) exec \"$@\";; *) shift;; esac\n"
        "done\n" % (tmp_path, tmp_path))
    fake.chmod(0o755)
    r = run_module(tmp_path, test="alltoall", binary_dir=str(bindir), launcher="mpirun", mpirun_path=str(fake),
                   hosts=[{"name": "GENOA-01", "slots": 1}, {"name": "GENOA-02", "slots": 1}],
                   mca={"btl_tcp_if_include": "eth0"},
                   environment=replay("constructed_no_mpi_two_nodes.txt", REPLAY_NCCL_NO_JSON="1"))
    assert r["failed"] is True
    assert "Rebuild nccl-tests with MPI=1" in r["msg"] and "GENOA-01, GENOA-02" in r["msg"]
    assert (tmp_path / "hostfile.seen").read_text() == "GENOA-01 slots=1\nGENOA-02 slots=1\n"
    argv = (tmp_path / "mpirun.argv").read_text().split()
    assert argv[:5] == ["-np", "2", "--hostfile", argv[3], "--tag-output"]
    assert "-x" in argv and "REPLAY_NCCL_FIXTURE=constructed_no_mpi_two_nodes.txt" in argv


# --------------------------------------------------------------------------- transport proof, expectations

INFO_DIR = os.path.join(TOP, "tests", "fixtures", "nccl_info")


def info_lines(name):
    with open(os.path.join(INFO_DIR, name)) as handle:
        return handle.read().rstrip("\n")


def test_socket_fallback_fails_the_task_and_info_was_turned_on(tmp_path, bindir):
    record = tmp_path / "record.json"
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(bindir), ngpus=8, min_busbw=100,
                   require_transport={"network": "ib", "all_ranks": False},
                   environment=replay("cscs_gh200_all_reduce_srun_2.17.1.txt", REPLAY_NCCL_NO_JSON="1",
                                      REPLAY_NCCL_RECORD=str(record), NCCL_DEBUG="WARN",
                                      REPLAY_NCCL_STDERR=info_lines("issue166_socket_channels.txt")))
    assert json.loads(record.read_text())["env"]["NCCL_DEBUG"] == "INFO"
    assert r["failed"] is True and r["passed"] is False
    assert "a silent fallback to TCP sockets; required network ib" in r["msg"]
    # The busbw gate alone would have passed: the numbers are the recorded good ones.
    assert r["largest_size_busbw"] == 122.57 and r["transport"]["networks"] == []
    assert r["transport"]["transports"] == ["NET/Socket"]


def test_ib_gdr_requirement_proven_passes(tmp_path, bindir):
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(bindir), ngpus=8,
                   require_transport={"network": "ib", "gdr": True, "all_ranks": False},
                   environment=replay("cscs_gh200_all_reduce_srun_2.17.1.txt", REPLAY_NCCL_NO_JSON="1",
                                      REPLAY_NCCL_STDERR=info_lines("aks_ib_gdrdma_2nodes.txt")))
    assert not r.get("failed"), r.get("msg")
    assert r["transport"]["passed"] is True and r["transport"]["gdr"] is True


def test_expectations_catalog_reaches_the_module(tmp_path, bindir):
    import yaml
    with open(os.path.join(TOP, "files", "expected_busbw.yml")) as handle:
        doc = yaml.safe_load(handle)
    r = run_module(tmp_path, test="all_reduce", binary_dir=str(bindir), ngpus=8, expectations=doc,
                   environment=replay("cscs_gh200_all_reduce_srun_2.17.1.txt", REPLAY_NCCL_NO_JSON="1"))
    assert not r.get("failed"), r.get("msg")
    # GH200's name contains "H200"; the catalog's GH200 rule comes first, and it has no figure: said, not guessed.
    assert r["expectation"]["status"] == "not_compared" and r["expectation"]["model"] == "GH200"
    assert r["expectation"]["text"].endswith("not compared with an expectation: the catalog has no single-node "
                                             "all_reduce expectation for GH200 with 4 GPUs per node")
