# -*- coding: utf-8 -*-
"""Unit tests for the fio module_utils, on fio 3.33 JSON captured in the lab (see tests/fixtures/fio/README.md)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fio import (
    FioError,
    build_argv,
    parse_fio_json,
    validate_options,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "fio")


def load(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def test_randrw_verify_job():
    text = load("fio-3.33_randrw_verify_crc32c.json")
    raw = json.loads(text)["jobs"][0]
    out = parse_fio_json(text)
    assert out["fio_version"] == "fio-3.33"
    assert out["errors"] == []
    job = out["jobs"][0]
    assert job["name"] == "randrw_verify"
    assert job["error"] == 0
    for direction in ("read", "write"):
        assert job[direction]["iops"] == round(raw[direction]["iops"], 3)
        assert job[direction]["bw_bytes"] == raw[direction]["bw_bytes"]
        assert job[direction]["io_bytes"] == raw[direction]["io_bytes"]
        assert job[direction]["total_ios"] == raw[direction]["total_ios"]
        pct = raw[direction]["clat_ns"]["percentile"]
        assert job[direction]["clat_us"]["p99"] == round(pct["99.000000"] / 1000.0, 3)
        assert job[direction]["clat_us"]["p50"] == round(pct["50.000000"] / 1000.0, 3)
        assert job[direction]["clat_us"]["mean"] == round(raw[direction]["clat_ns"]["mean"] / 1000.0, 3)
    assert job["trim"] is None
    assert out["totals"]["write_io_bytes"] == raw["write"]["io_bytes"]


def test_two_jobs_each_direction_only_where_io_happened():
    out = parse_fio_json(load("fio-3.33_two_jobs_read_write.json"))
    names = [j["name"] for j in out["jobs"]]
    assert names == ["seqread", "randwrite"]
    seqread, randwrite = out["jobs"]
    assert seqread["write"] is None and seqread["read"]["io_bytes"] == 8 * 1024 * 1024
    assert randwrite["read"] is None and randwrite["write"]["io_bytes"] == 4 * 1024 * 1024
    assert out["totals"]["read_iops"] == round(seqread["read"]["iops"], 3)
    assert out["totals"]["write_iops"] == round(randwrite["write"]["iops"], 3)


def test_warning_lines_before_json_are_skipped():
    text = "fio: io_u error on file /dev/nvme1n1: Input/output error\n" + load("fio-3.33_two_jobs_read_write.json")
    assert len(parse_fio_json(text)["jobs"]) == 2


def test_job_error_is_reported():
    data = json.loads(load("fio-3.33_randrw_verify_crc32c.json"))
    data["jobs"][0]["error"] = 84  # EILSEQ: what fio sets on a verify mismatch
    out = parse_fio_json(json.dumps(data))
    assert out["errors"] == [{"job": "randrw_verify", "error": 84}]


@pytest.mark.parametrize("text,match", [("", "no JSON"), ("fio: failed to open\n", "no JSON"),
                                        ("{not json", "cannot parse"), ('{"jobs": 3}', "no 'jobs' list")])
def test_bad_output(text, match):
    with pytest.raises(FioError, match=match):
        parse_fio_json(text)


def test_build_argv_single_job():
    argv = build_argv("/usr/bin/fio", {"name": "verify", "filename": "/mnt/x/f", "rw": "randrw", "bs": "4k",
                                       "size": "32M", "iodepth": 4, "numjobs": 1, "ioengine": "libaio",
                                       "direct": True, "verify": "crc32c", "runtime": 20, "time_based": True,
                                       "extra_args": ["--verify_fatal=1"]})
    assert argv == ["/usr/bin/fio", "--output-format=json", "--name=verify", "--filename=/mnt/x/f", "--rw=randrw",
                    "--bs=4k", "--size=32M", "--iodepth=4", "--numjobs=1", "--ioengine=libaio", "--verify=crc32c",
                    "--direct=1", "--runtime=20", "--time_based", "--verify_fatal=1"]


def test_build_argv_job_file_ignores_options():
    assert build_argv("fio", {"job_file": "/etc/fio/x.fio", "filename": "/dev/sda", "rw": "write"}) == [
        "fio", "--output-format=json", "/etc/fio/x.fio"]


@pytest.mark.parametrize("opts,match", [
    ({}, "filename or job_file"),
    ({"filename": "/f", "bs": "4 k"}, "bs='4 k'"),
    ({"filename": "/f", "size": "lots"}, "size='lots'"),
    ({"filename": "/f", "iodepth": 0}, "iodepth=0"),
    ({"filename": "/f", "name": "a b"}, "name='a b'"),
    ({"filename": "/f", "runtime": -1}, "runtime=-1"),
])
def test_validate_options(opts, match):
    with pytest.raises(FioError, match=match):
        validate_options(opts)
