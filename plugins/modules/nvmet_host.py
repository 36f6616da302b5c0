#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvmet_host
short_description: Manage a host entry of the Linux kernel NVMe-oF target (nvmet), with DH-HMAC-CHAP
version_added: "0.1.0"
description:
  - Declares C(<configfs_root>/nvmet/hosts/<hostnqn>) and its DH-HMAC-CHAP settings. A subsystem admits the host
    once it is in the subsystem's allowed hosts (M(aiinfra.fabric.nvmet_subsystem) O(aiinfra.fabric.nvmet_subsystem#module:allowed_hosts)).
  - Keys are compared with what the kernel holds and written only when they differ. They are never returned,
    diffed or logged; the result says whether a key is set and which keys changed.
  - The kernel accepts a malformed key at write time and only fails when the host connects, so keys are checked
    here (format C(DHHC-1:0X:<base64>:), key length for the transform, CRC-32).
  - With O(state=absent) the host entry is removed. If subsystems still list it in their allowed hosts, the module
    fails unless O(force=true), which unlinks it from them first (and needs no live connections on those
    subsystems, or O(force)).
  - Keys cannot be cleared in place (the kernel refuses an empty key); remove and recreate the host instead.
author:
  - aiinfra.fabric developers (@aiinfra)
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.declarative
  - aiinfra.fabric.nvmet
attributes:
  diff_mode:
    details: Keys appear in the diff only as C(hidden, unchanged) or C(hidden, changed).
options:
  hostnqn:
    description: The host's NQN (its C(/etc/nvme/hostnqn)).
    type: str
    required: true
  state:
    description: Whether the host entry exists.
    type: str
    choices: [present, absent]
    default: present
  dhchap_key:
    description: The host's DH-HMAC-CHAP secret, as made by C(nvme gen-dhchap-key). Left alone when omitted.
    type: str
  dhchap_ctrl_key:
    description: The controller's secret for bidirectional authentication. Needs O(dhchap_key).
    type: str
  dhchap_hash:
    description: HMAC used for authentication.
    type: str
    choices: [hmac(sha256), hmac(sha384), hmac(sha512)]
  dhchap_dhgroup:
    description: Diffie-Hellman group, or C(null) for none.
    type: str
    choices: ["null", ffdhe2048, ffdhe3072, ffdhe4096, ffdhe6144, ffdhe8192]
  force:
    description: Remove the host even while subsystems list it (they are unlinked first).
    type: bool
    default: false
seealso:
  - module: aiinfra.fabric.nvmet_subsystem
"""

EXAMPLES = r"""
- name: Require DH-HMAC-CHAP from te2
  aiinfra.fabric.nvmet_host:
    hostnqn: "{{ te2_hostnqn }}"
    dhchap_key: "{{ vault_te2_dhchap_key }}"
    dhchap_hash: hmac(sha256)
    dhchap_dhgroup: ffdhe2048
"""

RETURN = r"""
host:
  description: The host after the run (predicted in check mode); null when absent. Keys are never included.
  returned: always
  type: dict
  contains:
    hostnqn:
      description: Host NQN.
      type: str
    key_set:
      description: Whether a host key (C(dhchap_key)) is set.
      type: bool
    ctrl_key_set:
      description: Whether a controller key (C(dhchap_ctrl_key)) is set.
      type: bool
    dhchap_hash:
      description: HMAC.
      type: str
    dhchap_dhgroup:
      description: DH group.
      type: str
  sample: {hostnqn: "nqn.2014-08.org.nvmexpress:uuid:2bd0d2b2-5c8b-4c5a-9a6f-0e7d0b7a3f11", key_set: true,
           ctrl_key_set: false, dhchap_hash: hmac(sha256), dhchap_dhgroup: ffdhe2048}
changed_keys:
  description: Which keys were (or in check mode would be) written; names only.
  returned: always
  type: list
  elements: str
  sample: [dhchap_key]
operations:
  description: The planned operations in order, key values masked.
  returned: always
  type: list
  elements: str
  sample: ["mkdir hosts/nqn.2014-08.org.nvmexpress:uuid:2bd0d2b2-5c8b-4c5a-9a6f-0e7d0b7a3f11"]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import (
    DHGROUPS,
    HASHES,
    HOST_KEY_FIELDS,
    NvmetError,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree, masked_host
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import plan_host
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.result import apply_and_exit
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs, normalize_host


def _diff_view(host, changed_keys):
    if host is None:
        return {}
    view = masked_host(host)
    for field in HOST_KEY_FIELDS:
        if host.get(field):
            view[field] = "hidden, changed" if field in changed_keys else "hidden, unchanged"
    return view


def main():
    module = AnsibleModule(
        argument_spec=dict(
            hostnqn=dict(type="str", required=True),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            dhchap_key=dict(type="str", no_log=True),
            dhchap_ctrl_key=dict(type="str", no_log=True),
            dhchap_hash=dict(type="str", choices=list(HASHES)),
            dhchap_dhgroup=dict(type="str", choices=list(DHGROUPS)),
            force=dict(type="bool", default=False),
            configfs_root=dict(type="path", default="/sys/kernel/config"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    tree = ConfigfsTree(p["configfs_root"])
    try:
        check_configfs(tree)
        spec = normalize_host(p)
        state = tree.read()
        ops = plan_host(state, spec, tree.connections(state), p["force"])
    except NvmetError as exc:
        module.fail_json(msg=exc.msg, changed=False, operations=[])

    changed_keys = [op.path.rsplit("/", 1)[1] for op in ops if op.secret]
    apply_and_exit(module, tree, state, ops, "hosts", spec["hostnqn"],
                   lambda host: masked_host(host) if host else None, "host",
                   diff_view=lambda host, is_after: _diff_view(host, changed_keys if is_after else []),
                   extra=dict(changed_keys=changed_keys))


if __name__ == "__main__":
    main()
