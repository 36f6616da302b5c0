# -*- coding: utf-8 -*-
"""The report document the fabric_report action builds, reduced to what the renderer and
the judge need, for the report tests that start from per-host facts."""

from ansible_collections.aiinfra.fabric.plugins.module_utils.report import collect as K, judge as J, model as M


def report_document(host_facts, run_id="t", generated="2026-12-01T00:00:00Z", outlier_opts=None):
    """collect -> derive_metrics -> evaluate, as plugins/action/fabric_report.py chains them.
    outlier_opts None: the judge's default outlier options; {} turns its defaults on explicitly."""
    benchmarks, hosts = K.collect(host_facts)
    metrics = M.derive_metrics(benchmarks, hosts)
    doc = {"schema": M.SCHEMA, "schema_version": M.SCHEMA_VERSION,
           "run": {"id": run_id, "generated": generated, "label": ""}, "hosts": hosts,
           "benchmarks": benchmarks, "metrics": metrics, "baseline": None}
    if outlier_opts is None:
        doc["checks"], doc["summary"] = J.evaluate(metrics)
    else:
        doc["checks"], doc["summary"] = J.evaluate(metrics, outlier_opts=outlier_opts)
    return doc
