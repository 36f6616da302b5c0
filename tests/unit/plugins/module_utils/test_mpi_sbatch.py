"""The sbatch hand-off: batch plan (argv and script), scontrol record parsing, and the
wait loop (deadline, scancel, outputs) against a FAKE Slurm that answers run_command
calls from a script of job states, with a fake clock. The lab (molecule/slurm) runs
real Slurm."""

from __future__ import annotations

import os
import signal
import stat

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
    # The job's own output directory is made at submission; until then a placeholder shows where.
    assert plan["argv"] == ["/usr/bin/sbatch", "--parsable", "--job-name=aiinfra-mpi",
                            "--output=/shared/jobs/<private dir>/aiinfra-mpi-%j.out",
                            "--error=/shared/jobs/<private dir>/aiinfra-mpi-%j.err",
                            "--partition=fabric", "--nodes=2", "--ntasks=2", "--nodelist=te1,te2", "--overcommit",
                            "--time=3", "--chdir=/opt/x", "--exclusive"]
    # The step is exec'd, quoted: a path with a space stays one argument.
    assert plan["script"].splitlines()[0] == "#!/bin/sh"
    assert plan["script"].splitlines()[-1] == \
        "exec /usr/bin/srun --nodes=2 --ntasks=2 --label '/opt/a b/hello_mpi'"
    assert plan["time_limit_minutes"] == 3 and plan["output_parent"] == "/shared/jobs"
    ready = S.with_output_dir(plan, "/shared/jobs/aiinfra-sbatch-x1")
    assert ready["argv"][3:5] == ["--output=/shared/jobs/aiinfra-sbatch-x1/aiinfra-mpi-%j.out",
                                  "--error=/shared/jobs/aiinfra-sbatch-x1/aiinfra-mpi-%j.err"]
    assert ready["argv"][5:] == plan["argv"][5:] and ready["output"].endswith("x1/aiinfra-mpi-%j.out")


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
    slurm.removed = []

    def read_file(path):
        if path not in files:
            raise IOError(path)
        return files[path]

    result = S.run_batch(slurm, plan, timeout=timeout, poll_interval=5, scontrol="/usr/bin/scontrol",
                         scancel="/usr/bin/scancel", read_file=read_file, sleep=clock.sleep, now=clock.now,
                         handle_signals=False, make_dir=lambda parent: parent + "/aiinfra-sbatch-x",
                         remove=lambda folder, paths: slurm.removed.append((folder, list(paths))),
                         launching_host="login1", **kwargs)
    return result, slurm, clock


OUT = "/tmp/aiinfra-sbatch-x/aiinfra-mpi-7.out"
ERR = "/tmp/aiinfra-sbatch-x/aiinfra-mpi-7.err"


def test_a_job_that_completes_is_polled_until_over_and_its_outputs_read():
    out = {OUT: "0: hello from 0\n1: hello from 1\n", ERR: ""}
    result, slurm, clock = run(["PENDING", "RUNNING", "RUNNING", "COMPLETED"], 120, files=out)
    assert result["job_id"] == "7" and result["job_state"] == "COMPLETED" and result["rc"] == 0
    assert result["stdout"] == "0: hello from 0\n1: hello from 1\n"
    assert result["timed_out"] is False and result["cancelled"] is None and result["polls"] == 4
    assert clock.sleeps == [5, 5, 5] and result["duration"] == 15
    # The script went to sbatch on stdin; no scancel for a job that ended by itself.
    assert slurm.calls[0][1].endswith("exec /usr/bin/srun --nodes=2 --ntasks=2 --label '/opt/a b/hello_mpi'\n")
    assert not slurm.cancelled
    assert result["output_files"] == [OUT, ERR] and result["output_error"] is None
    # sbatch was told the private directory; after reading, the files and it are removed.
    assert "--output=/tmp/aiinfra-sbatch-x/aiinfra-mpi-%j.out" in slurm.calls[0][0]
    assert slurm.removed == [("/tmp/aiinfra-sbatch-x", [OUT, ERR])]


def test_kept_output_is_not_removed_and_missing_output_names_the_batch_host():
    result, slurm, _clock = run(["COMPLETED"], 60, keep_output=True)
    assert slurm.removed == []
    assert result["output_error"] == (
        "batch job 7 ended (COMPLETED) but its output %s is not on login1: it ran on batch host te1, which wrote it "
        "to its own disk; set sbatch_output_dir to a file system the batch host and this host share, or launch "
        "from that host" % OUT)


def test_past_the_deadline_the_job_is_cancelled_and_the_wait_ends():
    result, slurm, clock = run(["RUNNING"], 12)
    assert result["timed_out"] is True and slurm.cancelled
    assert ["/usr/bin/scancel", "7"] in [c[0] for c in slurm.calls]
    assert result["job_state"] == "CANCELLED" and result["rc"] == -15
    # Polls at 0, 5, 10, then the last slice of the deadline (2 s), never past it before cancelling.
    assert clock.sleeps[:3] == [5, 5, 2]
    assert result["missing_output"] == [OUT, ERR]
    # A job stopped before it wrote anything: the timeout is the error, not the output.
    assert result["output_error"] is None


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


