# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The sweep's expectations: given per test, or from the expected-busbw catalog (pure).

Without an expectation a sweep can only compare the nodes with each other, which cannot
see a degraded majority (see :mod:`rank`). For an nccl-tests busbw test the GPU model is
known from the job's own output (the device lines nccl-tests prints), so the catalog's
multi-node figure for that model, GPUs per node and network can stand in for a missing
``expect``.

``nccl_test_name(program) -> 'all_reduce'`` (or None)
    The nccl-tests test a binary runs (``.../all_reduce_perf``, ``all_reduce_perf_mpi``).
``from_catalog(tests, measurements, catalog, network) -> (found, notes)``
    ``found``: ``{test name: {'test', 'expect', 'origin': 'catalog', 'expectation_id',
    'model', 'size', 'source', 'text'}}`` for each nccl busbw test without ``expect`` whose
    jobs printed one GPU model the catalog knows; ``notes``: ``{test name: why not}`` for
    the others.
``used(tests, found) -> [{'test', 'expect', 'origin', ...}]``
    Every expectation the ranking uses and where it came from (``expect`` or ``catalog``).
"""

from __future__ import annotations

import os
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import catalog as C
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.command import TESTS as NCCL_TESTS

# The catalog's figures are bus bandwidth; in-place and out-of-place differ by far less
# than any tolerance at the sizes the catalog publishes.
_CATALOG_METRICS = ("busbw", "in_place_busbw")
_PERF = re.compile(r"^([a-z_]+?)_perf(?:_\w+)?$")


def nccl_test_name(program):
    m = _PERF.match(os.path.basename(str(program or "")))
    if m and m.group(1) in NCCL_TESTS:
        return m.group(1)
    return None


def from_catalog(tests, measurements, catalog, network=None):
    """Catalog expectations for the nccl busbw tests without ``expect`` (see the module doc)."""
    found = {}
    notes = {}
    if not catalog:
        return found, notes
    catalog = C.validate(catalog)
    for test in tests:
        if test["expect"] is not None or test["parse"] != "nccl" or test["metric"] not in _CATALOG_METRICS:
            continue
        name = test["name"]
        nccl_test = nccl_test_name(test["program"])
        if nccl_test is None:
            notes[name] = "the catalog has no figure for the program %s (not an nccl-tests binary)" % test["program"]
            continue
        mine = [m for m in measurements if m["test"] == name and m["value"] is not None]
        models = sorted(set(g for m in mine for g in m.get("gpu_models") or []))
        per_node = sorted(set(m.get("gpus_per_node") for m in mine if m.get("gpus_per_node")))
        sizes = sorted(set(m["size"] for m in mine if m.get("size") is not None))
        expectation, model, why_not = C.select(catalog, models, nccl_test, "multi_node",
                                               gpus_per_node=per_node[0] if len(per_node) == 1 else None,
                                               network=network)
        if expectation is None:
            notes[name] = "the catalog: %s" % why_not
            continue
        label = model["label"] if model else expectation["model"]
        if expectation["busbw"] is None:
            notes[name] = "the catalog's %s entry has no published figure (%s)" % (
                expectation["id"], expectation["source"]["title"])
            continue
        figure = C.figure_at(expectation, sizes[0] if sizes else None)
        if figure is None or len(sizes) != 1:
            notes[name] = "the catalog's %s figures start at %s, above the size measured (%s)" % (
                expectation["id"], C.human_size(expectation["figures"][0][0]),
                ", ".join(C.human_size(size) for size in sizes) or "none")
            continue
        size, busbw = figure
        found[name] = {
            "test": name, "expect": busbw, "origin": "catalog", "expectation_id": expectation["id"],
            "model": label, "size": size, "source": expectation["source"]["title"],
            "text": "%s: expected %g GB/s at %s - the catalog's %s figure for %s over %s (%s)" % (
                name, busbw, C.human_size(size), expectation["id"], label, expectation["network"],
                expectation["source"]["title"]),
        }
    return found, notes


def used(tests, found):
    """Each test's expectation and its origin, in the order of ``tests`` (those without one left out)."""
    result = []
    for test in tests:
        if test["expect"] is not None:
            result.append({"test": test["name"], "expect": test["expect"], "origin": "expect"})
        elif test["name"] in found:
            result.append(dict(found[test["name"]]))
    return result
