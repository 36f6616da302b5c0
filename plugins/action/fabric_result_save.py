# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for aiinfra.fabric.fabric_result_save: runs on the controller only.

Writes this host's result facts, as found in its hostvars, to
<folder>/<host>/<fact>.json (module_utils.report.saved), where a later fabric_report finds
them. One task, no connection and no module run: the role's old folder task and copy loop
(each a local module start) cost about 0.5 s per play on the lab.
"""

from __future__ import annotations

import datetime

from ansible.errors import AnsibleActionFail

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.base import ReportError
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.benchmarks.registry import RESULT_FACTS
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.saved import host_result_document, \
    host_result_path, resolve, write_host_result
from ansible_collections.aiinfra.fabric.plugins.plugin_utils.controller_action import ControllerAction

ARGUMENT_SPEC = dict(
    folder=dict(type="path", required=True),
    facts=dict(type="list", elements="str", choices=list(RESULT_FACTS), default=list(RESULT_FACTS)),
)


class ActionModule(ControllerAction):
    ARGSPEC = ARGUMENT_SPEC

    def act(self, args, task_vars, result):
        host = task_vars.get("inventory_hostname")
        hostvars = task_vars.get("hostvars") or {}
        mine = hostvars[host] if host in hostvars else {}
        folder = resolve(args["folder"])
        saved_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        docs = []
        for fact in args["facts"]:
            value = mine.get(fact) if hasattr(mine, "get") else None
            if value is not None:
                docs.append(host_result_document(host, fact, value, task_vars.get("ansible_play_name"), saved_at))
        paths = []
        try:
            for doc in docs:
                if self._task.check_mode:
                    paths.append(host_result_path(folder, host, doc["fact"]))
                else:
                    paths.append(write_host_result(folder, doc))
        except (ReportError, OSError) as exc:
            raise AnsibleActionFail("fabric_result_save: %s" % exc)
        # A report artifact on the controller, not a change to the host: a re-run stays changed=0.
        result.update(changed=False, saved=[] if self._task.check_mode else paths,
                      would_save=paths if self._task.check_mode else [], facts=[d["fact"] for d in docs],
                      msg="%s %d result fact(s) of %s under %s" % ("would save" if self._task.check_mode else "saved",
                                                                   len(docs), host, folder))
        return result
