# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done on the controller by the action plugin of the same name
# (plugins/action/fabric_report.py); this file carries the documentation.

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_report
short_description: Write one report of a run's benchmark results, judged against references, a baseline and peers
version_added: "0.1.0"
description:
  - Runs on the controller (an action plugin; it never connects to a host). Collects the result facts the
    collection's benchmark roles set on each host (O(facts) - the NVMe-oF target and initiator results, the
    latter with its fio summary, the MPI jobs, the NCCL runs with their catalog verdicts, the pairwise sweep with
    each pair's numbers and the suspects; docs/results-schema.md says what is read from each) from
    C(hostvars), and the results earlier C(ansible-playbook) runs saved in O(saved_results), and writes a new
    timestamped folder under
    O(output_dir) with C(results.json) (schema C(aiinfra.fabric.results) version 1, see docs/results-schema.md),
    one CSV per benchmark present, C(metrics.csv), C(checks.csv), C(summary.md) and a self-contained C(report.html)
    with plots (bus bandwidth against size per collective and host; fio IOPS, bandwidth and latency percentiles;
    MPI latency and bandwidth against size).
  - Every result becomes flat metrics (for example C(nccl.busbw_peak[test=all_reduce,...]), C(fio.lat_p99[...]),
    C(mpi.latency_min_size[...])) that are judged pass, warn or fail by built-in correctness checks (no wrong NCCL
    values, MPI sums right, fio without errors, NVMe-oF I/O check passed), by ReFrame-style references (target,
    lower and upper tolerance, unit) selected per metric, host, host class, GPU model and transport, by a previous
    C(results.json) used as a baseline, and by comparison with the host's peers in the same run (outliers, by median
    and median absolute deviation).
  - A result that says it failed (C(failed), C(passed=false), an error C(msg), a non-zero C(rc), failed checks)
    fails the report, as does a gated metric that is missing (in the baseline, or named by a gated reference for a
    host that has that benchmark's results) and a report without any result.
  - "Paths: every relative path (O(output_dir), O(baseline), O(inputs), O(thresholds_file), O(save_baseline),
    O(saved_results)) is relative to the directory C(ansible-playbook) runs in (under AWX, the project folder);
    C(~) and environment variables are expanded."
  - The task fails when a gated check fails, with one line per failure naming host, metric, value and bound.
    The report is written first, so the failing run can be looked at.
  - Needs matplotlib on the controller when O(plots=true).
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - On the controller, Python's matplotlib when O(plots=true) (the default); nothing on the hosts.
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.controller_action
  - aiinfra.fabric.result_facts
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: In check mode everything is computed and returned, and nothing is written.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
    support: none
    details: Every run writes a new results folder, so the task always reports a change.
