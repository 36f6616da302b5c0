# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The end every nvmet_* module that manages one configfs object shares: apply the
plan (or only simulate it in check mode) and exit with the object as it is after, the
operations, and before/after for --diff. Kept apart from nvmet.py, which stays free of
Ansible so that the target role can ship it to hosts as the boot-time restorer."""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import NvmetError, apply_plan, simulate


def apply_and_exit(module, tree, state, ops, section, key, export, result_key):
    """Apply ``ops`` to ``tree`` unless in check mode, then exit the module.

    ``state`` is the tree as read before planning; ``section``/``key`` locate the object
    (for example ``"ports"``, ``1``); ``export`` turns it into the module's return
    schema, which is returned under ``result_key``. A kernel refusal part way fails the
    module with what was applied before it.
    """
    before = export(state[section].get(key))
    texts = [op.text() for op in ops]
    if ops and not module.check_mode:
        try:
            apply_plan(tree, ops)
        except NvmetError as exc:
            module.fail_json(msg=exc.msg, changed=bool(exc.applied), operations=exc.applied, planned=texts)
        after = export(tree.read()[section].get(key))
    else:
        after = export(simulate(state, ops)[section].get(key))
    result = dict(changed=bool(ops), operations=texts)
    result[result_key] = after
    if module._diff:
        result["diff"] = dict(before=before or {}, after=after or {})
    module.exit_json(**result)
