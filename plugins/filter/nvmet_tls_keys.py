# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter of the nvmeof_target role: the TLS keys its document's TLS ports need.

The logic lives in plugins/module_utils/nvmet/tls_keys.py; documented in the .yml beside.
"""

from __future__ import annotations

from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import tls_keys


def nvmet_tls_keys(document, host_psks):
    try:
        return tls_keys.target_tls_keys(document, host_psks or {})
    except tls_keys.TlsKeyError as exc:
        raise AnsibleFilterError(str(exc))


class FilterModule(object):
    def filters(self):
        return {"nvmet_tls_keys": nvmet_tls_keys}
