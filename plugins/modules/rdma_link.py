#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rdma_link
short_description: Manage software RDMA links (soft-RoCE rxe, soft-iWARP siw) on a network interface
version_added: 0.1.0
description:
  - Creates or deletes a software RDMA device on top of a network interface with iproute2's
    C(rdma link add NAME type rxe netdev NETDEV) / C(rdma link delete NAME), idempotently.
  - Reads the current links from C(rdma -j link show) and changes only what differs.
  - Tells hardware RDMA devices (which have a bus device in sysfs) from software ones, so a
    play can leave hosts with a real RDMA adapter alone (O(when_hardware=skip)).
  - The link does not survive a reboot by itself; the M(aiinfra.fabric.rdma_link) caller
    (for example the C(aiinfra.fabric.soft_roce) role) persists it.
options:
  name:
    description: Name of the RDMA device to create or delete, for example C(rxe0).
    type: str
    required: true
  netdev:
    description: The network interface the link is put on. Required when O(state=present).
    type: str
  type:
    description: Software RDMA driver.
    type: str
    choices: [rxe, siw]
    default: rxe
  state:
    description: Whether the link should exist.
    type: str
    choices: [present, absent]
    default: present
  when_hardware:
    description:
      - What to do when the host already has a hardware RDMA device.
      - V(create) manages the link anyway; V(skip) changes nothing and returns RV(skipped_for_hardware=true).
    type: str
    choices: [create, skip]
    default: create
  force:
    description:
      - Allow deleting and re-creating the link when it exists on another netdev. This drops
        every RDMA connection that uses it.
    type: bool
    default: false
extends_documentation_fragment:
  - aiinfra.fabric.attributes
attributes:
  check_mode:
    description: Can run in check mode and predict the result (changed, operations, link) without running C(rdma link).
    support: full
  diff_mode:
    description: Returns the managed link before and after the change (predicted in check mode).
    support: full
  idempotent:
    description: A second run with the same arguments reports no change and runs no C(rdma link add/delete).
    support: full
requirements:
  - iproute2 with the C(rdma) tool, and the C(rdma_rxe) (or C(siw)) kernel module.
notes:
  - The kernel accepts one rxe device per network interface.
seealso:
  - name: rdma-link(8)
    description: The iproute2 manual page for C(rdma link).
    link: https://man7.org/linux/man-pages/man8/rdma-link.8.html
author:
  - aiinfra.fabric contributors (!UNKNOWN)
"""

EXAMPLES = r"""
- name: Create soft-RoCE device rxe0 on eth1 unless the host has a real RDMA NIC
  aiinfra.fabric.rdma_link:
    name: rxe0
    netdev: eth1
    when_hardware: skip

- name: Remove it
  aiinfra.fabric.rdma_link:
    name: rxe0
    state: absent
"""

RETURN = r"""
link:
  description: The link after the change (in check mode, as it would be); V(null) when absent.
  returned: always
  type: dict
  sample: {name: rxe0, netdev: eth1, port: 1, state: ACTIVE, physical_state: LINK_UP}
links:
  description: All RDMA links on the host after the change, as C(rdma -j link show) reports them.
  returned: always
  type: list
  elements: dict
hardware_devices:
  description: Names of RDMA devices backed by hardware (they have a bus device in sysfs).
  returned: always
  type: list
  elements: str
  sample: [mlx5_0]
skipped_for_hardware:
  description: True when O(when_hardware=skip) and a hardware RDMA device exists, so nothing was done.
  returned: always
  type: bool
operations:
  description: The planned C(rdma) operations, in order.
  returned: always
  type: list
  elements: dict
  sample: [{op: add, name: rxe0, type: rxe, netdev: eth1}]
diff:
  description: Before/after of the managed link (in diff mode).
  returned: when diff mode is on
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.rdma_link import (
    RdmaLinkError,
    RdmaLinkRunner,
    find_link,
    plan_link,
    read_devices,
    validate,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            netdev=dict(type="str"),
            type=dict(type="str", default="rxe", choices=["rxe", "siw"]),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            when_hardware=dict(type="str", default="create", choices=["create", "skip"]),
            force=dict(type="bool", default=False),
        ),
        required_if=[("state", "present", ["netdev"])],
        supports_check_mode=True,
    )
    p = module.params
    try:
        validate(p["name"], p["netdev"], p["type"], p["state"])
        runner = RdmaLinkRunner(module.run_command, module.get_bin_path("rdma", required=True))
        hardware = sorted(n for n, d in read_devices().items() if d["hardware"])
        links = runner.links()
        before = find_link(links, p["name"])
        result = dict(changed=False, hardware_devices=hardware, skipped_for_hardware=False,
                      operations=[], link=before, links=links)
        if hardware and p["when_hardware"] == "skip":
            result["skipped_for_hardware"] = True
            module.exit_json(**result)
        ops = plan_link(links, p["name"], p["netdev"], p["type"], p["state"], force=p["force"])
        if ops and not module.check_mode:
            runner.apply(ops)
            links = runner.links()
            after = find_link(links, p["name"])
        elif p["state"] == "absent":
            after = None
        elif ops:
            after = {"name": p["name"], "netdev": p["netdev"], "port": 1, "state": None, "physical_state": None}
        else:
            after = before
    except RdmaLinkError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    result.update(changed=bool(ops), operations=ops, link=after, links=links)
    if module._diff:
        result["diff"] = {"before": {"link": before}, "after": {"link": after}}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
