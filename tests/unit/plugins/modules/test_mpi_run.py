"""The mpi_run module run as Ansible runs it (a subprocess reading its arguments file),
with a FAKE mpirun written into a temporary directory: it answers --version like Open
MPI 4.1.4, records the argv and the hostfile it was given, and prints a recorded output.
These tests prove the module's execution path (validation before launch, check mode,
guards, timeouts, rc handling, parsing, expectation failures); the lab scenario
molecule/mpi_bench runs real MPI jobs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
FIXTURES = os.path.join(TOP, "tests", "fixtures")

FAKE_MPIRUN = r'''#!%s
import json, os, sys, time
if sys.argv[1:] == ["--version"]:
    print("mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/")
    sys.exit(0)
record = {"argv": sys.argv[1:], "cwd": os.getcwd()}
if "--hostfile" in sys.argv:
    with open(sys.argv[sys.argv.index("--hostfile") + 1]) as f:
        record["hostfile"] = f.read()
with open(os.environ["FAKE_MPIRUN_RECORD"], "w") as f:
    json.dump(record, f)
if os.environ.get("FAKE_MPIRUN_OUTPUT"):
    with open(os.environ["FAKE_MPIRUN_OUTPUT"]) as f:
        sys.stdout.write(f.read())
sys.stdout.flush()
time.sleep(float(os.environ.get("FAKE_MPIRUN_SLEEP", "0")))
sys.stderr.write(os.environ.get("FAKE_MPIRUN_STDERR", ""))
sys.exit(int(os.environ.get("FAKE_MPIRUN_RC", "0")))
''' % sys.executable


@pytest.fixture
def lab(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    mpirun = bindir / "mpirun"
    mpirun.write_text(FAKE_MPIRUN)
    mpirun.chmod(0o755)
    program = bindir / "allreduce_mpi"
    program.write_text("#!/bin/sh\nexit 0\n")
    program.chmod(0o755)
    return {"dir": tmp_path, "mpirun": str(mpirun), "program": str(program), "record": tmp_path / "record.json"}


def run_module(lab, check_mode=False, fake=None, **args):
    path = lab["dir"] / "args.json"
    module_args = dict(args)
    module_args.setdefault("mpirun", lab["mpirun"])
    module_args.setdefault("program", lab["program"])
    if check_mode:
        module_args["_ansible_check_mode"] = True
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, ".cache", "collections"), TMPDIR=str(lab["dir"]),
               FAKE_MPIRUN_RECORD=str(lab["record"]))
    env.update(fake or {})
    proc = subprocess.run([sys.executable, "-m", "ansible_collections.aiinfra.fabric.plugins.modules.mpi_run",
                           str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=120, check=False)
    try:
        return json.loads(proc.stdout.decode())
    except ValueError:
        raise AssertionError("module printed no JSON: rc=%s\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))


def write(lab, name, text):
    p = lab["dir"] / name
    p.write_text(text)
    return str(p)


TAGGED = ("[1,2]<stdout>:Process 2 on te2 contributing data 2\n"
          "[1,0]<stdout>:Process 0 on te1 contributing data 0\n"
          "[1,1]<stdout>:Process 1 on te1 contributing data 1\n"
          "[1,1]<stdout>:Process 1 on te1 received reduced sum 3 via Allreduce (Expected: 3)\n"
          "[1,0]<stdout>:Process 0 on te1 received reduced sum 3 via Allreduce (Expected: 3)\n"
          "[1,2]<stdout>:Process 2 on te2 received reduced sum %d via Allreduce (Expected: 3)\n")

HOSTS = [{"name": "localhost", "slots": 2}, {"name": "127.0.0.1", "slots": 1}]


def test_cross_node_run_parses_per_rank_and_checks_sums(lab):
    out = write(lab, "out.txt", TAGGED % 3)
    r = run_module(lab, hosts=HOSTS, tag_output=True, parse="seed", expect={"sums_match": True},
                   mca={"btl": "tcp,self"}, fake={"FAKE_MPIRUN_OUTPUT": out})
    assert not r.get("failed"), r.get("msg")
    # A job changes nothing on the hosts: changed=false in every job module (issue 36).
    assert r["changed"] is False and r["ran"] is True and r["rc"] == 0 and r["timed_out"] is False
    assert r["implementation"]["implementation"] == "openmpi" and r["implementation"]["version"] == "4.1.4"
    assert r["rank_output"]["2"] == ["Process 2 on te2 contributing data 2",
                                     "Process 2 on te2 received reduced sum 3 via Allreduce (Expected: 3)"]
    assert r["parsed"]["all_match"] is True and len(r["checks"]) == 3 and r["failed_checks"] == []
    called = json.loads(lab["record"].read_text())
    assert called["hostfile"] == "localhost slots=2\n127.0.0.1 slots=1\n"
    assert called["argv"][:3] == ["-np", "3", "--hostfile"]
    assert called["argv"][4:] == ["--tag-output", "--mca", "btl", "tcp,self", lab["program"]]
    # The private hostfile is gone after the run.
    assert not os.path.exists(called["argv"][3])
    assert "--allow-run-as-root" not in called["argv"]


def test_wrong_sum_fails_with_rank_host_and_values(lab):
    out = write(lab, "out.txt", TAGGED % 7)
    r = run_module(lab, hosts=HOSTS, tag_output=True, parse="seed", expect={"sums_match": True},
                   fake={"FAKE_MPIRUN_OUTPUT": out})
    assert r["failed"] is True
    assert "rank 2 on te2 (allreduce) received sum 7, expected 3 on localhost, 127.0.0.1 (launched from" in r["msg"]
    assert r["failed_checks"] == [r["msg"].split(": ", 1)[1]]


def test_bandwidth_bound_failure_names_value_bound_and_hosts(lab):
    out = os.path.join(FIXTURES, "osu", "omb75_osu_bw_oci.txt")
    r = run_module(lab, hosts=HOSTS, np=2, parse="osu", expect={"min_bandwidth": [{"value": 1e9}]},
                   fake={"FAKE_MPIRUN_OUTPUT": out})
    assert r["failed"] is True
    assert ("OSU MPI Bandwidth Test v7.5: bandwidth_mbs at 268435456 bytes = 12254.2 MB/s, below the minimum "
            "1e+09 MB/s on localhost, 127.0.0.1") in r["msg"]
    assert r["parsed"]["rows"] == [{"size": 268435456, "bandwidth_mbs": 12254.16}]


def test_check_mode_returns_the_command_and_runs_nothing(lab):
    r = run_module(lab, check_mode=True, hosts=HOSTS, allow_run_as_root=True)
    assert not r.get("failed"), r.get("msg")
    assert r["ran"] is False and r["changed"] is False and "rc" not in r
    assert r["cmd"] == [lab["mpirun"], "--allow-run-as-root", "-np", "3", "--hostfile", "<hostfile>", lab["program"]]
    assert r["hostfile_content"] == "localhost slots=2\n127.0.0.1 slots=1\n"
    assert not lab["record"].exists()


@pytest.mark.parametrize("args, message", [
    ({"np": 4}, "np=4 is more than the slots available: hosts localhost:2, 127.0.0.1:1 have 3 slots"),
    ({"program": "/nonexistent/prog"}, "program '/nonexistent/prog' was not found or is not executable"),
    ({"hosts": [{"name": "no-such-host.invalid"}]}, "unknown host no-such-host.invalid"),
    ({"hosts": []}, "hosts is empty"),
    ({"expect": {"sums_match": True}}, "expect.sums_match needs parse=seed (got parse=none)"),
    ({"mpirun": "/nonexistent/mpirun"}, "mpirun '/nonexistent/mpirun' was not found"),
])
def test_bad_input_fails_before_launching(lab, args, message):
    args.setdefault("hosts", HOSTS)
    r = run_module(lab, **args)
    assert r["failed"] is True and message in r["msg"], r["msg"]
    assert not lab["record"].exists()


def test_creates_and_removes_guards(lab):
    marker = write(lab, "done", "")
    r = run_module(lab, hosts=HOSTS, creates=marker)
    assert r["changed"] is False and r["ran"] is False and "skipped" in r["msg"]
    r = run_module(lab, hosts=HOSTS, removes=str(lab["dir"] / "absent"))
    assert r["changed"] is False and r["ran"] is False
    assert not lab["record"].exists()
    r = run_module(lab, hosts=HOSTS, removes=marker)
    assert r["ran"] is True and lab["record"].exists()


def test_nonzero_rc_fails_with_stderr_unless_told_otherwise(lab):
    fake = {"FAKE_MPIRUN_RC": "3", "FAKE_MPIRUN_STDERR": "mpirun noticed that process rank 1 exited"}
    r = run_module(lab, hosts=HOSTS, fake=fake)
    assert r["failed"] is True and r["rc"] == 3
    assert "failed with rc=3" in r["msg"] and "process rank 1 exited" in r["msg"]
    r = run_module(lab, hosts=HOSTS, fail_on_rc=False, fake=fake)
    assert not r.get("failed") and r["rc"] == 3


def test_timeout_stops_the_job(lab):
    r = run_module(lab, hosts=HOSTS, timeout=2, fake={"FAKE_MPIRUN_SLEEP": "60"})
    assert r["failed"] is True and r["timed_out"] is True
    assert r["duration"] < 20
    assert "ran past the timeout of 2 s and was stopped on every host" in r["msg"]


def test_unparseable_output_fails_clearly(lab):
    out = write(lab, "out.txt", "nothing useful\n")
    r = run_module(lab, hosts=HOSTS, parse="osu", fake={"FAKE_MPIRUN_OUTPUT": out})
    assert r["failed"] is True and r["msg"].startswith("parse=osu: no OSU Micro-Benchmarks table found")


def test_a_default_timeout_stops_a_job_that_never_ends():
    # timeout used to default to 0 (no limit): a hung job held the play (and the GPUs) forever.
    from ansible_collections.aiinfra.fabric.plugins.modules import mpi_run
    assert mpi_run.argument_spec()["timeout"]["default"] == 3600


def test_sigterm_to_the_module_stops_the_job_and_fails_saying_so(lab):
    path = lab["dir"] / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": {"mpirun": lab["mpirun"], "program": lab["program"],
                                                        "hosts": HOSTS}}))
    env = dict(os.environ, PYTHONPATH=os.path.join(TOP, ".cache", "collections"), TMPDIR=str(lab["dir"]),
               FAKE_MPIRUN_RECORD=str(lab["record"]), FAKE_MPIRUN_SLEEP="120")
    proc = subprocess.Popen([sys.executable, "-m", "ansible_collections.aiinfra.fabric.plugins.modules.mpi_run",
                             str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    deadline = __import__("time").time() + 30
    while not lab["record"].exists() and __import__("time").time() < deadline:
        __import__("time").sleep(0.1)
    assert lab["record"].exists(), "the fake mpirun never started"
    proc.send_signal(__import__("signal").SIGTERM)
    out, err = proc.communicate(timeout=60)
    r = json.loads(out.decode())
    assert r["failed"] is True and r["cancelled"] == "SIGTERM" and r["duration"] < 30
    assert "was cancelled (SIGTERM) and stopped on every host" in r["msg"], r["msg"]
