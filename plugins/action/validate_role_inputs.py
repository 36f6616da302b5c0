# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for aiinfra.fabric.validate_role_inputs: runs on the controller only.

Applies the ``main`` argument specification of each listed role to the variables in scope,
every role in one task, with every error of every role in one message. Used by the
fabric_inputs role; it replaced a check loop, a read loop and a validate_argument_spec
loop (about 1 s per playbook run on the lab, 0.1 s now).
"""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.aiinfra.fabric.plugins.plugin_utils.collection_files import ROLES
from ansible_collections.aiinfra.fabric.plugins.plugin_utils.controller_action import ControllerAction

try:
    import yaml
except ImportError:  # pragma: no cover - PyYAML comes with ansible-core
    yaml = None

ARGUMENT_SPEC = dict(
    roles=dict(type="list", elements="str", required=True),
    # Omitted: the collection's own roles (plugin_utils/collection_files.py knows where).
    roles_dir=dict(type="path"),
)


def role_options(roles_dir, role):
    """The options of ``role``'s ``main`` entry point, each made not required; raises ValueError."""
    if not role or role in (".", "..") or "/" in role:
        raise ValueError("%r is not a role name" % (role,))
    path = os.path.join(roles_dir, role, "meta", "argument_specs.yml")
    if not os.path.isfile(path):
        raise ValueError("fabric_inputs_roles lists %s, but %s does not exist: name roles of this collection that "
                         "document their variables" % (role, path))
    with open(path) as handle:
        try:
            doc = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise ValueError("%s is not valid YAML: %s" % (path, exc))
    main = ((doc or {}).get("argument_specs") or {}).get("main")
    if not isinstance(main, dict):
        raise ValueError("%s has no argument_specs.main entry point" % path)
    # Required options may come as role parameters later in the play: only what is set is checked here.
    return dict((name, dict(spec or {}, required=False)) for name, spec in (main.get("options") or {}).items())


class ActionModule(ControllerAction):
    ARGSPEC = ARGUMENT_SPEC

    def act(self, args, task_vars, result):
        if yaml is None:
            raise AnsibleActionFail("validate_role_inputs needs PyYAML on the controller")
        errors, checked = [], []
        for role in args["roles"]:
            try:
                spec = role_options(args["roles_dir"] or ROLES, role)
            except ValueError as exc:
                errors.append(str(exc))
                continue
            provided = self._templar.template(dict((name, task_vars[name]) for name in spec if name in task_vars))
            outcome = ArgumentSpecValidator(spec).validate(provided, validate_role_argument_spec=True)
            errors.extend("%s: %s" % (role, msg) for msg in outcome.error_messages)
            checked.append(role)
        result.update(changed=False, roles=checked)
        if errors:
            result.update(failed=True, argument_errors=errors,
                          msg="Validation of arguments failed:\n%s" % "\n".join(errors))
        else:
            result["msg"] = "The variables of %d role(s) pass their argument specifications" % len(checked)
        return result