def test_sbatch_failure_raises_and_nothing_is_polled(tmp_path):
    calls = []

    def refuse(argv, data=None):
        calls.append(argv)
        return 1, "", "sbatch: error: Batch job submission failed: Invalid partition name specified\n"

    plan = S.plan_batch("sbatch", STEP, output_dir=str(tmp_path))
    with pytest.raises(S.BatchError, match=r"sbatch failed \(rc=1\): sbatch: error: .*Invalid partition"):
        S.run_batch(refuse, plan, timeout=10, handle_signals=False, sleep=lambda s: None)
    assert len(calls) == 1
    assert os.listdir(str(tmp_path)) == []  # the private directory made for it is gone


def test_a_stop_signal_while_waiting_cancels_the_job():
    clock = Clock()
    slurm = FakeSlurm(["RUNNING"], clock)
    plan = S.plan_batch("sbatch", STEP, timeout=600)

    def sleep(seconds):
        clock.sleep(seconds)
        if len(clock.sleeps) == 2:
            signal.raise_signal(signal.SIGTERM)

    result = S.run_batch(slurm, plan, timeout=600, poll_interval=5, read_file=lambda p: "", sleep=sleep,
                         now=clock.now, make_dir=lambda parent: parent + "/aiinfra-sbatch-x",
                         remove=lambda folder, paths: None)
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
                                 "--output=/shared/<private dir>/aiinfra-mpi-%j.out",
                                 "--error=/shared/<private dir>/aiinfra-mpi-%j.err"]
    assert "--nodes=2" in batch["argv"] and "--ntasks=3" in batch["argv"] and "--time=6" in batch["argv"]
    assert batch["script"].endswith("exec " + " ".join(plan["argv"]) + "\n")
    assert J.plan_job(dict(params, launcher="srun"), None, 1, lambda n: True, "/opt/hello_mpi")["batch"] is None


def test_srun_map_by_without_a_counterpart_is_refused():
    with pytest.raises(J.MpiJobError, match=r"map_by 'ppr:2:socket' has no srun counterpart"):
        J.plan_job({"program": "a", "launcher": "srun", "map_by": "ppr:2:socket"}, None, 1, lambda n: True, "/a")
    with pytest.raises(L.LauncherError, match=r"distribution 'a b' is not a srun --distribution value"):
        L.build_srun_argv("srun", "./a", distribution="a b")


# --- issue 35 item 10: the job's output cannot be planted ------------------------------------

class WritingSlurm(FakeSlurm):
    """FakeSlurm whose job writes ``outputs`` into the files sbatch was told (a batch host that
    is this host, or shares the directory); records the output directory as sbatch saw it."""

    def __init__(self, states, clock, outputs=None, **kwargs):
        FakeSlurm.__init__(self, states, clock, **kwargs)
        self.outputs = outputs or {}
        self.seen_dir = None

    def __call__(self, argv, data=None):
        if argv[0].rsplit("/", 1)[-1] == "sbatch":
            paths = dict(a[2:].split("=", 1) for a in argv if a.startswith(("--output=", "--error=")))
            folder = os.path.dirname(paths["output"])
            st = os.lstat(folder)
            self.seen_dir = {"path": folder, "mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid,
                             "is_dir": stat.S_ISDIR(st.st_mode)}
            for key, text in self.outputs.items():
                with open(paths[key].replace("%j", "7"), "w") as handle:
                    handle.write(text)
        return FakeSlurm.__call__(self, argv, data)


def run_real(tmp_path, outputs=None, **kwargs):
    clock = Clock()
    slurm = WritingSlurm(["RUNNING", "COMPLETED"], clock, outputs=outputs)
    plan = S.plan_batch("/usr/bin/sbatch", STEP, nodes=2, ntasks=2, timeout=60, output_dir=str(tmp_path))
    result = S.run_batch(slurm, plan, timeout=60, poll_interval=5, sleep=clock.sleep, now=clock.now,
                         handle_signals=False, **kwargs)
    return result, slurm


