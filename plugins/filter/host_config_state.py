# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the roles that run host_config on every converge: what to probe on the host
first, and whether the module has anything to do after all.

The logic lives in plugins/module_utils/hostconfig/quickcheck.py; documented in the .yml beside.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import quickcheck


def host_config_probe_args(params):
    return quickcheck.probe_args(dict(params or {}))


def host_config_pending(params, lines):
    return quickcheck.pending(dict(params or {}), list(lines or []))


class FilterModule(object):
    def filters(self):
        return {"host_config_probe_args": host_config_probe_args, "host_config_pending": host_config_pending}
