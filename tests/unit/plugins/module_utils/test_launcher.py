"""Unit tests for the shared launcher: exact argv lists, hostfiles, version detection, run_job."""

from __future__ import annotations

import os
import sys
import time

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner as R

OMPI_414 = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
OMPI_5 = "mpirun (Open MPI) 5.0.3\n\nReport bugs to https://www.open-mpi.org/community/help/\n"
MPICH_402 = """HYDRA build details:
    Version:                                 4.0.2
    Release Date:                            Thu Apr  7 12:34:45 CDT 2022
    CC:                              gcc -Wdate-time -D_FORTIFY_SOURCE=2
    Configure options:                       '--disable-option-checking' '--prefix=/usr'
    Process Manager:                         pmi
    Launchers available:                     ssh rsh fork slurm ll lsf sge manual persist
"""
INTEL = "Intel(R) MPI Library for Linux* OS, Version 2021.10 Build 20230619 (id: c2e19c2f3e)\nCopyright 2003-2023, Intel Corporation.\n"


@pytest.mark.parametrize("text, impl, version", [
    (OMPI_414, L.OPENMPI, "4.1.4"),
    (OMPI_5, L.OPENMPI, "5.0.3"),
    (MPICH_402, L.MPICH, "4.0.2"),
    (INTEL, L.INTELMPI, "2021.10"),
    ("something else 1.0\n", L.UNKNOWN, ""),
    ("", L.UNKNOWN, ""),
])
def test_parse_mpirun_version(text, impl, version):
    got = L.parse_mpirun_version(text)
    assert got["implementation"] == impl
    assert got["version"] == version


def test_parse_version_banner_is_first_non_empty_line():
    assert L.parse_mpirun_version(OMPI_414)["banner"] == "mpirun (Open MPI) 4.1.4"


def test_detect_implementation_runs_version():
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, OMPI_414, ""
    assert L.detect_implementation(run, "/usr/bin/mpirun")["implementation"] == L.OPENMPI
    assert calls == [["/usr/bin/mpirun", "--version"]]


def test_detect_implementation_failure_names_command():
    with pytest.raises(L.LauncherError, match=r"/opt/x/mpirun --version' failed \(rc=127\): nope"):
        L.detect_implementation(lambda argv: (127, "", "nope"), "/opt/x/mpirun")


def test_normalize_hosts_accepts_names_and_dicts():
    assert L.normalize_hosts([{"name": "te1", "slots": 2}, "te2", {"name": "te3"}]) == [
        {"name": "te1", "slots": 2}, {"name": "te2", "slots": 1}, {"name": "te3", "slots": 1}]
    assert L.normalize_hosts([{"name": "n1", "slots": "4"}]) == [{"name": "n1", "slots": 4}]
    assert L.normalize_hosts(None) == []


@pytest.mark.parametrize("hosts, message", [
    ([{"name": "te1", "slots": 0}], r"hosts\[0\]\.slots for te1 must be an integer >= 1, got 0"),
    ([{"name": "te1", "slots": "two"}], r"hosts\[0\]\.slots for te1 must be an integer, got 'two'"),
    ([{"name": "te1", "slots": 1.5}], r"must be an integer >= 1, got 1.5"),
    ([{"name": "te1", "slots": True}], r"must be an integer >= 1, got True"),
    ([{"name": ""}], r"hosts\[0\]\.name '' is not a host name"),
    (["te1 slots=2"], r"hosts\[0\]\.name 'te1 slots=2' is not a host name"),
    (["te1", {"name": "te1"}], r"hosts lists te1 twice"),
    ([{"name": "te1", "cpus": 2}], r"hosts\[0\] has unknown keys \['cpus'\]"),
    ([3], r"hosts\[0\] must be a name or \{name, slots\}, got 3"),
    ("te1", r"hosts must be a list"),
])
def test_normalize_hosts_rejects(hosts, message):
    with pytest.raises(L.LauncherError, match=message):
        L.normalize_hosts(hosts)


def test_total_slots():
    assert L.total_slots([{"name": "te1", "slots": 2}, {"name": "te2", "slots": 1}]) == 3


def test_hostfile_content_both_syntaxes():
    hosts = [{"name": "te1", "slots": 2}, {"name": "te2", "slots": 1}]
    assert L.hostfile_content(hosts, L.OPENMPI) == "te1 slots=2\nte2 slots=1\n"
    assert L.hostfile_content(hosts, L.MPICH) == "te1:2\nte2:1\n"
    assert L.hostfile_content(hosts, L.INTELMPI) == "te1:2\nte2:1\n"


