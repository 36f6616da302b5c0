"""Intel MPI Benchmarks parser on real published outputs (tests/fixtures/imb/README.md)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.parsers import parse_imb

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "imb")


def load(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_pingpong():
    r = parse_imb(load("imb2018_pingpong_oci.txt"))
    assert (r["version"], r["part"]) == ("2018", "MPI-1")
    assert len(r["tables"]) == 1
    t = r["tables"][0]
    assert (t["benchmark"], t["processes"], t["waiting_processes"]) == ("PingPong", 2, 0)
    assert t["columns"] == ["size", "repetitions", "t_usec", "bandwidth_mbs"]
    assert t["rows"][0] == {"size": 0, "repetitions": 1000, "t_usec": 1.66, "bandwidth_mbs": 0.0}
    assert t["rows"][-1] == {"size": 268435456, "repetitions": 1, "t_usec": 23900.0, "bandwidth_mbs": 11231.61}
    assert len(t["rows"]) == 27


def test_alltoall_two_tables_with_waiting_processes():
    r = parse_imb(load("imb2018_alltoall_oci.txt"))
    assert [(t["benchmark"], t["processes"], t["waiting_processes"]) for t in r["tables"]] == [
        ("Alltoall", 2, 2), ("Alltoall", 4, 0)]
    assert r["tables"][0]["columns"] == ["size", "repetitions", "t_min_usec", "t_max_usec", "t_avg_usec"]
    assert r["tables"][1]["rows"][-1] == {"size": 4194304, "repetitions": 10, "t_min_usec": 1405.77,
                                          "t_max_usec": 1422.57, "t_avg_usec": 1412.98}
    assert all(len(t["rows"]) == 24 for t in r["tables"])


def test_barrier_table_without_bytes_column():
    text = ("#---------------------------------------------------\n# Benchmarking Barrier \n"
            "# #processes = 4 \n#---------------------------------------------------\n"
            " #repetitions  t_min[usec]  t_max[usec]  t_avg[usec]\n         1000         3.10         3.37         3.24\n")
    t = parse_imb(text)["tables"][0]
    assert t["benchmark"] == "Barrier" and t["rows"] == [
        {"repetitions": 1000, "t_min_usec": 3.1, "t_max_usec": 3.37, "t_avg_usec": 3.24}]


def test_no_table_is_an_error():
    with pytest.raises(ValueError, match="no Intel MPI Benchmarks table"):
        parse_imb("# OSU MPI Latency Test v7.5\n1 1.0\n")
