# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one apply-and-exit path of the nvmet_* modules: apply the plan (or only simulate it
in check mode), fail with what was applied when the kernel refuses part way, and exit
with the result as it is after, the operations, and before/after for --diff. nvmet_host,
nvmet_subsystem and nvmet_port go through :func:`apply_and_exit` (one object);
nvmet_target through :func:`apply_or_fail` and :func:`exit_with_plan` (a whole target,
with its save file written between the two). It works on an AnsibleModule (fail_json,
exit_json), so it is the modules' alone: the boot-time restorer (restore.py) does not
import it, and so does not carry it."""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan, simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError


def apply_or_fail(module, tree, state, ops, changed=False, extra=None):
    """Apply ``ops`` to ``tree`` unless in check mode; return the state after: the objects
    the plan touched read again, or ``state`` simulated in check mode (or without ops).

    A kernel refusal part way fails the module with what was applied before it
    (``operations``) and the whole plan (``planned``); ``changed`` and ``extra`` say what
    else the run changed before (nvmet_target's save file, written before a removal).
    """
    if not ops or module.check_mode:
        return simulate(state, ops)
    try:
        apply_plan(tree, ops)
    except NvmetError as exc:
        module.fail_json(msg=exc.msg, changed=bool(exc.applied) or changed, operations=exc.applied,
                         planned=[op.text() for op in ops], **(extra or {}))
    return tree.reread_changed(state, ops)


def exit_with_plan(module, ops, result_key, after, diff, changed=False, extra=None):
    """Exit the module: ``changed`` (the plan, or ``changed``: what else the run changed),
    the operation texts, ``after`` (in the module's return schema) under ``result_key``,
    ``extra`` return values, and with --diff ``diff()``'s (before, after)."""
    result = dict(extra or {}, changed=bool(ops) or changed, operations=[op.text() for op in ops])
    result[result_key] = after
    if module._diff:
        before, after_view = diff()
        result["diff"] = dict(before=before, after=after_view)
    module.exit_json(**result)


def apply_and_exit(module, tree, state, ops, section, key, export, result_key, diff_view=None, extra=None):
    """Apply ``ops`` to one object unless in check mode, then exit the module.

    ``state`` is the tree as read before planning; ``section``/``key`` locate the object
    (for example ``"ports"``, ``1``); ``export`` turns it (or None) into the module's
    return schema, which is returned under ``result_key``. ``diff_view(obj, is_after)``
    builds the --diff sides when they must differ from ``export`` (nvmet_host marks
    keys changed/unchanged); ``extra`` adds return values.
    """
    raw_before = state[section].get(key)
    raw_after = apply_or_fail(module, tree, state, ops)[section].get(key)
    after = export(raw_after)

    def diff():
        if diff_view is None:
            return export(raw_before) or {}, after or {}
        return diff_view(raw_before, False), diff_view(raw_after, True)

    exit_with_plan(module, ops, result_key, after, diff, extra=extra)
