"""The expected-busbw catalog: the shipped file, GPU-name matching (first match wins),
selection, user overrides, and the verdict in plain words.

The measured figures come from real published outputs (tests/fixtures/nccl_tests: the
two-node H100 run on Google Cloud A3 Mega; the fixtures README names each source).
"""

from __future__ import annotations

import copy
import os

import pytest
import yaml

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import catalog as C
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import gates as G
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import parse as NP

TOP = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..")
CATALOG_FILE = os.path.join(TOP, "files", "expected_busbw.yml")
FIXTURES = os.path.join(TOP, "tests", "fixtures", "nccl_tests")
GIB8 = 8 << 30


def shipped():
    with open(CATALOG_FILE) as handle:
        return yaml.safe_load(handle)


def catalog():
    return C.validate(shipped())


# --------------------------------------------------------------------------- the shipped file

def test_shipped_catalog_validates_and_covers_the_models_the_issue_names():
    cat = catalog()
    ids = [m["id"] for m in cat["models"]]
    for model in ("a100_sxm", "h100_sxm", "h200", "b200", "gb200", "mi300x"):
        assert model in ids
        assert [e for e in cat["expectations"] if e["model"] == model and e["scope"] == "single_node"], model
    assert [e for e in cat["expectations"] if e["scope"] == "multi_node"]


def test_every_figure_has_a_source_and_every_missing_figure_says_so():
    for e in catalog()["expectations"]:
        if e["busbw"] is None:
            assert e["source"]["title"].startswith("no public"), e["id"]
        else:
            assert e["source"]["url"].startswith("https://"), e["id"]
            assert 0 < e["tolerance_pct"] < 50


def test_the_published_figures_are_the_ones_read_from_their_sources():
    figures = dict((e["id"], e["busbw"]) for e in catalog()["expectations"])
    assert figures["h100_sxm-single-8-all_reduce"] == 478.87
    assert figures["h200-single-8-all_reduce"] == 479.98
    assert figures["a100_sxm-single-8-all_reduce"] == 231.58
    assert figures["gb200-single-4-all_reduce"] == 679.61
    # CoreWeave's full-rack NVL72 example (out-of-place, 8 GiB) and the NCCL maintainers'
    # per-NIC rule (24 GB/s per 200 Gb/s NIC) times the NICs per node.
    assert figures["gb200-nvl72-domain-all_reduce"] == 834.57
    assert figures["a100_sxm-multi-8x200g-all_reduce"] == 8 * 24
    assert figures["h100_sxm-multi-8x400g-all_reduce"] == figures["h200-multi-8x400g-all_reduce"] == 8 * 48
    assert figures["mi300x-single-8-all_reduce"] == 316.82
    assert figures["b200-single-8-all_reduce"] is None


def test_the_a3_mega_figure_is_the_fixture_s_last_row():
    with open(os.path.join(FIXTURES, "gcp_a3mega_h100_all_reduce_2nodes_8G.txt")) as handle:
        text = handle.read()
    summary = G.summarize(NP.parse_text(text))
    figures = dict((e["id"], e["busbw"]) for e in catalog()["expectations"])
    assert summary["largest_size"] == GIB8
    assert figures["h100_sxm-multi-gcp-a3-mega-all_reduce"] == summary["largest_size_busbw"] == 338.82
    a3 = [e for e in catalog()["expectations"] if e["id"] == "h100_sxm-multi-gcp-a3-mega-all_reduce"][0]
    at_1g = [r["out_of_place"]["busbw"] for r in NP.parse_text(text)["rows"] if r["size"] == 1 << 30]
    assert a3["figures"] == [(1 << 30, at_1g[0]), (GIB8, 338.82)]


# --------------------------------------------------------------------------- GPU names

