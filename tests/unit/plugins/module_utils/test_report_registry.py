"""The benchmark registry is the one place a benchmark is listed.

The result-fact list has to appear, as static YAML, in the module documentation (one doc
fragment), the fabric_report role's argument specs and the AWX survey (whose test compares it
with the argument specs): these tests keep each equal to the registry's. And the steps that
loop over the registry (collect, derive_metrics, checks, render, summary) must not name a
benchmark themselves, or a new benchmark would have to edit them.
"""

import os
import re

import pytest
import yaml

from ansible_collections.aiinfra.fabric.plugins.action import fabric_report as report_action
from ansible_collections.aiinfra.fabric.plugins.action import fabric_result_save as save_action
from ansible_collections.aiinfra.fabric.plugins.doc_fragments.result_facts import ModuleDocFragment
from ansible_collections.aiinfra.fabric.plugins.lookup.result_facts import LookupModule
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks import registry as B
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import checks as C
from ansible_collections.aiinfra.fabric.plugins.module_utils.report import render as R
from ansible_collections.aiinfra.fabric.plugins.modules import fabric_report, fabric_result_save

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLE = os.path.join(TOP, "roles", "fabric_report")
REPORT = os.path.join(TOP, "plugins", "module_utils", "report")
FACTS = list(B.RESULT_FACTS)


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def test_the_registry_lists_each_benchmark_and_fact_once():
    assert len(set(B.BENCHMARKS)) == len(B.BENCHMARKS)
    assert len(set(FACTS)) == len(FACTS)
    assert sorted(B.SECTION_ORDER) == sorted(B.BENCHMARKS)
    assert set(B.FACT_OWNER) == set(FACTS)


@pytest.mark.parametrize("bench", B.REGISTRY, ids=lambda b: b.name)
def test_each_benchmark_says_everything_the_report_asks(bench):
    assert re.match(r"^[a-z][a-z0-9_]*$", bench.name)
    assert callable(bench.read) and callable(bench.metrics) and callable(bench.section)
    assert bench.csv_columns and bench.csv_columns[0] == "host"
    assert bench.facts == () or callable(bench.summary), "a benchmark that owns a fact gives its summary lines"
    assert bench.expect, "every benchmark checks something built in (at least that its runs passed)"
    for fact in bench.facts:
        assert fact.endswith("_result")


def test_built_in_expectations_come_from_the_benchmarks():
    assert C.BUILTIN_EXPECT == B.builtin_expect()
    assert C.BUILTIN_EXPECT["nccl.wrong"] == 0 and C.BUILTIN_EXPECT["sweep.run_passed"] is True
    assert R.CSV_COLUMNS == dict((b.name, b.csv_columns) for b in B.REGISTRY)


def test_the_module_docs_take_the_fact_list_from_one_fragment():
    fragment = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["facts"]
    assert fragment["choices"] == FACTS and fragment["default"] == FACTS
    for module in (fabric_report, fabric_result_save):
        doc = yaml.safe_load(module.DOCUMENTATION)
        assert "aiinfra.fabric.result_facts" in doc["extends_documentation_fragment"]
        own = doc["options"]["facts"]
        # The module gives the description; the fragment the list (a key here would override it).
        assert set(own) == {"description"}, own


def test_the_action_plugins_take_the_registry():
    for spec in (report_action.ARGUMENT_SPEC, save_action.ARGUMENT_SPEC):
        assert spec["facts"]["choices"] == FACTS and spec["facts"]["default"] == FACTS


def test_the_role_argument_specs_list_the_registry():
    specs = load(os.path.join(ROLE, "meta", "argument_specs.yml"))["argument_specs"]
    for entry in ("main", "save"):
        option = specs[entry]["options"]["fabric_report_facts"]
        assert option["choices"] == FACTS, entry
        assert option["default"] == FACTS, entry


def test_the_role_default_is_the_registry():
    defaults = load(os.path.join(ROLE, "defaults", "main.yml"))
    assert defaults["fabric_report_facts"] == "{{ query('aiinfra.fabric.result_facts') }}"
    assert LookupModule().run([]) == FACTS


@pytest.mark.parametrize("name", ["collect.py", "model.py", "checks.py", "judge.py", "render.py", "summary.py",
                                  "plots.py", "saved.py", "baseline.py", "outliers.py"])
def test_the_loops_name_no_benchmark(name):
    with open(os.path.join(REPORT, name)) as handle:
        code = handle.read()
    named = [b for b in B.BENCHMARKS + B.RESULT_FACTS if re.search(r"[\"']%s[\"'.]" % re.escape(b), code)]
    assert not named, "%s names %s: that belongs in report/benchmarks/" % (name, ", ".join(named))


def test_the_page_template_names_no_benchmark():
    with open(os.path.join(R.TEMPLATE_DIR, "report.html.j2")) as handle:
        page = handle.read()
    assert not [b for b in B.BENCHMARKS if re.search(r"\b(b|plots)\.%s\b" % b, page)]