def test_hostfile_content_rejects_empty_and_unknown():
    with pytest.raises(L.LauncherError, match="hosts is empty"):
        L.hostfile_content([], L.OPENMPI)
    with pytest.raises(L.LauncherError, match="cannot write a hostfile for MPI implementation 'unknown'"):
        L.hostfile_content(["te1"], L.UNKNOWN)


def test_write_hostfile_is_private(tmp_path):
    path = L.write_hostfile([{"name": "te1", "slots": 2}], L.OPENMPI, directory=str(tmp_path))
    assert open(path).read() == "te1 slots=2\n"
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.path.dirname(path) == str(tmp_path)


def test_openmpi_argv_everything():
    argv = L.build_mpirun_argv(
        "/usr/bin/mpirun", "./hello", args=["-x", 3], np=3, implementation=L.OPENMPI,
        hostfile="/tmp/hf", mca={"btl_tcp_if_include": "10.99.0.0/24", "btl": "tcp,self"},
        env={"OMP_NUM_THREADS": 1, "PATH": None, "FLAG": True}, allow_run_as_root=True,
        oversubscribe=True, map_by="node", bind_to="none", tag_output=True, chdir="/srv/mpi",
        extra_args=["--report-bindings"])
    assert argv == [
        "/usr/bin/mpirun", "--allow-run-as-root", "-np", "3", "--hostfile", "/tmp/hf",
        "--oversubscribe", "--map-by", "node", "--bind-to", "none", "--tag-output",
        "--wdir", "/srv/mpi",
        "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.99.0.0/24",
        "-x", "FLAG=1", "-x", "OMP_NUM_THREADS=1", "-x", "PATH",
        "--report-bindings", "./hello", "-x", "3"]


def test_openmpi_argv_minimal_has_no_root_flag():
    assert L.build_mpirun_argv("mpirun", "./a.out", np=4) == ["mpirun", "-np", "4", "./a.out"]


def test_mpich_argv():
    argv = L.build_mpirun_argv(
        "/usr/bin/mpiexec.hydra", "./hello", args=["1"], np=4, implementation=L.MPICH,
        hostfile="/tmp/hf", env={"A": "x", "HOME": None, "PATH": None}, allow_run_as_root=True,
        oversubscribe=True, map_by="core", bind_to="core", tag_output=True, chdir="/w")
    assert argv == [
        "/usr/bin/mpiexec.hydra", "-np", "4", "-f", "/tmp/hf", "-map-by", "core",
        "-bind-to", "core", "-prepend-rank", "-wdir", "/w", "-genv", "A", "x",
        "-genvlist", "HOME,PATH", "./hello", "1"]


def test_mpich_rejects_mca():
    with pytest.raises(L.LauncherError, match=r"mca parameters \['btl'\] are Open MPI settings"):
        L.build_mpirun_argv("mpirun", "./a", implementation=L.MPICH, mca={"btl": "tcp"})


@pytest.mark.parametrize("kwargs, message", [
    ({"np": 0}, "np must be an integer >= 1, got 0"),
    ({"np": "4"}, "np must be an integer >= 1, got '4'"),
    ({"env": {"BAD-NAME": 1}}, "env has an invalid variable name 'BAD-NAME'"),
    ({"env": ["A"]}, "env must be a dict"),
    ({"mca": {"btl tcp": 1}}, "mca has an invalid parameter name 'btl tcp'"),
    ({"implementation": L.UNKNOWN}, "unsupported MPI implementation 'unknown'"),
])
def test_mpirun_argv_rejects(kwargs, message):
    with pytest.raises(L.LauncherError, match=message):
        L.build_mpirun_argv("mpirun", "./a", **kwargs)


def test_srun_argv_everything():
    argv = L.build_srun_argv(
        "/usr/bin/srun", "./allreduce", args=["-n", 10], nodes=2, ntasks=3, ntasks_per_node=2,
        cpus_per_task=1, mpi="pmix", export={"NCCL_DEBUG": "INFO", "LD_LIBRARY_PATH": None},
        nodelist=["te1", "te2"], chdir="/w", label=True, extra_args=["--exclusive"])
    assert argv == [
        "/usr/bin/srun", "--nodes=2", "--ntasks=3", "--ntasks-per-node=2", "--cpus-per-task=1",
        "--nodelist=te1,te2", "--mpi=pmix", "--export=ALL,LD_LIBRARY_PATH,NCCL_DEBUG=INFO",
        "--label", "--chdir=/w", "--exclusive", "./allreduce", "-n", "10"]


