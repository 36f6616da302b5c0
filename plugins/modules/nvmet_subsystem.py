#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvmet_subsystem
short_description: Manage an NVMe-oF subsystem of the Linux kernel target (nvmet) through configfs
version_added: "0.1.0"
description:
  - Declares one subsystem under C(<configfs_root>/nvmet/subsystems/<nqn>) with its namespaces, host access and
    identity attributes. The module reads the current tree, plans the difference and applies only that, in the
    order the kernel requires.
  - A namespace's O(namespaces[].device_path), O(namespaces[].uuid), O(namespaces[].nguid) and
    O(namespaces[].buffered_io) change only while it is disabled; the module disables it, writes and re-enables it.
  - C(attr_allow_any_host) and C(allowed_hosts) links exclude each other in the kernel; the module orders the
    change so that the switch works in either direction.
  - The kernel freezes O(serial), O(model), O(version), O(firmware) and C(ieee_oui) once a host has identified the
    subsystem. The module writes these first, so when the kernel refuses nothing else has been changed; recreate
    the subsystem to change them. Values are compared in the form the kernel shows them (serial padding stripped,
    C(2.0.0) as C(2.0), C(ieee_oui) as lower-case hex, integers in decimal), so an equal value is never written
    again.
  - Removing the subsystem, removing, disabling or re-pointing a namespace, or removing allowed hosts of a
    subsystem linked to a port with live connections needs O(force=true). See O(force) for how connections are
    detected.
  - With O(state=absent) the subsystem is unlinked from every port, its namespaces are disabled and removed
    (highest nsid first), its allowed host links are removed, then the subsystem itself. Host entries under
    C(hosts/) are never removed by this module (use M(aiinfra.fabric.nvmet_host)).
  - All input is validated before anything is touched.
author:
  - aiinfra.fabric developers (@aiinfra)
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.declarative
  - aiinfra.fabric.nvmet
