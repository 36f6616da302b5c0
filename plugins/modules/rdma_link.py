#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: rdma_link
short_description: Manage software RDMA links (soft-RoCE rxe, soft-iWARP siw) on a network interface
version_added: "0.1.0"
description:
  - Creates or deletes a software RDMA device on top of a network interface with iproute2's
    C(rdma link add NAME type rxe netdev NETDEV) / C(rdma link delete NAME), idempotently.
  - Reads the current links from C(rdma -j link show) and changes only what differs.
  - Tells hardware RDMA devices (which have a bus device in sysfs) from software ones, so a
    play can leave hosts with a real RDMA adapter alone (O(when_hardware=skip)).
  - The link does not survive a reboot by itself. With O(persistent=true) the module also installs and enables
    a oneshot systemd unit that loads the kernel module (C(rdma_rxe) or C(siw)) and re-creates the link at boot,
    ordered before C(aiinfra-nvmet.service), C(nvmet.service) and C(nvmf-autoconnect.service); with
    O(state=absent) it stops, disables and removes that unit before it deletes the link. The link and its unit
    are one task (one module start on the host instead of two).
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
  persistent:
    description:
      - Also manage the systemd unit that re-creates the link at boot (C(/etc/systemd/system/)O(unit_name)).
      - With O(state=present) the unit file (root:root, 0644) is written atomically when its content differs (its
        mode and owner set when only they differ), and the unit is enabled with C(systemctl --no-reload enable), not
        started (the link exists already). A changed unit file that systemd has loaded gets one
        C(systemctl daemon-reload).
      - With O(state=absent) the unit is stopped and disabled and its file removed, before the link is deleted.
      - V(false) leaves any boot unit as it is.
      - With O(persistent=true) and O(state=present), O(netdev) may hold only letters, digits, V(_), V(.) and V(-),
        because it goes into the unit's command line.
    type: bool
    default: false
  unit_name:
    description:
      - Name of the boot unit, a C(.service). Defaults to C(aiinfra-soft-roce-<name>.service).
      - Used only with O(persistent=true).
    type: str
extends_documentation_fragment:
  - aiinfra.fabric.attributes
attributes:
  check_mode:
    description: Can run in check mode and predict the result (changed, operations, link) without running C(rdma link)
      or changing the boot unit (C(systemctl is-enabled/is-active/list-units) still run to read its state).
    support: full
  diff_mode:
    description: Returns the managed link, and with O(persistent=true) the boot unit's file and enablement, before
      and after the change (predicted in check mode).
    support: full
  idempotent:
    description: A second run with the same arguments reports no change, runs no C(rdma link add/delete) and writes
      no unit file.
    support: full
requirements:
  - iproute2 with the C(rdma) tool, and the C(rdma_rxe) (or C(siw)) kernel module.
  - systemd (C(systemctl)) for O(persistent=true).
notes:
  - The kernel accepts one rxe device per network interface.
  - The unit checks C(rdma link show NAME/1) before it adds the link, so it does nothing when the link is there.
  - Run as root.
seealso:
  - name: rdma-link(8)
    description: The iproute2 manual page for C(rdma link).
    link: https://man7.org/linux/man-pages/man8/rdma-link.8.html
author:
  - aiinfra.fabric developers (@aiinfra)
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

- name: Create soft-iWARP device siw0 on eth2 and re-create it at every boot
  aiinfra.fabric.rdma_link:
    name: siw0
    netdev: eth2
    type: siw
    persistent: true

- name: Stop, disable and remove its boot unit, then delete the link
  aiinfra.fabric.rdma_link:
    name: siw0
    state: absent
    persistent: true
"""

RETURN = r"""
link:
  description: The link after the change (in check mode, as it would be); V(null) when absent.
  returned: always
  type: dict
  sample: {name: rxe0, netdev: eth1, port: 1, state: ACTIVE, physical_state: LINK_UP}
  contains:
    name:
      description: The RDMA device (C(rxe0)).
      type: str
    port:
      description: Its port number.
      type: int
    state:
      description: The port state (C(ACTIVE), C(DOWN) ...).
      type: str
    physical_state:
      description: The physical state (C(LINK_UP) ...).
      type: str
    netdev:
      description: The network interface it runs over (null for links without one, such as InfiniBand ports).
      type: str
