# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: fabric_health_connections
short_description: Which hosts each target subsystem and port serves, from the initiators' fabric_health_result
version_added: "0.1.0"
description:
  - Reads C(fabric_health_result) (what M(aiinfra.fabric.nvme_health) returned, as C(playbooks/fabric_health.yml)
    publishes it) of each host and gives one line per target subsystem and address, naming each host whose
    configured path goes there and that path's state (C(live), C(connecting), C(missing), ...).
  - Controllers that no configured path accounts for are listed too, marked as not configured by the collection.
  - The initiators are the record - Debian's kernel shows no list of the hosts connected to an nvmet port.
options:
  _input:
    description: Host names.
    type: list
    elements: str
    required: true
  hostvars:
    description: Where to read each host's C(fabric_health_result) (the C(hostvars) variable).
    type: dict
    required: true
author:
  - aiinfra.fabric developers (@aiinfra)
"""

EXAMPLES = r"""
- name: Show each target subsystem and port with its hosts
  ansible.builtin.debug:
    msg: "{{ groups['nvmeof_initiators'] | aiinfra.fabric.fabric_health_connections(hostvars) }}"
"""

RETURN = r"""
_value:
  description: C(NQN TRANSPORT TRADDR:TRSVCID) then a colon and C(<host> <state>) for each host, sorted.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.health import FACT, connections_by_port
from ansible_collections.aiinfra.fabric.plugins.plugin_utils.host_facts import facts_of


def fabric_health_connections(hosts, hostvars):
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("fabric_health_connections: the input must be a list of host names, got %s"
                                 % type(hosts).__name__)
    return connections_by_port(facts_of(hosts, hostvars, FACT))


class FilterModule(object):
    def filters(self):
        return {"fabric_health_connections": fabric_health_connections}
