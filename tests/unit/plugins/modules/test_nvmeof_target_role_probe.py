"""The nvmeof_target role's first probe looks, through host_state.sh, at what its persist
step's host_config task would write (tasks/present.yml: __nvmeof_target_persist_probe_args,
written out by hand in vars/main.yml). Anything the persist step writes that the probe does
not look at reads as "not probed", so every re-run starts the module (a Python start on the
host) although nothing changed: correct, but the no-op gets slower without any test
failing. This renders both variables from the role's own defaults and vars, with and
without boot persistence, and checks the probe asks for every entry host_config_pending
needs (hostconfig/quickcheck.probe_args)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import quickcheck
from role_harness import TOP, run_local_play  # tests/unit/plugins/modules/role_harness.py

ROLE = os.path.join(TOP, "roles", "nvmeof_target")


def rendered(tmp_path, persist):
    """__nvmeof_target_persist_args and __nvmeof_target_persist_probe_args as the role renders them."""
    shutil.copytree(os.path.join(ROLE, "templates"), str(tmp_path / "templates"))
    play = [{"hosts": "all", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_vars": {"file": os.path.join(ROLE, "defaults", "main.yml")}},
        {"ansible.builtin.include_vars": {"file": os.path.join(ROLE, "vars", "main.yml")}},
        {"ansible.builtin.debug": {"msg": "{{ {'args': __nvmeof_target_persist_args, "
                                          "'probe': __nvmeof_target_persist_probe_args} | to_json }}"}},
    ]}]
    # What the role builds before the persist step: the topology (its transports) and the record.
    extra = {"nvmeof_target_persist": persist, "__nvmeof_target_topology": {"transports": ["rdma", "tcp"]},
             "__nvmeof_target_record_text": "{}\n", "__nvmeof_target_restorer_sources": {}}
    proc = run_local_play(tmp_path, play, extra, env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
                                                      "ANSIBLE_STDOUT_CALLBACK": "ansible.builtin.default"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout[proc.stdout.index("TASK [ansible.builtin.debug]"):]
    msg = json.loads(out[out.index("{"):out.rindex("}") + 1])["msg"]
    return json.loads(msg) if isinstance(msg, str) else msg


@pytest.mark.parametrize("persist", [True, False])
def test_the_first_probe_looks_at_everything_the_persist_step_writes(tmp_path, persist):
    got = rendered(tmp_path, persist)
    wanted = quickcheck.probe_args(got["args"])
    assert wanted, "host_config_pending would judge nothing: the arguments did not render"
    assert sorted(set(wanted) - set(got["probe"])) == []
    # And the units and modules are the role's: the boot unit only with persistence.
    assert any(a.startswith("u:") for a in got["probe"]) is persist
    assert {"m:nvmet", "m:nvmet_rdma", "m:nvmet_tcp"} <= set(got["probe"])
