#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvme_connections
short_description: Connect an NVMe-oF host to every path of several subsystems in one task, with native multipath
description:
  - The whole-host form of M(aiinfra.fabric.nvme_connect) and M(aiinfra.fabric.nvme_multipath) - a list of subsystems,
    each with its paths, converged in one module run, so a host with dozens of paths costs one task, not one per
    path.
  - Each path is converged exactly as M(aiinfra.fabric.nvme_connect) converges one connection (the same sysfs reading,
    drift, guards, nvme-cli capability checks and saved connections); the settings given at the top level (timeouts,
    queues, DH-HMAC-CHAP secrets, persistence) apply to every path.
  - A path with a DH-HMAC-CHAP secret or a TLS key connects by writing the kernel's option string to
    C(/dev/nvme-fabrics), on every nvme-cli release, so no secret is ever on a command line (see
    M(aiinfra.fabric.nvme_connect)); the other paths connect with C(nvme connect).
  - Every path is validated and planned before the first one is changed - a bad entry anywhere, a missing nvme-cli
    ability, or a disconnect of a namespace in use is reported (every error at once, each named by its place such as
    C(subsystems[1].paths[0].traddr)) and nothing is changed.
  - The host's controllers are read once for the whole plan, and once again to report the paths already in place. The
    new connections are made one after the other and then waited for together (until each is live and its namespace
    devices exist), so 32 new paths wait about as long as one.
  - With O(state=connected), once a subsystem's paths are connected its I/O policy is set (native multipath) and the
    module waits until each of its head devices has O(subsystems[].min_live_paths) usable paths, as
    M(aiinfra.fabric.nvme_multipath) does.
version_added: "0.1.0"
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - As M(aiinfra.fabric.nvme_connect) - nvme-cli 2.x, the nvme-fabrics module loaded, and C(/etc/nvme/hostnqn) for
    the paths that do not name a O(subsystems[].paths[].hostnqn).
