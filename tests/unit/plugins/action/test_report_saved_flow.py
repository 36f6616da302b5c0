"""The README's flow, as separate ansible-playbook commands, on localhost.

1. playbooks/nccl_bench.yml itself, on an inventory whose gpu_nodes host runs locally, with
   the FAKE nccl-tests binary tests/fixtures/nccl_tests/bin/replay_nccl_output (recorded
   public outputs replayed) - the real playbook and role, no GPU;
2. the NVMe-oF and MPI results of a lab run (tests/fixtures/report/lab_captured) set on te1
   and te2 and saved by the same tasks the main playbooks end their roles with (the lab
   itself runs these playbooks in the end-to-end run, see molecule/report);
3. playbooks/fabric_report.yml as its own command.

Every command runs in a folder other than the repository and the playbooks' folder, with
relative paths, to prove the path rule. Before the fix, step 3 wrote "PASS: 0 metrics".
"""

import json
import os
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
STAND_IN = os.path.join(TOP, "tests", "fixtures", "nccl_tests", "bin", "replay_nccl_output")
LAB = os.path.join(TOP, "tests", "fixtures", "report", "lab_captured")

SET_AND_SAVE = """---
- name: Set the captured lab facts, as nvmeof_rdma.yml and mpi_bench.yml set them, and save them
  hosts: te1:te2
  gather_facts: false
  vars:
    captured: "{{ lookup('ansible.builtin.file', '%s/' ~ inventory_hostname ~ '.json') | from_json }}"
  tasks:
    - name: Set the facts
      ansible.builtin.set_fact:
        nvmeof_target_result: "{{ captured.nvmeof_target_result | default(omit) }}"
        nvmeof_initiator_result: "{{ captured.nvmeof_initiator_result | default(omit) }}"
        mpi_bench_result: "{{ captured.mpi_bench_result }}"
    - name: Save them as the main playbooks do
      ansible.builtin.import_role:
        name: aiinfra.fabric.fabric_report
        tasks_from: save.yml
""" % LAB


@pytest.fixture
def work(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    for test in ("all_reduce", "alltoall"):
        os.symlink(STAND_IN, str(build / ("%s_perf" % test)))
    # gpu_count 8: the replayed recording has 8 ranks, and the role checks that a run used
    # the GPUs it was asked for.
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, "ansible_become": False}
    (tmp_path / "hosts.json").write_text(json.dumps({"all": {"children": {
        "gpu_nodes": {"hosts": {"gpu1": dict(local, gpu_count=8)}},
        "mpi_nodes": {"hosts": {"te1": local, "te2": local}},
        "nvmeof_targets": {"hosts": {"te1": {}}}, "nvmeof_initiators": {"hosts": {"te2": {}}}}}}))
    (tmp_path / "set_and_save.yml").write_text(SET_AND_SAVE)
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    return tmp_path


def nccl_vars(work, **over):
    v = {
        "nccl_tests_install_method": "none", "nccl_tests_build": False, "nccl_tests_binary_dir": str(work / "build"),
        "nccl_tests_tests": ["all_reduce"],
        # Two entries for one test: metric ids must stay unique. Both stop at the recording's
        # largest size (a run short of its requested maxbytes fails the gate).
        "nccl_tests_sizes": [{"minbytes": "8", "maxbytes": "128M"}, {"minbytes": "1K", "maxbytes": "128M"}],
        "nccl_tests_environment": {"REPLAY_NCCL_FIXTURE_ALL_REDUCE_PERF": "cscs_gh200_all_reduce_srun_2.17.1.txt",
                                   "REPLAY_NCCL_NO_JSON": "1"},
        "nccl_tests_min_busbw": {"all_reduce": 100},
    }
    v.update(over)
    return v


def run(work, playbook, extra=None):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_INVENTORY_UNPARSED_WARNING="0",
               ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"), ANSIBLE_LOCAL_TEMP=str(work / "tmp"),
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    (work / "vars.json").write_text(json.dumps(dict({"fabric_report_dir": "out", "fabric_report_plots": False},
                                                    **(extra or {}))))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i",
                           "../hosts.json", playbook, "-e", "@../vars.json"], cwd=str(work / "elsewhere"), env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout


