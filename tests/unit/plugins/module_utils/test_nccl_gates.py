"""Bad or incomplete nccl-tests outputs must fail clearly, never pass quietly.

Each case starts from a real output (cscs_gh200_all_reduce_srun_2.17.1.txt, see the
fixtures README) and damages it the way a run goes wrong: a NaN, a table cut off by a
kill, a row printed half, a non-numeric #wrong, the memory-limit "Reducing maxBytes"
line, another rank's lines mixed in. The damage is done here, in the test, so the
fixture stays as published.
"""

from __future__ import annotations

import os

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import gates as G
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import parse as NP

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl_tests")
LAST_ROW = ("   134217728      33554432     float     sum      -1   1916.4   70.04  122.57      0   1907.8"
            "   70.35  123.11      0")


def gh200():
    with open(os.path.join(FIXTURES, "cscs_gh200_all_reduce_srun_2.17.1.txt")) as handle:
        text = handle.read()
    assert LAST_ROW in text
    return text


def gates(text, **bounds):
    report = NP.parse_text(text)
    return report, G.check_gates(report, G.summarize(report), "nid005471", **bounds)


def test_the_real_output_passes():
    report, failures = gates(gh200(), min_busbw=100)
    assert failures == [] and report["problems"] == []


def test_nan_busbw_at_the_largest_size_fails():
    text = gh200().replace(LAST_ROW, LAST_ROW.replace("  122.57", "     nan"))
    report, failures = gates(text, min_busbw=100)
    assert any("134217728" in f and "nan" in f for f in failures), failures
    # The gate does not quietly move to the previous size either.
    assert G.summarize(report)["largest_size"] != 67108864 or failures


def test_inf_busbw_fails_even_without_a_bound():
    text = gh200().replace(LAST_ROW, LAST_ROW.replace("  122.57", "     inf"))
    _report, failures = gates(text)
    assert any("inf" in f for f in failures), failures


def test_a_table_cut_off_without_footer_fails():
    text = gh200()
    cut = text[:text.index("    33554432       8388608")]  # killed after the 16 MiB row
    report, failures = gates(cut, min_busbw=10)
    assert any("no footer" in f for f in failures), failures
    assert any("134217728" in f and "16777216" in f for f in failures), failures


def test_a_half_printed_row_is_not_filed_as_in_place():
    half = LAST_ROW[:LAST_ROW.index("   1907.8")]  # out-of-place numbers only
    report, failures = gates(gh200().replace(LAST_ROW, half), min_busbw=100)
    assert all(r["size"] != 134217728 for r in report["rows"])
    assert any("134217728" in f and "cut short" in f for f in failures), failures


def test_non_numeric_wrong_fails_but_na_does_not():
    bad = LAST_ROW + "?"
    report, failures = gates(gh200().replace(LAST_ROW, bad), min_busbw=100)
    assert any("#wrong" in f and "'0?'" in f for f in failures), failures
    na = LAST_ROW[:-6] + "   N/A"
    report, failures = gates(gh200().replace(LAST_ROW, na), min_busbw=100)
    assert failures == [], failures
    assert report["rows"][-1]["in_place"]["wrong"] is None


def test_a_row_with_non_numeric_time_is_reported_not_dropped():
    bad = LAST_ROW.replace("1916.4", "  ####")
    report, failures = gates(gh200().replace(LAST_ROW, bad), min_busbw=100)
    assert any("134217728" in f and "'####'" in f for f in failures), failures


def test_reduced_max_bytes_shows_and_the_gate_says_where_it_applied():
    text = gh200()
    # What nccl-tests prints when the GPU memory does not hold maxbytes (src/common.cu).
    text = text.replace("#\n# Using devices", "#\n# Reducing maxBytes to 67108864 due to memory limitation\n#\n"
                                              "# Using devices", 1)
    text = text.replace(LAST_ROW + "\n", "")
    report, failures = gates(text, min_busbw=100)
    # The sizes reached the reduced maxBytes: complete, and the gate passes there...
    assert report["max_bytes_reduced_to"] == 67108864 and failures == []
    assert G.gate_size(report, G.summarize(report)) == 67108864
    # ...and a failing gate says where it was applied and why that is not maxbytes.
    report, failures = gates(text, min_busbw=110)
    assert len(failures) == 1 and "(67108864 B)" in failures[0], failures
    assert "Reducing maxBytes to 67108864" in failures[0] and "134217728" in failures[0]
    # Without the line, the same missing row is a cut table.
    _report, failures = gates(text.replace("# Reducing maxBytes to 67108864 due to memory limitation\n", ""),
                              min_busbw=100)
    assert any("only 24 of the 25 sizes" in f for f in failures), failures


def test_first_matching_gpu_model_bound_wins():
    text = gh200().replace("NVIDIA GH200 120GB", "NVIDIA H100 PCIe")
    report = NP.parse_text(text)
    # As documented: the first key found in the name wins, not the strictest match.
    bound, origin = G.bound_for(None, {"H100 PCIe": 100, "H100": 450}, G.summarize(report)["gpu_models"])
    assert (bound, origin) == (100.0, "min_busbw_per_gpu[H100 PCIe] (NVIDIA H100 PCIe)")


def test_the_job_must_have_run_on_the_expected_gpus():
    report, failures = gates(gh200(), min_busbw=100, expected_gpus=16)
    assert any("8 GPUs" in f and "16" in f for f in failures), failures
    report, failures = gates(gh200(), min_busbw=100, expected_gpus=8)
    assert failures == []


def test_another_ranks_lines_do_not_merge_into_rank_0s_rows():
    lines = gh200().splitlines()
    tagged = ["[1,0]<stdout>:" + line for line in lines]
    # Rank 1 prints a stray row of its own (a second, independent table in the making).
    tagged.insert(len(tagged) - 4, "[1,1]<stdout>:   268435456      67108864     float     sum      -1"
                                   "   9999.9    1.00    1.00      0   9999.9    1.00    1.00      0")
    report = NP.parse_text("\n".join(tagged) + "\n")
    assert [r["size"] for r in report["rows"]][-1] == 134217728
    assert len(report["rows"]) == 25
    assert report["other_rank_rows"] == 1


def test_a_trace_replay_row_with_blank_out_of_place_is_still_in_place_only():
    # nccl-tests' trace replay prints 32 blanks where the out-of-place numbers go
    # (writeBenchMarkLineNullBody, src/util.cu) and measures in place only; that row is
    # legitimate and must stay distinguishable from a row cut after its first half.
    prefix = LAST_ROW[:LAST_ROW.index("   1916.4")]
    in_place = LAST_ROW[LAST_ROW.index("   1907.8"):]
    report = NP.parse_text(gh200().replace(LAST_ROW, prefix + " " * 32 + in_place))
    assert report["problems"] == []
    row = report["rows"][-1]
    assert row["out_of_place"] is None and row["in_place"]["busbw"] == 123.11
