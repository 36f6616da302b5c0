# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """The O(transport) option of the host-side modules that reach a target at one address
    (nvme_connect, nvme_discover: nvme.connection.address_spec()).

    The choices are the transport table's (plugins/module_utils/transports.py, in its order);
    documentation must be static YAML, so tests/unit/plugins/module_utils/test_transports.py
    keeps the two equal. Each module gives the option its own description.
    """

    DOCUMENTATION = r"""
options:
  transport:
    type: str
    required: true
    choices: [tcp, rdma, fc, loop]
"""
