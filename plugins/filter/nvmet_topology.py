# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the nvmeof_target role: its probe's lines read, its variables to one
nvmet_target document, its record, whether nvmet_target would change anything, and which
enabled namespaces hold a file open.

The logic lives in plugins/plugin_utils/nvmet_probe.py and plugins/module_utils/nvmet/topology.py,
record.py and snapshot.py; each filter here only turns their errors into a filter error. Documented in the .yml files beside.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import record, snapshot, topology
from ansible_collections.aiinfra.fabric.plugins.plugin_utils import nvmet_probe as probe


def nvmet_probe(lines, markers=None, objects=False):
    try:
        return probe.read_probe(list(lines or []), markers=dict(markers or {}), objects=bool(objects))
    except probe.ProbeError as exc:
        raise AnsibleFilterError(str(exc))


def nvmet_backing(lines):
    return probe.read_backing(list(lines or []))


def nvmet_topology(subsystems, ports, short, groups):
    try:
        return topology.normalize(subsystems, ports, short, list(groups or []))
    except topology.TopologyError as exc:
        raise AnsibleFilterError(str(exc))


def nvmet_target_document(topo, by_id_lines, members, identities):
    try:
        resolved = topology.resolve_devices(topo, by_id_lines)
        return {"topology": resolved, "document": topology.build_document(resolved, members or {}, identities or {}),
                "port_rules": topology.port_rules(resolved)}
    except topology.TopologyError as exc:
        raise AnsibleFilterError(str(exc))


def nvmet_document_keys(document, keys):
    return topology.add_keys(document, keys)


def nvmet_target_record(previous, topo, document, operations, files_created, rules_needed, rules_opened):
    return record.record_after_converge(previous, topo, document, operations, files_created, rules_needed or {},
                                        rules_opened or [])


def nvmet_target_teardown(previous, named, subsystems_now, ports_now, named_by_default=False):
    try:
        return record.teardown_plan(previous, named, subsystems_now, ports_now, named_by_default=bool(named_by_default))
    except record.RecordError as exc:
        raise AnsibleFilterError(str(exc))


def nvmet_target_pending(document, lines, purge="none", keep_port_links=False, force=False, allow_reconfigure=False,
                         save_file=""):
    return snapshot.target_pending(document, lines, purge=purge, force=force, allow_reconfigure=allow_reconfigure,
                                   keep_port_links=keep_port_links, save_file=save_file or None)


def nvmet_enabled_namespaces_on(lines, paths):
    try:
        return snapshot.enabled_namespaces_on(lines, paths)
    except ValueError as exc:
        raise AnsibleFilterError("the probe's copy of configfs cannot be read, so whether an enabled namespace "
                                 "still exports %s cannot be told: %s" % (", ".join(paths or []), exc))


class FilterModule(object):
    def filters(self):
        return {
            "nvmet_probe": nvmet_probe,
            "nvmet_backing": nvmet_backing,
            "nvmet_topology": nvmet_topology,
            "nvmet_target_document": nvmet_target_document,
            "nvmet_document_keys": nvmet_document_keys,
            "nvmet_target_record": nvmet_target_record,
            "nvmet_target_teardown": nvmet_target_teardown,
            "nvmet_target_pending": nvmet_target_pending,
            "nvmet_enabled_namespaces_on": nvmet_enabled_namespaces_on,
        }
