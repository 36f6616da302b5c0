"""The nccl_tests role's run path on localhost (connection local), with the FAKE nccl-tests
binary tests/fixtures/nccl_tests/bin/replay_nccl_output standing in for a GPU build.

This proves the role's wiring - the tests x sizes matrix, nccl_tests_result, set_stats, the
gates failing the play, check mode - not any GPU performance: the "results" are recorded
public outputs replayed. Install and build are off here (no NCCL, no GPU).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
STAND_IN = os.path.join(TOP, "tests", "fixtures", "nccl_tests", "bin", "replay_nccl_output")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

PLAYBOOK = """
- name: Run the nccl_tests role against the stand-in
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: aiinfra.fabric.nccl_tests
  post_tasks:
    - name: Save nccl_tests_result
      ansible.builtin.copy:
        content: "{{ nccl_tests_result | to_nice_json }}"
        dest: "{{ result_file }}"
        mode: "0600"
"""


@pytest.fixture
def lab(tmp_path):
    bindir = tmp_path / "build"
    bindir.mkdir()
    for test in ("all_reduce", "all_gather", "alltoall"):
        os.symlink(STAND_IN, str(bindir / ("%s_perf" % test)))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    (tmp_path / "hosts.yml").write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": {"gpu1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "gpu_count": 2}}}}}}))
    return tmp_path


def role_vars(lab, **over):
    v = {
        "result_file": str(lab / "result.json"),
        "nccl_tests_install_method": "none",
        "nccl_tests_build": False,
        "nccl_tests_binary_dir": str(lab / "build"),
        # Single-node runs replay one-process, two-GPU (-g 2) outputs, matching gpu_count 2:
        # the module checks that the job ran on the GPUs it was given.
        "nccl_tests_tests": ["all_reduce", "all_gather"],
        "nccl_tests_sizes": [{"minbytes": "8", "maxbytes": "128M", "stepfactor": 2},
                             {"minbytes": "1K", "maxbytes": "8G", "stepfactor": 2}],
        "nccl_tests_environment": {
            "REPLAY_NCCL_FIXTURE_ALL_REDUCE_PERF": "gtx1080_all_reduce_g2_error_column.txt",
            "REPLAY_NCCL_FIXTURE_ALL_GATHER_PERF": "gtx1080_all_gather_g2_no_redop.txt",
            # The multi-node tests: 16 GPUs on two hosts of gpu_count 8.
            "REPLAY_NCCL_FIXTURE_ALLTOALL_PERF": "rtx6000d_alltoall_mpirun_2.18.3.txt",
            "REPLAY_NCCL_NO_JSON": "1",
        },
        "nccl_tests_min_busbw": {"all_reduce": 0.5},
    }
    v.update(over)
    return v


def play(lab, extra, *args):
    (lab / "vars.json").write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_SHOW_CUSTOM_STATS="true", ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
               ANSIBLE_LOCAL_TEMP=str(lab / "tmp"), ANSIBLE_HOME=str(lab / "ansible-home"),
               # The stand-in's "#!/usr/bin/env python" finds this interpreter first.
               PATH=os.pathsep.join(p for p in (os.environ.get("AIINFRA_TEST_EXTRA_PATH"),
                                                os.path.dirname(sys.executable), os.environ.get("PATH", "")) if p))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(lab / "hosts.yml"), str(lab / "play.yml"),
                           "-e", "@" + str(lab / "vars.json")] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=str(lab), env=env, timeout=300, check=False)
    return proc.returncode, proc.stdout.decode()


def test_matrix_results_and_stats(lab):
    rc, out = play(lab, role_vars(lab))
    assert rc == 0, out
    result = json.loads((lab / "result.json").read_text())
    assert result["host"] == "gpu1" and result["passed"] is True and result["failures"] == []
    runs = result["single_node"]
    assert [(r["test"], r["minbytes"], r["maxbytes"]) for r in runs] == [
        ("all_reduce", "8", "128M"), ("all_reduce", "1K", "8G"), ("all_gather", "8", "128M"),
        ("all_gather", "1K", "8G")]
    assert runs[0]["largest_size_busbw"] == 0.87 and runs[0]["gates"]["min_busbw"] == 0.5
    assert runs[0]["gates"]["size"] == 134217728 and runs[0]["nranks"] == 2
    assert runs[2]["peak_busbw"] == 0.76 and runs[2]["gates"]["min_busbw"] is None
    assert runs[0]["command"].endswith("all_reduce_perf -b 8 -e 128M -f 2 -g 2 -t 1")
    assert len(runs[1]["rows"]) == 25
    assert result["multi_node"] == []      # one host: nothing to run across nodes
    # set_stats (the AWX artifact) carries the summaries, without the rows.
    stats = out[out.index("CUSTOM STATS"):]
    assert "nccl_tests_result" in stats and "gpu1" in stats and '"rows"' not in stats


def test_gate_failure_fails_the_play_and_still_publishes(lab):
    rc, out = play(lab, role_vars(lab, nccl_tests_min_busbw={"all_reduce": 0.5, "all_gather": 1}))
    assert rc != 0
    assert "out-of-place busbw 0.76 GB/s at the largest size (134217728 B) is below min_busbw = 1.0 GB/s" in out
    assert not (lab / "result.json").exists()        # the play stopped on this host
    stats = out[out.index("CUSTOM STATS"):]
    assert "all_gather" in stats and "below min_busbw" in stats


def test_gates_can_be_recorded_without_failing(lab):
    rc, out = play(lab, role_vars(lab, nccl_tests_min_busbw={"all_gather": 1}, nccl_tests_fail_on_gates=False))
    assert rc == 0, out
    result = json.loads((lab / "result.json").read_text())
    assert result["passed"] is False and len(result["failures"]) == 2
    assert [r["passed"] for r in result["single_node"]] == [True, True, False, False]


def test_check_mode_runs_nothing(lab):
    record = lab / "record.json"
    extra = role_vars(lab)
    extra["nccl_tests_environment"] = dict(extra["nccl_tests_environment"], REPLAY_NCCL_RECORD=str(record))
    rc, out = play(lab, extra, "--check")
    assert rc == 0, out
    # Only the read-only usage probe ran; the benchmarks did not.
    assert json.loads(record.read_text())["argv"] == ["-h"]
    assert "failed=0" in out


FAKE_MPIRUN = """#!/bin/sh
# A FAKE mpirun: answers --version like Open MPI, keeps its argv and hostfile for the test,
# exports -x NAME=VALUE as mpirun does for its ranks, and starts the program once.
if [ "$1" = --version ]; then echo 'mpirun (Open MPI) 4.1.4'; exit 0; fi
echo "$@" >> "%(dir)s/mpirun.argv"
while [ $# -gt 0 ]; do
  case "$1" in
    --hostfile) cp "$2" "%(dir)s/hostfile.seen"; shift 2;;
    -x) export "$2"; shift 2;;
    *_perf) exec "$@";;
    *) shift;;
  esac
