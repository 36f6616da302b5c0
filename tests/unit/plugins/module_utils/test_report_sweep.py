"""fabric_report reads fabric_sweep_result: the facts saved by playbooks/fabric_sweep.yml on
the three-VM lab (tests/fixtures/report/sweep_captured, see its README): one sweep under
mpirun with te3 slowed by tc netem (it named te3, and the link te1-te3 on bandwidth) and one
under srun on the healthy lab (named nobody), as the playbook saved it.
"""

import json
import os
import shutil

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.report import render as R
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.saved import read_saved_results
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.summary import summary_lines
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import collect as K
from report_doc import report_document  # tests/unit/plugins/module_utils/report_doc.py

HERE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report", "sweep_captured")
NODES = ("te1", "te2", "te3")
FAILURE = "fabric_sweep named te3, link te1-te3 (--exclude=te3)"


def load(name):
    with open(os.path.join(HERE, name + ".json")) as handle:
        return json.load(handle)


def on_every_node(fact):
    """The role sets the same fact on every node of the sweep."""
    return dict((n, {"fabric_sweep_result": fact}) for n in NODES)


def document(host_facts):
    return report_document(host_facts, run_id="lab", generated="2026-12-01T07:00:00Z", outlier_opts={})


@pytest.fixture(scope="module")
def slow():
    return load("slow_mpirun")


@pytest.fixture(scope="module")
def clean():
    return load("clean_srun")


def test_the_slow_sweep_is_one_record_from_the_launching_node(slow):
    benchmarks, hosts = K.collect(on_every_node(slow))
    (record,) = benchmarks["sweep"]
    assert record["host"] == slow["launched_from"] == "te1" and record["launcher"] == "mpirun"
    assert record["suspects"] == ["te3"] and record["exclude_option"] == "--exclude=te3"
    assert record["link_suspects"] == ["te1-te3"] and record["bisection_suspects"] == []
    assert record["passed"] is False and record["failure"] == FAILURE
    assert len(record["pairs"]) == len(slow["pairs"]) == 6
    assert sorted(hosts) == list(NODES) and "fabric_sweep_result" in hosts["te2"]["facts"]


def test_each_pair_is_a_metric_and_the_suspect_fails_the_report(slow):
    doc = document(on_every_node(slow))
    for pair in slow["pairs"]:
        key = "te1/sweep.%s[launcher=mpirun,pair=%s,size=%s]" % (pair["test"], "+".join(pair["nodes"]), pair["size"])
        (metric,) = [m for m in doc["metrics"] if m["id"] == key]
        assert metric["value"] == pair["value"] and metric["unit"] == pair["unit"] and metric["better"] == pair["better"]
    assert doc["summary"]["status"] == "fail"
    (failed,) = [c for c in doc["checks"] if c["status"] == "fail"]
    assert failed["metric"] == "sweep.run_passed" and FAILURE in failed["message"]


def test_the_healthy_sweep_passes(clean):
    doc = document(on_every_node(clean))
    (record,) = doc["benchmarks"]["sweep"]
    assert record["passed"] is True and record["suspects"] == [] and record["failure"] == ""
    assert doc["summary"]["status"] == "pass"
    assert len([m for m in doc["metrics"] if m["benchmark"] == "sweep" and m["metric"] != "run_passed"]) == 6


def test_html_csv_and_summary_lines(slow):
    files = R.render_files(document(on_every_node(slow)), plots=False)
    rows = files["sweep.csv"].splitlines()
    assert rows[0].startswith("host,run,launcher,test,pair,value,") and len(rows) == 1 + 6
    html = files["report.html"]
    section = html.split("<h2>Pairwise sweep</h2>", 1)[1].split("<h2>", 1)[0]
    assert "te1 (mpirun) swept te1, te2, te3: %s; exclude: --exclude=te3" % FAILURE in section
    assert section.count(">low</span>") == len([p for p in slow["pairs"] if p["low"]]) > 0
    assert section.count(">ok</span>") == len([p for p in slow["pairs"] if not p["low"]])
    assert [line for line in slow["lines"] if line.startswith("suspect #1 te3")][0] in section
    lines = summary_lines(on_every_node(slow))
    low = len([p for p in slow["pairs"] if p["low"]])
    assert "te1: sweep (pairwise, mpirun) of te1, te2, te3: 6 pair result(s), %d low: FAIL - %s" % (low, FAILURE) in lines
    assert "te2: sweep: ran from te1 (see its lines)" in lines


def test_the_file_the_playbook_saved_is_read(tmp_path, clean):
    # hosts/te1/fabric_sweep_result.json exactly as playbooks/fabric_sweep.yml saved it on the lab.
    folder = tmp_path / "hosts" / "te1"
    folder.mkdir(parents=True)
    shutil.copy(os.path.join(HERE, "saved_te1_fabric_sweep_result.json"), str(folder / "fabric_sweep_result.json"))
    host_facts, saved = read_saved_results(str(tmp_path / "hosts"))
    assert host_facts["te1"]["fabric_sweep_result"] == clean
    assert saved["te1"]["fabric_sweep_result"]["playbook"]
    (record,) = K.collect(host_facts)[0]["sweep"]
    assert record["passed"] is True and record["launcher"] == "srun"


def test_a_group_wide_sweep_fails_the_report_with_its_reason_and_no_exclude_list(slow):
    # Issue 35 item 8: the module names the nodes as evidence but excludes and drains nobody.
    reason = ("group-wide: 3 of 3 nodes are low (bandwidth: every pair about 46 % of the expected 24000 MB/s and "
              "the pairs agree with each other): the likely cause is ...; nobody is drained or excluded")
    fact = dict(slow, suspect_nodes=list(NODES), group_wide=True, verdict="group_wide", verdict_reason=reason,
                exclude="", exclude_option="", drain_command=[], passed=False)
    (record,) = K.collect(on_every_node(fact))[0]["sweep"]
    assert record["passed"] is False and record["failure"] == "fabric_sweep: " + reason
    assert record["exclude_option"] == ""


def test_a_sweep_that_cannot_judge_the_group_does_not_pass(slow):
    # Issue 35 item 9: nobody named, but that is not "no suspect".
    reason = ("cannot judge: bandwidth: 2 nodes with a result, too few to judge against each other (a pairwise "
              "sweep needs 3); the group cannot be judged without an expectation or a known-good reference")
    fact = dict(slow, suspect_nodes=[], link_suspects=[], verdict="cannot_judge", verdict_reason=reason,
                exclude="", exclude_option="", drain_command=[], passed=None)
    (record,) = K.collect(on_every_node(fact))[0]["sweep"]
    assert record["passed"] is False and record["failure"] == "fabric_sweep: " + reason
    assert "FAIL - fabric_sweep: cannot judge: bandwidth" in "\n".join(summary_lines(on_every_node(fact)))
