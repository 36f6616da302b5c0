# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: result_facts
short_description: The result facts the collection's report reads
version_added: 0.1.0
description:
  - Returns the names of the result facts the collection's benchmark roles publish and
    M(aiinfra.fabric.fabric_report) reads, in the order the report lists them, from the report's benchmark
    registry - the list a new benchmark adds its fact to.
  - The C(fabric_report) role's default for C(fabric_report_facts).
  - Use C(query) (or C(lookup) with C(wantlist=true)) to get a list.
options: {}
author:
  - aiinfra.fabric developers (@aiinfra)
"""

EXAMPLES = r"""
- name: Show which result facts fabric_report reads
  ansible.builtin.debug:
    msg: "{{ query('aiinfra.fabric.result_facts') }}"
"""

RETURN = r"""
_list:
  description: The fact names, for example C(nvmeof_target_result) and C(nccl_tests_result).
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import RESULT_FACTS


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if terms:
            raise AnsibleLookupError("aiinfra.fabric.result_facts takes no terms, got %r" % (terms,))
        return list(RESULT_FACTS)
