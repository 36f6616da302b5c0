#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvmet_info
short_description: Read the whole Linux kernel NVMe-oF target (nvmet) configuration
version_added: "0.1.0"
description:
  - Reads C(<configfs_root>/nvmet) and returns it in the nvmetcli save-file schema (hosts, ports, subsystems),
    so it can be compared, saved or fed to C(nvmetcli restore) or the nvmeof_target role's C(nvmet-restore).
  - Values are shown the way nvmetcli saves them (C(attr_serial) without the kernel's padding); ports list their
    ANA groups with states and their referrals with addresses.
  - DH-HMAC-CHAP keys are masked as C(********).
author:
  - aiinfra.fabric developers (@aiinfra)
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.info_module
  - aiinfra.fabric.nvmet
notes:
  - Fails when C(<configfs_root>/nvmet) does not exist (nvmet kernel module not loaded).
seealso:
  - module: aiinfra.fabric.nvmet_subsystem
  - module: aiinfra.fabric.nvmet_port
  - module: aiinfra.fabric.nvmet_host
"""

EXAMPLES = r"""
- name: Read the target configuration
  aiinfra.fabric.nvmet_info:
  register: __nvmet_register_info

- name: Show the subsystems
  ansible.builtin.debug:
    msg: "{{ __nvmet_register_info.nvmet.subsystems | map(attribute='nqn') }}"
"""

RETURN = r"""
nvmet:
  description: The target configuration in nvmetcli's save-file schema; keys masked.
  returned: always
  type: dict
  contains:
    hosts:
      description: Host entries.
      type: list
      elements: dict
      contains:
        nqn:
          description: The host NQN.
          type: str
        dhchap:
          description: Its DH-HMAC-CHAP settings, when set - C(key) and C(ctrl_key) (masked), C(hash), C(dhgroup).
          type: dict
          contains:
            key:
              description: The host key, masked.
              type: str
            ctrl_key:
              description: The controller key, masked.
              type: str
            hash:
              description: The HMAC.
              type: str
            dhgroup:
              description: The DH group.
              type: str
    ports:
      description: Ports.
      type: list
      elements: dict
      contains:
        portid:
          description: The port id.
          type: int
        addr:
          description: The address - C(trtype), C(adrfam), C(traddr), C(trsvcid), C(treq), C(tsas) (those set).
          type: dict
          contains:
            trtype:
              description: The transport.
              type: str
            adrfam:
              description: The address family.
              type: str
            traddr:
              description: The address.
              type: str
            trsvcid:
              description: The service id.
              type: str
            treq:
              description: The secure channel requirement.
              type: str
            tsas:
              description: The transport specific address subtype (tcp - C(tls1.3) or C(none)).
              type: str
        param:
          description: The C(param_*) values without prefix, as text (C(inline_data_size), C(max_queue_size), C(pi_enable)).
          type: dict
          contains:
            inline_data_size:
              description: The inline data size.
              type: str
        subsystems:
          description: The NQNs of the subsystems linked to the port.
          type: list
          elements: str
        referrals:
          description: Discovery referrals - C(name), C(enable), C(addr).
          type: list
          elements: dict
          contains:
            name:
              description: The referral's name.
              type: str
            enable:
              description: 1 when enabled.
              type: int
            addr:
              description: Where it points - C(trtype), C(adrfam), C(traddr), C(trsvcid), C(treq), C(portid).
              type: dict
              contains:
                traddr:
                  description: The address.
                  type: str
        ana_groups:
          description: The port's ANA groups.
          type: list
          elements: dict
          contains:
            grpid:
              description: The group id.
              type: int
            ana:
              description: The group's state, as C(state).
              type: dict
              contains:
                state:
                  description: C(optimized), C(non-optimized), C(inaccessible), C(persistent-loss) or C(change).
                  type: str
    subsystems:
      description: Subsystems.
      type: list
      elements: dict
      contains:
        nqn:
          description: The subsystem's NQN.
          type: str
        attr:
          description: The C(attr_*) values without prefix, as text (C(allow_any_host), C(model), C(serial), C(version) ...).
          type: dict
          contains:
            allow_any_host:
              description: C(1) when any host may connect.
              type: str
        allowed_hosts:
          description: The NQNs of the allowed hosts.
          type: list
          elements: str
        namespaces:
          description: The namespaces.
          type: list
          elements: dict
          contains:
            nsid:
              description: The namespace id.
              type: int
            enable:
              description: 1 when enabled.
              type: int
            device:
              description: C(path), C(uuid) and C(nguid) of the backing device or file.
              type: dict
              contains:
                path:
                  description: The backing device or file.
                  type: str
                uuid:
                  description: The namespace UUID, if set.
                  type: str
                nguid:
                  description: The namespace NGUID.
                  type: str
            ana_grpid:
              description: Its ANA group.
              type: int
            buffered_io:
              description: 1 when the file is read through the page cache.
              type: int
            file_identity:
              description: For an enabled file namespace, the file's C(inode) and C(size) when saved (the save file only).
              type: dict
              contains:
                inode:
                  description: The file's inode number.
                  type: int
                size:
                  description: Its size in bytes.
                  type: int
        passthru:
          description: For a passthru subsystem, nvmetcli's form of its controller (C(device.path), C(enable)).
          type: list
          elements: dict
          contains:
            enable:
              description: 1 when enabled.
              type: int
  sample:
    hosts: [{nqn: "nqn.2014-08.org.nvmexpress:uuid:2bd0d2b2-5c8b-4c5a-9a6f-0e7d0b7a3f11",
             dhchap: {key: "********", hash: hmac(sha256), dhgroup: "null"}}]
    ports:
      - portid: 1
        addr: {adrfam: ipv4, traddr: 10.99.0.1, treq: not specified, trsvcid: "4420", trtype: tcp, tsas: none}
        param: {inline_data_size: "-1", max_queue_size: "-1", pi_enable: "0"}
        subsystems: [nqn.2024-04.com.example:te1.target1]
        referrals: []
        ana_groups: [{grpid: 1, ana: {state: optimized}}]
    subsystems:
      - nqn: nqn.2024-04.com.example:te1.target1
        attr: {allow_any_host: "0", model: Linux, serial: 7261cd9a61165179a56a, version: "1.3"}
        allowed_hosts: ["nqn.2014-08.org.nvmexpress:uuid:2bd0d2b2-5c8b-4c5a-9a6f-0e7d0b7a3f11"]
        namespaces:
          - nsid: 1
            enable: 1
            device: {path: /var/lib/nvmet/disk1.img, uuid: c1dcff13-cbcf-44e6-997c-ee94dc0b42e3,
                     nguid: 00000000-0000-0000-0000-000000000000}
            ana_grpid: 1
            buffered_io: 0
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import to_savefile
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs


def main():
    module = AnsibleModule(
        argument_spec=dict(configfs_root=dict(type="path", default="/sys/kernel/config")),
        supports_check_mode=True,
    )
    tree = ConfigfsTree(module.params["configfs_root"])
    try:
        check_configfs(tree)
    except NvmetError as exc:
        module.fail_json(msg=exc.msg)
    module.exit_json(changed=False, nvmet=to_savefile(tree.read(), mask_keys=True))


if __name__ == "__main__":
    main()