def test_srun_argv_minimal():
    assert L.build_srun_argv("srun", "./a") == ["srun", "./a"]


def test_srun_rejects_comma_in_export_and_bad_counts():
    with pytest.raises(L.LauncherError, match=r"export X='a,b': srun --export cannot carry a comma"):
        L.build_srun_argv("srun", "./a", export={"X": "a,b"})
    with pytest.raises(L.LauncherError, match="ntasks_per_node must be an integer >= 1, got 0"):
        L.build_srun_argv("srun", "./a", ntasks_per_node=0)


def test_split_tagged_output_openmpi4_and_5():
    text = ("[1,0]<stdout>:Hello from rank 0\n[1,12]<stderr>:warn: x\n"
            "[1,1]<stdout>: Hello from rank 1\nplain launcher line\n")
    assert L.split_tagged_output(text, L.OPENMPI) == [
        {"rank": 0, "stream": "stdout", "line": "Hello from rank 0"},
        {"rank": 12, "stream": "stderr", "line": "warn: x"},
        {"rank": 1, "stream": "stdout", "line": "Hello from rank 1"},
        {"rank": None, "stream": "stdout", "line": "plain launcher line"},
    ]


def test_split_tagged_output_hydra_and_srun():
    assert L.split_tagged_output("[3] hi\nx\n", L.MPICH) == [
        {"rank": 3, "stream": "stdout", "line": "hi"}, {"rank": None, "stream": "stdout", "line": "x"}]
    assert L.split_tagged_output(" 0: a\n11: b\n", "srun") == [
        {"rank": 0, "stream": "stdout", "line": "a"}, {"rank": 11, "stream": "stdout", "line": "b"}]


def test_run_job_returns_output_and_rc():
    res = R.run_job([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"])
    assert res["rc"] == 3 and res["stdout"] == "out\n" and res["stderr"] == "err\n"
    assert res["timed_out"] is False and res["duration"] >= 0


def test_run_job_sets_lc_all_and_env(tmp_path):
    res = R.run_job([sys.executable, "-c", "import os; print(os.environ['LC_ALL'], os.environ['X'], os.getcwd())"],
                    env={"X": 5}, cwd=str(tmp_path))
    assert res["stdout"].split() == ["C", "5", str(tmp_path)]


# A stand-in for a launcher: it starts a "rank" in its own process group (as Open MPI
# does with its local ranks) and a second one that ignores SIGTERM, then hangs.
STANDIN_LAUNCHER = r"""
import os, signal, subprocess, sys, time
pidfile = sys.argv[1]
a = subprocess.Popen([sys.executable, "-c", "import os,time; os.setpgid(0,0); time.sleep(300)"])
b = subprocess.Popen([sys.executable, "-c", "import signal,time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(300)"])
open(pidfile, "w").write("%d %d" % (a.pid, b.pid))
print("started", flush=True)
if len(sys.argv) > 2:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
time.sleep(300)
"""


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(") ")[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize("launcher_ignores_term", [False, True])
def test_run_job_timeout_kills_every_process(tmp_path, launcher_ignores_term):
    script = tmp_path / "launcher.py"
    script.write_text(STANDIN_LAUNCHER)
    pidfile = tmp_path / "pids"
    argv = [sys.executable, str(script), str(pidfile)] + (["ignore"] if launcher_ignores_term else [])
    start = time.time()
    res = R.run_job(argv, timeout=2, grace=1)
    assert res["timed_out"] is True
    assert res["stdout"] == "started\n"
    assert res["rc"] == (-9 if launcher_ignores_term else -15)
    assert time.time() - start < 10
    pids = [int(p) for p in pidfile.read_text().split()]
    deadline = time.time() + 5
    while any(_alive(p) for p in pids) and time.time() < deadline:
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)], "processes of the job survived the timeout"


def test_slurm_task_options_in_srun_order_leaving_out_none():
    assert L.slurm_task_options() == []
    assert L.slurm_task_options(nodes=2, ntasks_per_node=1, cpus_per_task=4) == [
        "--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=4"]
    argv = L.build_srun_argv("srun", "/opt/a", nodes=2, ntasks=4, ntasks_per_node=2, cpus_per_task=3)
    options = L.slurm_task_options(nodes=2, ntasks=4, ntasks_per_node=2, cpus_per_task=3)
    assert argv[1:5] == options


def test_host_resolves_localhost_not_an_unencodable_name():
    assert L.host_resolves("localhost") is True
    # A 64-character label cannot be IDNA-encoded: UnicodeError, no lookup leaves the host.
    assert L.host_resolves("x" * 64 + ".example") is False