options:
  subsystems:
    description: The subsystems to connect (or disconnect), each once, with all its paths.
    type: list
    elements: dict
    required: true
    suboptions:
      nqn:
        description: NQN of the subsystem.
        type: str
        required: true
      paths:
        description: The paths (controllers) to the subsystem; one controller each.
        type: list
        elements: dict
        required: true
        suboptions:
          transport:
            description: NVMe-oF transport of this path.
            type: str
            required: true
            choices: [tcp, rdma, fc, loop]
          traddr:
            description: Target address, as M(aiinfra.fabric.nvme_connect)'s O(aiinfra.fabric.nvme_connect#module:traddr).
            type: str
          trsvcid:
            description: Target port (service id).
            type: str
            default: "4420"
          host_traddr:
            description: Source address on this host for this path.
            type: str
          host_iface:
            description: Network interface to connect from (C(tcp) only).
            type: str
          hostnqn:
            description:
              - Host NQN this path connects as; one machine can connect to one subsystem as several hosts. Defaults
                to C(/etc/nvme/hostnqn).
            type: str
          hostid:
            description: Host ID (a UUID) of O(subsystems[].paths[].hostnqn); see M(aiinfra.fabric.nvme_connect).
            type: str
      tls:
        description: Connect this subsystem's paths with TLS (NVMe/TCP); they use O(tls_key), O(keyring) and O(concat).
        type: bool
        default: false
      iopolicy:
        description:
          - I/O policy of the subsystem's head devices (C(numa), C(round-robin), C(queue-depth) from Linux 6.11).
            Omitted, the policy is left as it is.
          - Needs native multipath; on a host without it nothing is written.
        type: str
        choices: [numa, round-robin, queue-depth]
      min_live_paths:
        description:
          - Wait (up to O(wait_timeout) seconds) until each head device of the subsystem has this many usable paths
            (controller live, ANA optimized or non-optimized), and fail when it does not. Defaults to the number of
            paths listed; 0 does not wait.
        type: int
  state:
    description:
      - C(connected) makes sure each path has a matching controller, then sets the I/O policies and waits for the
        paths; C(disconnected) disconnects exactly the listed paths (and removes their saved entries).
    type: str
    choices: [connected, disconnected]
    default: connected
  ctrl_loss_tmo:
    description: Seconds to keep retrying a lost connection (-1 forever), every path.
    type: int
  reconnect_delay:
    description: Seconds between reconnect attempts, every path.
    type: int
  keep_alive_tmo:
    description: Keep-alive timeout in seconds, every path.
    type: int
  fast_io_fail_tmo:
    description: Seconds before queued I/O of a lost path fails (see M(aiinfra.fabric.nvme_connect)), every path.
    type: int
  nr_io_queues:
    description: Number of I/O queues, every path.
    type: int
  queue_size:
    description: I/O queue depth (16-1024), every path.
    type: int
  dhchap_secret:
    description:
      - The host's DH-HMAC-CHAP secret, every path. Never logged or returned, never on a command line (written to
        C(/dev/nvme-fabrics)).
    type: str
  dhchap_ctrl_secret:
    description:
      - The controller's DH-HMAC-CHAP secret (bidirectional), every path. Never logged or returned, never on a
        command line.
    type: str
  tls_key:
    description:
      - TLS key of the paths of the subsystems with O(subsystems[].tls=true), as in M(aiinfra.fabric.nvme_connect) -
        a key serial, or a PSK in interchange format, which is put into the keyring first. Never logged or returned,
        never on a command line.
    type: str
  keyring:
    description: Keyring the TLS keys are looked up in, for the subsystems with O(subsystems[].tls=true).
    type: str
  concat:
    description: Secure concatenation for the subsystems with O(subsystems[].tls=true); needs O(dhchap_secret).
    type: bool
    default: false
  persistent:
    description: Save every path for C(nvmf-autoconnect.service) at boot, as M(aiinfra.fabric.nvme_connect) does.
    type: bool
    default: false
  reconnect:
    description: Allow disconnecting and connecting again a path whose live settings differ (the C(drift) of its RV(connections) entry).
    type: bool
    default: false
  force:
    description: Disconnect even when a namespace of the subsystem is mounted, used as swap, or held by another device.
    type: bool
    default: false
  require_native_multipath:
    description:
      - With O(state=connected), fail when C(nvme_core) does not run with native multipath, before connecting anything.
        When false such a host is reported (RV(native_multipath)=false) and no I/O policy is written.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait for each new controller and its namespace block devices, and for each subsystem's
        O(subsystems[].min_live_paths).
    type: int
    default: 30
extends_documentation_fragment:
  - aiinfra.fabric.attributes
attributes:
  check_mode:
    description:
      - Plans every path and reports what it would connect, disconnect, write and set (RV(operations)); changes nothing.
        The paths of a subsystem that is not fully connected yet cannot be waited for, and its RV(subsystems) entry is
        missing.
    support: full
  diff_mode:
    description: Returns each path's state before and after (controllers, devices, saved) and the I/O policies.
    support: full
  idempotent:
    description: Read from sysfs; a repeated run with the same parameters changes nothing.
    support: full
notes:
  - Run as root.
  - Paths are applied in the order listed. A path that fails to connect stops the run; the paths applied before it
    stay connected and are listed in RV(connections).
  - A host NQN is not generated here; create C(/etc/nvme/hostnqn) first (the aiinfra.fabric.nvmeof_initiator role
    does).
seealso:
  - module: aiinfra.fabric.nvme_connect
  - module: aiinfra.fabric.nvme_multipath
