"""Slurm on the lab VMs after converge.yml ran (twice): playbooks/slurm_setup.yml, the
mpi_bench role with launcher srun, and one allreduce handed over with sbatch.

The hosts are read directly; the results come from the converge run (saved under
SLURM_RESULT_DIR). Two tests run Ansible again: a batch job that sleeps past its
deadline (it must be cancelled, nothing left in squeue or on the VMs), and the
nccl_tests role through srun with the replay stand-in (a FAKE nccl-tests binary).
"""

import json
import re
import os
import subprocess
import time

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
HERE = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def saved(name):
    path = os.path.join(os.environ["SLURM_RESULT_DIR"], name + ".json")
    assert os.path.exists(path), "converge.yml / the playbook saves %s" % path
    with open(path) as handle:
        return json.load(handle)


def playbook(name, timeout=600):
    env = dict(os.environ)
    env.update(ANSIBLE_CONFIG=os.path.join(TOP, "lab", "ansible.cfg"), ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1",
               ANSIBLE_TIMEOUT="60", MOLECULE_PROJECT_DIRECTORY=TOP)
    cmd = [os.path.join(TOP, ".venv", "bin", "ansible-playbook"), "-i", os.path.join(TOP, "inventory", "lab"),
           os.path.join(HERE, name)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                          universal_newlines=True, check=False)
    print(proc.stdout[-2500:])
    return proc


def test_sinfo_shows_both_nodes_idle(te1):
    out = te1.check_output("sinfo --noheader --Node --format='%N %P %t'")
    assert sorted(out.splitlines()) == ["te1 fabric* idle", "te2 fabric* idle"], out


@pytest.mark.parametrize("vm", ["te1", "te2"])
def test_daemons_enabled_and_running(vm, request):
    host = request.getfixturevalue(vm)
    daemons = ["munge", "slurmd"] + (["slurmctld"] if vm == "te1" else [])
    for name in daemons:
        service = host.service(name)
        assert service.is_running and service.is_enabled, name


def test_one_munge_key_0400_and_te2_accepts_te1s_credentials(te1, te2):
    sums = []
    for vm in (te1, te2):
        key = vm.file("/etc/munge/munge.key")
        assert key.user == "munge" and key.mode == 0o400
        sums.append(vm.check_output("sha256sum /etc/munge/munge.key").split()[0])
    assert sums[0] == sums[1]
    credential = te1.check_output("munge -n")
    decoded = te2.run("echo %s | unmunge" % credential)
    assert decoded.rc == 0 and "STATUS:          Success (0)" in decoded.stdout, decoded.stdout + decoded.stderr


def test_slurm_conf_from_the_inventory_and_facts(te1, te2):
    conf = te1.file("/etc/slurm/slurm.conf").content_string
    assert conf == te2.file("/etc/slurm/slurm.conf").content_string
    assert "SlurmctldHost=te1(10.99.0.1)" in conf
    for vm, address in ((te1, "10.99.0.1"), (te2, "10.99.0.2")):
        cpus = int(vm.check_output("nproc"))
        line = [ln for ln in conf.splitlines() if ln.startswith("NodeName=%s " % vm.check_output("hostname -s"))]
        assert line and ("NodeAddr=%s CPUs=%d " % (address, cpus)) in line[0], line
    assert "PartitionName=fabric Nodes=te1,te2 Default=YES" in conf


def test_slurm_result(te1):
    result = saved("slurm_result")
    assert result["controller"] == "te1" and result["nodes"] == ["te1", "te2"]
    assert result["node_states"] == {"te1": "idle", "te2": "idle"}
    # sinfo --version prints "slurm 24.11.5" upstream and "slurm-wlm 22.05.8" on Debian 12.
    assert re.match(r"slurm(-wlm)? [0-9]+\.[0-9]+", result["version"]), result["version"]
    assert "pmix" in result["mpi_plugins"], result["mpi_plugins"]


def test_mpi_bench_ran_every_job_under_srun_across_both_vms():
    result = saved("mpi_bench_result")
    jobs = result["jobs"]
    assert [j["name"] for j in jobs] == ["multi_node:hello", "multi_node:allreduce", "benchmark"], jobs
    for job in jobs:
        assert job["launcher"] == "srun" and job["command"].startswith("/usr/bin/srun "), job["command"]
        assert "--nodelist=te1,te2" in job["command"] and "--mpi=pmix" in job["command"]
        assert job["rc"] == 0 and job["failed_checks"] == []
    # Every rank's reduced sum, from ranks on both VMs.
    sums = [s for s in result["sums"] if s["job"] == "multi_node:allreduce"]
    assert len(sums) == 3 and all(s["match"] for s in sums)
    assert {s["host"] for s in sums} == {"te1", "te2"}
    # The benchmark's tables, as with mpirun.
    assert {"latency", "bandwidth", "allreduce"} <= set(result["tables"]), result["tables"].keys()


def test_sbatch_allreduce_landed_in_mpi_runs_facts(te1):
    result = saved("sbatch_allreduce")
    batch = result["batch"]
    assert batch["job_state"] == "COMPLETED" and batch["job_id"].isdigit() and batch["batch_host"] == "te1"
    assert result["rc"] == 0 and result["timed_out"] is False and result["cancelled"] is None
    assert result["cmd"][0] == "/usr/bin/sbatch" and "--parsable" in result["cmd"]
    assert batch["script"].splitlines()[-1].startswith("exec /usr/bin/srun --nodes=2 --ntasks=2 ")
    assert sorted(result["rank_output"]) == ["0", "1"]
    assert result["parsed"]["all_match"] is True and result["failed_checks"] == []
    assert {r["host"] for r in result["parsed"]["results"]} == {"te1", "te2"}
    # The job's output files were read into the facts, then removed.
    for path in batch["output_files"]:
        assert not te1.file(path).exists, path


def test_a_batch_job_past_its_deadline_is_cancelled_and_gone(te1, te2):
    proc = playbook("cancel.yml")
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = saved("sbatch_cancel")
    assert result["timed_out"] is True and result["batch"]["job_state"] == "CANCELLED", result
    assert "ran past the timeout of 20 s and was stopped with scancel (job state now CANCELLED)" in result["msg"]
    job_id = result["batch"]["job_id"]
    # Nothing of the job is left: not in squeue, and no sleep on either VM.
    deadline = time.time() + 45
    while time.time() < deadline:
        queue = te1.check_output("squeue --noheader --format=%i")
        sleeping = [vm.run("pgrep -f '^/bin/sleep 600'").rc for vm in (te1, te2)]
        if queue == "" and sleeping == [1, 1]:
            break
        time.sleep(3)
    assert queue == "", "squeue still lists: %s" % queue
    assert sleeping == [1, 1], "sleep 600 left on te1/te2: %s" % sleeping
    # slurmctld still remembers the job (MinJobAge 300 s) and says how it ended.
    assert "JobState=CANCELLED" in te1.check_output("scontrol -o show job %s" % job_id)


def test_nccl_tests_role_through_srun_with_the_replay_stand_in():
    proc = playbook("nccl_srun.yml")
    assert proc.returncode == 0, proc.stdout[-3000:]
    result = saved("nccl_srun")
    (run,) = result["multi_node"]
    assert run["command"].startswith("/usr/bin/srun --nodes=2 --ntasks=8 --nodelist=te1,te2 ")
    assert run["passed"] is True and run["nranks"] == 8
    # The replayed (recorded, not measured) output: the CSCS GH200 hosts and busbw.
    assert run["hosts"] == ["nid005471", "nid005487"] and run["largest_size_busbw"] == 122.57
