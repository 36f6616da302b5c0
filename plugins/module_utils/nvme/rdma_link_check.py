# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether an rdma_link task (state=present) would change anything, from one shell probe.

The soft_roce role runs on every converge; when the link is already on its netdev and the
boot unit is as wanted, the module (a Python start on the host, 2-5 s on the lab's
emulated guests) has nothing to do. The probe (roles/soft_roce/files/probe.sh) prints
``rdma -j link show`` ("rdmajson ..."), each RDMA device and whether it is hardware
("ibdev hw|virt NAME"), and host_state.sh's lines for the boot unit. :func:`check` plans
with the module's own functions (plan_link, boot_unit_params, hostconfig quickcheck) and
returns what the module would have returned when nothing is pending. Any doubt (a parse
error, a conflict the module would refuse) counts as pending, so the module runs and says.
Runs on the controller (a filter).
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import quickcheck
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.rdma_link import (
    RdmaLinkError, boot_unit_params, default_unit_name, find_link, parse_links, plan_link, validate,
)


def unit_name_of(params):
    if not params.get("persistent"):
        return ""
    return params.get("unit_name") or default_unit_name(params.get("name"))


def probe_args(params):
    """host_state.sh arguments for the boot unit (none without persistent)."""
    unit = unit_name_of(params)
    if not unit:
        return []
    return quickcheck.probe_args(boot_unit_params(unit, "present", params.get("name"), params.get("netdev"),
                                                  params.get("type") or "rxe"))


def check(params, lines):
    """{pending: [reasons], result: what the module would return when nothing is pending}."""
    name, netdev, link_type = params.get("name"), params.get("netdev"), params.get("type") or "rxe"
    unit = unit_name_of(params)
    if (params.get("state") or "present") != "present" or params.get("force"):
        return dict(pending=["only state=present without force is judged here"], result=None)
    try:
        validate(name, netdev, link_type, "present", bool(params.get("persistent")), params.get("unit_name"))
    except RdmaLinkError as exc:
        return dict(pending=["arguments refused: %s" % exc.msg], result=None)
    rdma_json, devices = None, {}
    for line in lines:
        kind, rest = quickcheck.split_line(line.rstrip("\r"))
        if kind == "rdmajson":
            rdma_json = rest
        elif kind == "ibdev":
            how, dev = quickcheck.split_line(rest)
            devices[dev] = how == "hw"
    if rdma_json is None:
        return dict(pending=["rdma link show was not probed"], result=None)
    hardware = sorted(d for d, hw in devices.items() if hw)
    result = dict(changed=False, hardware_devices=hardware, skipped_for_hardware=False, operations=[], link=None,
                  links=[], boot_unit="")
    if hardware and params.get("when_hardware") == "skip":
        result["skipped_for_hardware"] = True
        return dict(pending=[], result=result)
    try:
        links = parse_links(rdma_json)
        ops = plan_link(links, name, netdev, link_type, "present")
    except RdmaLinkError as exc:
        return dict(pending=["link: %s" % exc.msg], result=None)
    reasons = ["link %s: %s" % (name, " then ".join(op["op"] for op in ops))] if ops else []
    if unit:
        reasons += quickcheck.pending(boot_unit_params(unit, "present", name, netdev, link_type), lines)["pending"]
    result.update(link=find_link(links, name), links=links, boot_unit=unit)
    return dict(pending=reasons, result=None if reasons else result)
