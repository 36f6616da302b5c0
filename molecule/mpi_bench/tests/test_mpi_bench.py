"""MPI across the lab VMs after playbooks/mpi_bench.yml converged (twice).

The results come from the converge run (saved by converge.yml); the hosts are read
directly. Two tests run Ansible again: the playbook in check mode, and with an
impossible latency bound (it must fail, naming value, bound and hosts). Three run
mpi_run on a job across te1 and te2 and stop it - by its timeout, by SIGTERM to the
module process (what an AWX cancel does), and by an async timeout (async_wrapper
SIGKILLs the module) - and look for a leftover launcher, node daemons (orted/prted) and
ranks on both VMs.
"""

import json
import os
import re
import subprocess
import time

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BENCH_DIR = "/opt/aiinfra/mpi-bench"
# Process names (pgrep -x patterns) of the launcher and of its per-node daemon: Open MPI 4
# (bookworm) runs mpirun and orted; Open MPI 5 (trixie) execs prterun from mpirun and its
# daemons are prted (PRRTE).
LAUNCHER = "mpirun|prterun"
DAEMON = "orted|prted"
PROGRAMS = ["hello_mpi", "reduce_mpi", "allreduce_mpi", "fabric_mpi_bench"]


def ansible_env():
    env = dict(os.environ)
    # JSON results: one line per result, so messages are not wrapped.
    env.update(ANSIBLE_CONFIG=os.path.join(TOP, "lab", "ansible.cfg"), ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_TIMEOUT="60", ANSIBLE_NOCOLOR="1", ANSIBLE_CALLBACK_RESULT_FORMAT="json")
    return env


def playbook(*args, timeout=900):
    cmd = [os.path.join(TOP, ".venv", "bin", "ansible-playbook"), "-i", os.path.join(TOP, "inventory", "lab"),
           os.path.join(TOP, "playbooks", "mpi_bench.yml")] + list(args)
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ansible_env(),
                          timeout=timeout, universal_newlines=True, check=False)


def recap(output):
    """{host: {ok: n, changed: n, failed: n, ...}} from the PLAY RECAP."""
    hosts = {}
    for host, fields in re.findall(r"^(te\d)\s+:\s+(.*)$", output, re.MULTILINE):
        hosts[host] = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", fields)}
    return hosts


@pytest.fixture(scope="module")
def result():
    path = os.environ.get("MPI_BENCH_RESULT_FILE")
    assert path and os.path.exists(path), "converge.yml saves mpi_bench_result to MPI_BENCH_RESULT_FILE (%s)" % path
    with open(path) as handle:
        return json.load(handle)


@pytest.mark.parametrize("vm", ["te1", "te2"])
def test_open_mpi_and_programs_on_every_node(vm, request):
    host = request.getfixturevalue(vm)
    assert re.match(r"^mpirun \(Open MPI\) [45]\.", host.check_output("mpirun --version"))
    for program in PROGRAMS:
        assert host.file("%s/%s" % (BENCH_DIR, program)).mode & 0o111, program
        assert host.file("%s/%s.c" % (BENCH_DIR, program)).exists


def test_te1_logs_in_to_te2_with_a_key_and_a_known_host_key(te1):
    # Strict host key checking, no password: what mpirun's ssh needs, nothing weaker.
    out = te1.check_output("ssh -o BatchMode=yes -o StrictHostKeyChecking=yes te2 hostname")
    assert out == "te2"
    assert te1.run("ssh-keygen -F te2 -f /root/.ssh/known_hosts").rc == 0


def test_sshd_was_not_weakened(te1, te2):
    # The image's sshd settings, unchanged: keys only, root by key only.
    for vm in (te1, te2):
        config = vm.check_output("sshd -T")
        assert re.search(r"^passwordauthentication no$", config, re.MULTILINE), config
        assert re.search(r"^permitrootlogin without-password$", config, re.MULTILINE), config
        assert re.search(r"^pubkeyauthentication yes$", config, re.MULTILINE), config


def test_every_sum_was_checked_single_and_multi_node(result):
    sums = result["sums"]
    assert result["sums_ok"] is True
    single = [s for s in sums if s["job"].startswith("single_node:")]
    multi = [s for s in sums if s["job"].startswith("multi_node:")]
    # te1 alone, 4 ranks (oversubscribed on 2 CPUs): 0+1+2+3 = 6.
    assert sorted((s["op"], s["rank"]) for s in single) == [("allreduce", r) for r in range(4)] + [("reduce", 0)]
    assert all(s["received"] == s["expected"] == 6 and s["host"] == "te1" for s in single)
    # te1 slots=2 + te2 slots=1: 3 ranks, 0+1+2 = 3, and rank 2 ran on te2.
    assert sorted((s["op"], s["rank"]) for s in multi) == [("allreduce", r) for r in range(3)] + [("reduce", 0)]
    assert all(s["received"] == s["expected"] == 3 for s in multi)
    assert {s["host"] for s in multi if s["op"] == "allreduce"} == {"te1", "te2"}


