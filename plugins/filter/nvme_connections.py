# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the nvmeof_initiator role: its topology, and its recorded connections, as
nvme_connections' subsystems. The logic lives in plugins/module_utils/nvme/connections.py;
documented in the .yml beside."""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import connections


def nvme_connections_subsystems(subsystems, defaults):
    return connections.from_role_topology(list(subsystems or []), dict(defaults or {}))


def nvme_connections_by_subsystem(connections_list):
    return connections.by_subsystem(list(connections_list or []))


class FilterModule(object):
    def filters(self):
        return {"nvme_connections_subsystems": nvme_connections_subsystems,
                "nvme_connections_by_subsystem": nvme_connections_by_subsystem}
