#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvme_health
short_description: Read the health of an NVMe-oF host's configured paths - live, reconnecting, removed, ANA state
version_added: "0.1.0"
description:
  - Compares every configured path with what the kernel holds, per subsystem, in one read of sysfs - the fabrics
    controllers with their state and timeouts in force, and native multipath with each path's ANA state.
  - The configured paths are those the M(aiinfra.fabric.nvme_connections)-based C(nvmeof_initiator) role connected,
    from its records in O(record_dir), or the O(subsystems) given.
  - A path is usable when its controller is live and its ANA state is optimized or non-optimized. A subsystem is
    C(ok) when every configured path is usable, C(degraded) when some are not, and C(down) when none is.
  - A configured path the kernel holds no controller for is C(missing) - it was removed (C(ctrl_loss_tmo) ran out, or
    the target answered a reconnect with a status that has DNR set, as C(Connect Invalid Data Parameter) when the
    subsystem was unlinked from the port) or it never connected. The kernel does not bring such a path back.
  - Reads only; never connects, disconnects or writes.
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - Linux with the nvme-fabrics module (without it every configured path reads as missing). Python 3 on the host; no
    nvme-cli.
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.info_module
options:
  subsystems:
    description:
      - The configured subsystems and their paths. When not given, the paths of every C(nvmeof_initiator) record in
        O(record_dir).
    type: list
    elements: dict
    suboptions:
      nqn:
        description: NQN of the subsystem.
        type: str
        required: true
      min_live_paths:
        description: Usable paths the subsystem needs to count as C(ok); defaults to all its paths.
        type: int
      paths:
        description: Its paths, each as given to M(aiinfra.fabric.nvme_connections).
        type: list
        elements: dict
        required: true
        suboptions:
          transport:
            description: NVMe-oF transport.
            type: str
            required: true
            choices: [tcp, rdma, fc, loop]
          traddr:
            description: Target address.
            type: str
          trsvcid:
            description: Target port (service id).
            type: str
          host_traddr:
            description: Source address on this host; narrows the match when given.
            type: str
          host_iface:
            description: Network interface the path leaves from; narrows the match when given.
            type: str
          hostnqn:
            description: Host NQN the path connects as; narrows the match when given.
            type: str
  record_dir:
    description: Where the C(nvmeof_initiator) role keeps its records (read when O(subsystems) is not given).
    type: path
    default: /var/lib/aiinfra-fabric
