#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvme_discover
short_description: Read the discovery log of an NVMe over Fabrics discovery controller
description:
  - Runs C(nvme discover --output-format=json) against one discovery controller and
    returns the discovery log entries as structured data.
  - Understands the JSON layouts of nvme-cli 1.x and 2.x (C(portid) in most releases,
    C("Port ID") in 2.7) and several discovery logs printed back to back.
  - Read-only. nvme-cli connects a discovery controller for the query and removes it
    again; no I/O controller is created.
  - With O(dhchap_secret) the secret never goes on a command line, where every local user can read it
    (C(/proc/PID/cmdline)). The module creates the discovery controller itself by writing the kernel's
    option string, secret included, to C(/dev/nvme-fabrics), reads its log with
    C(nvme discover --device=nvmeN --output-format=json) (nvme-cli 2.3 and 2.13 alike), and removes
    the controller again. That also makes the secret reach the discovery controller, which C(nvme discover
    --dhchap-secret) never did; libnvme 1.3 to 1.16 (nvme-cli 2.3 to 2.16) leave it out of the options of
    a discovery controller.
version_added: "0.1.0"
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - nvme-cli 1.x or 2.x on the managed host; the nvme-fabrics module loaded.
options:
  transport:
    description: NVMe-oF transport of the discovery controller.
  traddr:
    description: Address of the discovery controller (an IP address for tcp and rdma).
    type: str
  trsvcid:
    description:
      - Port of the discovery controller.
      - The Linux kernel target (nvmet) answers discovery on every port it listens on,
        so the default is its usual NVMe port C(4420), the same port the connection
        uses. Other targets may run a dedicated discovery service on C(8009), the
        IANA port for NVMe/TCP discovery.
    type: str
    default: "4420"
  host_traddr:
    description: Source address on this host.
    type: str
  host_iface:
    description: Network interface to use (tcp only).
    type: str
  hostnqn:
    description: Host NQN to present. nvme-cli uses C(/etc/nvme/hostnqn) when not given.
    type: str
  hostid:
    description: Host ID to present. nvme-cli uses C(/etc/nvme/hostid) when not given.
    type: str
  dhchap_secret:
    description:
      - The host's DH-HMAC-CHAP secret, for discovery controllers that require authentication. Written to
        C(/dev/nvme-fabrics) with the controller's options, never passed to nvme-cli. Never logged or
        returned.
      - The host identity is then O(hostnqn) and O(hostid), else C(/etc/nvme/hostnqn) and C(/etc/nvme/hostid),
        which must exist (nvme-cli would make up an NQN the target does not know).
      - The Linux kernel target (nvmet) never asks a host to authenticate to its discovery controller; the
        secret matters to targets that do.
    type: str
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.nvme_transport
attributes:
  check_mode:
    description: Only reads; runs the discovery in check mode too.
    support: full
  diff_mode:
    description: Changes nothing, so there is no diff.
    support: N/A
notes:
  - Run as root.
seealso:
  - module: aiinfra.fabric.nvme_connect
"""

EXAMPLES = r"""
- name: List what the lab target offers over NVMe/TCP
  aiinfra.fabric.nvme_discover:
    transport: tcp
    traddr: 10.99.0.1
  register: discovery

- name: Connect to every NVMe subsystem it offers
  aiinfra.fabric.nvme_connect:
    transport: "{{ item.trtype }}"
    traddr: "{{ item.traddr }}"
    trsvcid: "{{ item.trsvcid }}"
    nqn: "{{ item.subnqn }}"
  loop: "{{ discovery.entries | selectattr('subtype', 'equalto', 'nvme subsystem') }}"