links:
  description: All RDMA links on the host after the change, as C(rdma -j link show) reports them.
  returned: always
  type: list
  elements: dict
  sample: [{name: rxe0, netdev: eth1, port: 1, state: ACTIVE, physical_state: LINK_UP}]
  contains:
    name:
      description: The RDMA device (C(rxe0)).
      type: str
    port:
      description: Its port number.
      type: int
    state:
      description: The port state (C(ACTIVE), C(DOWN) ...).
      type: str
    physical_state:
      description: The physical state (C(LINK_UP) ...).
      type: str
    netdev:
      description: The network interface it runs over (null for links without one, such as InfiniBand ports).
      type: str
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
  sample: false
operations:
  description:
    - The operations, one line each, in the order they ran (in check mode, would run); empty when nothing changed.
    - C(rdma link) commands, and with O(persistent=true) the boot unit's file and C(systemctl) operations.
  returned: always
  type: list
  elements: str
  sample:
    - rdma link add rxe0 type rxe netdev eth1
    - create /etc/systemd/system/aiinfra-soft-roce-rxe0.service 0644 (574 bytes)
    - systemctl enable aiinfra-soft-roce-rxe0.service
boot_unit:
  description: The name of the boot unit with O(persistent=true); an empty string otherwise, and when skipped for
    hardware.
  returned: always
  type: str
  sample: aiinfra-soft-roce-rxe0.service
diff:
  description:
    - Before/after of the managed link (key C(link)), in diff mode.
    - With O(persistent=true) also the unit file, keyed by its path (C(type), C(mode), C(sha256), C(size),
      C(content); V(null) when missing), and the unit, keyed C(unit <unit_name>) (C(enabled), and C(active) with
      O(state=absent)).
  returned: when diff mode is on
  type: dict
  sample:
    before: {link: null, /etc/systemd/system/aiinfra-soft-roce-rxe0.service: null,
             unit aiinfra-soft-roce-rxe0.service: {enabled: false}}
    after: {link: {name: rxe0, netdev: eth1, port: 1, state: ACTIVE, physical_state: LINK_UP},
            /etc/systemd/system/aiinfra-soft-roce-rxe0.service: {type: file, mode: "0644", size: 574,
                                                                   sha256: "9f2c...", content: "[Unit]\n..."},
            unit aiinfra-soft-roce-rxe0.service: {enabled: true}}
  contains:
    before:
      description: The state before the run, keyed C(link), the unit file's path and C(unit <unit_name>).
      type: dict
      contains:
        link:
          description: The link, as RV(link).
          type: dict
          contains:
            name:
              description: The RDMA device.
              type: str
            netdev:
              description: The network interface.
              type: str
        <unit file path>:
          description: The unit file - C(type), C(mode), C(sha256), C(size), C(content); V(null) when missing.
          type: dict
          contains:
            type:
              description: C(file).
              type: str
            mode:
              description: Its mode.
              type: str
            sha256:
              description: Its content's SHA-256.
              type: str
            size:
              description: Its size in bytes.
              type: int
            content:
              description: Its text.
              type: str
        unit <unit_name>:
          description: The unit - C(enabled), and C(active) with O(state=absent).
          type: dict
          contains:
            enabled:
              description: Whether the unit is enabled.
              type: bool
            active:
              description: Whether it is active (with O(state=absent)).
              type: bool
    after:
      description: The state after the run (in check mode, as it would be), the keys of C(before).
      type: dict
      contains:
        link:
          description: The link, as RV(link).
          type: dict
          contains:
            name:
              description: The RDMA device.
              type: str
            netdev:
              description: The network interface.
              type: str
        <unit file path>:
          description: The unit file - C(type), C(mode), C(sha256), C(size), C(content); V(null) when missing.
          type: dict
          contains:
            type:
              description: C(file).
              type: str
            mode:
              description: Its mode.
              type: str
            sha256:
              description: Its content's SHA-256.
              type: str
            size:
              description: Its size in bytes.
              type: int
            content:
              description: Its text.
              type: str
        unit <unit_name>:
          description: The unit - C(enabled), and C(active) with O(state=absent).
          type: dict
          contains:
            enabled:
              description: Whether the unit is enabled.
              type: bool
            active:
              description: Whether it is active (with O(state=absent)).
              type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import apply as hostconfig_apply
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import state as hostconfig_state
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.rdma_link import (
    RdmaLinkError,
    RdmaLinkRunner,
    boot_unit_params,
    default_unit_name,
    find_link,
    op_text,
    plan_link,
    read_devices,
    validate,
)


