# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A few readable lines per host from its result facts, for the end of each playbook.

What was set up (target, initiator, its device and mount), the I/O check's outcome, fio
IOPS/bandwidth/p99 latency, the MPI jobs and their key numbers, each NCCL run's bus
bandwidth and verdict, the sweep's suspects: each result fact's lines come from the
benchmark that owns it (report/benchmarks/), which reads the fact with the report's own
adapters, so the summary and the report read the facts alike. Used by the
``result_summary`` filter.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import FACT_OWNER, RESULT_FACTS
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.checks import FAIL, check_builtin
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.collect import collect
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.model import derive_metrics


def host_lines(host, facts):
    """The summary lines of one host, each starting with the host's name."""
    lines = []
    for name in RESULT_FACTS:
        fact = facts.get(name)
        if isinstance(fact, dict):
            lines += FACT_OWNER[name].summary(host, name, fact)
    return ["%s: %s" % (host, line) for line in lines] or ["%s: no results" % host]


def host_failed(host, facts):
    """Whether the host's results fail the report's built-in checks (a failed run, a wrong sum, ...)."""
    benchmarks, hosts = collect({host: facts})
    return any(c["status"] == FAIL for c in check_builtin(derive_metrics(benchmarks, hosts)))


def summary_lines(host_facts, failed_only=False):
    """``{host: {fact: value}}`` -> lines, hosts in the order given; ``failed_only``: hosts that failed."""
    out = []
    for host, facts in host_facts.items():
        if failed_only and not host_failed(host, facts or {}):
            continue
        out += host_lines(host, facts or {})
    return out