@pytest.mark.parametrize("name, model", [
    ("NVIDIA H100 80GB HBM3", "h100_sxm"),
    ("NVIDIA A100-SXM4-80GB", "a100_sxm"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA H200 NVL", "h200_nvl"),     # listed before H200: first match wins
    ("NVIDIA GH200 120GB", "gh200"),     # contains "H200": GH200 is listed first
    ("NVIDIA GB200", "gb200"),           # "GB200" contains "B200": GB200 is listed first
    ("NVIDIA B200", "b200"),
    ("AMD Instinct MI300X", "mi300x"),
    ("NVIDIA H100 PCIe", None),          # no NVSwitch: the SXM figure must not apply
    ("NVIDIA GeForce GTX 1080", None),
])
def test_gpu_name_to_model_first_match_wins(name, model):
    found = C.model_for(catalog(), name)
    assert (found["id"] if found else None) == model


def test_first_match_is_the_rule_the_busbw_bounds_use_too():
    assert G.first_match("NVIDIA GB200", ["B200", "GB200"]) == "B200"
    assert G.first_match("NVIDIA GB200", ["GB200", "B200"]) == "GB200"
    assert G.first_match("nvidia h100 pcie", ["H100 PCIe", "H100"]) == "H100 PCIe"
    assert G.first_match("NVIDIA A10", ["H100"]) is None
    assert G.bound_for(None, {"H100 PCIe": 200, "H100": 350}, ["NVIDIA H100 PCIe"]) == (
        200.0, "min_busbw_per_gpu[H100 PCIe] (NVIDIA H100 PCIe)")


# --------------------------------------------------------------------------- selection

def test_select_single_node_needs_the_gpu_count_of_the_figure():
    cat = catalog()
    e, model, why = C.select(cat, ["NVIDIA H100 80GB HBM3"], "all_reduce", "single_node", gpus_per_node=8)
    assert e["id"] == "h100_sxm-single-8-all_reduce" and model["label"] == "H100 SXM" and why is None
    e, model, why = C.select(cat, ["NVIDIA H100 80GB HBM3"], "all_reduce", "single_node", gpus_per_node=4)
    assert e is None and why == "the catalog has no single-node all_reduce expectation for H100 SXM with 4 GPUs per node"


def test_select_multi_node_needs_the_network():
    cat = catalog()
    e, model, why = C.select(cat, ["NVIDIA H100 80GB HBM3"], "all_reduce", "multi_node", gpus_per_node=8)
    assert e is None and model["id"] == "h100_sxm" and "no network was given" in why
    e = C.select(cat, ["NVIDIA H100 80GB HBM3"], "all_reduce", "multi_node", gpus_per_node=8,
                 network="GCP-A3-Mega-TCPXO")[0]
    assert e["id"] == "h100_sxm-multi-gcp-a3-mega-all_reduce"


def test_select_refuses_a_job_over_two_models_and_unknown_names():
    cat = catalog()
    assert C.select(cat, ["NVIDIA H100 80GB HBM3", "NVIDIA H200"], "all_reduce", "single_node")[2] == \
        "the job spans several GPU models (H100 SXM, H200)"
    assert C.select(cat, ["NVIDIA GeForce GTX 1080"], "all_reduce", "single_node")[2] == \
        "no catalog model matches the GPU name 'NVIDIA GeForce GTX 1080'"
    assert C.select(cat, [], "all_reduce", "single_node")[2] == "nccl-tests printed no GPU name"


# --------------------------------------------------------------------------- verdict

def h100_single():
    cat = catalog()
    e, model = C.select(cat, ["NVIDIA H100 80GB HBM3"], "all_reduce", "single_node", gpus_per_node=8)[:2]
    return e, model


def test_verdict_below_explains_itself_in_plain_words():
    e, model = h100_single()
    v = C.verdict("te7", "all_reduce", 312.0, GIB8, e, model)
    assert v["status"] == C.BELOW and v["deficit_pct"] == 34.8
    assert v["text"] == (
        "te7: all_reduce busbw 312 GB/s at 8 GiB, 35 % below the H100 SXM single-node expectation of 479 GB/s, "
        "more than the 10 % tolerance (source: Azure AI Benchmarking Guide, ND H100 v5 results (NCCL AllReduce, "
        "NVLS algorithm, in-place busbw at 8G), https://github.com/yosoyjay/AI-benchmarking-guide/blob/"
        "a8263ef1e16a3b8811f8e3c59fab9045f016dee8/Azure_Results/ND_H100_v5_results.md)")


def test_verdict_within_tolerance_passes_and_says_how_close():
    e, model = h100_single()
    v = C.verdict("te7", "all_reduce", 460.2, GIB8, e, model)
    assert v["status"] == C.PASS
    assert v["text"].startswith("te7: all_reduce busbw 460 GB/s at 8 GiB, 4 % below the H100 SXM single-node "
                                "expectation of 479 GB/s, within the 10 % tolerance (source: ")
    assert C.verdict("te7", "all_reduce", 490.0, GIB8, e, model)["text"].startswith(
        "te7: all_reduce busbw 490 GB/s at 8 GiB, 2 % above the H100 SXM")


def test_verdict_at_the_tolerance_edge():
    e, model = h100_single()
    bound = 478.87 * 0.9
    assert C.verdict("h", "all_reduce", bound + 0.01, GIB8, e, model)["status"] == C.PASS
    assert C.verdict("h", "all_reduce", bound - 0.01, GIB8, e, model)["status"] == C.BELOW


def test_verdict_not_compared_below_the_figure_s_size():
    e, model = h100_single()
    v = C.verdict("te7", "all_reduce", 120.0, 128 << 20, e, model)
    assert v["status"] == C.NOT_COMPARED
    assert v["text"] == ("te7: all_reduce busbw 120 GB/s at 128 MiB, not compared: the H100 SXM single-node "
                         "expectation has figures from 1 GiB, the largest size measured is smaller (raise maxbytes)")


def test_verdict_uses_the_figure_at_the_largest_size_the_run_reached():
    e, model = h100_single()
    assert e["figures"] == [(1 << 30, 466.35), (GIB8, 478.87)]
    # The role's default sweep ends at 1G: the source's 1G figure applies.
    v = C.verdict("te7", "all_reduce", 300.0, 1 << 30, e, model)
    assert (v["status"], v["expected_busbw"], v["expected_size"]) == (C.BELOW, 466.35, 1 << 30)
    assert v["text"].startswith("te7: all_reduce busbw 300 GB/s at 1 GiB, 36 % below the H100 SXM single-node "
                                "expectation of 466 GB/s, more than")
    # 4 GiB reached: still the 1G figure (no published one in between), and the text says which size it is for.
    v = C.verdict("te7", "all_reduce", 470.0, 4 << 30, e, model)
    assert v["status"] == C.PASS and v["text"].startswith(
        "te7: all_reduce busbw 470 GB/s at 4 GiB, 1 % above the H100 SXM single-node expectation of 466 GB/s at 1 GiB, "
        "within the 10 % tolerance")


def test_bad_busbw_at_is_refused():
    doc = copy.deepcopy(shipped())
    doc["expectations"][0]["busbw_at"] = {"1G": 0}
    with pytest.raises(C.CatalogError) as err:
        C.validate(doc)
    assert "busbw_at[1G] must be a positive number of GB/s, got 0" in str(err.value)
    doc["expectations"][0]["busbw_at"] = {"1X": 5}
    with pytest.raises(C.CatalogError) as err:
        C.validate(doc)
    assert "busbw_at size must be a byte count" in str(err.value)


def test_verdict_without_a_published_figure_says_so():
    cat = catalog()
    e, model = C.select(cat, ["NVIDIA B200"], "all_reduce", "single_node", gpus_per_node=8)[:2]
    v = C.verdict("b1", "all_reduce", 650.0, GIB8, e, model)
    assert v["status"] == C.NOT_COMPARED
    assert "not compared: the B200 single-node expectation has no published figure (no public nccl-tests" in v["text"]
    v = C.verdict("x", "all_reduce", 1.5, GIB8, None, None, "no catalog model matches the GPU name 'A10'")
    assert v["text"] == ("x: all_reduce busbw 1.5 GB/s at 8 GiB, not compared with an expectation: no catalog model "
                         "matches the GPU name 'A10'")


# --------------------------------------------------------------------------- overrides

def test_override_with_a_catalog_id_replaces_the_figure():
    over = {"expectations": [{"id": "h100_sxm-single-8-all_reduce", "model": "h100_sxm", "scope": "single_node",
                              "gpus": 8, "test": "all_reduce", "min_size": "8G", "busbw": 455, "tolerance_pct": 5,
                              "source": {"title": "our acceptance run", "url": None}}]}
    cat = C.merge(shipped(), over)
    e, model = C.select(cat, ["NVIDIA H100 80GB HBM3"], "all_reduce", "single_node", gpus_per_node=8)[:2]
    assert (e["busbw"], e["tolerance_pct"], e["source"]["title"]) == (455.0, 5.0, "our acceptance run")
    assert len([x for x in cat["expectations"] if x["id"] == e["id"]]) == 1
    v = C.verdict("te7", "all_reduce", 430.0, GIB8, e, model)
    assert v["status"] == C.BELOW and v["text"].endswith("(source: our acceptance run)")


def test_override_model_rule_is_tried_before_the_catalog_s():
    over = {"models": [{"id": "h100_pcie", "label": "H100 PCIe", "match": ["H100 PCIe"]}],
            "expectations": [{"id": "h100_pcie-single-2", "model": "h100_pcie", "scope": "single_node", "gpus": 2,
                              "test": "all_reduce", "busbw": 40, "source": {"title": "ours"}}]}
    cat = C.merge(shipped(), over)
    assert cat["models"][0]["id"] == "h100_pcie"
    e, model = C.select(cat, ["NVIDIA H100 PCIe"], "all_reduce", "single_node", gpus_per_node=2)[:2]
    assert (model["label"], e["busbw"]) == ("H100 PCIe", 40.0)
    # The shipped catalog is untouched by the merge.
    assert C.model_for(catalog(), "NVIDIA H100 PCIe") is None


@pytest.mark.parametrize("change, message", [
    (lambda e: e.update(scope="rack"), "scope must be one of single_node, multi_node, got 'rack'"),
    (lambda e: e.update(busbw=-3), "busbw must be a positive number of GB/s, or null"),
    (lambda e: e.update(busbw="fast"), "busbw must be a positive number of GB/s, or null"),
    (lambda e: e.pop("source"), "source must say where the figure comes from"),
    (lambda e: e.update(tolerance_pct=120), "tolerance_pct must be a number from 0 to 99"),
    (lambda e: e.update(min_size="8T"), "min_size must be a byte count"),
    (lambda e: e.update(model="h900"), "names model 'h900', which no entry of models defines"),
])
def test_bad_catalog_entries_are_refused_with_the_entry_named(change, message):
    doc = copy.deepcopy(shipped())
    change(doc["expectations"][0])
    with pytest.raises(C.CatalogError) as err:
        C.validate(doc)
    assert message in str(err.value)
    assert "a100_sxm-single-8-all_reduce" in str(err.value) or "expectations[0]" in str(err.value)


def test_bad_override_is_refused():
    with pytest.raises(C.CatalogError) as err:
        C.merge(shipped(), {"models": [{"id": "x", "match": []}]})
    assert "models[0] (x): match must be a non-empty list" in str(err.value)


def test_human_size():
    sizes = [C.human_size(n) for n in (GIB8, 128 << 20, 4096, 1000, None)]
    assert sizes == ["8 GiB", "128 MiB", "4 KiB", "1000 B", "?"]
