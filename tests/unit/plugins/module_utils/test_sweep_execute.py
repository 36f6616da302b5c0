"""Sweep execution through the MPI launcher code, with recorded job outputs instead of a cluster.

The outputs below are in the format of the mpi_bench role's fabric_mpi_bench (OSU-shaped)
and of nccl-tests; they are written for these tests (synthetic), not captured.
"""

from __future__ import annotations

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import execute as X
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import measure as M
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import plan as P
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import rank as R
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import report as V

BENCH = "/opt/aiinfra/mpi-bench/fabric_mpi_bench"


def bench_output(latency, bandwidth):
    return ("# aiinfra.fabric MPI Latency Test v1.0\n# Size          Latency (us)\n"
            "0         %18.2f\n1         %18.2f\n8         %18.2f\n"
            "# aiinfra.fabric MPI Bandwidth Test v1.0\n# Size      Bandwidth (MB/s)\n"
            "1         %18.2f\n16384     %18.2f\n" % (latency, latency, latency, bandwidth / 100, bandwidth))


def allreduce_output(latency):
    return ("# aiinfra.fabric MPI Allreduce Latency Test v1.0\n"
            "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
            "4         %18.2f%18.2f%18.2f%12d\n" % (latency, latency, latency, 20))


SLOW = "10.99.0.3"


class FakeCluster(object):
    """Answers each launcher argv from the hostfile's hosts: slow when te3's address is in it."""

    def __init__(self, fail_with=None, slow=SLOW):
        self.slow = slow
        self.argvs = []
        self.hostfiles = []
        self.fail_with = fail_with

    def write_hostfile(self, hosts, implementation, directory=None):
        self.hostfiles.append([h["name"] for h in hosts])
        return "/tmp/fake-hostfile-%d" % len(self.hostfiles)

    def run_job(self, argv, timeout=None, env=None, cwd=None):
        self.argvs.append(list(argv))
        self.envs = getattr(self, "envs", []) + [env]
        hosts = self.hostfiles[-1]
        if self.fail_with and self.fail_with in hosts:
            return {"rc": 1, "stdout": "", "stderr": "ORTE was unable to reliably start", "duration": 1.0,
                    "timed_out": False, "cancelled": None}
        slow = self.slow in hosts
        if "allreduce" in argv:
            out = allreduce_output(9000.0 if slow else 300.0)
        else:
            out = bench_output(5000.0 if slow else 120.0, 2.0 if slow else 40.0)
        return {"rc": 0, "stdout": out, "stderr": "", "duration": 2.0, "timed_out": False, "cancelled": None}


TESTS = [
    {"name": "latency", "program": BENCH, "args": ["all", "-m", "16384"], "table": "latency"},
    {"name": "bandwidth", "program": BENCH, "args": ["all", "-m", "16384"], "table": "bandwidth"},
]
GROUP = {"name": "allreduce", "program": BENCH, "args": ["allreduce", "-m", "4"], "table": "collective",
         "expect": 1000}
NODES = [{"name": "te1", "address": "10.99.0.1"}, {"name": "te2", "address": "10.99.0.2"},
         {"name": "te3", "address": "10.99.0.3"}]
ADDRESS = dict((n["name"], n["address"]) for n in NODES)


def executor(fake, launcher="mpirun"):
    base = {"launcher": launcher, "mca": {"btl": "tcp,self"} if launcher == "mpirun" else {},
            "allow_run_as_root": True}
    return X.Executor(base, "openmpi" if launcher == "mpirun" else None, 1, lambda name: True,
                      lambda program: program, timeout=60, run_job=fake.run_job, write_hostfile=fake.write_hostfile)


