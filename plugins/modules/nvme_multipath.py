#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvme_multipath
short_description: Native NVMe multipath on an initiator, per subsystem - I/O policy, head devices, paths and ANA states
description:
  - Checks that the kernel's native NVMe multipath is on (C(nvme_core) parameter C(multipath)), sets the I/O policy of
    the given subsystems, and returns, per subsystem, its multipath head devices (C(/dev/nvmeXnY) and their stable
    C(/dev/disk/by-id) names) with every path (controller) - transport, address, controller state and the ANA state
    the target reports for that path.
  - Everything is read from C(/sys/class/nvme-subsystem), C(/sys/class/nvme) and C(/sys/block). Connect the paths
    first with M(aiinfra.fabric.nvme_connect), one task per path.
  - Each path of a head also carries C(ios), the reads and writes completed on it (its block C(stat)), which shows
    which paths carry the I/O.
  - With O(min_live_paths) the module waits (up to O(wait_timeout)) until every head has that many usable paths
    (controller C(live), ANA state optimized or non-optimized), so a play can wait for a path to come back.
version_added: "0.1.0"
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - Linux with native NVMe multipath (C(nvme_core multipath=Y), the default of Debian's kernels); the C(queue-depth)
    I/O policy needs Linux 6.11 or later. Only sysfs is read and written - no nvme-cli.
options:
  nqn:
    description: NQNs of the subsystems to manage and report. Each must be connected (at least one path).
    type: list
    elements: str
    required: true
  iopolicy:
    description:
      - I/O policy of the subsystems' head devices. C(numa) (the kernel default) sends I/O on the path closest to the
        submitting CPU; C(round-robin) spreads it over all optimized paths; C(queue-depth) picks the path with the
        fewest outstanding requests and exists from Linux 6.11 (older kernels are refused before anything changes).
      - Omitted, the policy is left as it is and only reported.
      - The kernel forgets it when the subsystem goes away (last path disconnected, reboot); run the module after
        connecting.
    type: str
    choices: [numa, round-robin, queue-depth]
  require_native_multipath:
    description:
      - Fail when C(nvme_core) is not loaded with native multipath. It cannot be switched on at run time; put
        C(options nvme_core multipath=Y) in C(/etc/modprobe.d) before the module loads, or reboot.
      - When false, a host without native multipath is reported (RV(native_multipath)=false) with its subsystems.
    type: bool
    default: true
  min_live_paths:
    description:
      - Wait until every head device of every subsystem has at least this many usable paths, and fail after
        O(wait_timeout) seconds if it does not. 0 does not wait.
    type: int
    default: 0
  wait_timeout:
    description: Seconds to wait for O(min_live_paths).
    type: int
    default: 60
extends_documentation_fragment:
  - aiinfra.fabric.attributes
attributes:
  check_mode:
    description: Reports the I/O policy changes it would make (RV(operations)); writes nothing.
    support: full
  diff_mode:
    description: Returns the I/O policy of each subsystem before and after.
    support: full
  idempotent:
    description: The policy is written only when sysfs shows another one.
    support: full
notes:
  - Run as root (writing C(iopolicy)).
  - A path whose controller is C(connecting) is being retried by the kernel every C(reconnect_delay) seconds until
    C(ctrl_loss_tmo); I/O meanwhile goes to the other usable paths, or is queued when there is none.
seealso:
  - module: aiinfra.fabric.nvme_connect
"""

EXAMPLES = r"""
- name: Connect both paths of the subsystem
  aiinfra.fabric.nvme_connect:
    transport: tcp
    traddr: "{{ item }}"
    nqn: nqn.2024-04.io.aiinfra.lab:te1.mp
  loop: [10.99.0.1, 10.99.1.1]

- name: Spread I/O over both paths and wait until both are live
  aiinfra.fabric.nvme_multipath:
    nqn: [nqn.2024-04.io.aiinfra.lab:te1.mp]
    iopolicy: round-robin
    min_live_paths: 2
  register: mp

- name: Use the stable name of the first head device
  ansible.builtin.debug:
    msg: "{{ mp.subsystems[0].heads[0].by_id }}"
"""

RETURN = r"""
native_multipath:
  description: Whether nvme_core runs with native multipath (null when nvme_core is not loaded).
  returned: always
  type: bool
  sample: true
kernel:
  description: The running kernel release.
  returned: always
  type: str
  sample: 6.12.48+deb12-amd64
subsystems:
  description: The requested subsystems after the run, sorted by NQN.
  returned: always
  type: list
  elements: dict
  sample:
    - name: nvme-subsys1
      nqn: nqn.2024-04.io.aiinfra.lab:te1.mp
      iopolicy: round-robin
      model: Linux
      serial: 3c5b1ee2d6a1
      paths:
        - controller: nvme1
          transport: tcp
          traddr: 10.99.0.1
          trsvcid: "4420"
          host_traddr: null
          host_iface: null
          src_addr: 10.99.0.2
          state: live
          namespaces:
            nvme1n1: {path_device: nvme1c1n1, ana_state: optimized, ana_grpid: 1, ios: 5210}
      heads:
        - name: nvme1n1
          path: /dev/nvme1n1
          by_id: /dev/disk/by-id/nvme-uuid.9b5d0e7e-3c3f-4d7e-a0c8-6d0f3b1f2a11
          by_id_links: [/dev/disk/by-id/nvme-Linux_3c5b1ee2d6a1, /dev/disk/by-id/nvme-uuid.9b5d0e7e-3c3f-4d7e-a0c8-6d0f3b1f2a11]
          nsid: 1
          wwid: uuid.9b5d0e7e-3c3f-4d7e-a0c8-6d0f3b1f2a11
          uuid: 9b5d0e7e-3c3f-4d7e-a0c8-6d0f3b1f2a11
          size_bytes: 1073741824
          paths:
            - {controller: nvme1, path_device: nvme1c1n1, transport: tcp, traddr: 10.99.0.1, trsvcid: "4420",
               state: live, ana_state: optimized, ana_grpid: 1, ios: 5210}
  contains:
    name:
      description: The kernel's subsystem name.
      type: str
    nqn:
      description: The subsystem's NQN.
      type: str
    iopolicy:
      description: Its multipath I/O policy.
      type: str
    model:
      description: The target's model string.
      type: str
    serial:
      description: The target's serial number.
      type: str
    paths:
      description: One entry per controller (path) of the subsystem.
      type: list
      elements: dict
      contains:
        controller:
          description: The controller's name.
          type: str
        transport:
          description: The transport.
          type: str
        traddr:
          description: The target's address.
          type: str
        trsvcid:
          description: The target's service id.
          type: str
        host_traddr:
          description: The host address it was asked to use, if any.
          type: str
        host_iface:
          description: The host interface it was asked to use, if any.
          type: str
        src_addr:
          description: The local address it uses (tcp).
          type: str
        state:
          description: The controller's state.
          type: str
        namespaces:
          description: Per head device name (the key), the path's view of that namespace.
          type: dict
          contains:
            <head>:
              description: One namespace through this path.
              type: dict
              contains:
                path_device:
                  description: The hidden per-path device.
                  type: str
                ana_state:
                  description: The ANA state.
                  type: str
                ana_grpid:
                  description: The ANA group.
                  type: int
                ios:
                  description: I/Os completed through this path.
                  type: int
    heads:
      description: The subsystem's multipath head devices (the ones to use).
      type: list
      elements: dict
      contains:
        name:
          description: The head's kernel name.
          type: str
        path:
          description: Its device path.
          type: str
        by_id:
          description: Its stable C(/dev/disk/by-id) name (by UUID, NGUID or EUI where it has one).
          type: str
        by_id_links:
          description: All its C(/dev/disk/by-id) names.
          type: list
          elements: str
        nsid:
          description: The namespace id.
          type: int
        wwid:
          description: The kernel's C(wwid).
          type: str
        uuid:
          description: The namespace UUID, if any.
          type: str
        size_bytes:
          description: Its size in bytes.
          type: int
        paths:
          description: Its paths.
          type: list
          elements: dict
          contains:
            controller:
              description: The controller's name.
              type: str
            path_device:
              description: The hidden per-path device (C(nvmeXcYnZ)).
              type: str
            transport:
              description: The transport.
              type: str
            traddr:
              description: The target's address.
              type: str
            trsvcid:
              description: The target's service id.
              type: str
            state:
              description: The controller's state.
              type: str
            ana_state:
              description: The path's ANA state (C(optimized), C(non-optimized), C(inaccessible) ...).
              type: str
            ana_grpid:
              description: The path's ANA group.
              type: int
            ios:
              description: The I/Os completed through this path (reads and writes).
              type: int
operations:
  description: I/O policy writes done (or, in check mode, that would be done).
  returned: always
  type: list
  elements: str
  sample: ["nvme-subsys1 iopolicy numa -> round-robin"]
time_ms:
  description: When the returned state was read (Unix epoch milliseconds), to line it up with I/O logs.
  returned: always
  type: int
  sample: 1764560000500
waited_s:
  description: Seconds spent waiting for O(min_live_paths).
  returned: always
  type: float
  sample: 0.0
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import ValidationError, validate_nqn
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import (
    IOPOLICIES, MultipathError, MultipathSysfs, validate_iopolicy,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath_run import (
    MultipathFailure, converge_multipath, native_multipath_check,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nqn=dict(type="list", elements="str", required=True),
            iopolicy=dict(type="str", choices=list(IOPOLICIES)),
            require_native_multipath=dict(type="bool", default=True),
            min_live_paths=dict(type="int", default=0),
            wait_timeout=dict(type="int", default=60),
        ),
        supports_check_mode=True,
    )
    params = module.params
    release = os.uname()[2]
    try:
        nqns = [validate_nqn(n, "nqn") for n in params["nqn"]]
        iopolicy = validate_iopolicy(params["iopolicy"], release)
    except (ValidationError, MultipathError) as exc:
        module.fail_json(msg=str(exc))
    if not nqns:
        module.fail_json(msg="nqn is empty: give the NQN of at least one connected subsystem")
    for key in ("min_live_paths", "wait_timeout"):
        if params[key] < 0:
            module.fail_json(msg="%s=%d must be >= 0" % (key, params[key]))

    sysfs = MultipathSysfs()
    result = dict(changed=False, kernel=release, operations=[], waited_s=0.0)
    try:
        native = native_multipath_check(sysfs, params["require_native_multipath"])
        result.update(converge_multipath(sysfs, nqns, iopolicy, native, params["min_live_paths"],
                                         params["wait_timeout"], module.check_mode, module._diff))
    except MultipathFailure as exc:
        result.update(exc.result)
        module.fail_json(msg=exc.msg, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
