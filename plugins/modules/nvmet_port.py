#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvmet_port
short_description: Manage an NVMe-oF port of the Linux kernel target (nvmet) through configfs
version_added: "0.1.0"
description:
  - Declares one port under C(<configfs_root>/nvmet/ports/<port_id>) (transport, address, parameters) and the
    subsystems linked to it. Linking the first subsystem enables the port (the kernel starts listening).
  - The kernel changes C(addr_*) and C(param_*) only while no subsystem is linked. When they differ on a port with
    linked subsystems, the module fails unless O(allow_reconfigure=true); then it unlinks every subsystem, writes
    the new values and links them again. B(This disconnects every host using the port.) If the kernel refuses a
    value part way, the module puts back the old values and the links it removed, and says what it put back (or
    exactly what it could not).
  - Unlinking subsystems, reconfiguring or removing a port with live connections also needs O(force=true).
  - With O(state=absent) the subsystems are unlinked, referrals and extra ANA groups removed, then the port.
  - All input is validated before anything is touched, including that the transport's kernel module (for
    example C(nvmet_tcp) for tcp, C(nvme_loop) for loop) is loaded and that listed subsystems exist.
author:
  - aiinfra.fabric developers (@aiinfra)
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.declarative
  - aiinfra.fabric.nvmet
