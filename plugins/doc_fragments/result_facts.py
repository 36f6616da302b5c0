# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """The result facts the report reads, for the modules that take a list of them.

    The list is the report's benchmark registry's (plugins/module_utils/report/benchmarks,
    RESULT_FACTS, in its order); documentation must be static YAML, so
    tests/unit/plugins/module_utils/test_report_registry.py keeps the two equal. Each module
    gives the option its own description.
    """

    DOCUMENTATION = r"""
options:
  facts:
    type: list
    elements: str
    choices: [nvmeof_target_result, nvmeof_initiator_result, mpi_bench_result, nccl_tests_result, fabric_sweep_result, fabric_health_result]
    default: [nvmeof_target_result, nvmeof_initiator_result, mpi_bench_result, nccl_tests_result, fabric_sweep_result, fabric_health_result]
"""