"""

RETURN = r"""
entries:
  description:
    - The discovery log entries, as nvme-cli names them. C(portid) is always called
      C(portid). Transport-specific keys appear as nvme-cli prints them (C(sectype) for
      tcp; C(rdma_prtype), C(rdma_qptype), C(rdma_cms), C(rdma_pkey) for rdma).
  returned: always
  type: list
  elements: dict
  sample:
    - trtype: tcp
      adrfam: ipv4
      subtype: nvme subsystem
      treq: not specified, sq flow control disable supported
      portid: 1
      trsvcid: "4420"
      subnqn: nqn.2024-01.io.aiinfra.test:plain
      traddr: 10.99.0.1
      eflags: none
      sectype: none
  contains:
    trtype:
      description: The transport.
      type: str
    adrfam:
      description: The address family.
      type: str
    subtype:
      description: C(nvme subsystem), C(discovery subsystem) or C(current discovery subsystem).
      type: str
    treq:
      description: The transport requirements (secure channel, flow control).
      type: str
    portid:
      description: The port id.
      type: int
    trsvcid:
      description: The service id.
      type: str
    subnqn:
      description: The subsystem's NQN.
      type: str
    traddr:
      description: The address.
      type: str
    eflags:
      description: The entry flags.
      type: str
    sectype:
      description: tcp - the security type.
      type: str
subsystems:
  description: The C(subnqn) of the entries whose subtype is C(nvme subsystem), in log order.
  returned: always
  type: list
  elements: str
  sample: [nqn.2024-01.io.aiinfra.test:plain]
genctr:
  description: Generation counter of the discovery log (changes when the log changes).
  returned: when nvme-cli prints it
  type: int
  sample: 3
"""

import ipaddress

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCli, NvmeCliError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError, address_spec, validate_nqn, validate_port, validate_secret,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fabrics_dev import discover_through_kernel
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.host import host_identity
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs


def validated(params):
    names = ("transport", "traddr", "trsvcid", "host_traddr", "host_iface", "hostnqn", "hostid", "dhchap_secret")
    values = dict((k, params.get(k)) for k in names)
    transport = values["transport"]
    row = transports.get(transport)
    if row.address == "ip":
        if not values["traddr"]:
            raise ValidationError("traddr is required for transport=%s" % transport)
        try:
            values["traddr"] = str(ipaddress.ip_address(values["traddr"]))
        except ValueError:
            raise ValidationError("traddr=%r is not an IPv4 or IPv6 address" % values["traddr"])
        values["trsvcid"] = validate_port(values["trsvcid"], "trsvcid")
    elif row.address is None:
        values["traddr"] = None
        values["trsvcid"] = None
    else:
        values["trsvcid"] = None
        if not values["traddr"]:
            raise ValidationError("traddr is required for transport=%s" % transport)
    if values["host_iface"] and not row.host_iface:
        raise ValidationError("host_iface=%r is only supported with transport=%s"
                              % (values["host_iface"], transports.spelled(transports.names(host_iface=True))))
    if values["hostnqn"]:
        validate_nqn(values["hostnqn"], "hostnqn")
    validate_secret(values["dhchap_secret"], "dhchap_secret")
    return values


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dhchap_secret=dict(type="str", no_log=True),
            **address_spec()
        ),
        supports_check_mode=True,
    )
    try:
        values = validated(module.params)
    except ValidationError as exc:
        module.fail_json(msg=str(exc))
    if not FabricsSysfs().fabrics_device_present():
        module.fail_json(msg="/dev/nvme-fabrics does not exist: the nvme-fabrics kernel module is not loaded "
                             "(modprobe nvme-fabrics, and %s)"
                             % transports.module_word(transports.get(values["transport"]).host_module))
    cli = NvmeCli(module)
    try:
        if values["dhchap_secret"]:
            # The kernel makes the discovery controller with the secret (never on a command line).
            hostnqn, hostid, dummy = host_identity(dict(values, generate_host_identity=False), "connected",
                                                   True, cli.gen_hostnqn)
            entries, genctrs = discover_through_kernel(cli, dict(values, hostnqn=hostnqn, hostid=hostid))
        else:
            entries, genctrs = cli.discover(values)
    except ValidationError:
        module.fail_json(msg="dhchap_secret authenticates this host by its NQN, but hostnqn is not set and "
                             "/etc/nvme/hostnqn is missing or empty: set hostnqn (and hostid)")
    except NvmeCliError as exc:
        module.fail_json(msg=exc.msg, **exc.details())
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    result = dict(changed=False, entries=entries,
                  subsystems=[e.get("subnqn") for e in entries if e.get("subtype") == "nvme subsystem"])
    if genctrs:
        result["genctr"] = genctrs[0]
    module.exit_json(**result)


if __name__ == "__main__":
    main()
