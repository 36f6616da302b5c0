# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the report knows about one kind of benchmark: one :class:`Benchmark` per module of
this package, listed once in the registry (``registry.py``; the package's ``__init__.py`` stays empty,
as ansible-test sanity's empty-init test requires on ansible-core 2.16).

collect (facts -> records), derive_metrics (records -> metrics), the built-in checks, the CSV
files, the sections of report.html, the plots and the summary lines loop over the registry;
none of them names a benchmark.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import EXACT


class Benchmark(object):
    """One kind of benchmark result, as the report reads, measures, judges and shows it.

    ``name``: its record list in results.json's ``benchmarks``, the prefix of its metrics
    (``nccl.busbw_peak``) and the stem of its CSV file (``nccl.csv``).

    ``facts``: the result facts it owns, in the order the report lists them. The report
    collects, saves and summarizes the facts of the registry's benchmarks and no others.
    Empty for a benchmark read out of another's fact (fio, from ``nvmeof_initiator_result``).

    ``read(host, facts, run)``: the host's records, from all its facts (name -> value);
    None when there is nothing of this host's to read (no fact, or a fact that belongs to
    the node that launched the job). ``run`` is the :class:`RunFacts` of all hosts.

    ``fact_verdict``: a fact of its own that says it failed, when none of its records
    carries the failure, becomes a record in ``verdicts`` (and so a failed check).

    ``host_info``: record fields that describe the host (``gpu_model``, ``transport``) where
    the inventory does not.

    ``metrics(records, add)``: calls ``add(host, metric, value, unit, better, labels,
    note=None, info=None)`` for each scalar metric of its records (a None value is dropped;
    ``info`` overrides the host's attributes for that metric).

    ``expect``: ``{metric: value}``, the built-in correctness checks (``{"wrong": 0}``).

    ``csv_columns`` and ``csv_rows(records)``: its CSV file (default: one row per record).

    ``summary(host, fact_name, fact)``: the summary lines of one of its facts, without the
    host name in front.

    ``section(records)``: its part of report.html, ``{"title", "columns", "rows",
    "numeric"}`` and optionally ``"notes"`` (``[{"badge", "text", "lines"}]``, paragraphs
    above the table).

    ``plot(plt, records)``: optional, its plots as ``[(id, caption, svg bytes)]``; and
    ``plot_anchor(check)``, the id of the plot a failed check of its metrics is drawn in.
    """

    def __init__(self, name, facts, read, metrics, expect, csv_columns, section, summary=None, csv_rows=None,
                 fact_verdict=False, host_info=(), plot=None, plot_anchor=None):
        self.name = name
        self.facts = tuple(facts)
        self.read = read
        self.metrics = metrics
        self.expect = dict(expect)
        self.csv_columns = list(csv_columns)
        self.section = section
        self.summary = summary
        self.csv_rows = csv_rows or list
        self.fact_verdict = fact_verdict
        self.host_info = tuple(host_info)
        self.plot = plot
        self.plot_anchor = plot_anchor or (lambda check: None)

    def __repr__(self):
        return "Benchmark(%r)" % self.name


class RunFacts(object):
    """The facts of every host of one collect(), and what readers remember across hosts."""

    def __init__(self, host_facts):
        self.host_facts = host_facts
        self._seen = {}

    def seen(self, name):
        """A set that lives for one collect(), one per ``name`` (a benchmark drops what it read already)."""
        return self._seen.setdefault(name, set())

    def published_by_other(self, host, name, fact):
        """A role that sets the same fact on every node of a job: count it once, on the launching node."""
        launcher = fact.get("launched_from") if isinstance(fact, dict) else None
        if not launcher or launcher == host or launcher not in self.host_facts:
            return False
        return (self.host_facts[launcher] or {}).get(name) == fact


def add_run_passed(add, record, labels):
    """The ``run_passed`` metric of a record that says whether it passed (checked against True)."""
    if record.get("passed") is not None:
        add(record["host"], "run_passed", bool(record["passed"]), "bool", EXACT, labels, record.get("failure"))
