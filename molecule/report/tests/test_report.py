"""verify for molecule/report: the report of a real lab run (NVMe-oF + fio, MPI).

Runs on the controller: reads the folder converge wrote, opens the HTML in headless
Chromium, and runs playbooks/fabric_report.yml again on the run's results.json to
show a regression failing the play.
"""

import copy
import json
import os
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "unit", "plugins", "module_utils"))
sys.path.insert(0, os.path.join(TOP, ".cache", "collections"))

LAB = os.environ.get("FABRIC_REPORT_LAB_DIR", os.path.join(TOP, ".cache", "molecule-report"))
RUN = os.path.join(LAB, "results", "converge")


@pytest.fixture(scope="module")
def doc():
    with open(os.path.join(RUN, "results.json")) as handle:
        return json.load(handle)


def metrics(doc, host, name):
    return [m for m in doc["metrics"] if m["host"] == host and "%s.%s" % (m["benchmark"], m["metric"]) == name]


def test_report_of_the_lab_run(doc):
    assert sorted(os.listdir(RUN)) == ["checks.csv", "fio.csv", "metrics.csv", "mpi.csv", "nvmeof.csv", "report.html",
                                       "results.json", "summary.md"]
    assert sorted(doc["hosts"]) == ["te1", "te2"]
    assert doc["summary"]["status"] in ("pass", "warn"), doc["summary"]["failures"]
    # NVMe-oF: the initiator's read-back check, and fio's numbers from te2.
    (io,) = metrics(doc, "te2", "nvmeof.io_check")
    assert io["value"] is True and io["transport"] == "rdma"
    iops = metrics(doc, "te2", "fio.iops")
    assert iops and all(m["value"] > 0 for m in iops)
    assert metrics(doc, "te2", "fio.lat_p99")
    # MPI: counted once (on the launching node), sums checked, latency/bandwidth across both VMs.
    assert set(r["host"] for r in doc["benchmarks"]["mpi"]) == {"te1"}
    checks = metrics(doc, "te1", "mpi.check_passed")
    assert checks and all(m["value"] is True for m in checks)
    multi = [m for m in metrics(doc, "te1", "mpi.latency_min_size") if m["labels"].get("scope") == "multi"]
    assert multi and all(m["labels"]["hosts"] == "te1+te2" for m in multi)
    assert metrics(doc, "te1", "mpi.bandwidth_peak")
    # The baseline was stored because nothing failed.
    with open(os.path.join(LAB, "baseline", "results.json")) as handle:
        assert json.load(handle)["run"]["id"] == "converge"


def test_html_renders_in_chromium(tmp_path):
    from test_report_html_chromium import CHROMIUM, open_in_chromium
    assert CHROMIUM, "headless Chromium is needed: apt-get install -y chromium"
    with open(os.path.join(RUN, "report.html")) as handle:
        page = handle.read()
    n = page.count('src="data:image/svg+xml;base64,')
    assert n >= 4  # fio throughput + latency, MPI latency + bandwidth at least
    console, pixels = open_in_chromium(tmp_path, page, height=2400)
    assert console == ["PROBE images decoded: %d of %d" % (n, n)]
    assert (pixels[:, :, :3] < 0.94).any(axis=2).mean() > 0.02


def report(tmp_path, inputs, **extra):
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_ROLES_PATH=os.path.join(TOP, "roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="0")
    env.pop("ANSIBLE_STRATEGY", None)
    extra = dict({"fabric_report_inputs": inputs, "fabric_report_hosts": [], "fabric_report_plots": False,
                  "fabric_report_dir": str(tmp_path / "results"),
                  "fabric_report_baseline": os.path.join(LAB, "baseline")}, **extra)
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                           os.path.join(TOP, "playbooks", "fabric_report.yml"), "-e", json.dumps(extra)],
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_regression_against_the_stored_baseline_fails_the_play(doc, tmp_path):
    same = os.path.join(RUN, "results.json")
    rc, out = report(tmp_path, [same])
    assert rc == 0, out  # the run against itself: no regression

    degraded = copy.deepcopy(doc)
    for rec in degraded["benchmarks"]["fio"]:
        if rec["direction"] == "read":
            rec["iops"] = rec["iops"] * 0.5  # a constructed degradation of the real run
    path = tmp_path / "degraded.json"
    path.write_text(json.dumps(degraded))
    rc, out = report(tmp_path, [str(path)])
    assert rc == 2, out
    lines = [ln.strip() for ln in out.splitlines() if ln.strip().startswith("te2: fio.iops[direction=read")]
    assert lines, out
    for ln in lines:
        assert "IOPS, bound >= " in ln and "(baseline converge: " in ln and "-50.0%)" in ln


def test_tightened_bound_fails_the_play(doc, tmp_path):
    (lat,) = [m for m in metrics(doc, "te1", "mpi.latency_min_size") if m["labels"].get("scope") == "multi"][:1]
    tight = {"metric": "mpi.latency_min_size", "match": {"scope": "multi", "program": lat["labels"]["program"],
                                                         "test": lat["labels"]["test"]},
             "max": lat["value"] / 2, "unit": "us"}
    rc, out = report(tmp_path, [os.path.join(RUN, "results.json")], fabric_report_thresholds=[tight])
    assert rc == 2, out
    assert "te1: %s = " % lat["key"] in out and "bound <= " in out and "(reference thresholds[0])" in out