options:
  output_dir:
    description:
      - Folder under which the run's folder (named O(run_id)) is created. Relative to the directory
        C(ansible-playbook) runs in, like every path option.
    type: path
    required: true
  run_id:
    description:
      - Name of the run's folder and the run's id in C(results.json). Default is the UTC time, C(20261130T051500Z).
      - When the folder exists, C(-2), C(-3), ... is appended.
    type: str
  label:
    description: Free text shown at the top of the report (what was run, why).
    type: str
    default: ""
  hosts:
    description:
      - Hosts whose results are collected (from C(hostvars) and O(saved_results)). Default is every host in the
        inventory and every host with saved results; hosts without any result are left out.
    type: list
    elements: str
  facts:
    description: Result facts to collect.
  inputs:
    description:
      - More results to include, as files (JSON, or YAML ending in C(.yml)/C(.yaml)) holding either a previous
        C(results.json), whose benchmark records are taken as they are, or a mapping of host name to result facts.
      - Re-judges an old run against new references, or adds results captured elsewhere.
    type: list
    elements: path
    default: []
  thresholds:
    description:
      - Reference entries, after those of O(thresholds_file) (an entry here wins a tie with the file's).
      - Each entry has C(metric) (C(<benchmark>.<metric>), globs allowed), optional C(match) (selector to glob
        pattern; selectors are C(host), C(host_class), C(gpu_model), C(transport) and the metric's labels such as
        C(test), C(job), C(direction), C(program), C(scope)), either C(target) with C(lower)/C(upper) fractions
        (ReFrame style, C(-0.1) = 10 % below; C(null) leaves a side open) or absolute C(min)/C(max), optional
        C(unit) (must equal the metric's unit), C(warn_lower)/C(warn_upper) (a narrower band that warns) and
        C(gate) (default C(true); C(false) makes an out-of-bounds value a warning).
      - C(reference) as a list C([target, lower, upper, unit]) is accepted too.
      - The most specific matching entry (most selectors) is used for each metric.
    type: list
    elements: dict
    default: []
  thresholds_file:
    description: A YAML or JSON file with a C(references) list in the format of O(thresholds).
    type: path
  baseline:
    description:
      - A previous C(results.json) (a path ending in C(.json)), or a folder holding one (for example
        C(results/latest)). Each metric
        with the same id (host, metric and labels) is compared with its baseline value in its worse direction.
      - Metrics of this run's hosts that are in the baseline but were not measured give a warning.
    type: path
  baseline_tolerance:
    description: Fraction by which a metric may be worse than its baseline value before the check fails.
    type: float
    default: 0.1
  baseline_warn:
    description: Fraction worse than the baseline from which the check warns. Not more than O(baseline_tolerance).
    type: float
    default: 0.05
  baseline_gate:
    description: Whether a metric beyond O(baseline_tolerance) fails the task (C(true)) or only warns.
    type: bool
    default: true
  outliers:
    description: Compare each host with its peers (same metric and labels, same GPU model and host class).
    type: bool
    default: true
  outlier_z:
    description:
      - A host is an outlier when its value is worse than the median of its group (same metric and labels, GPU model
        and host class) by more than O(outlier_z) robust standard deviations (1.4826 times the median absolute
        deviation) and by more than O(outlier_min_deviation).
    type: float
    default: 3.5
  outlier_min_deviation:
    description: Fraction of the median a host must also be worse by to be an outlier (hosts that barely differ).
    type: float
    default: 0.1
  outlier_min_hosts:
    description: Hosts a group needs before any of them is judged against the others (at least 3).
    type: int
    default: 4
  outlier_gate:
    description: Whether an outlier fails the task (C(true)) or only warns.
    type: bool
    default: false
  builtin_gate:
    description: Whether the built-in correctness checks fail the task.
    type: bool
    default: true
  plots:
    description: Draw the plots (needs matplotlib on the controller). C(false) writes the page without them.
    type: bool
    default: true
  save_baseline:
    description:
      - Also write this run's C(results.json) when no check failed, for the next run's O(baseline). A path ending
        in C(.json) is the file; any other path is a folder (created when missing) that gets C(results.json).
      - When the file exists, each metric keeps the better of its stored value and this run's, so runs a little
        worse each time cannot lower the baseline step by step.
    type: path
  saved_results:
    description:
      - Folder of results saved by earlier runs, C(<host>/<fact>.json) (the main playbooks save them there through
        the role C(aiinfra.fabric.fabric_report), C(tasks_from=save.yml)); a missing folder gives nothing. A fact
        set in this run wins over a saved one. See docs/results-schema.md.
    type: path
  update_latest:
    description: Point the symbolic link C(latest) in O(output_dir) at this run's folder.
    type: bool
    default: true
  fail_on_gate:
    description: Fail the task when a gated check fails. C(false) only reports.
    type: bool
    default: true
  host_class_var:
    description: Host variable naming a host's class, for reference selectors and peer groups.
    type: str
    default: fabric_host_class
  gpu_model_var:
    description:
      - Host variable naming a host's GPU model. Without it, the GPU model comes from the device list of the host's
        NCCL results.
    type: str
    default: gpu_model
  transport_var:
    description: Host variable naming a host's transport; without it, the NVMe-oF results' transport is used.
    type: str
    default: fabric_transport
seealso:
  - name: Results schema
    description: The fields of results.json, docs/results-schema.md in the collection.
    link: https://example.invalid/aiinfra/fabric/docs/results-schema.md
notes:
  - The roles C(aiinfra.fabric.fabric_report) and the playbook C(aiinfra.fabric.fabric_report) wrap this module.
"""

EXAMPLES = r"""
- name: Report the run, compare with the previous one and gate on references
  aiinfra.fabric.fabric_report:
    output_dir: results
    baseline: results/latest
    thresholds:
      - metric: nccl.busbw_max_size
        match: {test: all_reduce, gpu_model: "NVIDIA H100*", scope: single}
        target: 360
        lower: -0.1
        upper: null
        unit: GB/s
      - metric: fio.lat_p99
        match: {transport: rdma}
        max: 2000
        unit: us
  register: report

- name: Re-judge an old run against a stricter thresholds file, without plots
  aiinfra.fabric.fabric_report:
    output_dir: /tmp/rejudged
    hosts: []
    saved_results: ""
    inputs: [results/20261130T051500Z/results.json]
    thresholds_file: thresholds/h100.yml
    plots: false
"""

RETURN = r"""
path:
  description: The run's results folder.
  returned: always
  type: str
  sample: /home/me/cluster/results/20261130T051500Z
run_id:
  description: The run's id (the folder's name).
  returned: always
  type: str
  sample: 20261130T051500Z
files:
  description: Files in the folder.
  returned: always
  type: list
  elements: str
  sample: [checks.csv, fio.csv, metrics.csv, mpi.csv, nvmeof.csv, report.html, results.json, summary.md]
status:
  description: C(pass), C(warn) or C(fail), the worst check.
  returned: always
  type: str
  sample: pass
summary:
  description: The run's verdict in numbers and lines.
  returned: always
  type: dict
  sample:
    status: fail
    metrics: 48
    checks: {pass: 51, warn: 0, fail: 1}
    failures:
      - "te2: fio.iops[direction=read,job=seqread,transport=rdma] = 5,210 IOPS, bound >= 7,830 IOPS (baseline good: ...)"
    warnings: []
    outliers: []
  contains:
    status:
      description: C(pass), C(warn) or C(fail), the worst check (C(fail) when there was no result at all).
      type: str
    metrics:
      description: How many metrics the results gave.
      type: int
    checks:
      description: How many checks ended C(pass), C(warn) and C(fail).
      type: dict
      contains:
        pass:
          description: Checks that passed.
          type: int
        warn:
          description: Checks that warned (not gated).
          type: int
        fail:
          description: Checks that failed.
          type: int
    failures:
      description: One line per failed check - host, metric, value, bound and where the bound came from.
      type: list
      elements: str
    warnings:
      description: One line per warning, in the same form.
      type: list
      elements: str
    outliers:
      description: The ids of the metrics whose outlier check did not pass.
      type: list
      elements: str
baseline_saved:
  description: Whether O(save_baseline) was written.
  returned: always
  type: bool
  sample: false
msg:
  description: One line of summary, or the failure lines.
  returned: always
  type: str
  sample: "fabric_report: pass, 48 metrics, 0 warning(s); report in /home/me/cluster/results/20261130T051500Z"
"""
