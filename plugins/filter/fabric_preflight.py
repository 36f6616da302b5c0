# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric_preflight role's filter: its probe's lines read. The logic lives in
plugins/plugin_utils/fabric_preflight.py; documented in the .yml beside."""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.plugin_utils.fabric_preflight import read_preflight


def fabric_preflight_result(lines, address=""):
    return read_preflight(list(lines or []), address or "")


class FilterModule(object):
    def filters(self):
        return {"fabric_preflight_result": fabric_preflight_result}