def test_pairwise_on_three_lab_nodes_names_the_slow_one_with_one_job_per_pair():
    fake = FakeCluster()
    tests = M.normalize_tests(TESTS)
    measurements, records = X.pairwise(P.round_robin(["te1", "te2", "te3"]), ADDRESS, tests, executor(fake))
    # latency and bandwidth come from one run of fabric_mpi_bench 'all' per pair
    assert len(fake.argvs) == 3
    assert fake.argvs[0][:8] == ["mpirun", "--allow-run-as-root", "-np", "2", "--hostfile", "/tmp/fake-hostfile-1",
                                 "--map-by", "node"]
    assert fake.hostfiles == [["10.99.0.2", "10.99.0.3"], ["10.99.0.1", "10.99.0.3"], ["10.99.0.1", "10.99.0.2"]]
    assert [r["pairs"][0]["nodes"] for r in records] == [["te2", "te3"], ["te1", "te3"], ["te1", "te2"]]
    ranking = R.rank(measurements, 0.2)
    assert [s["node"] for s in ranking["suspects"]] == ["te3"]
    values = dict(((m["test"], tuple(m["nodes"])), m["value"]) for m in measurements)
    assert values[("latency", ("te1", "te2"))] == 120.0 and values[("latency", ("te1", "te3"))] == 5000.0
    assert values[("bandwidth", ("te1", "te2"))] == 40.0
    # latency at the smallest size (0), bandwidth at the largest (16384)
    sizes = dict((m["test"], m["size"]) for m in measurements)
    assert sizes == {"latency": 0, "bandwidth": 16384}
    summary = V.verdict(ranking)
    assert summary["exclude"] == "te3" and summary["exclude_option"] == "--exclude=te3"
    assert summary["drain_command"][:3] == ["scontrol", "update", "NodeName=te3"]
    assert summary["lines"][0].startswith("suspect #1 te3 (node, 98 % worse; latency, bandwidth)")


def test_a_pair_whose_job_fails_is_low_and_carries_the_error():
    fake = FakeCluster(fail_with="10.99.0.2", slow=None)
    tests = M.normalize_tests(TESTS)
    measurements, records = X.pairwise(P.round_robin(["te1", "te2", "te3"]), ADDRESS, tests, executor(fake))
    failed = [m for m in measurements if m["value"] is None]
    assert len(failed) == 4 and all("rc=1: ORTE was unable" in m["error"] for m in failed)
    assert records[0]["pairs"][0]["jobs"][0]["error"].startswith("rc=1")
    ranking = R.rank(measurements)
    assert [s["node"] for s in ranking["suspects"]] == ["te2"]
    assert ranking["suspects"][0]["severity"] == 1.0


def test_bisection_runs_halves_and_names_the_slow_node():
    fake = FakeCluster()
    group = M.normalize_test(GROUP)
    result = X.bisection(["te1", "te2", "te3"], [], ADDRESS, group, executor(fake), 0.2)
    assert result["suspects"] == ["te3"]
    assert result["tests"][0]["nodes"] == ["te1", "te2", "te3"] and result["tests"][0]["low"] is True
    assert result["tests"][0]["value"] == 9000.0
    assert fake.argvs[0][3] == "3"  # -np 3: the whole group


def test_bisection_needs_an_expectation():
    with pytest.raises(X.SweepRunError, match="needs expect"):
        X.bisection(["a", "b"], [], {"a": "a", "b": "b"}, M.normalize_test(dict(GROUP, expect=None)),
                    executor(FakeCluster()), 0.2)


def test_srun_launcher_gets_a_node_list_and_no_hostfile():
    fake = FakeCluster()
    planned = executor(fake, launcher="srun").plan(M.normalize_tests(TESTS), ["te1", "te3"])
    assert len(planned) == 1
    assert planned[0]["plan"]["argv"][:4] == ["srun", "--nodes=2", "--ntasks=2", "--nodelist=te1,te3"]
    assert planned[0]["plan"]["hostfile_content"] is None