def test_jobs_ran_over_the_fabric_with_the_inventory_hostfile(result):
    jobs = {j["name"]: j for j in result["jobs"]}
    assert set(jobs) == {"single_node:hello", "single_node:reduce", "single_node:allreduce", "multi_node:hello",
                         "multi_node:reduce", "multi_node:allreduce", "benchmark"}
    assert result["implementation"]["implementation"] == "openmpi"
    hello = jobs["multi_node:hello"]
    assert hello["np"] == 3 and hello["hosts"] == ["te1", "te2"] and hello["rc"] == 0
    assert "--mca btl_tcp_if_include 10.99.0.0/24" in hello["command"]
    assert "--mca oob_tcp_if_include 10.99.0.0/24" in hello["command"]
    assert sorted(h["host"] for h in hello["parsed"]["hello"]) == ["te1", "te1", "te2"]
    assert "--oversubscribe" in jobs["single_node:hello"]["command"] and jobs["single_node:hello"]["np"] == 4
    assert "--oversubscribe" not in hello["command"]


def test_the_result_says_which_transport_carried_the_jobs(result):
    # The lab keeps the default: TCP sockets over the fabric, pinned (pml ob1), and said so.
    assert result["transport"] == {"requested": "tcp", "kind": "tcp",
                                   "summary": "TCP sockets (Open MPI pml ob1, btl tcp,self)"}, result["transport"]
    for job in result["jobs"]:
        assert job["transport"]["kind"] == "tcp", job["name"]
        assert "--mca pml ob1" in job["command"] and "--mca btl tcp,self" in job["command"], job["command"]
    print("lab transport:", result["transport"])


def test_benchmark_tables_between_te1_and_te2(result):
    tables = result["benchmarks"]
    assert set(tables) == {"latency", "bandwidth", "allreduce"}
    for name, table in tables.items():
        assert table["hosts"] == ["te1", "te2"] and table["rows"], name
    latency = tables["latency"]["rows"]
    assert [r["size"] for r in latency] == [0] + [2 ** i for i in range(15)]
    assert all(r["latency_us"] > 0 for r in latency)
    assert [r["size"] for r in tables["bandwidth"]["rows"]] == [2 ** i for i in range(15)]
    assert all(r["bandwidth_mbs"] >= 0 for r in tables["bandwidth"]["rows"])
    allreduce = tables["allreduce"]["rows"]
    assert tables["allreduce"]["np"] == 3
    assert all(r["min_latency_us"] <= r["latency_us"] <= r["max_latency_us"] and r["iterations"] > 0
               for r in allreduce)
    print("lab latency_us:", [(r["size"], r["latency_us"]) for r in latency])
    print("lab bandwidth_mbs:", [(r["size"], r["bandwidth_mbs"]) for r in tables["bandwidth"]["rows"]])
    print("lab allreduce avg us:", [(r["size"], r["latency_us"]) for r in allreduce])


def test_check_mode_changes_nothing(te1, te2):
    before = {vm.check_output("hostname"): vm.check_output("stat -c '%%n %%Y %%s' %s/* /root/.ssh/*" % BENCH_DIR)
              for vm in (te1, te2)}
    run = playbook("--check", "-v")
    assert run.returncode == 0, run.stdout[-4000:]
    counts = recap(run.stdout)
    assert counts["te1"]["changed"] == 0 and counts["te2"]["changed"] == 0, run.stdout[-3000:]
    # In check mode mpi_run reports the command and runs nothing.
    assert run.stdout.count("check mode: the job was not run") >= 7, run.stdout[-3000:]
    after = {vm.check_output("hostname"): vm.check_output("stat -c '%%n %%Y %%s' %s/* /root/.ssh/*" % BENCH_DIR)
             for vm in (te1, te2)}
    assert after == before


def test_impossible_latency_bound_fails_with_a_clear_message():
    extra = {"mpi_bench_programs": [], "mpi_bench_benchmark_args": ["-m", "64", "-i", "5", "-x", "1", "-w", "4"],
             "mpi_bench_expect_latency": {"max_latency": [{"size": 8, "value": 0.001}]}}
    run = playbook("-e", json.dumps(extra))
    assert run.returncode != 0
    assert recap(run.stdout)["te1"]["failed"] == 1
    message = re.search(r"MPI job expectations failed: (.*)", run.stdout)
    assert message, run.stdout[-4000:]
    text = message.group(1)
    print(text)
    assert re.search(r"aiinfra\.fabric MPI Latency Test v1\.0: latency_us at 8 bytes = [0-9.e+]+ us, "
                     r"above the maximum 0\.001 us on te1, te2 \(launched from te1\)", text), text