def test_planted_output_files_are_never_read_into_the_result(tmp_path):
    # Another local user pre-creates the files of the next job ids in the shared directory,
    # one of them a link to a file only root may read; the job's own output went to its
    # batch host (te1), not here.
    secret = tmp_path / "secret"
    secret.write_text("root:$6$only-root-reads-this\n")
    (tmp_path / "aiinfra-mpi-7.out").write_text("0: # OSU MPI Bandwidth Test\n0: 4194304  99999.99\n")
    os.symlink(str(secret), str(tmp_path / "aiinfra-mpi-7.err"))
    result, slurm = run_real(tmp_path)
    assert "99999.99" not in result["stdout"] and "only-root" not in result["stderr"]
    # The job wrote into a private directory of its own: 0700, the running user's.
    assert slurm.seen_dir["is_dir"] and slurm.seen_dir["mode"] == 0o700 and slurm.seen_dir["uid"] == os.geteuid()
    assert os.path.dirname(slurm.seen_dir["path"]) == str(tmp_path)
    # Missing output is an error that names the batch host.
    assert result["output_error"].startswith("batch job 7 ended (COMPLETED) but its output %s/aiinfra-mpi-7.out "
                                             "is not on " % slurm.seen_dir["path"])
    assert "batch host te1" in result["output_error"]
    # Nothing of the private directory is left behind.
    assert not os.path.exists(slurm.seen_dir["path"])


def test_read_output_reads_only_the_running_users_plain_files_in_a_private_directory(tmp_path):
    private = S.make_output_dir(str(tmp_path))
    assert os.path.basename(private).startswith("aiinfra-sbatch-")
    assert stat.S_IMODE(os.lstat(private).st_mode) == 0o700 and os.lstat(private).st_uid == os.geteuid()
    good = os.path.join(private, "aiinfra-mpi-7.out")
    with open(good, "w") as handle:
        handle.write("0: hello\n")
    assert S.read_output(good) == "0: hello\n"
    secret = tmp_path / "secret"
    secret.write_text("only root\n")
    link = os.path.join(private, "aiinfra-mpi-7.err")
    os.symlink(str(secret), link)
    with pytest.raises(S.UnsafeOutput, match=r"aiinfra-mpi-7.err is a symbolic link, not the job's output"):
        S.read_output(link)
    # The owner check, as another user's file would look (checked against uid 4242 here).
    with pytest.raises(S.UnsafeOutput, match=r"output directory .* is owned by uid %d with mode 700, not private "
                                             r"to uid 4242" % os.geteuid()):
        S.read_output(good, uid=4242)
    os.chown(good, 4242, -1)
    with pytest.raises(S.UnsafeOutput, match=r"aiinfra-mpi-7.out is owned by uid 4242, not by the job's user"):
        S.read_output(good)
    fifo = os.path.join(private, "fifo.out")
    os.mkfifo(fifo)
    with pytest.raises(S.UnsafeOutput, match=r"fifo.out is not a plain file"):
        S.read_output(fifo)
    # A directory others may enter, or a link in place of the directory, is not read from.
    os.chmod(private, 0o755)
    with pytest.raises(S.UnsafeOutput, match=r"mode 755, not private"):
        S.read_output(os.path.join(private, "fifo.out"))
    os.symlink(private, str(tmp_path / "dirlink"))
    with pytest.raises(S.UnsafeOutput, match=r"dirlink is a link or not a directory"):
        S.read_output(str(tmp_path / "dirlink" / "aiinfra-mpi-7.out"))
    # A file that is not there is missing (OSError), not unsafe.
    os.chmod(private, 0o700)
    with pytest.raises(OSError) as missing:
        S.read_output(os.path.join(private, "nothing-here.out"))
    assert not isinstance(missing.value, S.UnsafeOutput)


def test_a_refused_output_file_is_an_error_even_after_a_timeout(tmp_path):
    # A file planted in the job's own directory (only root could): refused, and said so.
    clock = Clock()
    slurm = FakeSlurm(["RUNNING"], clock)
    plan = S.plan_batch("sbatch", STEP, timeout=10, output_dir=str(tmp_path))

    def plant(parent):
        folder = S.make_output_dir(parent)
        os.symlink("/etc/passwd", os.path.join(folder, "aiinfra-mpi-7.out"))
        return folder

    result = S.run_batch(slurm, plan, timeout=10, poll_interval=5, sleep=clock.sleep, now=clock.now,
                         handle_signals=False, make_dir=plant)
    assert result["timed_out"] is True and result["stdout"] == ""
    assert result["output_error"].startswith("batch job 7: refused to read its output - ")
    assert "aiinfra-mpi-7.out is a symbolic link" in result["output_error"]
    assert os.listdir(str(tmp_path)) == [] and os.path.exists("/etc/passwd")


def test_an_output_directory_that_is_not_the_users_fails_before_submitting(tmp_path):
    with pytest.raises(S.BatchError, match=r"came out owned by uid %d with mode 700, not uid 4242 and 0700 \(an "
                                           r"NFS export that squashes root\?\)" % os.geteuid()):
        S.make_output_dir(str(tmp_path), uid=4242)
    assert os.listdir(str(tmp_path)) == []
    with pytest.raises(S.BatchError, match=r"sbatch_output_dir .*/nope is not a directory on"):
        S.make_output_dir(str(tmp_path / "nope"))
