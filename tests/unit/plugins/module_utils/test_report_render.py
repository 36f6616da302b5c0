"""fabric_report rendering: CSV per benchmark, Markdown summary, self-contained HTML with plots."""

import base64
import csv
import io
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report"))

import build_facts  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import checks as C  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import judge as J  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import collect as K, model as M  # noqa: E402
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import render as R  # noqa: E402

pytest.importorskip("matplotlib")


def document(facts=None, refs=None):
    benchmarks, hosts = K.collect(build_facts.lab_like_facts() if facts is None else facts)
    metrics = M.derive_metrics(benchmarks, hosts)
    checks, summary = J.evaluate(metrics, refs=C.normalize_references(refs or []),
                                 outlier_opts={})
    return {"schema": M.SCHEMA, "schema_version": M.SCHEMA_VERSION,
            "run": {"id": "20261130T050000Z", "generated": "2026-11-30T05:00:00Z", "label": "unit <test>",
                    "controller": "ctl"},
            "hosts": hosts, "benchmarks": benchmarks, "metrics": metrics, "checks": checks, "summary": summary,
            "baseline": None, "references": []}


def images(page):
    return re.findall(r'<img alt="([^"]*)" src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)">', page)


def test_files_and_csv_rows():
    doc = document()
    files = R.render_files(doc)
    assert sorted(files) == ["checks.csv", "fio.csv", "metrics.csv", "mpi.csv", "nccl.csv", "nvmeof.csv",
                             "report.html", "results.json", "summary.md"]
    nccl = list(csv.DictReader(io.StringIO(files["nccl.csv"])))
    assert len(nccl) == sum(len(r["rows"]) for r in doc["benchmarks"]["nccl"])
    last_gh200 = [r for r in nccl if r["test"] == "all_reduce"][-1]
    assert (last_gh200["size"], last_gh200["oop_busbw"], last_gh200["ip_busbw"]) == ("134217728", "122.57", "123.11")
    fio = list(csv.DictReader(io.StringIO(files["fio.csv"])))
    assert [(r["job"], r["direction"]) for r in fio] == [("seqread", "read"), ("randwrite", "write")]
    assert float(fio[0]["lat_p99_us"]) == doc["benchmarks"]["fio"][0]["lat_us"]["p99"]
    metrics = list(csv.DictReader(io.StringIO(files["metrics.csv"])))
    assert len(metrics) == len(doc["metrics"])
    data = json.loads(files["results.json"])
    assert data["schema"] == "aiinfra.fabric.results" and data["schema_version"] == 1
    assert data["files"] == sorted(files)


def test_html_is_self_contained_with_one_plot_per_series_kind():
    doc = document()
    page = R.render_files(doc)["report.html"]
    # Nothing fetched from elsewhere: no external URLs in src/href, no scripts.
    assert not re.search(r'(src|href)="(?!data:)', page)
    assert "<script" not in page
    alts = [alt for alt, _data in images(page)]
    assert alts == [
        "NCCL all_reduce bus bandwidth vs message size, per host",
        "NCCL alltoall bus bandwidth vs message size, per host",
        "MPI osu_allreduce allreduce_latency latency vs message size",
        "MPI osu_bw bandwidth bandwidth vs message size",
        "MPI osu_latency latency latency vs message size",
        "fio IOPS and bandwidth per host, job and direction",
        "fio latency percentiles per host, job and direction",
    ]
    for _alt, data in images(page):
        svg = ET.fromstring(base64.b64decode(data))
        assert svg.tag.endswith("svg")
        # A plotted line is a path with many vertices.
        assert len(list(svg.iter("{http://www.w3.org/2000/svg}path"))) > 5
    assert "unit &lt;test&gt;" in page  # escaped


def test_nccl_plot_has_one_line_per_host():
    facts = {"g%d" % i: {"nccl_tests_result": [build_facts.scaled(
        build_facts.nccl_run("gtx1080_all_reduce_g2_error_column.txt", "all_reduce"), f)]}
        for i, f in enumerate((1.0, 0.6))}  # g1: a constructed copy at 60 %
    page = R.render_files(document(facts))["report.html"]
    (alt, data), = [(a, d) for a, d in images(page) if a.startswith("NCCL")]
    svg = base64.b64decode(data).decode()
    assert svg.count('id="line2d_') >= 2
    assert "g0" in page and "g1" in page