options:
  nqn:
    description:
      - NVMe Qualified Name of the subsystem, C(nqn.yyyy-mm.reverse.domain:name) or
        C(nqn.2014-08.org.nvmexpress:uuid:<uuid>); at most 223 bytes.
    type: str
    required: true
  state:
    description: Whether the subsystem exists.
    type: str
    choices: [present, absent]
    default: present
  allow_any_host:
    description:
      - Let any host connect (C(attr_allow_any_host=1)). Excludes O(allowed_hosts). When true, existing allowed host
        links are removed first, as the kernel requires.
    type: bool
    default: false
  allowed_hosts:
    description:
      - Host NQNs allowed to connect. A missing C(hosts/<nqn>) entry is created as a plain host (no DH-HMAC-CHAP;
        use M(aiinfra.fabric.nvmet_host) for keys). Hosts not listed stay unless O(purge_allowed_hosts=true).
    type: list
    elements: str
    default: []
  purge_allowed_hosts:
    description: Remove allowed host links not listed in O(allowed_hosts). The host entries themselves stay.
    type: bool
    default: false
  namespaces:
    description: Namespaces of the subsystem. Namespaces not listed stay unless O(purge_namespaces=true).
    type: list
    elements: dict
    default: []
    suboptions:
      nsid:
        description: Namespace id, 1 to 4294967294, unique in the list.
        type: int
        required: true
      device_path:
        description:
          - Block device or regular file to export (nvmet serves files directly; no loop device is needed).
          - Must exist on the target host when O(state=present).
        type: str
      enabled:
        description: Whether the namespace is enabled (visible to hosts).
        type: bool
        default: true
      uuid:
        description: Namespace UUID. The kernel generates one when not set.
        type: str
      nguid:
        description: Namespace globally unique id, 32 hex digits (dashes optional).
        type: str
      ana_grpid:
        description:
          - ANA group id, 1 to 128. A group is C(inaccessible) on every port that does not define it with an
            accessible state (M(aiinfra.fabric.nvmet_port) O(aiinfra.fabric.nvmet_port#module:ana_groups)).
          - Moving an enabled namespace of a subsystem linked to a port into a group that is not C(optimized) or
            C(non-optimized) on every such port cuts its I/O there, so it needs O(force=true).
        type: int
      buffered_io:
        description: Use buffered I/O for a file-backed namespace.
        type: bool
  purge_namespaces:
    description: Remove namespaces not listed in O(namespaces) (disable, then remove).
    type: bool
    default: false
  serial:
    description: Serial number (C(attr_serial)), 1-20 printable ASCII characters.
    type: str
  model:
    description: Model number (C(attr_model)), 1-40 printable ASCII characters.
    type: str
  version:
    description: NVMe version reported to hosts (C(attr_version)), for example C(1.3) or C(2.0).
    type: str
  firmware:
    description: Firmware revision (C(attr_firmware)), 1-8 printable ASCII characters.
    type: str
  attributes:
    description:
      - Other writable C(attr_*) values without the prefix, for example C(cntlid_min=1) and C(cntlid_max=100) as a dict.
        Names this kernel does not have are refused, and so are values it would refuse (C(ieee_oui) above 24 bits,
        C(qid_max) outside 1..128, C(cntlid_min) above C(cntlid_max), a controller id of 0).
      - C(cntlid_min) and C(cntlid_max) are written in the order the change needs (when raising both, max first).
      - Changing C(qid_max) makes the kernel disconnect every controller of the subsystem, so with live
        connections it needs O(force=true).
    type: dict
    default: {}
  force:
    description:
      - Proceed with disruptive changes while hosts may be connected.
      - Connections are detected from the nvmet debugfs tree when the kernel has it (per subsystem); otherwise
        (Debian's 6.12 kernel is built without it) from established TCP sockets on a linked tcp port's address,
        connected RDMA CM ids on a linked rdma port's address (C(rdma res show cm_id)), and loop controllers.
        Sockets do not say which subsystem a host uses, so a connection to any subsystem on a port counts for
        every subsystem linked to that port. When nothing can be read, the change is refused without O(force).
    type: bool
    default: false
notes:
  - Needs the C(nvmet) kernel module loaded (C(<configfs_root>/nvmet) must exist).
  - The domain logic lives in the C(nvmet) module_utils, which has no Ansible dependency and can restore an
    nvmetcli save file on its own (C(nvmet-restore restore FILE), installed by the nvmeof_target role).
seealso:
  - module: aiinfra.fabric.nvmet_port
  - module: aiinfra.fabric.nvmet_host
  - module: aiinfra.fabric.nvmet_info
"""

EXAMPLES = r"""
- name: Export a file and a block device to one host
  aiinfra.fabric.nvmet_subsystem:
    nqn: nqn.2024-04.com.example:te1.target1
    allowed_hosts:
      - nqn.2014-08.org.nvmexpress:uuid:2bd0d2b2-5c8b-4c5a-9a6f-0e7d0b7a3f11
    namespaces:
      - nsid: 1
        device_path: /var/lib/nvmet/disk1.img
      - nsid: 2
        device_path: /dev/nullb0
        nguid: 0123456789abcdef0123456789abcdef
    model: aiinfra-target
    attributes:
      cntlid_min: 1

- name: Remove the subsystem even if hosts are connected
  aiinfra.fabric.nvmet_subsystem:
    nqn: nqn.2024-04.com.example:te1.target1
    state: absent
    force: true
"""

RETURN = r"""
subsystem:
  description: The subsystem after the run (predicted in check mode); null when absent.
  returned: always
  type: dict
  contains:
    nqn:
      description: Subsystem NQN.
      type: str
    allow_any_host:
      description: Whether any host may connect.
      type: bool
    allowed_hosts:
      description: Allowed host NQNs, sorted.
      type: list
      elements: str
    namespaces:
      description: The namespaces, by nsid.
      type: list
      elements: dict
      contains:
        nsid:
          description: The namespace id.
          type: int
        device_path:
          description: The backing device or file.
          type: str
        enabled:
          description: Whether it is enabled.
          type: bool
        uuid:
          description: Its UUID, if set.
          type: str
        nguid:
          description: Its NGUID, if set.
          type: str
        ana_grpid:
          description: Its ANA group.
          type: int
        buffered_io:
          description: Whether a file is read through the page cache.
          type: bool
    attributes:
      description:
        - The other C(attr_*) values without prefix (serial, model, version, firmware, cntlid_min, ...), in the form
          the kernel shows them (serial without its padding).
      type: dict
      contains:
        model:
          description: C(attr_model).
          type: str
        serial:
          description: C(attr_serial), without its padding.
          type: str
        version:
          description: C(attr_version), the NVMe version the subsystem reports.
          type: str
        firmware:
          description: C(attr_firmware).
          type: str
        cntlid_min:
          description: C(attr_cntlid_min) (C(cntlid_max), C(qid_max) ... alike).
          type: str
    passthru:
      description: For a passthru subsystem, its controller (C(device_path)) and whether it is enabled; else null.
        Passthru subsystems are reported, not managed (namespaces for them are refused).
      type: dict
      contains:
        device_path:
          description: The passthru controller.
          type: str
        enabled:
          description: Whether passthru is enabled.
          type: bool
  sample:
    nqn: nqn.2024-04.com.example:te1.target1
    allow_any_host: false
    allowed_hosts: [nqn.2014-08.org.nvmexpress:uuid:2bd0d2b2-5c8b-4c5a-9a6f-0e7d0b7a3f11]
    namespaces:
      - {nsid: 1, device_path: /var/lib/nvmet/disk1.img, enabled: true, uuid: c1dcff13-cbcf-44e6-997c-ee94dc0b42e3,
         nguid: null, ana_grpid: 1, buffered_io: false}
    attributes: {model: Linux, serial: 7261cd9a61165179a56a, version: "1.3", firmware: 6.12.117, cntlid_min: "1"}
operations:
  description: The planned operations in order, applied unless in check mode (relative to C(<configfs_root>/nvmet)).
  returned: always
  type: list
  elements: str
  sample:
    - mkdir subsystems/nqn.2024-04.com.example:te1.target1
    - mkdir subsystems/nqn.2024-04.com.example:te1.target1/namespaces/1
    - write subsystems/nqn.2024-04.com.example:te1.target1/namespaces/1/device_path = /var/lib/nvmet/disk1.img
    - write subsystems/nqn.2024-04.com.example:te1.target1/namespaces/1/enable = 1
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree, export_subsystem
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import plan_subsystem
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.result import apply_and_exit
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs, normalize_subsystem


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nqn=dict(type="str", required=True),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            allow_any_host=dict(type="bool", default=False),
            allowed_hosts=dict(type="list", elements="str", default=[]),
            purge_allowed_hosts=dict(type="bool", default=False),
            namespaces=dict(type="list", elements="dict", default=[], options=dict(
                nsid=dict(type="int", required=True),
                device_path=dict(type="str"),
                enabled=dict(type="bool", default=True),
                uuid=dict(type="str"),
                nguid=dict(type="str"),
                ana_grpid=dict(type="int"),
                buffered_io=dict(type="bool"),
            )),
            purge_namespaces=dict(type="bool", default=False),
            serial=dict(type="str"),
            model=dict(type="str"),
            version=dict(type="str"),
            firmware=dict(type="str"),
            attributes=dict(type="dict", default={}),
            force=dict(type="bool", default=False),
            configfs_root=dict(type="path", default="/sys/kernel/config"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    tree = ConfigfsTree(p["configfs_root"])
    try:
        check_configfs(tree)
        spec = normalize_subsystem(p, check_paths=p["state"] == "present")
        state = tree.read()
        ops = plan_subsystem(state, spec, tree.connections(state), p["force"])
    except NvmetError as exc:
        module.fail_json(msg=exc.msg, changed=False, operations=[])

    apply_and_exit(module, tree, state, ops, "subsystems", spec["nqn"], export_subsystem, "subsystem")


if __name__ == "__main__":
    main()
