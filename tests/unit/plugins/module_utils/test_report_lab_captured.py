"""fabric_report on result facts captured from a real lab run (tests/fixtures/report/lab_captured).

The same checks molecule/report makes on a live run, without the lab: the NVMe-oF
(fio) and MPI results of playbooks/nvmeof_rdma.yml + playbooks/mpi_bench.yml make a
complete report, and a degraded copy fails against it as a baseline.
"""

import copy
import json
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.report import judge as J, baseline as B  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import collect as K, model as M
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import render as R
from report_doc import report_document  # tests/unit/plugins/module_utils/report_doc.py

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report", "lab_captured")


@pytest.fixture(scope="module")
def captured():
    facts = {}
    for host in ("te1", "te2"):
        with open(os.path.join(HERE, host + ".json")) as handle:
            facts[host] = json.load(handle)
    return facts


def ids(metrics, name):
    return dict((m["id"], m) for m in metrics if "%s.%s" % (m["benchmark"], m["metric"]) == name)


def test_lab_run_metrics(captured):
    benchmarks, hosts = K.collect(captured)
    assert sorted(hosts) == ["te1", "te2"] and hosts["te2"]["transport"] == "rdma"
    fio_job = captured["te2"]["nvmeof_initiator_result"]["fio"]["jobs"][0]
    metrics = M.derive_metrics(benchmarks, hosts)
    iops = ids(metrics, "fio.iops")
    key = "te2/fio.iops[direction=read,job=%s,transport=rdma]" % fio_job["name"]
    assert iops[key]["value"] == fio_job["read"]["iops"]
    assert ids(metrics, "nvmeof.io_check")["te2/nvmeof.io_check[role=initiator,transport=rdma]"]["value"] is True
    # mpi_bench_result is on both nodes; the jobs count once, on te1 which launched them.
    jobs = captured["te1"]["mpi_bench_result"]["jobs"]
    assert len(benchmarks["mpi"]) == len(jobs) and set(r["host"] for r in benchmarks["mpi"]) == {"te1"}
    checked = ids(metrics, "mpi.check_passed")
    with_sums = [j for j in jobs if (j.get("parsed") or {}).get("results")]
    assert len(checked) == len(with_sums) and all(m["value"] is True for m in checked.values())
    assert all(r["implementation"].startswith("openmpi ") for r in benchmarks["mpi"])
    lat = [r for r in benchmarks["mpi"] if r["test"] == "latency"][0]
    assert lat["scope"] == "multi" and lat["hosts"] == ["te1", "te2"] and len(lat["rows"]) > 5
    checks, summary = J.evaluate(metrics, outlier_opts={})
    assert summary["status"] == "pass" and summary["checks"]["pass"] == len(checks)


def test_lab_run_renders_and_a_degraded_copy_fails_against_it(captured):
    doc = report_document(captured, run_id="lab", generated="2026-11-30T05:46:07Z")
    files = R.render_files(doc, plots=False)
    assert {"fio.csv", "mpi.csv", "nvmeof.csv"} <= set(files)
    baseline = B.load_baseline(json.loads(files["results.json"]))

    worse = copy.deepcopy(captured)
    jobs = worse["te1"]["mpi_bench_result"]["jobs"]
    latency = [j for j in jobs if j["name"].endswith(":latency")][0]
    for table in latency["parsed"]["tables"]:
        for row in table["rows"]:
            row["latency_us"] *= 1.5  # constructed: the real run's latencies, 50 % higher
    worse["te2"]["mpi_bench_result"] = worse["te1"]["mpi_bench_result"]
    metrics2 = M.derive_metrics(*K.collect(worse))
    checks, summary = J.evaluate(metrics2, baseline=baseline, baseline_opts={"run_id": "lab"})
    assert summary["status"] == "fail"
    failed = [c for c in checks if c["status"] == "fail"]
    assert sorted(c["metric"] for c in failed) == ["mpi.latency_max_size", "mpi.latency_min_size"]
    for c in failed:
        assert c["host"] == "te1" and c["source"] == "baseline" and "test=latency" in c["key"]
        assert c["value"] > c["upper_bound"] == pytest.approx(c["target"] * 1.1)
