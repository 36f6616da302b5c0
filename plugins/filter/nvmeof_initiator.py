# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the nvmeof_initiator role: what it reads from a host (mount table, identity, records), and what it records of a
converge. The logic lives in plugins/plugin_utils/nvmeof_initiator_state.py and
nvmeof_initiator_record.py; documented in the .yml files beside."""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.plugin_utils import nvmeof_initiator_record as record
from ansible_collections.aiinfra.fabric.plugins.plugin_utils import nvmeof_initiator_state as state


def mount_entry(mounts, mount_point):
    return state.mounted_on(mounts, mount_point)


def nvmeof_initiator_records(lines):
    try:
        return state.read_records(list(lines or []))
    except state.InitiatorStateError as exc:
        raise AnsibleFilterError(str(exc))


def nvmeof_initiator_identity(lines):
    return state.read_identity(list(lines or []))


def nvmeof_initiator_record_connections(subsystems, defaults):
    return record.record_connections(list(subsystems or []), dict(defaults or {}))


def nvmeof_initiator_iopolicies(subsystems, default=""):
    return record.iopolicies(list(subsystems or []), default)


class FilterModule(object):
    def filters(self):
        return {"mount_entry": mount_entry, "nvmeof_initiator_records": nvmeof_initiator_records,
                "nvmeof_initiator_record_connections": nvmeof_initiator_record_connections,
                "nvmeof_initiator_iopolicies": nvmeof_initiator_iopolicies,
                "nvmeof_initiator_identity": nvmeof_initiator_identity}
