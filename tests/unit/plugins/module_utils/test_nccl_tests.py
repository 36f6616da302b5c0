"""Unit tests for the nccl-tests parser, gates and argv building, on real published outputs.

Every fixture's source is listed in tests/fixtures/nccl_tests/README.md. The expected
values below were read off the fixture text by eye, not produced by the parser.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import command as N
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import gates as G
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import parse as NP

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl_tests")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def parsed(name):
    return NP.parse_text(fixture(name))


# --------------------------------------------------------------------------- text layouts

def test_modern_layout_srun_gh200():
    r = parsed("cscs_gh200_all_reduce_srun_2.17.1.txt")
    assert r["layout"] == "modern"
    assert r["test"] == "all_reduce_perf"
    assert len(r["rows"]) == 25
    assert r["rows"][0] == {
        "size": 8, "count": 2, "type": "float", "redop": "sum", "root": -1,
        "out_of_place": {"time_us": 17.93, "algbw": 0.0, "busbw": 0.0, "wrong": 0},
        "in_place": {"time_us": 17.72, "algbw": 0.0, "busbw": 0.0, "wrong": 0},
    }
    last = r["rows"][-1]
    assert (last["size"], last["count"]) == (134217728, 33554432)
    assert last["out_of_place"] == {"time_us": 1916.4, "algbw": 70.04, "busbw": 122.57, "wrong": 0}
    assert last["in_place"]["busbw"] == 123.11
    assert r["avg_busbw"] == 19.7866
    assert r["out_of_bounds"] == 0 and r["out_of_bounds_failed"] is False
    assert r["config"] == {"threads": 1, "ngpus": 1, "minbytes": 8, "maxbytes": 134217728, "stepfactor": 2,
                           "stepbytes": None, "warmup_iters": 1, "iters": 20, "agg_iters": 1, "validation": 1,
                           "graph": 0}
    assert len(r["devices"]) == 8
    assert r["devices"][4] == {"rank": 4, "group": 0, "pid": 155254, "host": "nid005487", "device": 0,
                               "bus_id": "0009:01:00", "name": "NVIDIA GH200 120GB"}
    assert G.no_mpi_processes(r) == 0


def test_versions_help_messages_in_table_and_na_wrong():
    r = parsed("rtx6000d_alltoall_mpirun_2.18.3.txt")
    assert r["version"] == {"nccl_tests": "2.18.3", "nccl_headers": 23003, "nccl_library": 23003,
                            "nccl": "2.30.3+cuda13.0"}
    assert r["test"] == "alltoall_perf"
    # 24 sizes from 1 KiB to 8 GiB; Open MPI's help lines inside the table are not rows.
    assert [row["size"] for row in r["rows"]] == [1024 << i for i in range(24)]
    row = r["rows"][14]
    assert row["redop"] == "none"
    assert row["out_of_place"] == {"time_us": 10642.5, "algbw": 1.58, "busbw": 1.48, "wrong": 0}
    assert row["in_place"] == {"time_us": 29073.1, "algbw": 0.58, "busbw": 0.54, "wrong": None}
    assert r["config"]["unalign"] == 0
    assert {d["host"] for d in r["devices"]} == {"R6KD-CX8aaS-GPU-11", "R6KD-CX8aaS-GPU-12"}
    assert r["devices"][15]["bus_id"] == "0000:f9:00"


def test_tag_output_with_nccl_info_lines():
    r = parsed("eks_t4_all_reduce_tag_output_info.txt")
    assert r["version"]["nccl"] == "2.12.7+cuda11.4"
    assert len(r["rows"]) == 31           # 0 B twice, then 4 B .. 1 GiB
    assert r["rows"][0]["size"] == 0 and r["rows"][1]["size"] == 0
    assert r["rows"][-1]["out_of_place"] == {"time_us": 344981.0, "algbw": 3.11, "busbw": 3.11, "wrong": 0}
    assert r["avg_busbw"] == 1.15327
    assert [d["host"] for d in r["devices"]] == ["test-nccl-efa-worker-0", "test-nccl-efa-worker-1"]
    assert r["header_ranks"] == [0]
    assert G.no_mpi_processes(r) == 0


def test_srun_label_prefix():
    # The same real table as srun --label prints it ("0: " before each line of task 0).
    text = "\n".join("%3d: %s" % (0, line) for line in fixture("cscs_gh200_all_reduce_srun_2.17.1.txt").splitlines())
    r = NP.parse_text(text)
    assert len(r["rows"]) == 25 and r["avg_busbw"] == 19.7866 and len(r["devices"]) == 8


def test_legacy_layout_error_column_single_process_two_gpus():
    r = parsed("gtx1080_all_reduce_g2_error_column.txt")
    assert r["layout"] == "legacy"
    assert r["config"]["ngpus"] == 2 and r["config"]["stepfactor"] == 2
    row = r["rows"][-1]
    assert row["root"] is None and row["redop"] == "sum"
    assert row["out_of_place"] == {"time_us": 154639.0, "algbw": 0.87, "busbw": 0.87, "error": 0.0, "wrong": None}
    assert [d["group"] for d in r["devices"]] == [None, None]
    assert [d["bus_id"] for d in r["devices"]] == ["0x45", "0xc4"]
    assert r["devices"][0]["pid"] == r["devices"][1]["pid"] == 12978


def test_legacy_all_gather_has_no_redop():
    r = parsed("gtx1080_all_gather_g2_no_redop.txt")
    row = r["rows"][10]
    assert (row["size"], row["count"], row["type"], row["redop"], row["root"]) == (8192, 1024, "float", None, None)
    assert row["in_place"]["busbw"] == 0.13


def test_legacy_na_error_and_no_device_list():
    r = parsed("deepops_all_reduce_error_na.txt")
    assert r["devices"] == [] and r["config"] is None
    assert len(r["rows"]) == 31
    assert r["rows"][-1]["out_of_place"] == {"time_us": 210583.0, "algbw": 40.79, "busbw": 81.53, "error": None,
                                             "wrong": None}
    s = G.summarize(r)
    assert s["largest_size"] == 8589934592 and s["largest_size_busbw"] == 81.53 and s["wrong_total"] == 0


def test_numbers_wider_than_their_columns():
    r = parsed("rtx5090_alltoall_wide_numbers.txt")
    (row,) = r["rows"]
    assert row["out_of_place"]["algbw"] == 1715.44
    assert row["in_place"] == {"time_us": 0.78, "algbw": 43046.1, "busbw": 0.0, "wrong": None}
    assert r["avg_busbw"] == 0.0
    assert r["config"]["stepbytes"] == 1048576 and r["config"]["stepfactor"] is None


def test_garbage_gives_an_empty_report():
    r = NP.parse_text("bash: ./build/all_reduce_perf: No such file or directory\n")
    assert r["rows"] == [] and r["devices"] == [] and r["avg_busbw"] is None


def test_test_failure_lines_are_collected():
    text = fixture("rtx5090_alltoall_wide_numbers.txt").split("#\n#  ")[0] + \
        "nid006352: Test NCCL failure common.cu:958 'invalid usage (run with NCCL_DEBUG=WARN for details)\n"
    r = NP.parse_text(text)
    assert r["errors"] == ["nid006352: Test NCCL failure common.cu:958 'invalid usage (run with NCCL_DEBUG=WARN "
                           "for details)"]


# --------------------------------------------------------------------------- JSON

def test_json_report_matches_the_text_report_and_drops_env():
    doc = json.loads(fixture("constructed_gh200_all_reduce.json"))
    j = NP.parse_json(doc)
    t = parsed("cscs_gh200_all_reduce_srun_2.17.1.txt")
    assert j["source"] == "json"
    assert j["rows"] == t["rows"]
    assert j["devices"] == t["devices"]
    assert j["avg_busbw"] == t["avg_busbw"]
    assert j["out_of_bounds"] == 0 and j["out_of_bounds_failed"] is False
    assert j["config"]["iters"] == 20 and j["config"]["stepfactor"] == 2
    assert "do-not-leak-this" not in json.dumps(j)


def test_json_null_nwrong_and_string_booleans():
    doc = {"results": [{"size": 8, "count": 2, "type": "float", "redop": "none", "root": "    -1",
                        "out_of_place": {"time": 1.0, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0.0},
                        "in_place": {"time": 1.0, "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": None}}],
           "out_of_bounds": {"count": 3, "okay": "false"},
           "average_bus_bandwidth": {"bandwidth": 0.0, "okay": "unchecked"}}
    j = NP.parse_json(doc)
    assert j["rows"][0]["in_place"]["wrong"] is None and j["rows"][0]["root"] == -1
    assert j["out_of_bounds_failed"] is True and j["avg_busbw_failed"] is False


def test_json_without_results_is_an_error():
    with pytest.raises(N.NcclTestsError, match="results"):
        NP.parse_json({"version": 3})


# --------------------------------------------------------------------------- no MPI

def test_constructed_no_mpi_output_is_detected():
    r = parsed("constructed_no_mpi_two_nodes.txt")
    assert r["headers"] == 2
    assert [d["rank"] for d in r["devices"]] == [0, 0]
    assert G.no_mpi_processes(r) == 2


def test_no_mpi_with_tag_output_is_detected():
    # Two processes of a binary built without MPI, each tagged by mpirun as its own rank.
    single = fixture("rtx5090_alltoall_wide_numbers.txt").splitlines()
    text = "\n".join("[1,%d]<stdout>:%s" % (rank, line) for line in single for rank in (0, 1))
    r = NP.parse_text(text)
    assert r["header_ranks"] == [0, 1]
    assert G.no_mpi_processes(r) == 2


def test_one_mpi_job_on_many_hosts_is_not_flagged():
    assert G.no_mpi_processes(parsed("rtx6000d_alltoall_mpirun_2.18.3.txt")) == 0


# --------------------------------------------------------------------------- summary and gates

def test_summary_uses_largest_size_not_average():
    s = G.summarize(parsed("rtx6000d_alltoall_mpirun_2.18.3.txt"))
    assert s["peak_busbw"] == 35.9 and s["peak_busbw_size"] == 8589934592
    assert s["largest_size_busbw"] == 35.9
    assert s["nranks"] == 16 and s["gpu_models"] == ["NVIDIA RTX 6000D"]


def test_gate_passes_and_fails_on_largest_size_busbw():
    r = parsed("cscs_gh200_all_reduce_srun_2.17.1.txt")
    s = G.summarize(r)
    # The average line (19.79) is far below 100; the largest size (122.57) is above.
    assert G.check_gates(r, s, "login1", min_busbw=100) == []
    (msg,) = G.check_gates(r, s, "login1", min_busbw=130)
    assert "122.57 GB/s" in msg and "134217728 B" in msg and "min_busbw = 130.0" in msg
    assert "login1" in msg and "nid005471: 0,1,2,3 NVIDIA GH200 120GB" in msg


def test_gate_per_gpu_model_bound_wins():
    r = parsed("cscs_gh200_all_reduce_srun_2.17.1.txt")
    s = G.summarize(r)
    (msg,) = G.check_gates(r, s, "h", min_busbw=10, min_busbw_per_gpu={"gh200": 200, "H100": 350})
    assert "min_busbw_per_gpu[gh200] (NVIDIA GH200 120GB) = 200.0" in msg
    assert G.check_gates(r, s, "h", min_busbw=500, min_busbw_per_gpu={"GH200": 100}) == []
    assert G.bound_for(50, {"A100": 200}, ["NVIDIA GH200 120GB"]) == (50.0, "min_busbw")


def test_gate_on_wrong_values_and_out_of_bounds():
    # The real GH200 table with one value changed: 3 wrong elements out of place at 1 MiB,
    # and the footer nccl-tests prints then.
    text = fixture("cscs_gh200_all_reduce_srun_2.17.1.txt")
    text = text.replace("164.3    6.38   11.17      0", "164.3    6.38   11.17      3")
    text = text.replace("Out of bounds values : 0 OK", "Out of bounds values : 3 FAILED")
    r = NP.parse_text(text)
    s = G.summarize(r)
    assert s["wrong_total"] == 3
    assert s["wrong_rows"] == [{"size": 1048576, "type": "float", "redop": "sum", "wrong": 3}]
    msgs = G.check_gates(r, s, "login1")
    assert msgs[0].startswith("3 wrong values (#wrong) on login1")
    assert "1048576 B float/sum: 3" in msgs[0]
    assert msgs[1].startswith("out of bounds values: 3 FAILED")


def test_gate_on_nccl_tests_own_min_bw_check():
    text = fixture("gtx1080_all_reduce_g2_error_column.txt").replace("0.414483 ", "0.414483 FAILED")
    r = NP.parse_text(text)
    (msg,) = G.check_gates(r, G.summarize(r), "h")
    assert "NCCL_TESTS_MIN_BW" in msg


def test_gate_without_rows_reports_missing_result():
    r = NP.parse_text("")
    (msg,) = G.check_gates(r, G.summarize(r), "h", min_busbw=1)
    assert msg.startswith("no out-of-place result")


# --------------------------------------------------------------------------- arguments

def test_build_test_args_seed_single_node():
    # The seed's command: all_reduce_perf -b 8 -e 1G -f 2 -g 2
    assert N.build_test_args(minbytes="8", maxbytes="1G", stepfactor=2, ngpus=2) == \
        ["-b", "8", "-e", "1G", "-f", "2", "-g", "2", "-t", "1"]


def test_build_test_args_everything():
    args = N.build_test_args(minbytes=1024, maxbytes="8G", stepbytes="1M", stepfactor=2, ngpus=1, threads=2,
                             iters=50, warmup_iters=0, check=0, op="avg", datatype="bfloat16", root=1, blocking=1,
                             cudagraph=10, json_file="/tmp/r.json", extra_args=["-a", "3"])
    assert args == ["-b", "1024", "-e", "8G", "-i", "1M", "-g", "1", "-t", "2", "-n", "50", "-w", "0", "-c", "0",
                    "-G", "10", "-o", "avg", "-d", "bfloat16", "-r", "1", "-z", "1", "-J", "/tmp/r.json",
                    "-a", "3"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(minbytes="1G", maxbytes="8M"), "minbytes (1G = 1073741824 bytes) is larger than maxbytes"),
    (dict(minbytes="8X"), "minbytes must be a byte count"),
    (dict(stepfactor=1), "stepfactor must be an integer >= 2, got 1"),
    (dict(ngpus=0), "ngpus must be an integer >= 1, got 0"),
    (dict(op="average"), "op must be one of"),
    (dict(datatype="float; rm"), "datatype must be an NCCL type name"),
    (dict(blocking=4), "blocking must be 0, 1, 2 or 3"),
    (dict(iters=True), "iters must be an integer"),
])
def test_build_test_args_rejects(kwargs, message):
    with pytest.raises(N.NcclTestsError, match=message.replace("(", r"\(").replace(")", r"\)")):
        N.build_test_args(**kwargs)


def test_size_to_bytes():
    assert N.size_to_bytes("1G") == 1 << 30
    assert N.size_to_bytes("128m") == 128 << 20
    assert N.size_to_bytes(8) == 8


def test_binary_name():
    assert N.binary_name("all_reduce") == "all_reduce_perf"
    assert N.binary_name("sendrecv", "_mpi") == "sendrecv_perf_mpi"
    with pytest.raises(N.NcclTestsError, match="test must be one of"):
        N.binary_name("allreduce")


def test_supports_json_from_usage():
    assert N.supports_json("\t[-J,--output_file <file> write output to filepath, if accessible.]")
    assert not N.supports_json("USAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n\t[-h,--help]\n")


def test_per_iteration_and_timestamp_columns():
    # No published output with -I 1 -S 1 was found; these lines follow the printf formats
    # of nccl-tests 2.19.6 (src/util.cu writeResultHeader / writeBenchmarkLineBody /
    # writePerIterReport / writeTimestamp), with made-up numbers.
    text = (
        "#                                                      out-of-place (+ per-iteration)"
        "                                in-place (+ per-iteration)\n"
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong"
        "    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%"
        "           timestamp\n"
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)"
        "     (us)     (us)      (%)     (us)  (GB/s)  (GB/s)            (us)     (us)     (us)      (%)"
        " %Y-%m-%d %H:%M:%S\n"
        "     1048576        262144     float     sum      -1    40.10   26.15   45.76       0"
        "    39.50    41.20    41.20     1.10    40.00   26.21   45.87       0    39.40    40.90    40.90"
        "     0.90  2025-10-24 10:00:00\n"
    )
    (row,) = NP.parse_text(text)["rows"]
    assert row["out_of_place"] == {"time_us": 40.1, "algbw": 26.15, "busbw": 45.76, "wrong": 0, "min_us": 39.5,
                                   "max_us": 41.2, "p99_us": 41.2, "cv_pct": 1.1}
    assert row["in_place"]["busbw"] == 45.87 and row["in_place"]["cv_pct"] == 0.9