def test_timeout_stops_the_job_on_every_node(te2):
    args = {"program": "/bin/sleep", "args": ["417"], "hosts": [{"name": "te1", "slots": 1},
                                                                {"name": "te2", "slots": 1}],
            "allow_run_as_root": True, "timeout": 35,
            "mca": {"oob_tcp_if_include": "10.99.0.0/24", "plm_rsh_no_tree_spawn": "1"}}
    cmd = [os.path.join(TOP, ".venv", "bin", "ansible"), "te1", "-i", os.path.join(TOP, "inventory", "lab"),
           "-m", "aiinfra.fabric.mpi_run", "-a", json.dumps(args)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=ansible_env(),
                            universal_newlines=True)
    try:
        # The rank really runs on te2 before the timeout (it starts there in about 10 s)...
        deadline = time.time() + 33
        seen = False
        while time.time() < deadline and not seen:
            seen = te2.run("pgrep -f 'sleep 417'").rc == 0
            time.sleep(2)
        out = proc.communicate(timeout=300)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert seen, "the job's rank never started on te2"
    assert proc.returncode != 0
    assert "ran past the timeout of 35 s and was stopped on every host" in out, out[-3000:]
    # ...and mpirun took its daemon on te2 down with it: no rank, no orted/prted left there.
    time.sleep(2)
    assert te2.run("pgrep -f 'sleep 417'").rc == 1
    assert te2.run("pgrep -x '%s'" % DAEMON).rc == 1


SLEEP_JOB = {"program": "/bin/sleep", "hosts": [{"name": "te1", "slots": 1}, {"name": "te2", "slots": 1}],
             "allow_run_as_root": True,
             "mca": {"oob_tcp_if_include": "10.99.0.0/24", "plm_rsh_no_tree_spawn": "1"}}


def plain_ansible_env():
    # Without Mitogen: the module runs as its own AnsiballZ process on te1 (as on any
    # host), so it can be signalled, and async runs through Ansible's async_wrapper.
    env = ansible_env()
    env["ANSIBLE_CONFIG"] = os.path.join(TOP, "ansible.cfg")
    # molecule's verifier passes on the scenario's ANSIBLE_STRATEGY (Mitogen), which would
    # override the config file: async would then go through Mitogen's own job runner, not
    # async_wrapper.
    for name in ("ANSIBLE_STRATEGY", "ANSIBLE_STRATEGY_PLUGINS"):
        env.pop(name, None)
    return env


def start_sleep_job(seconds, *extra):
    args = dict(SLEEP_JOB, args=[str(seconds)], timeout=900)
    cmd = [os.path.join(TOP, ".venv", "bin", "ansible"), "te1", "-i", os.path.join(TOP, "inventory", "lab"),
           "-m", "aiinfra.fabric.mpi_run", "-a", json.dumps(args)] + list(extra)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=plain_ansible_env(),
                            universal_newlines=True)


def wait_for(host, command, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if host.run(command).rc == 0:
            return True
        time.sleep(2)
    return False


def leftovers(te1, te2, tag, seconds):
    """The job's processes (``sleep <tag>`` ranks, orted/prted, mpirun/prterun) still alive
    on each VM after up to ``seconds`` (empty: all gone)."""
    left = {}
    deadline = time.time() + seconds
    while True:
        left = {}
        for name, vm in (("te1", te1), ("te2", te2)):
            # [s]leep: the pattern must not match this checking shell's own command line.
            out = vm.run("pgrep -a -f '[s]leep %s' ; pgrep -a -x '%s' ; pgrep -a -x '%s'"
                         % (tag, DAEMON, LAUNCHER)).stdout
            if out.strip():
                left[name] = out.strip()
        if not left or time.time() > deadline:
            return left
        time.sleep(2)


def test_sigterm_to_the_module_stops_the_job_on_every_node(te1, te2):
    proc = start_sleep_job(431)
    try:
        assert wait_for(te2, "pgrep -f '[s]leep 431'", 120), "the job's rank never started on te2"
        # The module's own process on te1 is mpirun's parent (AnsiballZ runs the module in
        # its python, with pipelining fed on stdin, so its command line names nothing).
        mpirun = te1.check_output("pgrep -x '%s'" % LAUNCHER).split()
        assert len(mpirun) == 1, mpirun
        module_pid = te1.check_output("ps -o ppid= -p %s" % mpirun[0]).strip()
        assert "python" in te1.check_output("ps -o comm= -p %s" % module_pid), module_pid
        te1.run("kill -TERM %s" % module_pid)
        out = proc.communicate(timeout=120)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    print(out[-1500:])
    assert proc.returncode != 0
    assert "was cancelled (SIGTERM) and stopped on every host" in out, out[-3000:]
    assert leftovers(te1, te2, "431", 20) == {}


def test_async_timeout_stops_the_job_on_every_node(te1, te2):
    # async_wrapper kills the module's process group with SIGKILL: no handler runs,
    # the module's guard process takes the job down.
    proc = start_sleep_job(433, "-B", "35", "-P", "5")
    try:
        started = wait_for(te2, "pgrep -f '[s]leep 433'", 120)
        if not started:
            proc.kill()
        out = proc.communicate(timeout=300)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert started, "the job's rank never started on te2:\n%s\n%s" % (
        out[-3000:], te1.run("tail -c 3000 ~/.ansible_async/* 2>&1").stdout)
    print(out[-1500:])
    # ansible-core 2.19 reports async_wrapper's "Timeout exceeded" for the job.
    assert proc.returncode != 0 and "Timeout exceeded" in out, out[-3000:]
    assert leftovers(te1, te2, "433", 30) == {}
