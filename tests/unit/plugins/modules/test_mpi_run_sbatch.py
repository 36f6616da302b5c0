"""mpi_run launcher=sbatch run as Ansible runs it, against a FAKE Slurm: one script
installed as sbatch, scontrol and scancel in a temporary directory. The fake sbatch
records the argv and the batch script from stdin, writes the job's output file at once,
and the job "runs" for FAKE_SLURM_RUNTIME seconds; scontrol reports RUNNING until then,
then COMPLETED with FAKE_SLURM_EXIT, or CANCELLED once scancel was called. These tests
prove the module's path (check mode, results in the same keys as the direct path,
parsing, the timeout's scancel, failed states); molecule/slurm runs real Slurm.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))

FAKE_SLURM = r'''#!%s
import json, os, re, sys, time
state = os.environ["FAKE_SLURM_DIR"]
tool = os.path.basename(sys.argv[0])
def path(name):
    return os.path.join(state, name)
if tool == "sbatch":
    argv = sys.argv[1:]
    script = sys.stdin.read()
    output = [a.split("=", 1)[1] for a in argv if a.startswith("--output=")][0].replace("%%j", "7")
    with open(path("sbatch.json"), "w") as f:
        json.dump({"argv": argv, "script": script, "btl": os.environ.get("OMPI_MCA_btl")}, f)
    # FAKE_SLURM_WRITE=0: the job ran on another batch host, its output is not here.
    if os.environ.get("FAKE_SLURM_WRITE", "1") == "1" and os.path.isdir(os.path.dirname(output)):
        with open(output, "w") as f:
            f.write(os.environ.get("FAKE_SLURM_OUTPUT", ""))
    with open(path("ends"), "w") as f:
        f.write(str(time.time() + float(os.environ.get("FAKE_SLURM_RUNTIME", "0"))))
    print("7")
elif tool == "scancel":
    open(path("cancelled"), "w").close()
    with open(path("scancel.json"), "w") as f:
        json.dump(sys.argv[1:], f)
else:
    assert sys.argv[1:] == ["-o", "show", "job", "7"], sys.argv
    with open(path("ends")) as f:
        ends = float(f.read())
    if os.path.exists(path("cancelled")):
        st, ec = "CANCELLED", "0:15"
    elif time.time() >= ends:
        st, ec = os.environ.get("FAKE_SLURM_STATE", "COMPLETED"), os.environ.get("FAKE_SLURM_EXIT", "0:0")
    else:
        st, ec = "RUNNING", "0:0"
    print("JobId=7 JobName=aiinfra-mpi JobState=%%s Reason=None ExitCode=%%s BatchHost=%%s NumNodes=2" %% (
        st, ec, os.environ.get("FAKE_SLURM_BATCH_HOST", "te1")))
''' % sys.executable

SEED_OUTPUT = ("0: Process 0 on te1 contributing data 0\n"
               "1: Process 1 on te2 contributing data 1\n"
               "0: Process 0 on te1 received reduced sum 1 via Allreduce (Expected: 1)\n"
               "1: Process 1 on te2 received reduced sum 1 via Allreduce (Expected: 1)\n")


@pytest.fixture
def slurm(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("sbatch", "scontrol", "scancel", "srun"):
        exe = bindir / tool
        exe.write_text(FAKE_SLURM)
        exe.chmod(0o755)
    program = bindir / "allreduce_mpi"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    return {"dir": tmp_path, "bin": bindir, "program": str(program), "out": out}


def run_module(slurm, check_mode=False, fake=None, **args):
    module_args = dict(launcher="sbatch", program=slurm["program"], sbatch=str(slurm["bin"] / "sbatch"),
                       srun=str(slurm["bin"] / "srun"), sbatch_output_dir=str(slurm["out"]),
                       sbatch_poll_interval=1, hosts=[{"name": "localhost"}, {"name": "127.0.0.1"}],
                       tag_output=True, timeout=60)
    module_args.update(args)
    if check_mode:
        module_args["_ansible_check_mode"] = True
    path = slurm["dir"] / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, ".cache", "collections"), TMPDIR=str(slurm["dir"]),
               FAKE_SLURM_DIR=str(slurm["dir"]))
    env.update(fake or {})
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.aiinfra.fabric.plugins.modules.mpi_run",
                           str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120,
                          check=False)
    try:
        return json.loads(proc.stdout.decode())
    except ValueError:
        raise AssertionError("module printed no JSON: rc=%s\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))


def submitted(slurm):
    with open(str(slurm["dir"] / "sbatch.json")) as handle:
        return json.load(handle)


def test_check_mode_shows_the_sbatch_command_and_submits_nothing(slurm):
    result = run_module(slurm, check_mode=True, parse="seed")
    assert result["changed"] is False and result["ran"] is False and not result.get("failed")
    assert result["cmd"][0].endswith("/sbatch") and "--parsable" in result["cmd"] and "--time=2" in result["cmd"]
    assert result["batch"]["job_id"] is None and result["batch"]["output_dir"] is None
    assert "--output=%s/<private dir>/aiinfra-mpi-%%j.out" % slurm["out"] in result["cmd"]
    assert os.listdir(str(slurm["out"])) == []
    assert result["batch"]["script"].splitlines()[-1].startswith("exec %s/srun --nodes=2 --ntasks=2" % slurm["bin"])
    assert not (slurm["dir"] / "sbatch.json").exists()


def test_a_batch_job_lands_in_the_same_result_keys_as_the_direct_path(slurm):
    result = run_module(slurm, parse="seed", expect={"sums_match": True}, env={"OMPI_MCA_btl": "tcp,self"},
                        fake={"FAKE_SLURM_OUTPUT": SEED_OUTPUT, "FAKE_SLURM_RUNTIME": "1.5"})
    assert not result.get("failed"), result.get("msg")
    assert result["rc"] == 0 and result["timed_out"] is False and result["cancelled"] is None
    assert result["batch"]["job_id"] == "7" and result["batch"]["job_state"] == "COMPLETED"
    assert result["batch"]["polls"] >= 2
    assert result["stdout"] == SEED_OUTPUT
    assert result["rank_output"]["1"] == ["Process 1 on te2 contributing data 1",
                                          "Process 1 on te2 received reduced sum 1 via Allreduce (Expected: 1)"]
    assert result["parsed"]["all_match"] is True and all(c["ok"] for c in result["checks"]) and len(result["checks"]) == 2
    # The batch script's one step is the srun command; the output files are removed after reading.
    script = submitted(slurm)["script"]
    assert script.splitlines()[-1] == "exec %s/srun --nodes=2 --ntasks=2 --nodelist=localhost,127.0.0.1 " \
                                      "--export=ALL,OMPI_MCA_btl --label %s" % (slurm["bin"], slurm["program"])
    # A value with a comma travels in sbatch's environment (srun --export cannot carry it).
    assert submitted(slurm)["btl"] == "tcp,self"
    assert os.listdir(str(slurm["out"])) == []
    # The job wrote into a private directory of its own in sbatch_output_dir.
    (output,) = [a.split("=", 1)[1] for a in submitted(slurm)["argv"] if a.startswith("--output=")]
    assert os.path.dirname(os.path.dirname(output)) == str(slurm["out"])
    assert os.path.basename(os.path.dirname(output)).startswith("aiinfra-sbatch-")
    assert result["batch"]["output_dir"] == os.path.dirname(output)
    assert result["batch"]["output_files"] == [output.replace("%j", "7"), output.replace("%j", "7")[:-3] + "err"]


def test_past_the_timeout_the_job_is_cancelled_and_the_task_fails(slurm):
    result = run_module(slurm, timeout=2, fake={"FAKE_SLURM_RUNTIME": "300"})
    assert result["failed"] is True and result["timed_out"] is True
    with open(str(slurm["dir"] / "scancel.json")) as handle:
        assert json.load(handle) == ["7"]
    assert result["batch"]["job_state"] == "CANCELLED"
    assert "ran past the timeout of 2 s and was stopped with scancel (job state now CANCELLED)" in result["msg"]


def test_a_failed_job_fails_the_task_with_its_state(slurm):
    result = run_module(slurm, fake={"FAKE_SLURM_STATE": "FAILED", "FAKE_SLURM_EXIT": "1:0"})
    assert result["failed"] is True and result["rc"] == 1
    assert "ended in state FAILED (exit 1" in result["msg"]


def test_output_on_another_batch_host_is_named(slurm):
    # The job's output went to a node-local directory of te2, not here.
    result = run_module(slurm, fake={"FAKE_SLURM_BATCH_HOST": "te2", "FAKE_SLURM_WRITE": "0"})
    assert result["failed"] is True
    assert "is not on" in result["msg"] and "it ran on batch host te2" in result["msg"]
    assert os.listdir(str(slurm["out"])) == []


def test_bad_batch_input_fails_before_submitting(slurm):
    result = run_module(slurm, sbatch_output_dir="relative/dir")
    assert result["failed"] is True and "must be an absolute path" in result["msg"]
    result = run_module(slurm, sbatch_output_dir=str(slurm["dir"] / "elsewhere"))
    assert result["failed"] is True and "elsewhere is not a directory on" in result["msg"]
    assert "nothing was submitted" in result["msg"]
    result = run_module(slurm, sbatch_poll_interval=0)
    assert result["failed"] is True and "sbatch_poll_interval must be >= 1" in result["msg"]
    assert not (slurm["dir"] / "sbatch.json").exists()


def test_a_planted_output_file_is_not_taken_as_the_result(slurm):
    # Issue 35 item 10: another local user pre-creates the output file of the next job id in the
    # shared directory; the real output went to batch host te2's own disk.
    (slurm["out"] / "aiinfra-mpi-7.out").write_text(SEED_OUTPUT)
    result = run_module(slurm, parse="seed", fake={"FAKE_SLURM_WRITE": "0", "FAKE_SLURM_BATCH_HOST": "te2"})
    assert result["failed"] is True and result["stdout"] == ""
    assert "it ran on batch host te2" in result["msg"]
    # The planted file is left alone (not ours to remove), and nothing else is left behind.
    assert os.listdir(str(slurm["out"])) == ["aiinfra-mpi-7.out"]