notes:
  - Controllers that no configured path accounts for (another tool's, a discovery controller) are listed in
    RV(nvme_health.other_controllers) and never judged.
seealso:
  - module: aiinfra.fabric.nvme_connections
  - module: aiinfra.fabric.nvme_multipath
"""

EXAMPLES = r"""
- name: Read the health of the paths the nvmeof_initiator role configured
  aiinfra.fabric.nvme_health:
  register: __health

- name: Fail when a subsystem lost a path
  ansible.builtin.assert:
    that: __health.nvme_health.status == 'ok'
    fail_msg: "{{ __health.nvme_health.problems }}"

- name: Read two paths configured by another tool
  aiinfra.fabric.nvme_health:
    subsystems:
      - nqn: nqn.2024-04.com.example:jbof-a
        paths:
          - {transport: tcp, traddr: 10.99.0.1, trsvcid: "4420"}
          - {transport: tcp, traddr: 10.99.1.1, trsvcid: "4420"}
"""

RETURN = r"""
nvme_health:
  description: The host's paths against its configuration.
  returned: always
  type: dict
  sample:
    status: degraded
    degraded: ["nqn.2024-04.com.example:jbof-a"]
    summary: "degraded, 1 subsystem, 1/2 paths usable; nqn.2024-04.com.example:jbof-a tcp 10.99.1.1:4420: missing: ..."
    problems: ["nqn.2024-04.com.example:jbof-a tcp 10.99.1.1:4420: missing: the kernel holds no controller for it ..."]
    subsystems: []
    other_controllers: []
  contains:
    status:
      description: C(ok), C(degraded) (a subsystem has fewer usable paths than configured), C(down) (a subsystem has
        none), or C(unconfigured) (nothing configured).
      type: str
      sample: degraded
    degraded:
      description: NQNs of the subsystems that are not C(ok).
      type: list
      elements: str
      sample: ["nqn.2024-04.com.example:jbof-a"]
    problems:
      description: One line per path that is not usable and per subsystem below its C(min_live_paths).
      type: list
      elements: str
      sample: ["nqn.2024-04.com.example:jbof-a tcp 10.99.1.1:4420: missing: the kernel holds no controller for it ..."]
    summary:
      description: One line for the end of a run.
      type: str
      sample: "degraded, 1 subsystem, 1/2 paths usable; ..."
    subsystems:
      description: Per configured subsystem.
      type: list
      elements: dict
      contains:
        nqn:
          description: Its NQN.
          type: str
        status:
          description: C(ok), C(degraded) or C(down).
          type: str
        configured_paths:
          description: How many paths are configured.
          type: int
        live_paths:
          description: How many of them have a live controller.
          type: int
        usable_paths:
          description: How many are live with an ANA state that takes I/O.
          type: int
        min_live_paths:
          description: The usable paths it needs.
          type: int
        subsystem:
          description: The kernel's C(nvme-subsys<N>), when it exists.
          type: str
        iopolicy:
          description: The multipath I/O policy in force.
          type: str
        heads:
          description: Its namespace head devices.
          type: list
          elements: str
        sources:
          description: Where the configuration came from (record files, or C(subsystems)).
          type: list
          elements: str
        problems:
          description: Its lines of RV(nvme_health.problems).
          type: list
          elements: str
        paths:
          description: Each configured path.
          type: list
          elements: dict
          contains:
            label:
              description: C(NQN TRANSPORT TRADDR:TRSVCID).
              type: str
            transport:
              description: The transport.
              type: str
            traddr:
              description: The target address.
              type: str
            trsvcid:
              description: The service id.
              type: str
            host_traddr:
              description: The source address, when configured.
              type: str
            host_iface:
              description: The interface, when configured.
              type: str
            controller:
              description: The kernel's controller (C(nvme<N>)), null when the path is missing.
              type: str
            state:
              description: The controller's state (C(live), C(connecting), C(resetting), C(deleting)), or C(missing).
              type: str
            ana_states:
              description: The ANA state of each head device through this path, by head (C(nvme1n1)).
              type: dict
              contains:
                nvme1n1:
                  description: C(optimized), C(non-optimized), C(inaccessible), C(persistent-loss) or C(change).
                  type: str
            usable:
              description: Live, with an ANA state that takes I/O.
              type: bool
            problem:
              description: Why it is not usable.
              type: str
            ctrl_loss_tmo:
              description: Seconds the kernel keeps reconnecting before it removes the controller (-1 - forever).
              type: int
            reconnect_delay:
              description: Seconds between reconnects.
              type: int
            fast_io_fail_tmo:
              description: When I/O fails over instead of waiting (C(off), or seconds).
              type: str
            keep_alive_tmo:
              description: Keep-alive timeout, in seconds.
              type: int
    other_controllers:
      description: Fabrics controllers that no configured path accounts for.
      type: list
      elements: dict
      contains:
        controller:
          description: The controller (C(nvme<N>)).
          type: str
        nqn:
          description: Its subsystem's NQN.
          type: str
        transport:
          description: Its transport.
          type: str
        traddr:
          description: Its target address.
          type: str
        trsvcid:
          description: Its service id.
          type: str
        state:
          description: Its state.
          type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import health
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import MultipathSysfs
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs


def main():
    path_spec = dict(
        transport=dict(type="str", required=True, choices=list(transports.NAMES)),
        traddr=dict(type="str"),
        trsvcid=dict(type="str"),
        host_traddr=dict(type="str"),
        host_iface=dict(type="str"),
        hostnqn=dict(type="str"),
    )
    module = AnsibleModule(
        argument_spec=dict(
            subsystems=dict(type="list", elements="dict", options=dict(
                nqn=dict(type="str", required=True),
                min_live_paths=dict(type="int"),
                paths=dict(type="list", elements="dict", required=True, options=path_spec),
            )),
            record_dir=dict(type="path", default=health.DEFAULT_RECORD_DIR),
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        if params["subsystems"] is not None:
            configured = health.configured_from_params(params["subsystems"])
        else:
            configured = health.configured_from_records(health.read_records(params["record_dir"]))
    except health.HealthError as exc:
        module.fail_json(msg=str(exc))
    controllers = FabricsSysfs().controllers()
    multipath = MultipathSysfs().subsystems()
    result = health.host_health(configured, controllers, multipath)
    result["summary"] = health.summary_line(result)
    module.exit_json(changed=False, nvme_health=result)


if __name__ == "__main__":
    main()