done
"""


def two_nodes(lab, name="fake_mpirun", script=FAKE_MPIRUN):
    """An inventory of two gpu_nodes on the local connection, and the FAKE launcher ``name``
    (``script`` with %(dir)s filled in) that the role is pointed at; returns its path."""
    fake = lab / name
    fake.write_text(script % {"dir": lab})
    fake.chmod(0o755)
    node = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (lab / "hosts.yml").write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": {
        "gpu1": dict(node, gpu_count=8, fabric_address="10.99.0.1"),
        "gpu2": dict(node, gpu_count=8, fabric_address="10.99.0.2")}}}}}))
    return fake


def test_multi_node_run_across_the_group(lab):
    fake = two_nodes(lab)
    rc, out = play(lab, role_vars(lab, nccl_tests_tests=["alltoall"], nccl_tests_sizes=[{"minbytes": "1K", "maxbytes": "8G"}],
                                  nccl_tests_single_node=False, nccl_tests_mpirun_path=str(fake),
                                  nccl_tests_mpirun_mca={"btl_tcp_if_include": "eth1"}))
    assert rc == 0, out
    result = json.loads((lab / "result.json").read_text())
    (run,) = result["multi_node"]
    assert run["passed"] is True and run["nranks"] == 16 and run["peak_busbw"] == 35.9
    assert run["hosts"] == ["R6KD-CX8aaS-GPU-11", "R6KD-CX8aaS-GPU-12"]    # as the replayed output says
    # One mpirun for the group (run_once), with a hostfile of the fabric addresses and GPU counts.
    assert (lab / "hostfile.seen").read_text() == "10.99.0.1 slots=8\n10.99.0.2 slots=8\n"
    (argv,) = (lab / "mpirun.argv").read_text().splitlines()
    assert argv.startswith("-np 16 --hostfile ") and " --tag-output --mca btl_tcp_if_include eth1 " in argv
    assert argv.endswith("alltoall_perf -b 1K -e 8G -f 2 -g 1 -t 1")


def test_multi_node_without_mpi_build_fails_with_rebuild_advice(lab):
    fake = two_nodes(lab)
    env = role_vars(lab)["nccl_tests_environment"]
    env["REPLAY_NCCL_FIXTURE_ALLTOALL_PERF"] = "constructed_no_mpi_two_nodes.txt"
    rc, out = play(lab, role_vars(lab, nccl_tests_tests=["alltoall"], nccl_tests_single_node=False,
                                  nccl_tests_mpirun_path=str(fake), nccl_tests_environment=env))
    assert rc != 0
    assert "Rebuild nccl-tests with MPI=1" in out


def no_gpu_count(lab, nvidia_smi=None):
    """The inventory without gpu_count; a FAKE nvidia-smi (GPU list) on the PATH when given."""
    node = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (lab / "hosts.yml").write_text(json.dumps({"all": {"children": {"gpu_nodes": {"hosts": {"gpu1": node}}}}}))
    fakebin = lab / "fakebin"
    fakebin.mkdir()
    if nvidia_smi is not None:
        smi = fakebin / "nvidia-smi"
        smi.write_text("#!/bin/sh\n[ \"$1 $2\" = \"--query-gpu=index --format=csv,noheader\" ] || exit 2\nprintf '%s'\n" % nvidia_smi)
        smi.chmod(0o755)
    return str(fakebin)


def test_without_gpu_count_the_gpus_are_counted_not_assumed_one(lab):
    # Two GPUs listed by nvidia-smi: the single-node runs use -g 2 (it used to be -g 1).
    fakebin = no_gpu_count(lab, "0\n1\n")
    os.environ["AIINFRA_TEST_EXTRA_PATH"] = fakebin
    try:
        rc, out = play(lab, role_vars(lab, nccl_tests_tests=["all_reduce"],
                                      nccl_tests_sizes=[{"minbytes": "8", "maxbytes": "128M"}]))
    finally:
        del os.environ["AIINFRA_TEST_EXTRA_PATH"]
    assert rc == 0, out
    result = json.loads((lab / "result.json").read_text())
    assert result["single_node"][0]["command"].endswith("all_reduce_perf -b 8 -e 128M -f 2 -g 2 -t 1")


def test_without_gpu_count_and_no_gpu_found_the_role_fails_clearly(lab):
    fakebin = no_gpu_count(lab, None)   # no nvidia-smi at all
    os.environ["AIINFRA_TEST_EXTRA_PATH"] = fakebin
    try:
        rc, out = play(lab, role_vars(lab))
    finally:
        del os.environ["AIINFRA_TEST_EXTRA_PATH"]
    assert rc != 0
    assert "gpu1: no GPU count" in out and "gpu_count" in out, out[-3000:]
    assert not (lab / "result.json").exists()


ONE_SWEEP = {"minbytes": "1K", "maxbytes": "8G"}


def test_multi_node_runs_use_their_own_bounds(lab):
    # A single-node bound (NVLink speeds) must not gate the runs across nodes, and the
    # multi-node bound must not gate the single-node ones.
    fake = two_nodes(lab)
    rc, out = play(lab, role_vars(lab, nccl_tests_tests=["alltoall"], nccl_tests_sizes=[ONE_SWEEP],
                                  nccl_tests_single_node=False, nccl_tests_mpirun_path=str(fake),
                                  nccl_tests_min_busbw={"alltoall": 400},
                                  nccl_tests_min_busbw_multi_node={"alltoall": 30}))
    assert rc == 0, out
    (run,) = json.loads((lab / "result.json").read_text())["multi_node"]
    assert run["passed"] is True and run["gates"]["min_busbw"] == 30.0
    rc, out = play(lab, role_vars(lab, nccl_tests_tests=["alltoall"], nccl_tests_sizes=[ONE_SWEEP],
                                  nccl_tests_single_node=False, nccl_tests_mpirun_path=str(fake),
                                  nccl_tests_min_busbw_multi_node={"alltoall": 40}))
    assert rc != 0 and "is below min_busbw = 40.0 GB/s" in out


def test_catalog_verdict_and_transport_requirement_reach_the_result(lab):
    """The role loads files/expected_busbw.yml, lays the overrides over it and passes both, with the
    transport requirement, to every run; the verdict and the proof come back in nccl_tests_result."""
    record = lab / "record.json"
    extra = role_vars(lab, nccl_tests_tests=["all_reduce"], nccl_tests_fail_on_gates=False,
                      nccl_tests_require_transport_single_node={"nvls": True},
                      nccl_tests_expectations_overrides={
                          "models": [{"id": "gtx1080", "label": "GTX 1080", "match": ["GTX 1080"]}],
                          "expectations": [{"id": "gtx1080-2", "model": "gtx1080", "scope": "single_node", "gpus": 2,
                                            "test": "all_reduce", "min_size": "128M", "busbw": 0.9,
                                            "tolerance_pct": 10, "source": {"title": "a test figure"}}]})
    extra["nccl_tests_environment"] = dict(extra["nccl_tests_environment"], REPLAY_NCCL_RECORD=str(record))
    rc, out = play(lab, extra)
    assert rc == 0, out
    assert json.loads(record.read_text())["env"]["NCCL_DEBUG"] == "INFO"
    result = json.loads((lab / "result.json").read_text())
    first = result["single_node"][0]
    assert first["expectation"]["status"] == "pass" and first["expectation"]["expected_busbw"] == 0.9
    assert "all_reduce busbw 0.87 GB/s at 128 MiB, 3 % below the GTX 1080 single-node expectation of 0.90 GB/s, " \
           "within the 10 % tolerance (source: a test figure)" in first["expectation"]["text"]
    # The replayed output has no NCCL INFO lines, so the NVLS requirement is not proven: the run fails.
    assert first["passed"] is False and "NCCL printed no INFO lines" in first["failure"]
    assert first["transport"]["passed"] is False