def report(work, extra=None):
    rc, out = run(work, os.path.join(TOP, "playbooks", "fabric_report.yml"), extra)
    latest = work / "elsewhere" / "out" / "latest" / "results.json"
    return rc, out, (json.loads(latest.read_text()) if latest.exists() else None)


def test_readme_flow_reaches_the_report(work):
    rc, out = run(work, os.path.join(TOP, "playbooks", "nccl_bench.yml"), nccl_vars(work))
    assert rc == 0, out
    saved = work / "elsewhere" / "out" / "hosts" / "gpu1" / "nccl_tests_result.json"
    doc = json.loads(saved.read_text())
    assert doc["schema"] == "aiinfra.fabric.host_result" and doc["result"]["passed"] is True
    # The playbook ends with a readable summary, shown without -v.
    assert "gpu1: NCCL all_reduce 8-128M on this node (8 ranks): busbw 123 GB/s at 128M" in out
    rc, out = run(work, "../set_and_save.yml")
    assert rc == 0, out
    rc, out, results = report(work)
    assert rc == 0, out
    assert sorted(results["hosts"]) == ["gpu1", "te1", "te2"]
    benches = dict((b, len(results["benchmarks"][b])) for b in ("nccl", "mpi", "fio", "nvmeof"))
    assert benches["nccl"] == 2 and benches["mpi"] > 3 and benches["fio"] == 2 and benches["nvmeof"] == 2
    assert results["hosts"]["gpu1"]["saved"]["nccl_tests_result"]["playbook"] == "Benchmark NCCL collectives on the GPU nodes"
    assert "PASS: %d metrics" % len(results["metrics"]) in out


def test_a_failed_nccl_run_is_saved_and_fails_the_later_report(work):
    rc, out = run(work, os.path.join(TOP, "playbooks", "nccl_bench.yml"),
                  nccl_vars(work, nccl_tests_min_busbw={"all_reduce": 200}))
    assert rc != 0                                     # the gate fails the NCCL playbook ...
    # ... which still shows the failed host's lines (its summary play is never reached).
    assert "gpu1: NCCL all_reduce 8-128M on this node (8 ranks): busbw 123 GB/s at 128M" in out
    assert "FAIL - nccl-tests all_reduce: out-of-place busbw 122.57 GB/s" in out
    rc, out, results = report(work)                    # ... and, later, the report
    assert rc != 0 and results["summary"]["status"] == "fail"
    lines = [f for f in results["summary"]["failures"] if "nccl.run_passed" in f]
    assert len(lines) == 2 and all("below min_busbw = 200.0 GB/s" in f for f in lines)
    assert "gpu1: nccl.run_passed[nranks=8,scope=single,sizes=8-128M,test=all_reduce] = false" in out


def test_no_results_fail_with_what_to_run(work):
    rc, out, results = report(work)
    assert rc != 0
    assert "no results to report" in out and "run playbooks/nvmeof_rdma.yml" in out
    assert os.path.join(str(work), "elsewhere", "out", "hosts") in out


def test_relative_paths_from_another_folder(work):
    # save_baseline, baseline, thresholds_file and inputs: relative to the folder ansible-playbook runs in.
    run(work, "../set_and_save.yml")
    (work / "elsewhere" / "limits.yml").write_text("references:\n  - metric: fio.iops\n    min: 1\n    unit: IOPS\n")
    rc, out, first = report(work, {"fabric_report_save_baseline": "base", "fabric_report_thresholds_file": "limits.yml",
                                   "fabric_report_run_id": "one"})
    assert rc == 0, out
    assert (work / "elsewhere" / "base" / "results.json").exists()
    assert [r for r in first["references"] if r["origin"] == "limits.yml[0]"]
    rc, out, second = report(work, {"fabric_report_baseline": "base", "fabric_report_run_id": "two",
                                    "fabric_report_inputs": ["out/one/results.json"], "fabric_report_saved_results": ""})
    assert rc == 0, out
    assert second["baseline"]["source"] == str(work / "elsewhere" / "base" / "results.json")
    assert [c for c in second["checks"] if c["source"] == "baseline"]
    assert not (work / "playbooks").exists() and not os.path.exists(os.path.join(TOP, "playbooks", "base"))
