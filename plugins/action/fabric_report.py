# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for aiinfra.fabric.fabric_report: runs on the controller only.

Collects the benchmark result facts of the play's hosts from hostvars, judges them
(module_utils.report.checks) and writes the results folder (module_utils.report.render). See the module
documentation in plugins/modules/fabric_report.py.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import socket

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import (
    publish_folder,
    replace_symlink,
    write_atomically,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.baseline import load_baseline, merge_baseline
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.checks import FAIL, normalize_references
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.collect import collect
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.judge import evaluate
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import RESULT_FACTS
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.model import RECORD_LISTS, SCHEMA, SCHEMA_VERSION, \
    ReportError, derive_metrics
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.render import render_files
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.saved import plain_data, read_saved_results, resolve
from ansible_collections.aiinfra.fabric.plugins.plugin_utils.controller_action import ControllerAction

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core
    yaml = None

_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")

ARGUMENT_SPEC = dict(
    output_dir=dict(type="path", required=True),
    run_id=dict(type="str"),
    label=dict(type="str", default=""),
    hosts=dict(type="list", elements="str"),
    facts=dict(type="list", elements="str", choices=list(RESULT_FACTS), default=list(RESULT_FACTS)),
    inputs=dict(type="list", elements="path", default=[]),
    thresholds=dict(type="list", elements="dict", default=[]),
    thresholds_file=dict(type="path"),
    baseline=dict(type="path"),
    baseline_tolerance=dict(type="float", default=0.1),
    baseline_warn=dict(type="float", default=0.05),
    baseline_gate=dict(type="bool", default=True),
    outliers=dict(type="bool", default=True),
    outlier_z=dict(type="float", default=3.5),
    outlier_min_deviation=dict(type="float", default=0.1),
    outlier_min_hosts=dict(type="int", default=4),
    outlier_gate=dict(type="bool", default=False),
    saved_results=dict(type="path"),
    builtin_gate=dict(type="bool", default=True),
    plots=dict(type="bool", default=True),
    save_baseline=dict(type="path"),
    update_latest=dict(type="bool", default=True),
    fail_on_gate=dict(type="bool", default=True),
    host_class_var=dict(type="str", default="fabric_host_class"),
    gpu_model_var=dict(type="str", default="gpu_model"),
    transport_var=dict(type="str", default="fabric_transport"),
)


def _read_data(path, what):
    try:
        with open(path, "r") as handle:
            text = handle.read()
    except (IOError, OSError) as exc:
        raise ReportError("cannot read %s %s: %s" % (what, path, exc))
    try:
        if path.endswith((".yml", ".yaml")):
            if yaml is None:
                raise ReportError("PyYAML is needed to read %s %s" % (what, path))
            return yaml.safe_load(text)
        return json.loads(text)
    except ValueError as exc:
        raise ReportError("%s %s is not valid JSON: %s" % (what, path, exc))
    except Exception as exc:  # yaml.YAMLError
        raise ReportError("%s %s is not valid YAML: %s" % (what, path, exc))


def _results_path(path):
    """A results folder (or its ``latest`` link) -> its results.json; a ``.json`` path is the file itself."""
    if os.path.isdir(path) or not path.endswith(".json"):
        return os.path.join(path, "results.json")
    return path


class ActionModule(ControllerAction):
    ARGSPEC = ARGUMENT_SPEC

    def act(self, args, task_vars, result):
        try:
            return self._run(args, task_vars, result)
        except ReportError as exc:
            raise AnsibleActionFail("fabric_report: %s" % exc)

    def _validate(self, args):
        for name in ("baseline_tolerance", "baseline_warn", "outlier_min_deviation"):
            if not 0 <= args[name] < 10:
                raise ReportError("%s must be a fraction between 0 and 10 (0.1 = 10 %%), got %r" % (name, args[name]))
        if args["baseline_warn"] > args["baseline_tolerance"]:
            raise ReportError("baseline_warn (%r) must not exceed baseline_tolerance (%r)"
                              % (args["baseline_warn"], args["baseline_tolerance"]))
        if args["outlier_min_hosts"] < 3:
            raise ReportError("outlier_min_hosts must be at least 3 (a median of two says nothing), got %r"
                              % args["outlier_min_hosts"])
        if args["outlier_z"] <= 0:
            raise ReportError("outlier_z must be above 0, got %r" % args["outlier_z"])
        if args["run_id"] is not None and not _RUN_ID.match(args["run_id"]):
            raise ReportError("run_id %r may hold only letters, digits, '_', '.' and '-' (a folder name)" % args["run_id"])
        if args["run_id"] in ("latest", "hosts"):
            raise ReportError("run_id %r is taken: output_dir/latest is the link to the newest run and output_dir/hosts "
                              "holds the saved host results" % args["run_id"])

    def _gather(self, args, task_vars):
        """This run's result facts from hostvars, then saved results for what hostvars lack."""
        hostvars = task_vars.get("hostvars") or {}
        groups = task_vars.get("groups") or {}
        hosts = args["hosts"]
        inventory = list(groups.get("all", [])) if hosts is None else hosts
        host_facts, host_info = {}, {}
        for host in inventory:
            if host not in hostvars:
                raise ReportError("hosts: %r is not in the inventory" % host)
            hv = hostvars[host]
            facts = {}
            for name in args["facts"]:
                value = hv.get(name) if hasattr(hv, "get") else None
                if value is not None:
                    facts[name] = plain_data(value)
            if facts:
                host_facts[host] = facts
        saved_dir = resolve(args["saved_results"])
        saved_facts, saved = read_saved_results(saved_dir, hosts=None if hosts is None else set(hosts),
                                                facts=args["facts"])
        for host, facts in saved_facts.items():
            for name, value in facts.items():
                # A fact set in this ansible-playbook run is newer than any saved file.
                if name in host_facts.get(host, {}):
                    saved[host].pop(name, None)
                else:
                    host_facts.setdefault(host, {})[name] = value
        for host in host_facts:
            hv = hostvars[host] if host in hostvars else {}
            info = {"groups": sorted(g for g, members in groups.items()
                                     if host in members and g not in ("all", "ungrouped"))}
            for key, var in (("host_class", args["host_class_var"]), ("gpu_model", args["gpu_model_var"]),
                             ("transport", args["transport_var"])):
                value = hv.get(var) if hasattr(hv, "get") else None
                if value is not None and value != "":
                    info[key] = to_text(value)
            if saved.get(host):
                info["saved"] = saved[host]
            host_info[host] = info
        return host_facts, host_info, saved_dir

    def _inputs(self, args, benchmarks, hosts):
        for path in args["inputs"]:
            data = _read_data(resolve(path), "input")
            if isinstance(data, dict) and data.get("schema") == SCHEMA:
                for bench in RECORD_LISTS:
                    benchmarks.setdefault(bench, []).extend(data.get("benchmarks", {}).get(bench, []))
                hosts.update(data.get("hosts") or {})
            elif isinstance(data, dict):
                more_b, more_h = collect(data)
                for bench in RECORD_LISTS:
                    benchmarks[bench].extend(more_b[bench])
                hosts.update(more_h)
            else:
                raise ReportError("input %s must hold a results.json or a mapping of host to facts" % path)

    def _baseline(self, args):
        if not args["baseline"]:
            return None, None
        bpath = _results_path(resolve(args["baseline"]))
        if not os.path.exists(bpath):
            raise ReportError("baseline %s does not exist (store one with save_baseline, or drop baseline)" % bpath)
        bdoc = _read_data(bpath, "baseline")
        info = {"source": os.path.realpath(bpath), "run_id": (bdoc.get("run") or {}).get("id"),
                "tolerance": args["baseline_tolerance"], "warn": args["baseline_warn"], "gate": args["baseline_gate"]}
        return load_baseline(bdoc, origin=bpath), info

    def _run(self, args, task_vars, result):
        self._validate(args)
        host_facts, host_info, saved_dir = self._gather(args, task_vars)
        benchmarks, hosts = collect(host_facts, host_info)
        self._inputs(args, benchmarks, hosts)
        metrics = derive_metrics(benchmarks, hosts)

        refs = []
        if args["thresholds_file"]:
            path = resolve(args["thresholds_file"])
            refs += normalize_references(_read_data(path, "thresholds_file"), origin=os.path.basename(path))
        refs += normalize_references(plain_data(args["thresholds"]), origin="thresholds")
        for index, ref in enumerate(refs):
            ref["index"] = index  # later entries (inline thresholds) win ties over the file's

        baseline, baseline_info = self._baseline(args)
        empty_hint = ("no saved results in %s either; run playbooks/nvmeof_rdma.yml (or nvmeof_tcp.yml), "
                      "mpi_bench.yml or nccl_bench.yml first: they save each host's results there"
                      % (saved_dir or "saved_results (not set)"))
        checks, summary = evaluate(
            metrics, refs=refs, baseline=baseline,
            baseline_opts=dict(tolerance=args["baseline_tolerance"], warn=args["baseline_warn"],
                               gate=args["baseline_gate"], run_id=(baseline_info or {}).get("run_id")),
            outlier_opts=dict(z=args["outlier_z"], min_deviation=args["outlier_min_deviation"],
                              min_hosts=args["outlier_min_hosts"], gate=args["outlier_gate"])
            if args["outliers"] else None,
            builtin_gate=args["builtin_gate"], hosts=hosts, empty_hint=empty_hint)

        now = datetime.datetime.now(datetime.timezone.utc)
        output_dir = resolve(args["output_dir"])
        run_id = args["run_id"] or now.strftime("%Y%m%dT%H%M%SZ")
        folder = os.path.join(output_dir, run_id)
        n = 1
        while os.path.exists(folder):
            n += 1
            folder = os.path.join(output_dir, "%s-%d" % (run_id, n))
        run_id = os.path.basename(folder)
        document = {
            "schema": SCHEMA, "schema_version": SCHEMA_VERSION,
            "run": {"id": run_id, "generated": now.isoformat().replace("+00:00", "Z"), "label": args["label"],
                    "controller": socket.gethostname(), "playbook": task_vars.get("ansible_play_name"),
                    "ansible_version": (task_vars.get("ansible_version") or {}).get("full"),
                    "saved_results": saved_dir},
            "hosts": hosts, "benchmarks": benchmarks, "metrics": metrics, "checks": checks, "summary": summary,
            "baseline": baseline_info,
            "references": [dict((k, v) for k, v in r.items() if k != "index") for r in refs],
        }
        try:
            files = render_files(document, plots=args["plots"])
        except ImportError as exc:
            raise ReportError(str(exc))

        failed = summary["status"] == FAIL
        save_to = _results_path(resolve(args["save_baseline"])) if args["save_baseline"] else None
        check_mode = bool(self._task.check_mode)
        if not check_mode:
            if not os.path.isdir(output_dir):
                os.makedirs(output_dir)
            publish_folder(folder, files)
            if args["update_latest"]:
                link = os.path.join(output_dir, "latest")
                # (a folder or file of the user's named latest is left alone)
                if os.path.islink(link) or not os.path.exists(link):
                    replace_symlink(link, run_id)
            if save_to and not failed:
                previous = _read_data(save_to, "save_baseline") if os.path.exists(save_to) else None
                merged = merge_baseline(json.loads(files["results.json"]), previous)
                write_atomically(save_to, json.dumps(merged, indent=2, sort_keys=True) + "\n", 0o644, dir_mode=0o755)

        result.update({
            "changed": True,
            "path": folder,
            "run_id": run_id,
            "files": sorted(files),
            "status": summary["status"],
            "summary": dict((k, v) for k, v in summary.items() if k != "metric_status"),
            "baseline_saved": bool(save_to and not failed and not check_mode),
        })
        if failed and args["fail_on_gate"]:
            result["failed"] = True
            result["msg"] = "fabric_report: %d gated check(s) failed (report in %s):\n%s" % (
                len(summary["failures"]), folder, "\n".join(summary["failures"]))
        else:
            result["msg"] = "fabric_report: %s, %d metrics, %d warning(s); report in %s" % (
                summary["status"], summary["metrics"], len(summary["warnings"]), folder)
        return result
