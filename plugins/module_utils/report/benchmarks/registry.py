# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The benchmark registry of fabric_report: one module per kind of benchmark result.

Each module (nvmeof.py, fio.py, ...) ends with a ``BENCHMARK`` (benchmarks/kind.py) that
says which result facts it owns, how to read them, its metrics, its built-in expectations,
its CSV columns, its part of report.html and its summary lines. The report's steps loop over
:data:`REGISTRY`; the result-fact list everywhere else (module options, the role's
argument specs, the AWX survey) is :data:`RESULT_FACTS`, kept equal by
tests/unit/plugins/module_utils/test_report_registry.py. docs/architecture.md says what a
new benchmark touches.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks import fio, health, mpi, nccl, nvmeof, sweep

# In the order of their result facts: the order the report lists a host's results, and the
# order of the summary lines.
REGISTRY = (nvmeof.BENCHMARK, fio.BENCHMARK, mpi.BENCHMARK, nccl.BENCHMARK, sweep.BENCHMARK, health.BENCHMARK)

# The order of the benchmarks' sections in report.html.
SECTION_ORDER = ("health", "nccl", "mpi", "fio", "sweep", "nvmeof")

BENCHMARKS = tuple(b.name for b in REGISTRY)
RESULT_FACTS = tuple(fact for b in REGISTRY for fact in b.facts)
BY_NAME = dict((b.name, b) for b in REGISTRY)
FACT_OWNER = dict((fact, b) for b in REGISTRY for fact in b.facts)


def sections():
    """The benchmarks in the order of report.html's sections."""
    return [BY_NAME[name] for name in SECTION_ORDER]


def builtin_expect():
    """``{"<benchmark>.<metric>": value}``: the built-in correctness checks of every benchmark."""
    return dict(("%s.%s" % (b.name, metric), want) for b in REGISTRY for metric, want in b.expect.items())