def _host_root():
    """The tree the boot unit's file is read and written under: "/" on a managed host.

    A seam for the unit tests, which point it at a temporary tree; not an option.
    """
    return "/"


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            netdev=dict(type="str"),
            type=dict(type="str", default="rxe", choices=["rxe", "siw"]),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            when_hardware=dict(type="str", default="create", choices=["create", "skip"]),
            force=dict(type="bool", default=False),
            persistent=dict(type="bool", default=False),
            unit_name=dict(type="str"),
        ),
        required_if=[("state", "present", ["netdev"])],
        supports_check_mode=True,
    )
    p = module.params
    unit_name = (p["unit_name"] or default_unit_name(p["name"])) if p["persistent"] else ""
    done = []
    try:
        validate(p["name"], p["netdev"], p["type"], p["state"], p["persistent"], p["unit_name"])
        runner = RdmaLinkRunner(module.run_command, module.get_bin_path("rdma", required=True))
        hardware = sorted(n for n, d in read_devices().items() if d["hardware"])
        links = runner.links()
        before = find_link(links, p["name"])
        result = dict(changed=False, hardware_devices=hardware, skipped_for_hardware=False,
                      operations=[], link=before, links=links, boot_unit="")
        if hardware and p["when_hardware"] == "skip":
            result["skipped_for_hardware"] = True
            module.exit_json(**result)
        ops = plan_link(links, p["name"], p["netdev"], p["type"], p["state"], force=p["force"])
        # Both plans are made before anything changes, so a problem with the unit stops the link change too.
        unit_ops, unit_before, unit_after, root, systemctl = [], {}, {}, _host_root(), None
        if unit_name:
            systemctl = module.get_bin_path("systemctl", required=True)
            desired = hostconfig_state.validate(
                boot_unit_params(unit_name, p["state"], p["name"], p["netdev"], p["type"]))
            unit_ops, unit_before, unit_after = hostconfig_state.plan(
                desired, root, hostconfig_apply.SystemProbe(_run(module), systemctl))
        # Up: the link, then its unit. Down: the unit stopped and gone before the link it re-creates.
        steps = [("link", ops), ("unit", unit_ops)]
        if p["state"] == "absent":
            steps.reverse()
        if module.check_mode:
            done = [op_text(op) if kind == "link" else hostconfig_state.op_text(op) for kind, step in steps for op in step]
        else:
            for kind, step in steps:
                if kind == "unit" and step:
                    done.extend(hostconfig_apply.apply(step, root, _run(module), systemctl, "modprobe"))
                elif kind == "link":
                    for op in step:
                        runner.apply([op])
                        done.append(op_text(op))
        if ops and not module.check_mode:
            links = runner.links()
            after = find_link(links, p["name"])
        elif p["state"] == "absent":
            after = None
        elif ops:
            after = {"name": p["name"], "netdev": p["netdev"], "port": 1, "state": None, "physical_state": None}
        else:
            after = before
    except RdmaLinkError as exc:
        module.fail_json(msg=exc.msg, changed=bool(done), operations=done, **exc.details)
    except hostconfig_state.HostConfigError as exc:
        done.extend(exc.done)
        msg = exc.msg[len("host_config: "):] if exc.msg.startswith("host_config: ") else exc.msg
        module.fail_json(msg="boot unit %s: %s" % (unit_name, msg), changed=bool(done), operations=done)
    result.update(changed=bool(ops or unit_ops), operations=done, link=after, links=links, boot_unit=unit_name)
    if module._diff:
        result["diff"] = {"before": dict(unit_before, link=before), "after": dict(unit_after, link=after)}
    module.exit_json(**result)


def _run(module):
    return lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"})


if __name__ == "__main__":
    main()
