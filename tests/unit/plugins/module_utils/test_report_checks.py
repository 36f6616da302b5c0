"""fabric_report checks: ReFrame-style references, baselines, outliers, built-in checks."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report"))

import build_facts  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import checks as C  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import judge as J, baseline as B, outliers as O  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import collect as K, model as M  # noqa: E402


def metric(host="h1", bench="nccl", name="busbw_peak", value=100.0, unit="GB/s", better=M.HIGHER, **labels):
    labels = labels or {"test": "all_reduce", "scope": "single"}
    return M._metric(host, bench, name, value, unit, better, labels, {"gpu_model": "NVIDIA H100 80GB HBM3"})


def ref(**kw):
    entry = {"metric": "nccl.busbw_peak", "target": 100, "lower": -0.1, "upper": None, "unit": "GB/s"}
    entry.update(kw)
    return C.normalize_references([entry])


@pytest.mark.parametrize("value,status", [(89.9, "fail"), (90.0, "pass"), (130.0, "pass")])
def test_reference_lower_tolerance(value, status):
    (check,) = C.check_references([metric(value=value)], ref())
    assert check["status"] == status and check["lower_bound"] == pytest.approx(90.0) and check["upper_bound"] is None


def test_reference_upper_and_ungated_warns():
    m = metric(bench="fio", name="lat_p99", value=2500.0, unit="us", better=M.LOWER, job="j", direction="read")
    (check,) = C.check_references([m], ref(metric="fio.lat_p*", target=2000, lower=None, upper=0.2, unit="us",
                                           gate=False))
    assert check["status"] == "warn" and check["upper_bound"] == pytest.approx(2400.0)
    assert "above the upper bound 2400 us" in check["message"]


def test_reference_warning_band():
    (check,) = C.check_references([metric(value=93.0)], ref(warn_lower=-0.05))
    assert check["status"] == "warn" and "warning band" in check["message"]


def test_reference_absolute_bounds_and_tuple_form():
    (check,) = C.check_references([metric(name="wrong", value=3, unit="count", better=M.EXACT)],
                                  C.normalize_references([{"metric": "nccl.wrong", "max": 0}]))
    assert check["status"] == "fail" and check["bound"] == "<= 0"
    refs = C.normalize_references([{"metric": "nccl.busbw_peak", "reference": [100, -0.1, 0.1, "GB/s"]}])
    (check,) = C.check_references([metric(value=111.0)], refs)
    assert check["status"] == "fail" and check["upper_bound"] == pytest.approx(110.0)


def test_most_specific_reference_wins_and_later_wins_ties():
    refs = C.normalize_references([
        {"metric": "nccl.*", "target": 10, "lower": -0.5},
        {"metric": "nccl.busbw_peak", "match": {"gpu_model": "NVIDIA H100*"}, "target": 300, "lower": -0.1},
        {"metric": "nccl.busbw_peak", "match": {"gpu_model": "NVIDIA H100*", "test": "all_reduce"}, "target": 360,
         "lower": -0.1},
        {"metric": "nccl.busbw_peak", "match": {"test": "all_reduce", "gpu_model": "*H100*"}, "target": 350,
         "lower": -0.1},
    ])
    assert C.select_reference(refs, metric())["target"] == 350
    assert C.select_reference(refs, metric(test="all_gather"))["target"] == 300
    assert C.select_reference(refs, metric(name="avg_busbw"))["target"] == 10
    other = metric()
    other["gpu_model"] = "NVIDIA A100-SXM4-80GB"
    assert C.select_reference(refs, other)["target"] == 10


@pytest.mark.parametrize("entry,message", [
    ({"metric": "busbw", "target": 1, "lower": -0.1}, r"metric must be '<benchmark>.<metric>'"),
    ({"metric": "nccl.x"}, "needs a target"),
    ({"metric": "nccl.x", "target": 5}, "without lower or upper"),
    ({"metric": "nccl.x", "target": 5, "lower": 0.1}, r"\.lower is a fraction below the target and must be <= 0"),
    ({"metric": "nccl.x", "target": 5, "upper": -0.1}, r"\.upper .* must be >= 0"),
    ({"metric": "nccl.x", "target": "fast", "lower": -0.1}, r"\.target must be a number"),
    ({"metric": "nccl.x", "target": 5, "lower": -0.1, "tolerance": 1}, "unknown keys tolerance"),
    ({"metric": "nccl.x", "target": 5, "lower": -0.1, "gate": "yes"}, r"\.gate must be true or false"),
    ({"metric": "nccl.x", "reference": [1, 2]}, r"\.reference must be \[target, lower, upper"),
])
def test_reference_validation_names_the_entry(entry, message):
    with pytest.raises(M.ReportError, match=r"thr\[0\]") as err:
        C.normalize_references([entry], origin="thr")
    assert err.match(message)


def test_reference_unit_must_match_the_metric():
    with pytest.raises(M.ReportError, match="unit 'MB/s' does not match"):
        C.check_references([metric()], ref(unit="MB/s"))


def test_builtin_checks():
    checks = C.check_builtin([metric(name="wrong", value=2, unit="count", better=M.EXACT),
                              metric(bench="mpi", name="check_passed", value=True, unit="bool", better=M.EXACT),
                              metric(bench="nvmeof", name="io_check", value=False, unit="bool", better=M.EXACT),
                              metric()])
    assert [c["status"] for c in checks] == ["fail", "pass", "fail"]
    assert all(c["gated"] for c in checks)
    assert [c["status"] for c in C.check_builtin([metric(name="wrong", value=2, unit="count", better=M.EXACT)],
                                                 gate=False)] == ["warn"]


def test_baseline_regressions_in_the_worse_direction():
    now = [metric(value=85.0), metric(bench="fio", name="lat_p99", value=1150.0, unit="us", better=M.LOWER,
                                      job="j", direction="read"),
           metric(name="avg_busbw", value=96.0)]
    old = dict((m["id"], dict(m, value=v)) for m, v in zip(now, (100.0, 1000.0, 100.0)))
    old["h1/nccl.gone[x=1]"] = {"id": "h1/nccl.gone[x=1]", "host": "h1", "key": "nccl.gone[x=1]", "value": 3}
    old["other/nccl.gone[x=1]"] = {"id": "other/nccl.gone[x=1]", "host": "other", "key": "nccl.gone[x=1]", "value": 3}
    checks = B.check_baseline(now, old, tolerance=0.1, warn=0.03, gate=True, run_id="r1", hosts={"h1"})
    status = dict((c["id"], c["status"]) for c in checks)
    assert status[now[0]["id"]] == "fail"   # 15 % less bandwidth
    assert status[now[1]["id"]] == "fail"   # 15 % more latency
    assert status[now[2]["id"]] == "warn"   # 4 %: inside the tolerance, outside the warning band
    assert status["h1/nccl.gone[x=1]"] == "fail"  # measured before, not now: a gated metric went missing
    assert "other/nccl.gone[x=1]" not in status   # a host not in this run is not reported missing
    fail = [c for c in checks if c["id"] == now[0]["id"]][0]
    assert "baseline r1: 100 GB/s, -15.0%" in fail["message"]
    better = B.check_baseline([metric(value=150.0)], {now[0]["id"]: dict(now[0], value=100.0)})
    assert better[0]["status"] == "pass"


def test_load_baseline_rejects_other_documents():
    with pytest.raises(M.ReportError, match="is not a fabric_report results.json"):
        B.load_baseline({"schema": "something"}, origin="old.json")
    assert B.load_baseline({"schema": M.SCHEMA, "metrics": [metric()]}) == {metric()["id"]: metric()}


def test_outlier_far_below_the_median_of_its_peers():
    ms = [metric(host="g%d" % i, value=v) for i, v in enumerate((100.0, 98.0, 102.0, 65.0))]
    checks = O.check_outliers(ms)
    status = dict((c["host"], c["status"]) for c in checks)
    assert status == {"g0": "pass", "g1": "pass", "g2": "pass", "g3": "warn"}
    (bad,) = [c for c in checks if c["status"] != "pass"]
    assert "median of 4 hosts 99 GB/s, -34.3%" in bad["message"] and bad["message"].endswith("(outlier)")
    assert [c["status"] for c in O.check_outliers(ms, gate=True) if c["host"] == "g3"] == ["fail"]
    # Latency: higher is worse.
    lat = [metric(host="g%d" % i, name="lat_p99", value=v, unit="us", better=M.LOWER) for i, v in
           enumerate((10.0, 11.0, 10.5, 16.0))]
    assert [c["host"] for c in O.check_outliers(lat) if c["status"] != "pass"] == ["g3"]


def test_outlier_rule_follows_the_spread_not_a_fixed_band():
    # Failed before (fixed -30 % band around the peers' median): a host 20 % under five
    # hosts within 1 % of each other passed; the robust spread flags it.
    tight = [metric(host="g%d" % i, value=v) for i, v in enumerate((100.0, 100.5, 99.5, 100.2, 99.8, 80.0))]
    assert [c["host"] for c in O.check_outliers(tight) if c["status"] != "pass"] == ["g5"]
    # ... and a group whose hosts naturally spread widely does not flag its slowest member.
    wide = [metric(host="g%d" % i, value=v) for i, v in enumerate((100.0, 72.0, 128.0, 85.0, 115.0, 69.0))]
    assert [c for c in O.check_outliers(wide) if c["status"] != "pass"] == []
    # Identical hosts (MAD 0) and a 5 % slower one: inside the minimum deviation (10 %).
    same = [metric(host="g%d" % i, value=v) for i, v in enumerate((100.0, 100.0, 100.0, 95.0))]
    assert [c for c in O.check_outliers(same) if c["status"] != "pass"] == []


def test_outliers_need_enough_hosts_of_the_same_kind():
    ms = [metric(host="g%d" % i, value=v) for i, v in enumerate((100.0, 100.0, 50.0))]
    assert O.check_outliers(ms) == []                                  # 3 hosts < min_hosts 4
    assert [c["status"] for c in O.check_outliers(ms, min_hosts=3)] == ["pass", "pass", "warn"]
    other_gpu = metric(host="g3", value=100.0)
    other_gpu["gpu_model"] = "NVIDIA A100"
    assert O.check_outliers(ms + [other_gpu]) == []                    # not a peer: still 3 of a kind
    multi = [metric(host="g%d" % i, value=v, test="all_reduce", scope="multi") for i, v in enumerate((1.0, 9.0, 9.0, 9.0))]
    assert O.check_outliers(multi) == []


def test_evaluate_real_run_and_failure_lines():
    benchmarks, hosts = K.collect(build_facts.lab_like_facts())
    metrics = M.derive_metrics(benchmarks, hosts)
    refs = C.normalize_references([{"metric": "fio.iops", "match": {"job": "seqread"}, "target": 10000,
                                    "lower": -0.1, "unit": "IOPS"}])
    checks, summary = J.evaluate(metrics, refs=refs, outlier_opts={})
    assert summary["status"] == "fail" and len(summary["failures"]) == 1
    iops = [m for m in metrics if m["id"] == "te2/fio.iops[direction=read,job=seqread,transport=rdma]"][0]
    line = summary["failures"][0]
    assert line == ("te2: fio.iops[direction=read,job=seqread,transport=rdma] = %s IOPS, bound >= 9000 IOPS "
                    "(reference thresholds[0]: target 10000 IOPS, tolerance -10%%/open)" % C._fmt(iops["value"]))
    assert summary["checks"]["pass"] == len([c for c in checks if c["status"] == "pass"])
    assert summary["metric_status"][iops["id"]] == "fail"