def test_markdown_summary_lists_failures():
    doc = document(refs=[{"metric": "fio.iops", "match": {"job": "seqread"}, "target": 10000, "lower": -0.1}])
    md = R.render_files(doc)["summary.md"]
    assert "**Status: FAIL**" in md
    assert "## Failures" in md and "- te2: fio.iops[direction=read,job=seqread,transport=rdma] = " in md
    assert "| te2 | fio.iops[direction=read,job=seqread,transport=rdma] |" in md


def test_without_plots_no_matplotlib_needed():
    page = R.render_files(document(), plots=False)["report.html"]
    assert images(page) == [] and "<h2>NCCL collectives</h2>" in page


def test_empty_run_renders():
    files = R.render_files(document(facts={}))
    assert sorted(files) == ["checks.csv", "metrics.csv", "report.html", "results.json", "summary.md"]
    # Failed before: an empty report said PASS.
    assert "**Status: FAIL** - 0 metrics" in files["summary.md"]
    assert "no results to report" in files["summary.md"] and "no results to report" in files["report.html"]


def test_csv_cells_that_a_spreadsheet_would_run_are_neutralized():
    # Failed before: a job name or host name starting with = + - @ went into the CSV as is.
    facts = build_facts.lab_like_facts()
    facts["te2"]["nvmeof_initiator_result"]["fio"]["jobs"][0]["name"] = '=HYPERLINK("http://x","y")'
    facts["te2"]["nvmeof_initiator_result"]["device"] = "@SUM(A1)"
    files = R.render_files(document(facts=facts), plots=False)
    rows = list(csv.reader(io.StringIO(files["fio.csv"])))
    cells = [c for row in rows for c in row]
    assert "'=HYPERLINK(\"http://x\",\"y\")" in cells and "'@SUM(A1)" in cells
    assert not [c for c in cells if c[:1] in ("=", "+", "@")]
    assert not [c for c in cells if c[:1] == "-" and not _number(c)]
    assert not [c for row in csv.reader(io.StringIO(files["metrics.csv"])) for c in row if c[:1] in ("=", "@")]
    # Negative numbers stay numbers.
    assert R._cell(-3.5) == -3.5 and R._cell("-12") == "-12"


def _number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def test_values_cannot_inject_markup_into_summary_md_or_report_html():
    # Failed before for summary.md: only "|" and newlines were escaped, so a job name (or a
    # failure line quoting it) put live HTML into a Markdown viewer.
    facts = build_facts.lab_like_facts()
    evil = "<img src=x onerror=alert(1)>|`x`"
    facts["te2"]["nvmeof_initiator_result"]["fio"]["jobs"][0]["name"] = evil
    doc = document(facts=facts, refs=[{"metric": "fio.iops", "target": 1e9, "lower": -0.1}])
    files = R.render_files(doc, plots=False)
    assert "<img src=x" not in files["summary.md"] and "&lt;img src=x onerror=alert(1)&gt;\\|\\`x\\`" in files["summary.md"]
    assert "<img src=x" not in files["report.html"] and "&lt;img src=x onerror=alert(1)&gt;" in files["report.html"]
    # Failures come first in the page, and a failure links to the plot of its metric.
    page = R.render_files(doc)["report.html"]
    assert page.index("<h2 id=\"failures\">") < page.index("<h2>Hosts</h2>") < page.index("<h2>fio</h2>")
    assert '<a href="#fio-throughput">(plot)</a>' in page and '<figure id="fio-throughput">' in page
    assert '<details id="host-te2">' in page


def test_pages_come_from_the_shipped_templates(tmp_path):
    (tmp_path / "report.html.j2").write_text("<p>{{ run.id }} {{ summary.status }}</p>")
    (tmp_path / "summary.md.j2").write_text("{{ run.label | md }}")
    files = R.render_files(document(), plots=False, template_dir=str(tmp_path))
    assert files["report.html"] == "<p>20261130T050000Z pass</p>"
    assert files["summary.md"] == "unit &lt;test&gt;"
    assert os.path.isfile(os.path.join(R.TEMPLATE_DIR, "report.html.j2"))
