# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Files of the report on the controller: the path rule, saved host results, inputs.

The path rule (one for every path the report reads or writes: output_dir, baseline,
inputs, thresholds_file, save_baseline, saved_results): ``~`` and environment variables
are expanded, and a relative path is relative to the directory ``ansible-playbook`` runs
in (AWX: the project's folder), never to the playbook's or the role's folder.

Saved results are what the main playbooks write at the end of each host's roles
(``roles/fabric_report/tasks/save.yml``), one file per host and result fact::

    <results>/hosts/<host>/<fact>.json
    {"schema": "aiinfra.fabric.host_result", "schema_version": 1, "host": ..., "fact": ...,
     "saved": "2026-11-30T05:46:07Z", "playbook": ..., "result": {...the fact...}}

so a report made by a later ``ansible-playbook`` run finds the results of earlier ones.
``host_result_document`` and ``write_host_result`` write them (the fabric_result_save
action), ``read_saved_results`` reads them (the fabric_report action).
"""

from __future__ import annotations

import json
import os

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import write_atomically
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import ReportError
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import RESULT_FACTS

HOST_RESULT_SCHEMA = "aiinfra.fabric.host_result"


def resolve(path, cwd=None):
    """The path rule: expand ``~`` and ``$VARS``; relative to ``cwd`` (default: the current directory)."""
    if path is None or path == "":
        return None
    path = os.path.expandvars(os.path.expanduser(str(path)))
    return os.path.normpath(os.path.join(cwd or os.getcwd(), path))


def read_saved_results(folder, hosts=None, facts=RESULT_FACTS):
    """``(host_facts, saved)`` from a saved-results folder; a missing folder gives nothing.

    ``hosts`` (None: all) and ``facts`` select what is read. ``saved`` maps host to
    ``{fact: {"saved": time, "playbook": name, "file": path}}``.
    """
    host_facts, saved = {}, {}
    if not folder or not os.path.isdir(folder):
        return host_facts, saved
    for host in sorted(os.listdir(folder)):
        hdir = os.path.join(folder, host)
        if not os.path.isdir(hdir) or (hosts is not None and host not in hosts):
            continue
        for fact in facts:
            path = os.path.join(hdir, fact + ".json")
            if not os.path.isfile(path):
                continue
            try:
                with open(path) as handle:
                    doc = json.load(handle)
            except (IOError, OSError, ValueError) as exc:
                raise ReportError("saved result %s cannot be read: %s (delete it, or run its playbook again)"
                                  % (path, exc))
            if not isinstance(doc, dict) or doc.get("schema") != HOST_RESULT_SCHEMA or doc.get("fact") != fact \
                    or doc.get("host") != host or "result" not in doc:
                raise ReportError("saved result %s is not a %s document for host %s and fact %s"
                                  % (path, HOST_RESULT_SCHEMA, host, fact))
            if doc["result"] is None:
                continue
            host_facts.setdefault(host, {})[fact] = doc["result"]
            saved.setdefault(host, {})[fact] = {"saved": doc.get("saved"), "playbook": doc.get("playbook"),
                                                "file": path}
    return host_facts, saved


def plain_data(value):
    """Hostvars values as plain JSON data (no tagged/lazy container types)."""
    if isinstance(value, dict):
        return dict((to_text(k), plain_data(v)) for k, v in value.items())
    if isinstance(value, (list, tuple, set)):
        return [plain_data(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    return to_text(value)


def host_result_document(host, fact, result, playbook, saved):
    """The saved form of one host's result fact (``saved``: a UTC time, ``YYYY-MM-DDTHH:MM:SSZ``)."""
    return {"schema": HOST_RESULT_SCHEMA, "schema_version": 1, "host": host, "fact": fact, "saved": saved,
            "playbook": playbook, "result": plain_data(result)}


def host_result_path(folder, host, fact):
    """Where ``fact`` of ``host`` is saved under the saved-results ``folder`` (already resolved)."""
    for what, name in (("host", host), ("fact", fact)):
        if not name or name in (".", "..") or "/" in name or "\x00" in name:
            raise ReportError("%s name %r cannot be a file name under %s" % (what, name, folder))
    return os.path.join(folder, host, fact + ".json")


def write_host_result(folder, document):
    """Write one ``host_result_document`` under ``folder``; returns its path. The host's folder gets mode 0755."""
    path = host_result_path(folder, document["host"], document["fact"])
    hdir = os.path.dirname(path)
    if not os.path.isdir(hdir):
        os.makedirs(hdir)
        os.chmod(hdir, 0o755)
    write_atomically(path, json.dumps(document, indent=4, sort_keys=True, separators=(",", ": ")) + "\n", 0o644,
                     dir_mode=0o755)
    return path
