"""fabric_report on the facts the roles really set, and the defects of issue 18.

NCCL: tests/fixtures/report/role_captured (nccl_tests_result from the nccl_tests role run
with the replay stand-in). MPI and NVMe-oF: tests/fixtures/report/lab_captured (facts
from a lab run). Each test here failed before the fix it names.
"""

import copy
import json
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.report import checks as C
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import judge as J
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import judge as J  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import collect as K
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import model as M

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report")


def load(folder, host):
    with open(os.path.join(FIXTURES, folder, host + ".json")) as handle:
        return json.load(handle)


@pytest.fixture
def nccl_facts():
    return {"gpu1": load("role_captured", "gpu1"), "gpu2": load("role_captured", "gpu2")}


@pytest.fixture
def lab_facts():
    return {"te1": load("lab_captured", "te1"), "te2": load("lab_captured", "te2")}


def judge(facts, **kw):
    benchmarks, hosts = K.collect(facts)
    metrics = M.derive_metrics(benchmarks, hosts)
    checks, summary = J.evaluate(metrics, hosts=set(hosts), **kw)
    return benchmarks, metrics, checks, summary


def test_nccl_role_fact_gives_one_record_per_run(nccl_facts):
    benchmarks, metrics, checks, summary = judge(nccl_facts)
    single = [r for r in benchmarks["nccl"] if r["scope"] == "single"]
    multi = [r for r in benchmarks["nccl"] if r["scope"] == "multi"]
    # 2 hosts x (2 tests x 2 size ranges) on each node; the group's 4 runs once, not once per host.
    assert len(single) == 8 and len(multi) == 4
    assert sorted(set(r["test"] for r in single)) == ["all_reduce", "alltoall"]
    assert all(r["rows"] for r in benchmarks["nccl"])
    run = [r for r in single if r["host"] == "gpu1" and r["test"] == "all_reduce" and r["max_size"] == 134217728][0]
    assert run["busbw_at_max_size"] == 122.57 and run["gpu_model"] == "NVIDIA GH200 120GB"


def test_nccl_metric_ids_are_unique_across_the_size_matrix(nccl_facts):
    dummy, metrics, dummy2, dummy3 = judge(nccl_facts)
    ids = [m["id"] for m in metrics]
    assert len(ids) == len(set(ids))
    keys = [m["key"] for m in metrics if m["host"] == "gpu1" and m["metric"] == "busbw_max_size"
            and m["labels"]["scope"] == "single" and m["labels"]["test"] == "all_reduce"]
    assert sorted(keys) == ["nccl.busbw_max_size[nranks=8,scope=single,sizes=1K-8G,test=all_reduce]",
                            "nccl.busbw_max_size[nranks=8,scope=single,sizes=8-128M,test=all_reduce]"]


def test_metric_ids_stay_unique_when_labels_repeat():
    run = load("role_captured", "gpu1")["nccl_tests_result"]["single_node"][0]
    fact = {"host": "gpu1", "passed": True, "failures": [], "single_node": [run, copy.deepcopy(run)], "multi_node": []}
    dummy, metrics, dummy2, dummy3 = judge({"gpu1": {"nccl_tests_result": fact}})
    ids = [m["id"] for m in metrics]
    assert len(ids) == len(set(ids))


def test_failed_nccl_run_fails_the_report(nccl_facts):
    dummy, dummy2, checks, summary = judge(nccl_facts)
    assert summary["status"] == "fail"
    lines = [f for f in summary["failures"] if "alltoall" in f and "run_passed" in f]
    assert lines and all("below min_busbw = 40.0 GB/s" in f for f in lines)
    # one line per failed run: 2 size ranges x 2 hosts single-node, + 2 multi-node runs
    assert len(lines) == 6


@pytest.mark.parametrize("verdict", [{"failed": True, "msg": "mpirun exited 1"}, {"passed": False},
                                     {"msg": "nvme connect failed: Connection refused"}])
def test_a_result_that_says_it_failed_fails_the_report(lab_facts, verdict):
    lab_facts["te2"]["nvmeof_initiator_result"].update(verdict)
    dummy, dummy2, checks, summary = judge(lab_facts)
    assert summary["status"] == "fail"
    (line,) = [f for f in summary["failures"] if f.startswith("te2: nvmeof.run_passed")]
    if verdict.get("msg"):
        assert verdict["msg"] in line


def test_failed_mpi_job_fails_the_report(lab_facts):
    job = lab_facts["te1"]["mpi_bench_result"]["jobs"][0]
    job["rc"], job["failed_checks"] = 1, ["rank 3 missing"]
    for host in ("te1", "te2"):
        lab_facts[host]["mpi_bench_result"] = copy.deepcopy(lab_facts["te1"]["mpi_bench_result"])
    dummy, dummy2, checks, summary = judge(lab_facts)
    assert summary["status"] == "fail"
    assert any("mpi.run_passed" in f and "rank 3 missing" in f for f in summary["failures"])


def test_passing_lab_results_pass(lab_facts):
    dummy, metrics, checks, summary = judge(lab_facts)
    assert summary["status"] == "pass", summary["failures"]
    assert [m for m in metrics if m["metric"] == "run_passed" and m["value"] is True]


def test_no_results_fail():
    dummy, metrics, checks, summary = judge({})
    assert summary["status"] == "fail" and metrics == []
    assert "no results" in summary["failures"][0]


def test_missing_baseline_metric_fails_when_gated(lab_facts):
    dummy, metrics, dummy2, dummy3 = judge(lab_facts)
    baseline = dict((m["id"], m) for m in metrics)
    del lab_facts["te2"]["nvmeof_initiator_result"]["fio"]
    dummy, dummy2, checks, summary = judge(lab_facts, baseline=baseline, baseline_opts={"gate": True})
    missing = [c for c in checks if c["source"] == "baseline" and c["value"] is None]
    assert missing and all(c["status"] == "fail" for c in missing)


def test_missing_gated_reference_metric_fails(lab_facts):
    refs = C.normalize_references([{"metric": "fio.lat_p99", "match": {"job": "randread"}, "max": 1000, "unit": "us"}])
    dummy, dummy2, checks, summary = judge(lab_facts, refs=refs)
    (line,) = [f for f in summary["failures"] if "fio.lat_p99" in f]
    assert line.startswith("te2: fio.lat_p99[job=randread] = missing")
    # A reference for another benchmark's hosts, or an ungated one, does not fail.
    refs = C.normalize_references([{"metric": "nccl.busbw_max_size", "min": 100},
                                   {"metric": "fio.lat_p99", "match": {"job": "x"}, "max": 1, "gate": False}])
    dummy, dummy2, checks, summary = judge(lab_facts, refs=refs)
    assert summary["status"] != "fail"
