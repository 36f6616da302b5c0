"""The sbatch hand-off: batch plan (argv and script), scontrol record parsing, and the
wait loop (deadline, scancel, outputs) against a FAKE Slurm that answers run_command
calls from a script of job states, with a fake clock. The lab (molecule/slurm) runs
real Slurm."""

from __future__ import annotations

import signal

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job as J
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import sbatch as S

STEP = ["/usr/bin/srun", "--nodes=2", "--ntasks=2", "--label", "/opt/a b/hello_mpi"]

# Shape of `scontrol -o show job 7` on Slurm 22.05 (Debian bookworm), one line; fields
# that do not matter here left out, a Command with a space kept.
RECORD = ("JobId={id} JobName=aiinfra-mpi UserId=root(0) GroupId=root(0) Priority=1 JobState={state} "
          "Reason={reason} Dependency=(null) Requeue=1 Restarts=0 BatchFlag=1 ExitCode={exit} RunTime=00:00:03 "
          "TimeLimit=00:03:00 Partition=fabric NodeList=te1,te2 BatchHost=te1 NumNodes=2 NumCPUs=2 NumTasks=2 "
          "Command=(null) WorkDir=/opt/my dir StdErr=/tmp/aiinfra-mpi-{id}.err StdIn=/dev/null "
          "StdOut=/tmp/aiinfra-mpi-{id}.out Power=")


def test_plan_batch_argv_and_script():
    plan = S.plan_batch("/usr/bin/sbatch", STEP, nodes=2, ntasks=2, nodelist=["te1", "te2"], overcommit=True,
                        timeout=90, output_dir="/shared/jobs", partition="fabric", chdir="/opt/x",
                        extra_args=["--exclusive"])
    assert plan["argv"] == ["/usr/bin/sbatch", "--parsable", "--job-name=aiinfra-mpi",
                            "--output=/shared/jobs/aiinfra-mpi-%j.out", "--error=/shared/jobs/aiinfra-mpi-%j.err",
                            "--partition=fabric", "--nodes=2", "--ntasks=2", "--nodelist=te1,te2", "--overcommit",
                            "--time=3", "--chdir=/opt/x", "--exclusive"]
    # The step is exec'd, quoted: a path with a space stays one argument.
    assert plan["script"].splitlines()[0] == "#!/bin/sh"
    assert plan["script"].splitlines()[-1] == \
        "exec /usr/bin/srun --nodes=2 --ntasks=2 --label '/opt/a b/hello_mpi'"
    assert plan["time_limit_minutes"] == 3


def test_time_limit_is_a_backstop_past_the_deadline():
    assert S.time_limit_minutes(None) is None and S.time_limit_minutes(0) is None
    assert S.time_limit_minutes(1) == 2
    assert S.time_limit_minutes(60) == 2
    assert S.time_limit_minutes(61) == 3


@pytest.mark.parametrize("kwargs, message", [
    ({"job_name": "a b"}, r"sbatch_job_name 'a b' may hold"),
    ({"partition": "p;rm"}, r"sbatch_partition 'p;rm' is not a partition name"),
    ({"output_dir": "jobs"}, r"sbatch_output_dir 'jobs' must be an absolute path"),
    ({"timeout": -1}, r"timeout must be >= 0"),
])
def test_plan_batch_rejects_bad_input(kwargs, message):
    with pytest.raises(S.BatchError, match=message):
        S.plan_batch("sbatch", STEP, **kwargs)


def test_parse_submit():
    assert S.parse_submit("42\n") == "42"
    assert S.parse_submit("42;cluster\n") == "42"
    with pytest.raises(S.BatchError, match=r"sbatch printed no job id \(got 'Submitted batch job 42"):
        S.parse_submit("Submitted batch job 42\n")


def test_parse_job_record_and_outcome():
    record = S.parse_job_record(RECORD.format(id=7, state="COMPLETED", reason="None", exit="0:0"))
    assert record["JobState"] == "COMPLETED" and record["WorkDir"] == "/opt/my dir"
    assert record["StdOut"] == "/tmp/aiinfra-mpi-7.out" and record["Power"] == ""
    assert S.job_outcome(record) == {"state": "COMPLETED", "finished": True, "rc": 0, "signal": 0,
                                     "batch_host": "te1", "reason": "None"}
    failed = S.job_outcome(S.parse_job_record(RECORD.format(id=7, state="FAILED", reason="NonZeroExitCode",
                                                            exit="3:0")))
    assert failed["rc"] == 3 and failed["finished"]
    killed = S.job_outcome(S.parse_job_record(RECORD.format(id=7, state="CANCELLED", reason="None", exit="0:15")))
    assert killed["rc"] == -15 and killed["state"] == "CANCELLED"
    running = S.job_outcome(S.parse_job_record(RECORD.format(id=7, state="RUNNING", reason="None", exit="0:0")))
    assert running["finished"] is False and running["rc"] is None


