# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the soft_roce role: what to probe before its rdma_link task, and whether the
module has anything to do. The logic lives in plugins/module_utils/nvme/rdma_link_check.py;
documented in the .yml beside."""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import rdma_link_check


def rdma_link_probe_args(params):
    return rdma_link_check.probe_args(dict(params or {}))


def rdma_link_pending(params, lines):
    return rdma_link_check.check(dict(params or {}), list(lines or []))


class FilterModule(object):
    def filters(self):
        return {"rdma_link_probe_args": rdma_link_probe_args, "rdma_link_pending": rdma_link_pending}
