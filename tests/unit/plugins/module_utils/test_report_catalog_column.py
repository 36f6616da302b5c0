"""The HTML report's NCCL table shows the catalog verdict the nccl_test module returned.

The run is roles/nccl_tests' real fact shape (tests/fixtures/report/role_captured/gpu1.json,
the replayed CSCS GH200 all_reduce output, largest size 128 MiB); its ``expectation`` is
computed here by the module's own catalog code, from the shipped catalog merged with a user
override for GH200 at 128 MiB. The override's figure (150 GB/s) is CONSTRUCTED for this
test: it proves the column, not a verdict on that hardware.
"""

import copy
import json
import os

import yaml

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import catalog as C
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import render as R
from report_doc import report_document  # tests/unit/plugins/module_utils/report_doc.py

TOP = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
FIXTURES = os.path.join(TOP, "tests", "fixtures", "report")
# A cluster's own figure (nccl_tests_expectations_overrides); CONSTRUCTED, see above.
OVERRIDE = {"id": "gh200-single-4-all_reduce-test", "model": "gh200", "scope": "single_node", "gpus": 4,
            "test": "all_reduce", "min_size": "128M", "busbw": 150, "tolerance_pct": 10,
            "source": {"title": "constructed for a unit test"}}


def _gpu1_with_verdict():
    with open(os.path.join(FIXTURES, "role_captured", "gpu1.json")) as handle:
        gpu = copy.deepcopy(json.load(handle))
    with open(os.path.join(TOP, "files", "expected_busbw.yml")) as handle:
        catalog = C.merge(yaml.safe_load(handle), {"expectations": [OVERRIDE]})
    expectation = [e for e in catalog["expectations"] if e["id"] == OVERRIDE["id"]][0]
    model = C.model_for(catalog, "NVIDIA GH200 120GB")
    run = max((r for r in gpu["nccl_tests_result"]["single_node"] if r["test"] == "all_reduce"),
              key=lambda r: r["largest_size"])
    run["expectation"] = C.verdict("gpu1", "all_reduce", run["largest_size_busbw"], run["largest_size"], expectation,
                                   model)
    return gpu, run


def test_the_html_nccl_table_has_the_catalog_verdict():
    gpu, run = _gpu1_with_verdict()
    verdict = run["expectation"]
    assert verdict["status"] == C.BELOW and verdict["expected_busbw"] > run["largest_size_busbw"]
    html = R.render_html(report_document({"gpu1": gpu}, outlier_opts={}))
    nccl = html.split("<h2>NCCL collectives</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<th>expected busbw (GB/s)</th><th>catalog verdict</th>" in nccl
    # The run's row: the expected figure, a 'below' badge and the module's sentence (escaped).
    row = [r for r in nccl.split("<tr>") if "all_reduce" in r and ">below</span>" in r]
    assert len(row) == 1, nccl
    assert ">%s</td>" % R._fmt_value(verdict["expected_busbw"]) in row[0]
    assert verdict["text"].replace("&", "&amp;") in row[0]
    assert "GH200 single-node expectation of 150 GB/s" in verdict["text"]


def test_a_run_without_a_verdict_leaves_the_column_empty():
    with open(os.path.join(FIXTURES, "role_captured", "gpu1.json")) as handle:
        gpu = json.load(handle)
    html = R.render_html(report_document({"gpu1": gpu}, outlier_opts={}))
    nccl = html.split("<h2>NCCL collectives</h2>", 1)[1].split("<h2>", 1)[0]
    assert "<th>catalog verdict</th>" in nccl
    # No verdict, no badge: the table's other cells are plain values.
    assert 'class="badge' not in nccl.split("<tbody>", 1)[1]
