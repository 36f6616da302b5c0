# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of the collection's controller-only actions (fabric_report, fabric_result_save,
validate_role_inputs): no connection to the host, no module sent, arguments checked
against the action's ARGSPEC before ``act`` runs."""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ControllerAction(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    ARGSPEC = {}

    def run(self, tmp=None, task_vars=None):
        result = super(ControllerAction, self).run(tmp, task_vars)
        del tmp
        dummy, args = self.validate_argument_spec(argument_spec=self.ARGSPEC)
        return self.act(args, task_vars or {}, result)

    def act(self, args, task_vars, result):
        """Do the work; ``result`` is the action's result so far. Returns the result."""
        raise NotImplementedError