class FakeSlurm(object):
    """run_command for sbatch/scontrol/scancel; ``states`` are what successive polls see."""

    def __init__(self, states, clock, exit_code="0:0", cancel_state="CANCELLED", forget_after=None):
        self.states = list(states)
        self.clock = clock
        self.exit_code = exit_code
        self.cancel_state = cancel_state
        self.calls = []
        self.cancelled = False
        self.forget_after = forget_after

    def __call__(self, argv, data=None):
        self.calls.append((list(argv), data))
        tool = argv[0].rsplit("/", 1)[-1]
        if tool == "sbatch":
            return 0, "7\n", ""
        if tool == "scancel":
            self.cancelled = True
            return 0, "", ""
        assert argv[1:] == ["-o", "show", "job", "7"], argv
        polls = sum(1 for call in self.calls if call[0][0].endswith("scontrol"))
        if self.forget_after is not None and polls > self.forget_after:
            return 1, "", "slurm_load_jobs error: Invalid job id specified\n"
        if self.cancelled:
            state, exit_code = self.cancel_state, "0:15"
        else:
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            exit_code = self.exit_code
        return 0, RECORD.format(id=7, state=state, reason="None", exit=exit_code) + "\n", ""


class Clock(object):
    def __init__(self):
        self.t = 1000.0
        self.sleeps = []

    def now(self):
        return self.t

    def sleep(self, seconds):
        self.sleeps.append(seconds)
        self.t += seconds


def run(states, timeout, files=None, **kwargs):
    clock = Clock()
    slurm = FakeSlurm(states, clock, **{k: kwargs.pop(k) for k in list(kwargs) if k in
                                        ("exit_code", "cancel_state", "forget_after")})
    plan = S.plan_batch("/usr/bin/sbatch", STEP, nodes=2, ntasks=2, timeout=timeout)
    files = {} if files is None else files

    def read_file(path):
        if path not in files:
            raise IOError(path)
        return files[path]

    result = S.run_batch(slurm, plan, timeout=timeout, poll_interval=5, scontrol="/usr/bin/scontrol",
                         scancel="/usr/bin/scancel", read_file=read_file, sleep=clock.sleep, now=clock.now,
                         handle_signals=False, **kwargs)
    return result, slurm, clock


def test_a_job_that_completes_is_polled_until_over_and_its_outputs_read():
    out = {"/tmp/aiinfra-mpi-7.out": "0: hello from 0\n1: hello from 1\n", "/tmp/aiinfra-mpi-7.err": ""}
    result, slurm, clock = run(["PENDING", "RUNNING", "RUNNING", "COMPLETED"], 120, files=out)
    assert result["job_id"] == "7" and result["job_state"] == "COMPLETED" and result["rc"] == 0
    assert result["stdout"] == "0: hello from 0\n1: hello from 1\n"
    assert result["timed_out"] is False and result["cancelled"] is None and result["polls"] == 4
    assert clock.sleeps == [5, 5, 5] and result["duration"] == 15
    # The script went to sbatch on stdin; no scancel for a job that ended by itself.
    assert slurm.calls[0][1].endswith("exec /usr/bin/srun --nodes=2 --ntasks=2 --label '/opt/a b/hello_mpi'\n")
    assert not slurm.cancelled
    assert result["output_files"] == ["/tmp/aiinfra-mpi-7.out", "/tmp/aiinfra-mpi-7.err"]


def test_past_the_deadline_the_job_is_cancelled_and_the_wait_ends():
    result, slurm, clock = run(["RUNNING"], 12)
    assert result["timed_out"] is True and slurm.cancelled
    assert ["/usr/bin/scancel", "7"] in [c[0] for c in slurm.calls]
    assert result["job_state"] == "CANCELLED" and result["rc"] == -15
    # Polls at 0, 5, 10, then the last slice of the deadline (2 s), never past it before cancelling.
    assert clock.sleeps[:3] == [5, 5, 2]
    assert result["missing_output"] == ["/tmp/aiinfra-mpi-7.out", "/tmp/aiinfra-mpi-7.err"]


