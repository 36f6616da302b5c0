# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the roles that run host_config on every converge: what to probe on the host
first, whether the module has anything to do after all, and its entries built from paths.

The logic lives in plugins/module_utils/hostconfig/quickcheck.py (the probe's lines read
into the observation document, judged by host_config's own planner in state.py) and
plugins/plugin_utils/host_config_entries.py; documented in the .yml files beside.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import quickcheck
from ansible_collections.aiinfra.fabric.plugins.plugin_utils import host_config_entries as builder


def host_config_probe_args(params):
    return quickcheck.probe_args(dict(params or {}))


def host_config_pending(params, lines):
    return quickcheck.pending(dict(params or {}), list(lines or []))


def host_config_entries(paths, mode, contents=None, owner="root", group="root", secret=False):
    try:
        return builder.entries(paths, mode, contents=contents, owner=owner, group=group, secret=bool(secret))
    except builder.EntriesError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"host_config_probe_args": host_config_probe_args, "host_config_pending": host_config_pending,
                "host_config_entries": host_config_entries}
