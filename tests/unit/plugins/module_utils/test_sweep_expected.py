"""Expectations for sweep tests from the expected-busbw catalog (the nccl_tests role's
files/expected_busbw.yml, read as the role reads it). Measurements are synthetic; the GPU
names are as nccl-tests prints them (see tests/fixtures/nccl_tests)."""

from __future__ import annotations

import os

import yaml

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import expected as E
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import measure as M

TOP = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
with open(os.path.join(TOP, "files", "expected_busbw.yml")) as _handle:
    CATALOG = yaml.safe_load(_handle)

EIGHT_G = 8 << 30


def nccl_test(**extra):
    spec = {"name": "ar", "program": "/opt/nccl-tests/build/all_reduce_perf_mpi", "parse": "nccl",
            "nccl": {"minbytes": "8G", "maxbytes": "8G", "ngpus": 1}}
    spec.update(extra)
    return M.normalize_test(spec)


def measured(value=370.0, size=EIGHT_G, gpu="NVIDIA H100 80GB HBM3", per_node=8, nodes=("a", "b")):
    return {"test": "ar", "nodes": list(nodes), "value": value, "better": "higher", "unit": "GB/s", "size": size,
            "gpu_models": [gpu], "gpus_per_node": per_node}


def test_nccl_test_names_from_binaries():
    assert E.nccl_test_name("/opt/nccl-tests/build/all_reduce_perf") == "all_reduce"
    assert E.nccl_test_name("all_gather_perf_mpi") == "all_gather"
    assert E.nccl_test_name("/opt/osu/osu_bw") is None and E.nccl_test_name("nosuch_perf") is None


def test_the_gpu_model_the_jobs_printed_selects_the_catalog_figure():
    test = nccl_test()
    found, notes = E.from_catalog([test], [measured(), measured(nodes=("a", "c"))], CATALOG, "8x400G")
    assert notes == {}
    assert found["ar"]["expect"] == 384.0 and found["ar"]["expectation_id"] == "h100_sxm-multi-8x400g-all_reduce"
    assert found["ar"]["text"].startswith("ar: expected 384 GB/s at 8 GiB - the catalog's h100_sxm-multi-8x400g")
    assert E.used([test], found) == [found["ar"]]


def test_a_given_expect_wins_and_other_tests_are_left_alone():
    given = nccl_test(expect=300)
    osu = M.normalize_test({"name": "bw", "program": "/opt/osu_bw", "table": "bandwidth"})
    found, notes = E.from_catalog([given, osu], [measured()], CATALOG, "8x400G")
    assert found == {} and notes == {}
    assert E.used([given, osu], found) == [{"test": "ar", "expect": 300.0, "origin": "expect"}]


def test_why_the_catalog_has_no_figure_is_said():
    test = nccl_test()
    assert E.from_catalog([test], [measured()], CATALOG, None)[1]["ar"] == \
        "the catalog: no network was given for the multi-node run (e.g. 8x400G)"
    assert "no catalog model matches the GPU name 'Tesla T4'" in \
        E.from_catalog([test], [measured(gpu="Tesla T4")], CATALOG, "8x400G")[1]["ar"]
    # The only H100 figure is at 8 GiB: a 1 GiB run is not held to it.
    assert "figures start at 8 GiB, above the size measured (1 GiB)" in \
        E.from_catalog([test], [measured(size=1 << 30)], CATALOG, "8x400G")[1]["ar"]
    # Jobs that printed no device (all failed) leave nothing to select with.
    assert "printed no GPU name" in E.from_catalog([test], [measured(value=None)], CATALOG, "8x400G")[1]["ar"]
    # No catalog at all: nothing found, nothing to say.
    assert E.from_catalog([test], [measured()], None, "8x400G") == ({}, {})
