# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One fact of each host, from the play's hostvars, for the controller-side filters that sum up
what every host reported (fabric_health_connections, nvmeof_port_maintenance)."""

from __future__ import annotations


def facts_of(hosts, hostvars, fact):
    """{host: value} of ``fact`` for each of ``hosts`` that has it (not None); hosts missing from
    ``hostvars`` are left out."""
    out = {}
    for host in hosts or []:
        try:
            value = hostvars[host].get(fact)
        except KeyError:
            continue
        if value is not None:
            out[host] = value
    return out
