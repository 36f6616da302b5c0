# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """What the nvmet_* modules (nvmet_host, nvmet_subsystem, nvmet_port, nvmet_target,
    nvmet_info) share: their requirements and the O(configfs_root) option."""

    DOCUMENTATION = r"""
options:
  configfs_root:
    description: Where configfs is mounted.
    type: path
    default: /sys/kernel/config
requirements:
  - Linux with the nvmet kernel module and configfs mounted at O(configfs_root) (C(/sys/kernel/config)); the
    transport modules (C(nvmet-tcp), C(nvmet-rdma)) for the ports. Python 3 on the target; no nvmetcli.
"""
