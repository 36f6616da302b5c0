"""expect checks of mpi_run: validation of the parameter and evaluation on parsed outputs."""

from __future__ import annotations

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import expect as E
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.parsers import parse_imb, parse_osu, parse_seed

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures")


def load(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def run(expect, parsed, parse, np=None, where="on te1, te2 (launched from te1)"):
    return E.check(E.normalize_expect(expect, parse), parsed, np=np, where=where)


def failed(results):
    return [r["message"] for r in E.failures(results)]


def seed(lines):
    return parse_seed("".join(lines))


def allreduce_lines(n, received=None, expected=None, hosts=("te1", "te1", "te2")):
    total = n * (n - 1) // 2
    return ["Process %d on %s received reduced sum %d via Allreduce (Expected: %d)\n"
            % (r, hosts[r % len(hosts)], total if received is None else received.get(r, total),
               total if expected is None else expected) for r in range(n)]


def test_sums_match_passes_on_good_allreduce():
    results = run({"sums_match": True}, seed(allreduce_lines(3)), "seed", np=3)
    assert failed(results) == [] and len(results) == 3


def test_sums_match_names_rank_host_measured_and_bound():
    results = run({"sums_match": True}, seed(allreduce_lines(3, received={2: 1})), "seed", np=3)
    assert failed(results) == [
        "rank 2 on te2 (allreduce) received sum 1, expected 3 on te1, te2 (launched from te1)"]


def test_sums_match_catches_ranks_that_did_not_form_one_job():
    # Three singleton jobs (a program launched without MPI wiring): each expects 0.
    lines = ["Process 0 received reduced sum 0 via Allreduce (Expected: 0)\n"] * 3
    msgs = failed(run({"sums_match": True}, seed(lines), "seed", np=3, where=""))
    assert "rank 0 (allreduce) expected sum 0, but 3 ranks sum to 3: the ranks did not form one job of np=3" in msgs
    assert "Allreduce results came from ranks [0, 0, 0], expected every rank 0..2" in msgs


def test_sums_match_missing_rank():
    msgs = failed(run({"sums_match": True}, seed(allreduce_lines(4)[:3]), "seed", np=4, where=""))
    assert msgs == ["Allreduce results came from ranks [0, 1, 2], expected every rank 0..3"]


def test_sums_match_without_results():
    msgs = failed(run({"sums_match": True}, seed(["Process 0 on te1 contributing 0\n"]), "seed", np=1, where=""))
    assert msgs == ["no reduced sum was printed: expected 'received reduced sum' lines"]


def test_reduce_root_only():
    good = seed(["Process 0 on te1 (root) received reduced sum: 6 (Expected: 6)\n"])
    assert failed(run({"sums_match": True}, good, "seed", np=4)) == []


def test_all_ranks():
    hello = seed(["Hello from processor te1, rank %d out of 3 processors\n" % r for r in (0, 2)])
    msgs = failed(run({"all_ranks": True}, hello, "seed", np=3, where=""))
    assert msgs == ["ranks that printed: [0, 2], expected 0..2"]


def test_min_bandwidth_default_size_is_largest():
    parsed = parse_osu(load("osu", "omb75_osu_bw_oci.txt"))
    assert failed(run({"min_bandwidth": [{"value": 12000}]}, parsed, "osu")) == []
    msgs = failed(run({"min_bandwidth": [{"value": 20000}]}, parsed, "osu"))
    assert msgs == ["OSU MPI Bandwidth Test v7.5: bandwidth_mbs at 268435456 bytes = 12254.2 MB/s, "
                    "below the minimum 20000 MB/s on te1, te2 (launched from te1)"]


def test_max_latency_at_a_size_old_and_new_headers():
    old = parse_osu(load("osu", "omb50_osu_latency_libfabric_cray.txt"))
    assert failed(run({"max_latency": [{"size": 8, "value": 2.0}]}, old, "osu")) == []
    msgs = failed(run({"max_latency": [{"size": 8, "value": 1.5}]}, old, "osu", where="on te1"))
    assert msgs == ["OSU MPI Latency Test v5.0: latency_us at 8 bytes = 1.86 us, above the maximum 1.5 us on te1"]
    # Default size: the smallest measured.
    assert run({"max_latency": [{"value": 5}]}, old, "osu")[0]["size"] == 0


def test_size_not_measured_fails():
    parsed = parse_osu(load("osu", "omb75_osu_latency_oci.txt"))
    msgs = failed(run({"max_latency": [{"size": 4096, "value": 5}]}, parsed, "osu", where=""))
    assert msgs == ["OSU MPI Latency Test v7.5: latency_us at 4096 bytes was not measured"]


def test_metric_absent_from_every_table_fails():
    parsed = parse_osu(load("osu", "omb75_osu_latency_oci.txt"))
    msgs = failed(run({"min_bandwidth": [{"value": 1}]}, parsed, "osu", where=""))
    assert msgs == ["no table in the output has the metric bandwidth_mbs"]


def test_imb_latency_metric_defaults_and_every_table_checked():
    pingpong = parse_imb(load("imb", "imb2018_pingpong_oci.txt"))
    r = run({"max_latency": [{"size": 1024, "value": 3}]}, pingpong, "imb")
    assert r[0]["metric"] == "t_usec" and r[0]["measured"] == 2.34 and r[0]["ok"]
    alltoall = parse_imb(load("imb", "imb2018_alltoall_oci.txt"))
    r = run({"max_latency": [{"size": 4194304, "value": 1000}]}, alltoall, "imb", where="")
    assert [x["metric"] for x in r] == ["t_avg_usec", "t_avg_usec"]
    assert failed(r) == ["Alltoall (4 processes): t_avg_usec at 4194304 bytes = 1412.98 us, above the maximum 1000 us"]


def test_reframe_reference_with_tolerances():
    parsed = parse_osu(load("osu", "omb71_osu_allreduce_full_nwtnni.txt"))
    ok = run({"reference": [{"metric": "latency_us", "size": 1048576, "value": 650, "lower": -0.1, "upper": 0.1}]},
             parsed, "osu")
    assert failed(ok) == [] and ok[0]["bound"] == pytest.approx([585.0, 715.0])
    bad = run({"reference": [{"metric": "max_latency_us", "size": 1048576, "value": 800, "lower": None,
                              "upper": 0.1}]}, parsed, "osu", where="")
    assert failed(bad) == ["OSU MPI Allreduce Latency Test v7.1: max_latency_us at 1048576 bytes = 903.25 us, "
                           "reference 800 us, allowed [-inf, 880]"]


@pytest.mark.parametrize("expect, parse, message", [
    ({"sum_match": True}, "seed", r"expect has unknown keys \['sum_match'\]"),
    ({"sums_match": "yes"}, "seed", r"expect.sums_match must be true or false, got 'yes'"),
    ({"sums_match": True}, "osu", r"expect.sums_match needs parse=seed \(got parse=osu\)"),
    ({"min_bandwidth": [{"value": 1}]}, "seed", r"expect.min_bandwidth needs parse=osu or parse=imb"),
    ({"min_bandwidth": [{"size": 8}]}, "osu", r"expect.min_bandwidth\[0\] needs a value"),
    ({"max_latency": [{"value": "fast"}]}, "osu", r"expect.max_latency\[0\].value must be a number, got 'fast'"),
    ({"max_latency": [{"value": 1, "size": -8}]}, "osu", r"expect.max_latency\[0\].size must be a message size"),
    ({"max_latency": [{"value": 1, "lower": 0}]}, "osu", r"expect.max_latency\[0\] has unknown keys \['lower'\]"),
    ({"reference": [{"value": 1, "upper": 0.1}]}, "osu", r"expect.reference\[0\] needs a metric"),
    ({"reference": [{"metric": "latency_us", "value": 1, "lower": 0.1}]}, "osu", r"lower is a fraction <= 0"),
    ({"reference": [{"metric": "latency_us", "value": 1}]}, "osu", r"needs lower and/or upper"),
    ("fast", "osu", r"expect must be a dictionary"),
])
def test_bad_expect_is_rejected(expect, parse, message):
    with pytest.raises(E.ExpectError, match=message):
        E.normalize_expect(expect, parse)


def test_kind_and_table_select_tables_of_a_combined_output():
    text = load("osu", "omb50_osu_latency_libfabric_cray.txt") + load("osu", "omb71_osu_allreduce_full_nwtnni.txt")
    parsed = parse_osu(text)
    # Without a selector both tables have latency_us.
    assert len(run({"max_latency": [{"value": 1e9}]}, parsed, "osu")) == 2
    r = run({"max_latency": [{"value": 2.0, "kind": "latency"}]}, parsed, "osu")
    assert [(x["table"], x["size"], x["ok"]) for x in r] == [("OSU MPI Latency Test v5.0", 0, True)]
    r = run({"max_latency": [{"value": 100, "size": 1048576, "table": "allreduce"}]}, parsed, "osu", where="")
    assert failed(r) == ["OSU MPI Allreduce Latency Test v7.1: latency_us at 1048576 bytes = 657.88 us, "
                         "above the maximum 100 us"]
    r = run({"min_bandwidth": [{"value": 1, "kind": "bandwidth"}]}, parsed, "osu", where="")
    assert failed(r) == ["no bandwidth table in the output has the metric bandwidth_mbs"]
    with pytest.raises(E.ExpectError, match=r"expect.max_latency\[0\].kind must be one of"):
        E.normalize_expect({"max_latency": [{"value": 1, "kind": "p2p"}]}, "osu")


def test_osu_validation_fail_rows_fail_the_job_without_any_expect():
    # A Fail in the -c column is a wrong result: it fails even when no bound was asked for.
    text = ("# OSU MPI Latency Test v7.4\n# Size          Latency (us)          Validation\n"
            "1                       1.71                Pass\n4                       1.71                Fail\n")
    results = E.check(E.normalize_expect({}, "osu"), parse_osu(text), np=2, where="on te1, te2")
    failed = E.failures(results)
    assert [f["check"] for f in failed] == ["validation"]
    assert failed[0]["message"] == ("OSU MPI Latency Test v7.4: validation (-c) failed at 4 bytes "
                                    "on te1, te2")
    passing = E.check(E.normalize_expect({}, "osu"), parse_osu(text.replace("Fail", "Pass")), np=2)
    assert E.failures(passing) == [] and [r["check"] for r in passing] == ["validation"]