def test_srun_gets_mca_and_env_through_its_own_environment():
    # btl=tcp,self cannot travel in srun --export (a comma); it must reach the ranks anyway.
    fake = FakeCluster(slow=None)
    base = {"launcher": "srun", "mca": {"btl": "tcp,self", "btl_tcp_if_include": "10.99.0.0/24"},
            "env": {"UCX_TLS": "tcp", "KEEP": None}}
    ex = X.Executor(base, None, 1, lambda name: True, lambda program: program, run_job=fake.run_job,
                    write_hostfile=fake.write_hostfile)
    fake.hostfiles.append(["te1", "te2"])
    ex.measure(M.normalize_tests(TESTS), ["te1", "te2"])
    assert fake.envs == [{"UCX_TLS": "tcp", "OMPI_MCA_btl": "tcp,self", "OMPI_MCA_btl_tcp_if_include": "10.99.0.0/24"}]
    assert not any(a.startswith("--export") for a in fake.argvs[0])


def test_a_bad_program_or_host_fails_planning_before_anything_runs():
    fake = FakeCluster()
    ex = X.Executor({"launcher": "mpirun"}, "openmpi", 1, lambda name: name != "nosuch", lambda program: None,
                    run_job=fake.run_job, write_hostfile=fake.write_hostfile)
    with pytest.raises(X.SweepRunError, match="was not found"):
        ex.plan(M.normalize_tests(TESTS), ["te1", "te2"])
    assert fake.argvs == []


def test_nccl_test_args_are_built_like_nccl_test_and_busbw_is_read():
    test = M.normalize_test({"name": "all_reduce", "program": "/opt/nccl-tests/build/all_reduce_perf",
                             "parse": "nccl", "nccl": {"minbytes": "1G", "maxbytes": "1G", "ngpus": 1},
                             "expect": 360})
    assert test["args"] == ["-b", "1G", "-e", "1G", "-f", "2", "-g", "1", "-t", "1"]
    assert test["metric"] == "busbw" and test["better"] == "higher" and test["unit"] == "GB/s"
    parsed = {"problems": [], "rows": [
        {"size": 8, "out_of_place": {"busbw": 0.01, "wrong": 0}, "in_place": {"busbw": 0.01, "wrong": 0}},
        {"size": 1 << 30, "out_of_place": {"busbw": 351.2, "wrong": 0}, "in_place": {"busbw": 352.0, "wrong": 0}}]}
    assert M.extract(test, parsed) == (351.2, 1 << 30, None)
    parsed["rows"][1]["out_of_place"]["wrong"] = 3
    assert M.extract(test, parsed)[2] == "nccl-tests reports 3 wrong values at size 1073741824"
    with pytest.raises(M.MeasureError, match="ngpus"):
        M.normalize_test({"name": "x", "program": "p", "parse": "nccl", "nccl": {"ngpus": 0}})


@pytest.mark.parametrize("spec,message", [
    ({"name": "x"}, "needs a program"),
    ({"name": "x", "program": "p", "table": "speed"}, "table must be one of"),
    ({"name": "x", "program": "p", "parse": "imb"}, "parse must be one of"),
    ({"name": "x", "program": "p", "expect": "fast"}, "expect must be a number"),
    ({"name": "x", "program": "p", "expect": -1}, "above 0"),
    ({"name": "x", "program": "p", "size": "1X"}, "byte count"),
    ({"name": "x", "program": "p", "nccl": {}}, "needs parse: nccl"),
    ({"name": "x", "program": "p", "color": 1}, "unknown keys"),
])
def test_bad_test_specs_are_rejected(spec, message):
    with pytest.raises(M.MeasureError, match=message):
        M.normalize_test(spec)


def test_test_names_must_be_unique():
    with pytest.raises(M.MeasureError, match="more than once"):
        M.normalize_tests([{"name": "a", "program": "p"}, {"name": "a", "program": "q"}])