options:
  port_id:
    description: Port id, 0 to 65535 (the directory name under C(ports/)).
    type: int
    required: true
  state:
    description: Whether the port exists.
    type: str
    choices: [present, absent]
    default: present
  trtype:
    description: Transport. Required when O(state=present).
    type: str
    choices: [tcp, rdma, fc, loop]
  traddr:
    description: Address to listen on (an IP address for tcp/rdma). Required except for loop.
    type: str
  trsvcid:
    description: Service id (TCP/RDMA port number). Defaults to C(4420) for tcp and rdma.
    type: str
  adrfam:
    description: Address family. Derived from O(traddr) when not given (ipv4, ipv6; fc for trtype fc).
    type: str
    choices: [ipv4, ipv6, ib, fc]
  treq:
    description: Secure channel requirement (C(addr_treq)).
    type: str
    choices: [not specified, required, not required]
  tsas:
    description: Transport specific address subtype; for tcp C(none) or C(tls1.3) (TLS).
    type: str
  inline_data_size:
    description:
      - C(param_inline_data_size) in bytes; a negative value lets the transport choose.
      - Compared as an enabled port shows it. The kernel rewrites a negative value when the port is enabled (tcp
        4 pages, 16384 on x86-64; rdma one page; other transports 0) and caps rdma at max(16384, a page), so
        C(-1) and C(16384) on tcp are the same setting and neither is written again.
    type: int
  params:
    description: Other C(param_*) values without the prefix, for example C(max_queue_size=128) as a dict.
    type: dict
    default: {}
  ana_groups:
    description:
      - ANA (asymmetric namespace access) groups of this port and their states, for NVMe native multipath.
        Groups listed are created when missing (group 1 always exists); O(ana_groups[].state) is written when it
        differs. A namespace is put in a group with C(ana_grpid) of aiinfra.fabric.nvmet_subsystem.
      - A group a port does not define is C(inaccessible) on it; a new group starts C(inaccessible) too.
    type: list
    elements: dict
    suboptions:
      grpid:
        description: Group id, 1 to 128.
        type: int
        required: true
      state:
        description: ANA state of the group on this port. Omit to leave it as it is.
        type: str
        choices: [optimized, non-optimized, inaccessible, persistent-loss, change]
  purge_ana_groups:
    description:
      - Remove the port's ANA groups that O(ana_groups) does not list (except group 1). A group still used by an
        enabled namespace of a subsystem linked to the port is only removed with O(force=true).
    type: bool
    default: false
  referrals:
    description:
      - Discovery referrals of this port (C(referrals/<name>)). Hosts asking this port's discovery controller are
        also pointed to these addresses. Listed referrals are created when missing; a changed one is disabled,
        rewritten and enabled again (the kernel changes a referral's address only while it is disabled).
    type: list
    elements: dict
    suboptions:
      name:
        description: Directory name of the referral.
        type: str
        required: true
      trtype:
        description: Transport of the referred discovery service.
        type: str
        required: true
        choices: [tcp, rdma, fc, loop]
      traddr:
        description: Its address. Required except for loop.
        type: str
      trsvcid:
        description: Its service id; C(4420) when not given for tcp and rdma.
        type: str
      adrfam:
        description: Address family; derived from O(referrals[].traddr) when not given.
        type: str
        choices: [ipv4, ipv6, ib, fc]
      treq:
        description: Secure channel requirement.
        type: str
        choices: [not specified, required, not required]
      portid:
        description: Port id of the referred port, 0 to 65535.
        type: int
      enabled:
        description: Whether the referral is advertised.
        type: bool
        default: true
  purge_referrals:
    description: Remove the port's referrals that O(referrals) does not list.
    type: bool
    default: false
  discovery_nqn:
    description:
      - NQN of the target's discovery subsystem (C(<configfs_root>/nvmet/discovery_nqn), Linux 6.6 and later).
        B(Target-wide), not per port; the kernel refuses an NQN that a subsystem uses.
    type: str
  subsystems:
    description:
      - NQNs of the subsystems linked to this port; exactly this list when given (others are unlinked).
        Omit to leave the links alone. Each subsystem must already exist (in check mode a missing one only
        gives a warning, since an earlier task of the same run would have created it).
    type: list
    elements: str
  allow_reconfigure:
    description:
      - Allow unlink, change, relink when O(trtype)/O(traddr)/O(trsvcid)/O(adrfam)/O(treq)/O(tsas)/parameters differ
        on a port that has linked subsystems. This disconnects the hosts using the port.
    type: bool
    default: false
  force:
    description:
      - Proceed when hosts may be connected to the port (unlinking, reconfiguring or removing it), and remove ANA
        groups that namespaces still use.
      - Connections are read from the nvmet debugfs tree when present, else from established TCP sockets or
        connected RDMA CM ids on the port's address, or loop controllers. When nothing can be read the change is
        refused without O(force).
    type: bool
    default: false
notes:
  - Needs the C(nvmet) kernel module and the transport's module loaded; loading them is the role's job
    (community.general.modprobe).
  - A port whose transport address (O(trtype), O(traddr), O(trsvcid)) another port already has is refused before
    anything changes, naming that port. The kernel listens once per address, so such a port could never be enabled.
seealso:
  - module: aiinfra.fabric.nvmet_subsystem
  - module: aiinfra.fabric.nvmet_info
"""

EXAMPLES = r"""
- name: Serve a subsystem over NVMe/TCP
  aiinfra.fabric.nvmet_port:
    port_id: 1
    trtype: tcp
    traddr: 10.99.0.1
    subsystems: [nqn.2024-04.com.example:te1.target1]

- name: Move the RDMA port to another address (disconnects its hosts)
  aiinfra.fabric.nvmet_port:
    port_id: 2
    trtype: rdma
    traddr: 10.99.0.5
    allow_reconfigure: true
    force: true

- name: Make ANA group 2 optimized on port 1 (then move namespaces into it with ana_grpid)
  aiinfra.fabric.nvmet_port:
    port_id: 1
    trtype: tcp
    traddr: 10.99.0.1
    ana_groups:
      - {grpid: 2, state: optimized}

- name: Refer hosts that discover on port 1 to a second target's discovery service
  aiinfra.fabric.nvmet_port:
    port_id: 1
    trtype: tcp
    traddr: 10.99.0.1
    referrals:
      - {name: te3, trtype: tcp, traddr: 10.99.0.3, portid: 1}
"""

RETURN = r"""
port:
  description: The port after the run (predicted in check mode); null when absent.
  returned: always
  type: dict
  contains:
    port_id:
      description: Port id.
      type: int
    trtype:
      description: Transport.
      type: str
    traddr:
      description: Address.
      type: str
    trsvcid:
      description: Service id.
      type: str
    adrfam:
      description: Address family.
      type: str
    treq:
      description: Secure channel requirement.
      type: str
    tsas:
      description: Transport specific address subtype.
      type: str
    inline_data_size:
      description: Inline data size.
      type: int
    params:
      description: Other C(param_*) values, without the prefix, as text (C(max_queue_size), C(pi_enable) ...).
      type: dict
      contains:
        max_queue_size:
          description: C(param_max_queue_size).
          type: str
        pi_enable:
          description: C(param_pi_enable).
          type: str
    subsystems:
      description: Linked subsystem NQNs, sorted.
      type: list
      elements: str
    referrals:
      description: The port's discovery referrals.
      type: list
      elements: dict
      contains:
        name:
          description: The referral's name.
          type: str
        trtype:
          description: Its transport.
          type: str
        adrfam:
          description: Its address family.
          type: str
        traddr:
          description: Its address.
          type: str
        trsvcid:
          description: Its service id.
          type: str
        treq:
          description: Its secure channel requirement.
          type: str
        portid:
          description: The port id it refers to.
          type: str
        enabled:
          description: Whether it is enabled.
          type: bool
    ana_groups:
      description: The port's ANA groups.
      type: list
      elements: dict
      contains:
        grpid:
          description: The group id.
          type: int
        state:
          description: Its state (C(optimized), C(non-optimized), C(inaccessible), C(persistent-loss), C(change)).
          type: str
  sample:
    port_id: 1
    trtype: tcp
    traddr: 10.99.0.1
    trsvcid: "4420"
    adrfam: ipv4
    treq: not specified
    tsas: none
    inline_data_size: -1
    params: {max_queue_size: "-1", pi_enable: "0"}
    subsystems: [nqn.2024-04.com.example:te1.target1]
    referrals: [{name: te3, trtype: tcp, adrfam: ipv4, traddr: 10.99.0.3, trsvcid: "4420", treq: not specified,
                 portid: "1", enabled: true}]
    ana_groups: [{grpid: 1, state: optimized}]
discovery_nqn:
  description: The target's discovery subsystem NQN after the run; null when the kernel has no C(discovery_nqn).
  returned: always
  type: str
  sample: nqn.2014-08.org.nvmexpress.discovery
operations:
  description: The planned operations in order, applied unless in check mode.
  returned: always
  type: list
  elements: str
  sample:
    - mkdir ports/1
    - write ports/1/addr_trtype = tcp
    - link ports/1/subsystems/nqn.2024-04.com.example:te1.target1 -> subsystems/nqn.2024-04.com.example:te1.target1
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.canonical import ANA_STATES
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree, export_port
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import plan_port
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.result import apply_and_exit
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs, normalize_port


def main():
    module = AnsibleModule(
        argument_spec=dict(
            port_id=dict(type="int", required=True),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            trtype=dict(type="str", choices=list(transports.NAMES)),
            traddr=dict(type="str"),
            trsvcid=dict(type="str"),
            adrfam=dict(type="str", choices=list(transports.ADRFAMS)),
            treq=dict(type="str", choices=["not specified", "required", "not required"]),
            tsas=dict(type="str"),
            inline_data_size=dict(type="int"),
            params=dict(type="dict", default={}),
            ana_groups=dict(type="list", elements="dict", options=dict(
                grpid=dict(type="int", required=True),
                state=dict(type="str", choices=list(ANA_STATES)),
            )),
            purge_ana_groups=dict(type="bool", default=False),
            referrals=dict(type="list", elements="dict", options=dict(
                name=dict(type="str", required=True),
                trtype=dict(type="str", required=True, choices=list(transports.NAMES)),
                traddr=dict(type="str"),
                trsvcid=dict(type="str"),
                adrfam=dict(type="str", choices=list(transports.ADRFAMS)),
                treq=dict(type="str", choices=["not specified", "required", "not required"]),
                portid=dict(type="int"),
                enabled=dict(type="bool", default=True),
            )),
            purge_referrals=dict(type="bool", default=False),
            discovery_nqn=dict(type="str"),
            subsystems=dict(type="list", elements="str"),
            allow_reconfigure=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
            configfs_root=dict(type="path", default="/sys/kernel/config"),
        ),
        required_if=[("state", "present", ("trtype",))],
        supports_check_mode=True,
    )
    p = module.params
    tree = ConfigfsTree(p["configfs_root"])
    try:
        check_configfs(tree)
        spec = normalize_port(p, tree.sysfs_root)
        state = tree.read()
        ops = plan_port(state, spec, tree.connections(state), p["force"], p["allow_reconfigure"],
                        missing_ok=module.check_mode)
    except NvmetError as exc:
        module.fail_json(msg=exc.msg, changed=False, operations=[])

    pid = spec["port_id"]
    for nqn in spec.get("subsystems") or []:
        if nqn not in state["subsystems"]:
            module.warn("subsystem %s does not exist yet; a real run fails unless an earlier task creates it" % nqn)
    apply_and_exit(module, tree, state, ops, "ports", pid, export_port, "port",
                   extra=dict(discovery_nqn=spec.get("discovery_nqn") or state.get("discovery_nqn")))


if __name__ == "__main__":
    main()
