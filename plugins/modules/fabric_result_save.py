# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done on the controller by the action plugin of the same name
# (plugins/action/fabric_result_save.py); this file carries the documentation.

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_result_save
short_description: Save this host's result facts on the controller for a later fabric_report
version_added: "0.1.0"
description:
  - Runs on the controller (an action plugin; it never connects to a host and starts no module). For each fact in
    O(facts) that this host has in C(hostvars) and that is not null, writes
    C(<folder>/<host>/<fact>.json), a C(aiinfra.fabric.host_result) document (schema version 1, see
    docs/results-schema.md) holding the fact, the time it was saved and the play's name.
    M(aiinfra.fabric.fabric_report) reads these files when the facts are not in its own run's C(hostvars).
  - Each file is written to a temporary file beside it and renamed, mode 0644; the host's folder is made with
    mode 0755.
  - Reports no change (the files are a report artifact on the controller, not a change to the host), so a re-run
    of a playbook stays C(changed=0).
  - Under C(--check) nothing is written; RV(would_save) lists the files a real run would write.
  - "O(folder) follows the report's path rule: C(~) and environment variables are expanded, and a relative path is
    relative to the directory C(ansible-playbook) runs in (under AWX, the project folder)."
  - The main playbooks run it through C(roles/fabric_report/tasks/save.yml) after each role, in an C(always)
    section, so a failed run's results are saved too.
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - Nothing beyond ansible-core; it runs on the controller and never connects to the host.
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.controller_action
  - aiinfra.fabric.result_facts
options:
  folder:
    description: The saved-results folder, for example C(results/hosts).
    type: path
    required: true
  facts:
    description: The result facts to save, when the host has them.
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: Under check mode nothing is written; RV(would_save) lists the files.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
    support: full
    details: The files are rewritten (with a new save time) but the task reports no change, as they are a report artifact.
"""

EXAMPLES = r"""
- name: Save this host's NVMe-oF results for a later report
  aiinfra.fabric.fabric_result_save:
    folder: results/hosts
    facts: [nvmeof_target_result, nvmeof_initiator_result]
"""

RETURN = r"""
saved:
  description: The files written (empty under C(--check)).
  returned: always
  type: list
  elements: str
  sample: [/home/me/cluster/results/hosts/te1/nvmeof_target_result.json]
would_save:
  description: Under C(--check), the files a real run would write; otherwise empty.
  returned: always
  type: list
  elements: str
  sample: []
facts:
  description: The facts this host had and that were saved (or would be).
  returned: always
  type: list
  elements: str
  sample: [nvmeof_target_result]
msg:
  description: One line saying how many facts were saved where.
  returned: always
  type: str
  sample: "saved 1 result fact(s) of te1 under /home/me/cluster/results/hosts"
"""
