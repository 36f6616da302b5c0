"""The hello/reduce/allreduce programs' lines: the seed's wording and the role's (with host)."""

from __future__ import annotations

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.parsers import parse_seed

# Lines as the seed's programs print them (section 3.5 of the seed document), 4 ranks.
SEED_ALLREDUCE = """Process 0 contributing data 0
Process 2 contributing data 2
Process 1 contributing data 1
Process 3 contributing data 3
Process 0 received reduced sum 6 via Allreduce (Expected: 6)
Process 3 received reduced sum 6 via Allreduce (Expected: 6)
Process 1 received reduced sum 6 via Allreduce (Expected: 6)
Process 2 received reduced sum 6 via Allreduce (Expected: 6)
"""

# The role's programs, captured in the lab (te1 slots=2, te2 slots=1, --tag-output removed).
ROLE_ALLREDUCE = """Process 2 on te2 contributing data 2
Process 0 on te1 contributing data 0
Process 1 on te1 contributing data 1
Process 1 on te1 received reduced sum 3 via Allreduce (Expected: 3)
Process 0 on te1 received reduced sum 3 via Allreduce (Expected: 3)
Process 2 on te2 received reduced sum 3 via Allreduce (Expected: 3)
"""

ROLE_REDUCE = """Process 3 on te1 contributing 3
Process 0 on te1 contributing 0
Process 1 on te1 contributing 1
Process 2 on te1 contributing 2
Process 0 on te1 (root) received reduced sum: 6 (Expected: 6)
"""

HELLO = """Hello from processor te1, rank 1 out of 3 processors
Hello from processor te2, rank 2 out of 3 processors
Hello from processor te1, rank 0 out of 3 processors
"""


def test_seed_allreduce_lines():
    r = parse_seed(SEED_ALLREDUCE)
    assert r["all_match"] is True
    assert [(x["op"], x["rank"], x["received"], x["expected"]) for x in r["results"]] == [
        ("allreduce", i, 6, 6) for i in range(4)]
    assert r["world_size"] == 4 and r["ranks"] == [0, 1, 2, 3]
    assert r["results"][0]["host"] is None


def test_role_allreduce_lines_carry_hosts():
    r = parse_seed(ROLE_ALLREDUCE)
    assert r["hosts"] == {0: "te1", 1: "te1", 2: "te2"}
    assert r["contributions"] == [{"rank": 0, "host": "te1", "value": 0}, {"rank": 1, "host": "te1", "value": 1},
                                  {"rank": 2, "host": "te2", "value": 2}]
    assert r["all_match"] is True


def test_reduce_root_line():
    r = parse_seed(ROLE_REDUCE)
    assert r["results"] == [{"op": "reduce", "rank": 0, "host": "te1", "received": 6, "expected": 6, "match": True}]
    assert r["world_size"] == 4


def test_hello_lines_give_world_size_and_hosts():
    r = parse_seed(HELLO)
    assert r["hello"] == [{"rank": 0, "size": 3, "host": "te1"}, {"rank": 1, "size": 3, "host": "te1"},
                          {"rank": 2, "size": 3, "host": "te2"}]
    assert r["world_size"] == 3 and r["results"] == [] and r["all_match"] is False


def test_wrong_sum_is_reported_not_hidden():
    r = parse_seed("Process 1 on te2 received reduced sum 5 via Allreduce (Expected: 6)\n")
    assert r["results"][0]["match"] is False and r["all_match"] is False


def test_nothing_recognised_is_an_error():
    with pytest.raises(ValueError, match="no hello/reduce/allreduce lines"):
        parse_seed("# OSU MPI Latency Test v7.5\n")
