"""OSU Micro-Benchmarks parser on real published outputs (tests/fixtures/osu/README.md)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.parsers import parse_osu, parse_output

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "osu")


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_omb75_latency_skips_ucx_banner():
    r = parse_osu(load("omb75_osu_latency_oci.txt"))
    assert (r["benchmark"], r["version"], r["kind"], r["datatype"]) == ("OSU MPI Latency Test", "7.5", "latency", "MPI_CHAR")
    assert r["columns"] == ["size", "latency_us"]
    assert r["rows"] == [{"size": 1, "latency_us": 1.67}]


def test_omb75_bandwidth_single_row():
    r = parse_osu(load("omb75_osu_bw_oci.txt"))
    assert r["kind"] == "bandwidth"
    assert r["rows"] == [{"size": 268435456, "bandwidth_mbs": 12254.16}]


def test_omb75_allreduce_all_rows():
    r = parse_osu(load("omb75_osu_allreduce_oci.txt"))
    assert r["kind"] == "collective" and r["datatype"] == "MPI_INT"
    assert len(r["rows"]) == 27
    assert r["rows"][0] == {"size": 4, "latency_us": 11.69}
    assert r["rows"][-1] == {"size": 268435456, "latency_us": 496306.98}
    assert [row["size"] for row in r["rows"]] == [4 * 2 ** i for i in range(27)]


def test_omb75_alltoall_is_a_collective():
    r = parse_osu(load("omb75_osu_alltoall_oci.txt"))
    assert r["benchmark"] == "OSU MPI All-to-All Personalized Exchange Latency Test"
    assert r["kind"] == "collective"
    assert r["rows"][12] == {"size": 4096, "latency_us": 57.71}


def test_omb71_full_format_avg_min_max_iterations():
    r = parse_osu(load("omb71_osu_allreduce_full_nwtnni.txt"))
    assert r["columns"] == ["size", "latency_us", "min_latency_us", "max_latency_us", "iterations"]
    assert r["datatype"] == "MPI_FLOAT"
    assert r["rows"][0] == {"size": 4, "latency_us": 22133.49, "min_latency_us": 21507.13,
                            "max_latency_us": 22292.83, "iterations": 1000}
    assert r["rows"][-1]["iterations"] == 100 and isinstance(r["rows"][-1]["iterations"], int)
    assert len(r["rows"]) == 19


def test_omb50_old_latency_header_and_srun_banner():
    r = parse_osu(load("omb50_osu_latency_libfabric_cray.txt"))
    assert (r["version"], r["kind"], r["datatype"]) == ("5.0", "latency", None)
    assert r["rows"][0] == {"size": 0, "latency_us": 1.84}
    assert r["rows"][-1] == {"size": 4194304, "latency_us": 497.37}
    assert len(r["rows"]) == 24


def test_several_benchmarks_in_one_output():
    text = load("omb75_osu_latency_oci.txt") + load("omb75_osu_bw_oci.txt")
    r = parse_osu(text)
    assert [t["kind"] for t in r["tables"]] == ["latency", "bandwidth"]
    assert r["kind"] == "latency"


def test_collection_benchmark_header_is_read():
    text = ("# aiinfra.fabric MPI Allreduce Latency Test v1.0\n# Datatype: MPI_INT.\n"
            "# Size       Avg Latency(us)   Min Latency(us)   Max Latency(us)  Iterations\n"
            "4                    6808.02           6679.52           6936.52          20\n")
    r = parse_osu(text)
    assert r["benchmark"] == "aiinfra.fabric MPI Allreduce Latency Test" and r["kind"] == "collective"
    assert r["rows"] == [{"size": 4, "latency_us": 6808.02, "min_latency_us": 6679.52,
                          "max_latency_us": 6936.52, "iterations": 20}]


def test_rows_with_wrong_width_are_not_taken():
    text = "# OSU MPI Latency Test v7.5\n# Size       Avg Latency(us)\n1  1.5\n2 abc\n4 1.0 9\n8 2.0\n"
    assert [r["size"] for r in parse_osu(text)["rows"]] == [1, 8]


@pytest.mark.parametrize("text", ["", "Hello from processor te1, rank 0 out of 1 processors\n",
                                  "# OSU MPI Latency Test v7.5\n# Size       Avg Latency(us)\n"])
def test_no_table_is_an_error(text):
    with pytest.raises(ValueError, match="no OSU Micro-Benchmarks table"):
        parse_osu(text)


def test_parse_output_dispatch():
    assert parse_output("none", "anything") is None
    assert parse_output("osu", load("omb75_osu_bw_oci.txt"))["kind"] == "bandwidth"
    with pytest.raises(ValueError, match="parse must be one of"):
        parse_output("json", "")


def test_validation_column_rows_are_kept_and_fail_rows_listed():
    # osu_* -c adds a Pass/Fail column; the rows used to be dropped as non-numeric.
    parsed = parse_osu(load("omb74_osu_latency_validate_constructed.txt"))
    assert [r["size"] for r in parsed["rows"]] == [1, 2, 4, 8]
    assert parsed["rows"][2] == {"size": 4, "latency_us": 1.71, "validation": "Fail"}
    assert parsed["validation_failures"] == [4]
    assert parsed["columns"] == ["size", "latency_us", "validation"]