"""

EXAMPLES = r"""
- name: Connect both paths of two subsystems, spread I/O over them and wait until all paths are usable
  aiinfra.fabric.nvme_connections:
    subsystems:
      - nqn: nqn.2024-04.io.aiinfra.lab:te1.mp
        iopolicy: round-robin
        paths:
          - {transport: tcp, traddr: 10.99.0.1, trsvcid: "4420"}
          - {transport: tcp, traddr: 10.99.1.1, trsvcid: "4420"}
      - nqn: nqn.2024-04.io.aiinfra.lab:te1.scratch
        paths:
          - {transport: rdma, traddr: 10.99.0.1, trsvcid: "4421"}
    ctrl_loss_tmo: 600
    persistent: true
  register: nvme

- name: Format the first subsystem's head device
  community.general.filesystem:
    dev: "{{ nvme.subsystems[0].heads[0].path }}"
    fstype: xfs

- name: Disconnect exactly those paths
  aiinfra.fabric.nvme_connections:
    subsystems: "{{ nvme_subsystems }}"
    state: disconnected
"""

RETURN = r"""
connections:
  description:
    - One entry per path, in the order listed, with what M(aiinfra.fabric.nvme_connect) returns for it (C(changed),
      C(operations), C(controllers), C(devices), C(persistent), C(persistent_mode), C(drift) when the live settings
      differ) and the path (C(where), C(label), C(nqn), C(transport), C(traddr), C(trsvcid), C(hostnqn)).
  returned: always
  type: list
  elements: dict
  sample:
    - where: subsystems[0].paths[0]
      label: nqn.2024-04.io.aiinfra.lab:te1.mp tcp 10.99.0.1:4420
      nqn: nqn.2024-04.io.aiinfra.lab:te1.mp
      transport: tcp
      traddr: 10.99.0.1
      trsvcid: "4420"
      hostnqn: null
      changed: true
      operations: [connect]
      controllers: [{name: nvme1, state: live, transport: tcp, traddr: 10.99.0.1, trsvcid: "4420"}]
      devices: [{path: /dev/nvme1n1, name: nvme1n1, nsid: 1, controller: nvme1}]
      persistent: false
  contains:
    where:
      description: The path's place in O(subsystems).
      type: str
    label:
      description: The path in words - NQN, transport, address and service id.
      type: str
    nqn:
      description: The subsystem's NQN.
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
    hostnqn:
      description: The host NQN the path asked for (null - the host's own).
      type: str
    changed:
      description: Whether this path changed.
      type: bool
    operations:
      description: What was done for this path.
      type: list
      elements: str
    controllers:
      description:
        - The path's controllers, as M(aiinfra.fabric.nvme_connect) returns them in
          RV(aiinfra.fabric.nvme_connect#module:controllers).
      type: list
      elements: dict
    devices:
      description:
        - The path's namespace devices, as M(aiinfra.fabric.nvme_connect) returns them in
          RV(aiinfra.fabric.nvme_connect#module:devices).
      type: list
      elements: dict
    persistent:
      description: Whether the path is saved for nvmf-autoconnect.
      type: bool
    persistent_mode:
      description: The mode of the file that saves it.
      type: str
    drift:
      description:
        - The live settings that differ, when they do, as M(aiinfra.fabric.nvme_connect) returns them in
          RV(aiinfra.fabric.nvme_connect#module:drift).
      type: dict
controllers:
  description:
    - Every path's controllers after the run, one list, each in the shape that M(aiinfra.fabric.nvme_connect) returns
      as RV(aiinfra.fabric.nvme_connect#module:controllers), where their keys are described.
  returned: always
  type: list
  elements: dict
  sample: [{name: nvme1, state: live, transport: tcp, traddr: 10.99.0.1, trsvcid: "4420", subsysnqn: nqn.2024-04.io.aiinfra.lab:te1.mp}]
devices:
  description:
    - The namespace block devices of every path after the run, each once (with native multipath, the heads).
    - Each in the shape that M(aiinfra.fabric.nvme_connect) returns as RV(aiinfra.fabric.nvme_connect#module:devices),
      where their keys are described.
  returned: always
  type: list
  elements: dict
  sample: [{path: /dev/nvme1n1, name: nvme1n1, nsid: 1, size_bytes: 1073741824, controller: nvme1}]
native_multipath:
  description: Whether nvme_core runs with native multipath (null when not loaded); with O(state=connected).
  returned: when state is connected
  type: bool
  sample: true
subsystems:
  description:
    - Per subsystem after the multipath step, as M(aiinfra.fabric.nvme_multipath) returns them (I/O policy, head
      devices with their stable names, every path with its ANA state); in the order listed.
  returned: when state is connected
  type: list
  elements: dict
  sample: [{name: nvme-subsys1, nqn: nqn.2024-04.io.aiinfra.lab:te1.mp, iopolicy: round-robin, paths: [], heads: []}]
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
    paths:
      description: Its paths (controllers), as M(aiinfra.fabric.nvme_multipath) returns them.
      type: list
      elements: dict
      contains:
        controller:
          description: The controller's name.
          type: str
        state:
          description: Its state.
          type: str
    heads:
      description: Its head devices, as M(aiinfra.fabric.nvme_multipath) returns them.
      type: list
      elements: dict
      contains:
        path:
          description: The head device's path.
          type: str
        by_id:
          description: Its stable C(/dev/disk/by-id) name.
          type: str
operations:
  description: What was done (or would be, in check mode), each prefixed by the path or subsystem it concerns.
  returned: always
  type: list
  elements: str
  sample: ["nqn.2024-04.io.aiinfra.lab:te1.mp tcp 10.99.0.1:4420: connect", "nvme-subsys1 iopolicy numa -> round-robin"]
waited_s:
  description: Seconds spent waiting for the subsystems' paths, all together.
  returned: always
  type: float
  sample: 1.2
diff:
  description: Per path and per subsystem, the state before and after.
  returned: when diff mode is on
  type: dict
  sample:
    before: {paths: {"nqn.2024-04.io.aiinfra.lab:te1.mp tcp 10.99.0.1:4420": {state: disconnected, controllers: [],
                     devices: [], persistent: false, persistent_mode: null}},
             iopolicy: {"nqn.2024-04.io.aiinfra.lab:te1.mp": numa}}
    after: {paths: {"nqn.2024-04.io.aiinfra.lab:te1.mp tcp 10.99.0.1:4420": {state: connected, controllers: [nvme1],
                    devices: [/dev/nvme1n1], persistent: false, persistent_mode: null}},
            iopolicy: {"nqn.2024-04.io.aiinfra.lab:te1.mp": round-robin}}
  contains:
    before:
      description: The state before the run.
      type: dict
      contains:
        paths:
          description: Per path (by its label), the state as M(aiinfra.fabric.nvme_connect) shows it in its diff.
          type: dict
          contains:
            <label>:
              description:
                - One path's state before the run, in the shape of RV(aiinfra.fabric.nvme_connect#module:diff.before)
                  (C(state), C(controllers), C(devices), C(persistent), C(persistent_mode)).
              type: dict
        iopolicy:
          description: Per subsystem NQN, its I/O policy.
          type: dict
          contains:
            <nqn>:
              description: The I/O policy.
              type: str
    after:
      description: The state after the run (in check mode, as it would be).
      type: dict
      contains:
        paths:
          description: Per path (by its label), the state as M(aiinfra.fabric.nvme_connect) shows it in its diff.
          type: dict
          contains:
            <label>:
              description:
                - One path's state after the run, in the shape of RV(aiinfra.fabric.nvme_connect#module:diff.before)
                  (C(state), C(controllers), C(devices), C(persistent), C(persistent_mode)).
              type: dict
        iopolicy:
          description: Per subsystem NQN, its I/O policy.
          type: dict
          contains:
            <nqn>:
              description: The I/O policy.
              type: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCli
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connect_run import (
    ConnectFailure, apply_connections, connection_settings_spec, prepare_connection,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import address_spec
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connections import (
    connections_from_params, host_result, path_label,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import IOPOLICIES, MultipathSysfs
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath_run import (
    MultipathFailure, converge_multipath, native_multipath_check,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs

SUBSYSTEM_SPEC = dict(
    nqn=dict(type="str", required=True),
    paths=dict(type="list", elements="dict", required=True, options=address_spec()),
    tls=dict(type="bool", default=False),
    iopolicy=dict(type="str", choices=list(IOPOLICIES)),
    min_live_paths=dict(type="int"),
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            subsystems=dict(type="list", elements="dict", required=True, options=SUBSYSTEM_SPEC),
            require_native_multipath=dict(type="bool", default=True),
            **connection_settings_spec()
        ),
        supports_check_mode=True,
    )
    params = module.params
    connected = params["state"] == "connected"
    connections, subsystems, errors = connections_from_params(params, os.uname()[2])
    if errors:
        module.fail_json(msg="%d error(s) in the input, nothing was changed: %s" % (len(errors), "; ".join(errors)),
                         errors=errors)

    # Read and plan every path (and the multipath setting) before the first change, from
    # one read of the host's controllers: nothing changes until the first connect.
    sysfs = FabricsSysfs()
    sysfs.hold()
    mp_sysfs = MultipathSysfs()
    cli = NvmeCli(module)
    result = dict(changed=False, connections=[], operations=[], waited_s=0.0)
    native = None
    plans = []
    try:
        if connected:
            native = native_multipath_check(mp_sysfs, params["require_native_multipath"])
            result["native_multipath"] = native
        for where, conn, desired in connections:
            try:
                plans.append((where, conn, prepare_connection(conn, desired, cli, sysfs, module.check_mode)))
            except ConnectFailure as exc:
                raise ConnectFailure("%s (%s): %s; nothing was changed" % (where, path_label(desired), exc.msg),
                                     **exc.details)
    except MultipathFailure as exc:
        module.fail_json(msg="%s; nothing was changed" % exc.msg, **result)
    except ConnectFailure as exc:
        module.fail_json(msg=exc.msg, **dict(exc.details, **result))

    warnings = []
    pending = {}
    done, failure = apply_connections(module, plans, cli, sysfs, params["wait_timeout"])
    for where, conn, plan, one, one_warnings in done:
        label = path_label(plan["desired"])
        warnings.extend("%s: %s" % (label, w) for w in one_warnings)
        result["connections"].append(dict(one, where=where, label=label, nqn=conn["nqn"], transport=conn["transport"],
                                          traddr=plan["desired"]["traddr"], trsvcid=plan["desired"]["trsvcid"],
                                          hostnqn=conn.get("hostnqn")))
        result["operations"].extend("%s: %s" % (label, op) for op in one["operations"])
        if any(op[0] == "connect" for op in plan["ops"]):
            pending[conn["nqn"]] = True
    if failure:
        result.update(host_result(result["connections"], None))
        module.fail_json(msg="%s (%s): %s" % (failure["where"], path_label(failure["plan"]["desired"]),
                                              failure["error"].msg), **dict(failure["error"].details, **result))

    mp_results = []
    if connected:
        for sub in subsystems:
            if module.check_mode and pending.get(sub["nqn"]):
                # Nothing to read yet: the subsystem is not (fully) connected before this run.
                continue
            try:
                one = converge_multipath(mp_sysfs, [sub["nqn"]], sub["iopolicy"], native, sub["min_live_paths"],
                                         params["wait_timeout"], module.check_mode, module._diff)
            except MultipathFailure as exc:
                result.update(host_result(result["connections"], mp_results + [exc.result]))
                module.fail_json(msg="%s: %s" % (sub["nqn"], exc.msg), **result)
            mp_results.append(one)
            result["operations"].extend(one["operations"])
    result.update(host_result(result["connections"], mp_results if connected else None))
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
