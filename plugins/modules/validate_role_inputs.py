# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The work is done on the controller by the action plugin of the same name
# (plugins/action/validate_role_inputs.py); this file carries the documentation.

from __future__ import annotations

DOCUMENTATION = r"""
module: validate_role_inputs
short_description: Check the variables of several roles against their argument specifications, before anything runs
version_added: "0.1.0"
description:
  - Runs on the controller (an action plugin; it never connects to a host and starts no module). For each role in
    O(roles), reads C(<roles_dir>/<role>/meta/argument_specs.yml), entry point C(main), and applies it to the
    variables in scope (extra vars such as AWX survey answers, inventory and play variables), the way
    M(ansible.builtin.validate_argument_spec) does for one role.
  - Options a role marks as required are not required here (a play may pass them to the role as role parameters
    later); the role's own check at its start still enforces them.
  - Every error of every role is reported at once, one line each, prefixed with the role's name; a role without an
    argument specification is an error too.
  - The C(fabric_inputs) role runs it as the first play of the main playbooks.
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - Nothing beyond ansible-core; it runs on the controller and never connects to the host.
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.controller_action
options:
  roles:
    description: Names of roles, for example V(nvmeof_target).
    type: list
    elements: str
    required: true
  roles_dir:
    description:
      - The folder holding the roles. Omitted, this collection's own C(roles) folder, wherever the collection is
        installed (so a role of the collection names no folder).
    type: path
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: It changes nothing in any mode.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
    support: full
"""

EXAMPLES = r"""
- name: Check the variables of the NVMe-oF roles before anything runs
  aiinfra.fabric.validate_role_inputs:
    roles: [nvmeof_target, nvmeof_initiator]

- name: Check the variables of roles kept elsewhere
  aiinfra.fabric.validate_role_inputs:
    roles: [site_storage]
    roles_dir: /srv/ansible/roles
"""

RETURN = r"""
roles:
  description: The roles whose specification was applied.
  returned: always
  type: list
  elements: str
  sample: [nvmeof_target, nvmeof_initiator]
argument_errors:
  description: "One line per error, C(<role>: <message>)."
  returned: failed
  type: list
  elements: str
  sample: ["nvmeof_target: value of nvmeof_target_transport must be one of: rdma, tcp, got: rmda"]
msg:
  description: C(Validation of arguments failed:) and the error lines, or one line saying all passed.
  returned: always
  type: str
  sample: The variables of 2 role(s) pass their argument specifications
"""
