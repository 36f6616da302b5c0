# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the nvmeof_port_maintenance role (playbooks/nvmeof_port_maintenance.yml): the
target port to take out of service, the plan (who uses it, what would lose its last path),
whether a host sees the port out (or back), and the closing lines.

The logic lives in plugins/plugin_utils/port_maintenance.py (controller only); each filter here
reads host variables and turns its errors into a filter error. Documented in the .yml files beside.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.aiinfra.fabric.plugins.plugin_utils import port_maintenance as pm
from ansible_collections.aiinfra.fabric.plugins.plugin_utils.host_facts import facts_of


def nvmeof_port_maintenance_port(nvmet, port_id, target):
    try:
        return pm.target_port(nvmet, port_id, target)
    except pm.MaintenanceError as exc:
        raise AnsibleFilterError(str(exc))


def _phase(healths, phase):
    return dict((host, value.get(phase)) for host, value in healths.items()
                if isinstance(value, dict) and value.get(phase) is not None)


def nvmeof_port_maintenance_plan(port, action, hosts, hostvars, fact, record=None, force=False):
    try:
        before = _phase(facts_of(hosts, hostvars, fact), "before")
        unread = [h for h in hosts or [] if h not in before]
        return pm.maintenance_plan(port, action, before, record or None, boolean(force, strict=False), unread)
    except pm.MaintenanceError as exc:
        raise AnsibleFilterError(str(exc))


def nvmeof_port_maintenance_pending(health, expected, phase):
    if phase not in ("out", "back"):
        raise AnsibleFilterError("nvmeof_port_maintenance_pending: phase must be out or back, got %r" % (phase,))
    return pm.pending(health, expected, phase)


def nvmeof_port_maintenance_report(plan, hosts, hostvars, fact):
    healths = facts_of(hosts, hostvars, fact)
    return pm.report(plan, *(_phase(healths, phase) for phase in ("before", "during", "after")))


class FilterModule(object):
    def filters(self):
        return {
            "nvmeof_port_maintenance_port": nvmeof_port_maintenance_port,
            "nvmeof_port_maintenance_plan": nvmeof_port_maintenance_plan,
            "nvmeof_port_maintenance_pending": nvmeof_port_maintenance_pending,
            "nvmeof_port_maintenance_report": nvmeof_port_maintenance_report,
        }
