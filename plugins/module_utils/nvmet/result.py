# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The end every nvmet_* module that manages one configfs object shares: apply the
plan (or only simulate it in check mode) and exit with the object as it is after, the
operations, and before/after for --diff. The only file of the nvmet package that
imports Ansible: the others stay standard-library only, so that the target role can
ship them to hosts as the boot-time restorer (restore.py)."""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan, simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError


def apply_and_exit(module, tree, state, ops, section, key, export, result_key, diff_view=None, extra=None):
    """Apply ``ops`` to ``tree`` unless in check mode, then exit the module.

    ``state`` is the tree as read before planning; ``section``/``key`` locate the object
    (for example ``"ports"``, ``1``); ``export`` turns it (or None) into the module's
    return schema, which is returned under ``result_key``. ``diff_view(obj, is_after)``
    builds the --diff sides when they must differ from ``export`` (nvmet_host marks
    keys changed/unchanged); ``extra`` adds return values. A kernel refusal part way
    fails the module with what was applied before it.
    """
    raw_before = state[section].get(key)
    texts = [op.text() for op in ops]
    if ops and not module.check_mode:
        try:
            apply_plan(tree, ops)
        except NvmetError as exc:
            module.fail_json(msg=exc.msg, changed=bool(exc.applied), operations=exc.applied, planned=texts)
        raw_after = tree.read_one(section, key)  # only the object the plan touched
    else:
        raw_after = simulate(state, ops)[section].get(key)
    result = dict(extra or {}, changed=bool(ops), operations=texts)
    result[result_key] = export(raw_after)
    if module._diff:
        if diff_view is None:
            result["diff"] = dict(before=export(raw_before) or {}, after=result[result_key] or {})
        else:
            result["diff"] = dict(before=diff_view(raw_before, False), after=diff_view(raw_after, True))
    module.exit_json(**result)
