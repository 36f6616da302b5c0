# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nvmeof_initiator role records of a converge, computed on the controller from
its variables (the role's subsystems, its argument_specs shape): the connections and the
I/O policies. The role's vars/main.yml names these through the filters in
plugins/filter/nvmeof_initiator.py instead of computing them in Jinja loops.

The record's file name is a hash of the connections' JSON, so their keys, key order and
value types are part of the contract: a record written by an earlier version must keep its
name (tests/unit/plugins/module_utils/test_nvmeof_initiator_state.py holds names written
before this module existed)."""

from __future__ import annotations


def record_connections(subsystems, defaults):
    """One entry per path of every subsystem: transport (the path's, else
    ``defaults["transport"]``), traddr, trsvcid (as text; the path's, else
    ``defaults["trsvcid"]``), nqn, host_traddr and host_iface ("" when not set), then
    hostnqn and hostid only when the path sets them (a path that connects as another host
    identity)."""
    out = []
    for sub in subsystems or []:
        for path in sub.get("paths") or []:
            entry = {
                "transport": path["transport"] if "transport" in path else defaults.get("transport"),
                "traddr": path.get("traddr"),
                "trsvcid": str(path["trsvcid"] if "trsvcid" in path else defaults.get("trsvcid")),
                "nqn": sub.get("nqn"),
                "host_traddr": path.get("host_traddr") or "",
                "host_iface": path.get("host_iface") or "",
            }
            for key in ("hostnqn", "hostid"):
                if path.get(key):
                    entry[key] = path[key]
            out.append(entry)
    return out


def iopolicies(subsystems, default):
    """[{nqn, iopolicy}] of each subsystem that has an I/O policy: its own, else ``default``."""
    out = []
    for sub in subsystems or []:
        policy = sub.get("iopolicy") or default
        if policy:
            out.append({"nqn": sub.get("nqn"), "iopolicy": policy})
    return out
