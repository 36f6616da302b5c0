"""fabric_report results model: adapters per benchmark and the metrics derived from them.

The facts come from real outputs run through the collection's parsers
(tests/fixtures/report/build_facts.py); expected numbers are read from the fixture
files' own rows, never typed from memory.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report"))

import build_facts  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import collect as K, model as M  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import (  # noqa: E402
    fio as FIO, mpi as MPI, nccl as NCCL)


def by_id(metrics):
    return dict((m["id"], m) for m in metrics)


def test_nccl_multi_node_run_from_real_output():
    run = build_facts.nccl_run("cscs_gh200_all_reduce_srun_2.17.1.txt", "all_reduce")
    (rec,) = NCCL.adapt_nccl("gpu1", {"runs": [run]})
    assert rec["test"] == "all_reduce"
    assert rec["scope"] == "multi" and rec["hosts"] == ["nid005471", "nid005487"]
    assert rec["nranks"] == 8 and rec["gpu_model"] == "NVIDIA GH200 120GB"
    assert len(rec["rows"]) == 25 and rec["rows"][0]["size"] == 8
    # The last printed row: 134217728 ... 1916.4 70.04 122.57 0 | 1907.8 70.35 123.11 0
    last = rec["rows"][-1]
    assert last["size"] == 134217728 and last["out_of_place"]["busbw"] == 122.57
    assert last["in_place"] == {"time_us": 1907.8, "algbw": 70.35, "busbw": 123.11, "wrong": 0}
    assert rec["peak_busbw"] == 122.57 and rec["peak_size"] == 134217728
    assert rec["busbw_at_max_size"] == 122.57 and rec["avg_busbw"] == pytest.approx(19.7866)
    assert rec["wrong_total"] == 0


def test_nccl_unchecked_run_has_no_wrong_metric():
    # DeepOps' expected output prints N/A in the error columns: checking was off.
    run = build_facts.nccl_run("deepops_all_reduce_error_na.txt", "all_reduce")
    run.pop("wrong_total")
    (rec,) = NCCL.adapt_nccl("gpu1", run)  # a single run dict is accepted too
    assert rec["wrong_total"] is None
    metrics = M.derive_metrics({"nccl": [rec]}, {})
    assert not [m for m in metrics if m["metric"] == "wrong"]
    assert [m for m in metrics if m["metric"] == "busbw_peak"][0]["value"] == rec["peak_busbw"]


def test_nccl_peak_computed_from_rows_when_the_fact_lacks_it():
    run = build_facts.nccl_run("gtx1080_all_reduce_g2_error_column.txt", "all_reduce_perf")
    for k in ("peak_busbw", "peak_busbw_size", "largest_size_busbw", "wrong_total"):
        run.pop(k)
    (rec,) = NCCL.adapt_nccl("gpu1", [run])
    best = max(rec["rows"], key=lambda r: r["out_of_place"]["busbw"])
    assert rec["test"] == "all_reduce"  # _perf dropped
    assert rec["peak_busbw"] == best["out_of_place"]["busbw"] and rec["peak_size"] == best["size"]
    assert rec["busbw_at_max_size"] == rec["rows"][-1]["out_of_place"]["busbw"]
    assert rec["scope"] == "single"


@pytest.mark.parametrize("fact", [None, {}, [], {"runs": []}, {"runs": [{}]}, {"rows": 7}, {"runs": [None, "x"]},
                                  {"runs": [{"rows": [{"size": "N/A"}, "junk", {"size": 8, "out_of_place": None}]}]}])
def test_nccl_adapter_survives_missing_parts(fact):
    records = NCCL.adapt_nccl("h", fact)
    for rec in records:
        assert rec["host"] == "h"
        M.derive_metrics({"nccl": [rec]}, {})


def test_mpi_osu_tables_and_metrics():
    facts = build_facts.lab_like_facts()["te1"]
    records = MPI.adapt_mpi("te1", facts["mpi_bench_result"])
    kinds = dict((r["program"], r["kind"]) for r in records)
    assert kinds == {"osu_latency": "latency", "osu_bw": "bandwidth", "osu_allreduce": "collective"}
    lat = [r for r in records if r["program"] == "osu_latency"][0]
    # omb50_osu_latency_libfabric_cray.txt: "0  1.84", "1  1.85"
    assert lat["rows"][0] == dict(lat["rows"][0], size=0, latency_us=1.84)
    assert lat["scope"] == "multi" and lat["test"] == "latency"
    ids = by_id(M.derive_metrics({"mpi": records}, {}))
    key = "te1/mpi.latency_min_size[hosts=te1+te2,np=2,program=osu_latency,scope=multi,size=0,test=latency]"
    assert ids[key]["value"] == 1.84 and ids[key]["better"] == M.LOWER and ids[key]["unit"] == "us"
    bw = [m for m in ids.values() if m["metric"] == "bandwidth_peak"]
    assert len(bw) == 1 and bw[0]["unit"] == "MB/s"
    bw_rows = [r for r in records if r["program"] == "osu_bw"][0]["rows"]
    assert bw[0]["value"] == max(x["bandwidth_mbps"] for x in bw_rows)


SEED_OUTPUT = """Process 0 on te1 contributing 1
Process 1 on te1 contributing 2
Process 2 on te2 contributing 3
Process 0 on te1 (root) received reduced sum: %s (Expected: 6)
"""


@pytest.mark.parametrize("received,passed", [(6, True), (5, False)])
def test_mpi_seed_sums_become_a_check(received, passed):
    run = {"program": "reduce_mpi", "np": 3, "hosts": [{"name": "te1", "slots": 2}, {"name": "te2", "slots": 1}],
           "rc": 0, "parsed": build_facts.mpi_parsers.parse_seed(SEED_OUTPUT % received)}
    (rec,) = MPI.adapt_mpi("te1", [run])
    assert rec["check_passed"] is passed and rec["hosts"] == ["te1", "te2"] and rec["kind"] == "check"
    metric, ran = M.derive_metrics({"mpi": [rec]}, {})
    assert metric["metric"] == "check_passed" and metric["value"] is passed
    assert ran["metric"] == "run_passed" and ran["value"] is True     # rc 0: the job itself ran


def test_mpi_adapter_accepts_plain_rows_and_imb_columns():
    run = {"name": "pingpong", "program": "/usr/lib/x86_64-linux-gnu/imb/IMB-MPI1", "np": 2, "hosts": "te1,te2",
           "parsed": build_facts.mpi_parsers.parse_imb(build_facts.read("imb", "imb2018_pingpong_oci.txt"))}
    (rec,) = MPI.adapt_mpi("te1", run)
    assert rec["program"] == "IMB-MPI1" and rec["test"] == "pingpong" and rec["kind"] == "bandwidth"
    assert rec["rows"] and all(r["latency_us"] is not None for r in rec["rows"])
    (plain,) = MPI.adapt_mpi("te2", {"program": "x", "rows": [{"size": 8, "latency_us": 2.5}, {"size": 1, "latency_us": 2}]})
    assert [r["size"] for r in plain["rows"]] == [1, 8] and plain["kind"] == "latency"


def test_fio_records_match_the_parser():
    fact = build_facts.initiator_fact()
    parsed = fact["fio"]
    records = FIO.adapt_fio("te2", fact)
    assert [(r["job"], r["direction"]) for r in records] == [("seqread", "read"), ("randwrite", "write")]
    read = records[0]
    assert read["iops"] == parsed["jobs"][0]["read"]["iops"]
    assert read["bw_bytes"] == parsed["jobs"][0]["read"]["bw_bytes"]
    assert read["lat_us"]["p99"] == parsed["jobs"][0]["read"]["clat_us"]["p99"] and read["lat_kind"] == "clat"
    assert read["transport"] == "rdma" and read["device"] == "/dev/nvme1n1"
    ids = by_id(M.derive_metrics({"fio": records}, {}))
    m = ids["te2/fio.lat_p99[direction=read,job=seqread,transport=rdma]"]
    assert m["better"] == M.LOWER and m["value"] == read["lat_us"]["p99"]
    assert ids["te2/fio.bw[direction=read,job=seqread,transport=rdma]"]["value"] == round(read["bw_bytes"] / 1048576.0, 3)


def test_fio_adapter_without_fio_or_with_junk():
    assert FIO.adapt_fio("h", {"io_check": {"passed": True}}) == []
    assert FIO.adapt_fio("h", {"fio": {"jobs": [None, {"name": "j", "read": None, "write": {"iops": "N/A"}}]}}) == []


def test_nvmeof_records_and_collect():
    benchmarks, hosts = K.collect({
        # The shapes the nvmeof_target / nvmeof_initiator roles publish.
        "te1": {"nvmeof_target_result": {"transport": "rdma", "nqn": "nqn.2026-11.io.aiinfra:lab", "port_id": 1,
                                         "address": "10.99.0.1", "trsvcid": "4420"}},
        "te2": {"nvmeof_initiator_result": dict(build_facts.initiator_fact(), io_check={
            "match": False, "file": "/mnt/nvmeof/check.bin", "sha256_written": "a" * 64, "sha256_read": "b" * 64})},
        "idle": {},
    }, {"te1": {"host_class": "storage"}})
    assert sorted(hosts) == ["te1", "te2"]  # a host without result facts is left out
    assert hosts["te1"]["host_class"] == "storage" and hosts["te2"]["transport"] == "rdma"
    roles = dict((r["host"], r) for r in benchmarks["nvmeof"])
    assert roles["te1"]["role"] == "target" and roles["te1"]["ports"] == 1
    assert roles["te1"]["subsystem"] == "nqn.2026-11.io.aiinfra:lab" and roles["te1"]["io_check"] is None
    assert roles["te2"]["io_check"] is False and roles["te2"]["io_sha256"] == "b" * 64
    assert len(benchmarks["fio"]) == 2
    ids = by_id(M.derive_metrics(benchmarks, hosts))
    assert ids["te2/nvmeof.io_check[role=initiator,transport=rdma]"]["value"] is False


def test_collect_rejects_bad_shapes_with_names():
    with pytest.raises(M.ReportError, match="host facts must be a mapping"):
        K.collect(["te1"])
    with pytest.raises(M.ReportError, match="facts of host 'te1'"):
        K.collect({"te1": "nope"})


def test_metric_ids_are_stable_and_sorted():
    benchmarks, hosts = K.collect(build_facts.lab_like_facts())
    first = M.derive_metrics(benchmarks, hosts)
    again = M.derive_metrics(*K.collect(build_facts.lab_like_facts()))
    assert [m["id"] for m in first] == [m["id"] for m in again] == sorted(m["id"] for m in first)
    assert len(set(m["id"] for m in first)) == len(first)


def mpi_bench_fact(sum_received=6):
    """The shape roles/mpi_bench publishes (tasks/results.yml): jobs with parsed output, on every node."""
    mpi_parsers = build_facts.mpi_parsers
    reduce_parsed = mpi_parsers.parse_seed(SEED_OUTPUT % sum_received)
    osu = mpi_parsers.parse_osu(build_facts.read("osu", "omb50_osu_latency_libfabric_cray.txt"))
    return {
        "implementation": "openmpi", "launched_from": "te1", "hosts": [{"name": "te1", "slots": 2}],
        "jobs": [
            {"name": "multi_node:reduce", "scope": "multi_node", "program": "/root/mpi/reduce_mpi", "np": 3,
             "hosts": ["te1", "te2"], "launched_from": "te1", "rc": 0, "duration": 1.5, "checks": [],
             "failed_checks": [], "parsed": reduce_parsed},
            {"name": "benchmark:latency", "scope": "benchmark", "program": "/root/mpi/fabric_mpi_bench", "np": 2,
             "hosts": ["te1", "te2"], "launched_from": "te1", "rc": 0, "duration": 9.0, "checks": [],
             "failed_checks": [], "parsed": osu},
        ],
        "sums_ok": sum_received == 6,
    }


def test_mpi_bench_role_fact_counted_once_on_the_launcher():
    fact = mpi_bench_fact()
    benchmarks, hosts = K.collect({"te1": {"mpi_bench_result": fact}, "te2": {"mpi_bench_result": dict(fact)}})
    assert [(r["host"], r["run"]) for r in benchmarks["mpi"]] == [("te1", "multi_node:reduce"),
                                                                  ("te1", "benchmark:latency")]
    reduce_rec, lat = benchmarks["mpi"]
    assert reduce_rec["check_passed"] is True and reduce_rec["program"] == "reduce_mpi"
    assert lat["test"] == "latency" and lat["kind"] == "latency" and lat["rows"][0]["latency_us"] == 1.84
    # A node that ran its own, different job keeps its record.
    other = mpi_bench_fact(sum_received=5)
    other["launched_from"] = "te2"
    benchmarks = K.collect({"te1": {"mpi_bench_result": fact}, "te2": {"mpi_bench_result": other}})[0]
    assert sorted(set(r["host"] for r in benchmarks["mpi"])) == ["te1", "te2"]
    assert [r["check_passed"] for r in benchmarks["mpi"] if r["program"] == "reduce_mpi"] == [True, False]