def test_a_cancel_that_slurm_never_confirms_is_reported():
    result, slurm, clock = run(["RUNNING"], 10, cancel_state="COMPLETING", cancel_grace=6)
    assert result["timed_out"] is True and slurm.cancelled
    assert result["job_state"] == "COMPLETING"
    assert "did not report the job over within 6 s" in result["reason"]


def test_a_failed_job_keeps_its_exit_code():
    result, slurm, _clock = run(["RUNNING", "FAILED"], 60, exit_code="2:0")
    assert result["job_state"] == "FAILED" and result["rc"] == 2 and not slurm.cancelled


def test_a_job_the_controller_forgot_is_over_with_unknown_state():
    result, _slurm, _clock = run(["RUNNING"], 600, forget_after=2)
    assert result["job_state"] == "UNKNOWN" and result["rc"] is None and result["timed_out"] is False
    assert "Invalid job id" in result["reason"]


def test_sbatch_failure_raises_and_nothing_is_polled():
    calls = []

    def refuse(argv, data=None):
        calls.append(argv)
        return 1, "", "sbatch: error: Batch job submission failed: Invalid partition name specified\n"

    plan = S.plan_batch("sbatch", STEP)
    with pytest.raises(S.BatchError, match=r"sbatch failed \(rc=1\): sbatch: error: .*Invalid partition"):
        S.run_batch(refuse, plan, timeout=10, handle_signals=False, sleep=lambda s: None)
    assert len(calls) == 1


def test_a_stop_signal_while_waiting_cancels_the_job():
    clock = Clock()
    slurm = FakeSlurm(["RUNNING"], clock)
    plan = S.plan_batch("sbatch", STEP, timeout=600)

    def sleep(seconds):
        clock.sleep(seconds)
        if len(clock.sleeps) == 2:
            signal.raise_signal(signal.SIGTERM)

    result = S.run_batch(slurm, plan, timeout=600, poll_interval=5, read_file=lambda p: "", sleep=sleep,
                         now=clock.now)
    assert result["cancelled"] == "SIGTERM" and slurm.cancelled and result["job_state"] == "CANCELLED"
    assert result["timed_out"] is False
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_plan_job_with_sbatch_wraps_the_srun_step():
    params = {"program": "hello_mpi", "launcher": "sbatch", "hosts": [{"name": "te1", "slots": 2}, "te2"],
              "env": {"OMPI_MCA_btl": "tcp,self"}, "srun_mpi": "pmix", "tag_output": True, "timeout": 300,
              "oversubscribe": True, "map_by": "node", "sbatch_output_dir": "/shared"}
    params["env"]["OMPI_MCA_btl_tcp_if_include"] = "10.99.0.0/24"
    plan = J.plan_job(params, None, 1, lambda n: True, "/opt/hello_mpi")
    assert plan["np"] == 3
    # The comma value cannot go into --export: it is set in srun's environment and named.
    assert plan["launch_env"] == {"OMPI_MCA_btl": "tcp,self"}
    assert plan["argv"] == ["srun", "--nodes=2", "--ntasks=3", "--nodelist=te1,te2", "--overcommit",
                            "--distribution=cyclic", "--mpi=pmix",
                            "--export=ALL,OMPI_MCA_btl,OMPI_MCA_btl_tcp_if_include=10.99.0.0/24", "--label",
                            "/opt/hello_mpi"]
    batch = plan["batch"]
    assert batch["argv"][:5] == ["sbatch", "--parsable", "--job-name=aiinfra-mpi",
                                 "--output=/shared/aiinfra-mpi-%j.out", "--error=/shared/aiinfra-mpi-%j.err"]
    assert "--nodes=2" in batch["argv"] and "--ntasks=3" in batch["argv"] and "--time=6" in batch["argv"]
    assert batch["script"].endswith("exec " + " ".join(plan["argv"]) + "\n")
    assert J.plan_job(dict(params, launcher="srun"), None, 1, lambda n: True, "/opt/hello_mpi")["batch"] is None


def test_srun_map_by_without_a_counterpart_is_refused():
    with pytest.raises(J.MpiJobError, match=r"map_by 'ppr:2:socket' has no srun counterpart"):
        J.plan_job({"program": "a", "launcher": "srun", "map_by": "ppr:2:socket"}, None, 1, lambda n: True, "/a")
    with pytest.raises(L.LauncherError, match=r"distribution 'a b' is not a srun --distribution value"):
        L.build_srun_argv("srun", "./a", distribution="a b")
