# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: result_summary
short_description: A few readable lines per host from the collection's result facts
version_added: "0.1.0"
description:
  - Turns the result facts the collection's roles set (the choices of O(aiinfra.fabric.fabric_report#module:facts))
    into short lines, each starting with the host's name - what was set up, the device, the I/O check's outcome,
    fio IOPS and latency, MPI numbers, NCCL bus bandwidth, the sweep's suspects and pass/fail.
  - The main playbooks show these lines at their end.
options:
  _input:
    description: Host names.
    type: list
    elements: str
    required: true
  hostvars:
    description: Where to read each host's facts (the C(hostvars) variable).
    type: dict
    required: true
  failed_only:
    description: Only the hosts whose results fail the report's built-in checks (a failed run, a wrong sum, ...).
    type: bool
    default: false
author:
  - aiinfra.fabric developers (@aiinfra)
"""

EXAMPLES = r"""
- name: Show what each host set up and measured
  ansible.builtin.debug:
    msg: "{{ groups['nvmeof_initiators'] | aiinfra.fabric.result_summary(hostvars) }}"
"""

RETURN = r"""
_value:
  description: One line per item, C(<host>) then a colon and what it is about.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import RESULT_FACTS
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.summary import summary_lines


def result_summary(hosts, hostvars, failed_only=False):
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("result_summary: the input must be a list of host names, got %s" % type(hosts).__name__)
    facts = {}
    for host in hosts:
        try:
            hv = hostvars[host]
        except KeyError:
            raise AnsibleFilterError("result_summary: %r is not in hostvars" % host)
        facts[host] = dict((name, hv.get(name)) for name in RESULT_FACTS if hv.get(name) is not None)
    return summary_lines(facts, failed_only=bool(failed_only))


class FilterModule(object):
    def filters(self):
        return {"result_summary": result_summary}