def test_is_low_for_both_directions():
    lower = M.normalize_test({"name": "l", "program": "p", "table": "latency", "expect": 100})
    higher = M.normalize_test({"name": "h", "program": "p", "table": "bandwidth", "expect": 100})
    assert not X.is_low(lower, 120.0, 0.2) and X.is_low(lower, 130.0, 0.2)
    assert not X.is_low(higher, 85.0, 0.2) and X.is_low(higher, 75.0, 0.2)
    assert X.is_low(higher, None, 0.2)


class HiccupCluster(FakeCluster):
    """FakeCluster whose first job on ``pair`` is slow once (a passing cause), later ones healthy."""

    def __init__(self, pair, slow=None):
        FakeCluster.__init__(self, slow=slow)
        self.pair = sorted(pair)
        self.hiccups = 1

    def run_job(self, argv, timeout=None, env=None, cwd=None):
        run = FakeCluster.run_job(self, argv, timeout, env, cwd)
        if sorted(self.hostfiles[-1]) == self.pair and self.hiccups:
            self.hiccups -= 1
            run = dict(run, stdout=bench_output(320.0, 40.0))  # 2.7 x the healthy latency, as seen on the lab
        return run


def rank_at(tolerance):
    return lambda measurements: R.rank(measurements, tolerance)


def test_a_pair_slow_once_is_measured_again_and_names_nobody():
    fake = HiccupCluster(["10.99.0.1", "10.99.0.2"])
    tests = M.normalize_tests(TESTS)
    first, _records = X.pairwise(P.round_robin(["te1", "te2", "te3"]), ADDRESS, tests, executor(fake))
    assert R.low_pairs(R.rank(first, 0.5)) == [("te1", "te2")]  # judged on one run, te1-te2 is low
    measurements, ranking, retests = X.retest_low(first, rank_at(0.5), ADDRESS, tests, executor(fake), 1)
    assert len(fake.argvs) == 4 and fake.hostfiles[-1] == ["10.99.0.1", "10.99.0.2"]
    assert [r["pairs"] for r in retests] == [[["te1", "te2"]]]
    assert ranking["suspects"] == [] and ranking["link_suspects"] == [] and R.low_pairs(ranking) == []
    pair = [p for t in ranking["tests"] if t["test"] == "latency" for p in t["pairs"] if p["nodes"] == ["te1", "te2"]][0]
    assert pair["value"] == 120.0 and pair["samples"] == [320.0, 120.0]
    assert pair["text"].endswith("best of 2 runs)")
    assert [m for m in measurements if m["nodes"] == ["te1", "te3"]][0].get("samples") is None


def test_without_retests_the_hiccup_is_a_link_suspect():
    fake = HiccupCluster(["10.99.0.1", "10.99.0.2"])
    tests = M.normalize_tests(TESTS)
    first, _records = X.pairwise(P.round_robin(["te1", "te2", "te3"]), ADDRESS, tests, executor(fake))
    _measurements, ranking, retests = X.retest_low(first, rank_at(0.5), ADDRESS, tests, executor(fake), 0)
    assert retests == [] and len(fake.argvs) == 3
    assert [s["nodes"] for s in ranking["link_suspects"]] == [["te1", "te2"]]


def test_a_slow_node_stays_low_every_time_and_its_pairs_run_in_separate_rounds():
    fake = FakeCluster()
    tests = M.normalize_tests(TESTS)
    first, _records = X.pairwise(P.round_robin(["te1", "te2", "te3"]), ADDRESS, tests, executor(fake))
    _measurements, ranking, retests = X.retest_low(first, rank_at(0.5), ADDRESS, tests, executor(fake), 2)
    # both of te3's pairs, twice; they share te3, so one pair a round
    assert [r["pairs"] for r in retests] == [[["te2", "te3"], ["te1", "te3"]]] * 2
    assert [len(r["rounds"]) for r in retests] == [2, 2] and len(fake.argvs) == 3 + 4
    assert [s["node"] for s in ranking["suspects"]] == ["te3"]
    low = [p for t in ranking["tests"] for p in t["pairs"] if p["low"]]
    assert low and all(p["samples"] == [p["value"]] * 3 for p in low)
