# -*- coding: utf-8 -*-
"""The one apply-and-exit path (nvmet/result.py) as each nvmet module returns through it, on
the FAKE configfs tree (nvmet_fake.py): the keys and values of a check-mode run, a run, a
no-op and a kernel refusal part way, for a per-object module (nvmet_host, nvmet_subsystem)
and for nvmet_target. The real kernel is the lab's (molecule nvmet_modules, nvmet_target)."""

from __future__ import annotations

import errno
import os
import sys

import pytest

from ansible_collections.aiinfra.fabric.plugins.modules import nvmet_host, nvmet_subsystem, nvmet_target
from module_harness import run_main  # tests/unit/plugins/modules/module_harness.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
from nvmet_fake import HOST, SUB, EmulatedTree, empty_target, make_key  # noqa: E402

KEY = make_key()


@pytest.fixture
def root(tmp_path):
    return empty_target(str(tmp_path))


def run(monkeypatch, module, root, args, check=False, diff=True, refuse=None):
    if module is nvmet_target:
        monkeypatch.setattr(module, "make_tree", lambda params: EmulatedTree(root, refuse=refuse))
    else:
        monkeypatch.setattr(module, "ConfigfsTree", lambda configfs_root: EmulatedTree(root, refuse=refuse))
    return run_main(monkeypatch, module, dict(args, _ansible_check_mode=check, _ansible_diff=diff))


def test_a_per_object_module_check_run_noop_and_refusal(monkeypatch, root):
    args = {"hostnqn": HOST, "dhchap_key": KEY}
    check = run(monkeypatch, nvmet_host, root, args, check=True)
    assert set(check) == {"changed", "operations", "host", "changed_keys", "diff"}
    assert check["changed"] is True and check["operations"][0] == "mkdir hosts/" + HOST
    assert check["changed_keys"] == ["dhchap_key"]
    assert check["diff"]["before"] == {} and check["diff"]["after"]["dhchap_key"] == "hidden, changed"
    assert not os.path.exists(os.path.join(root, "nvmet", "hosts", HOST))
    done = run(monkeypatch, nvmet_host, root, args)
    assert done["operations"] == check["operations"] and done["host"] == check["host"]
    assert done["host"]["hostnqn"] == HOST and KEY not in repr(done)
    noop = run(monkeypatch, nvmet_host, root, args, diff=False)
    assert noop == {"changed": False, "operations": [], "host": done["host"], "changed_keys": []}

    sub = {"nqn": SUB, "allow_any_host": True, "model": "aiinfra"}
    refused = run(monkeypatch, nvmet_subsystem, root, sub, refuse={"subsystems/%s/attr_model" % SUB: errno.EINVAL})
    assert refused["failed"] is True and refused["changed"] is True
    assert refused["operations"] == ["mkdir subsystems/" + SUB]
    assert refused["planned"][0] == "mkdir subsystems/" + SUB and len(refused["planned"]) > 1
    assert "attr_model" in refused["msg"]
    made = run(monkeypatch, nvmet_subsystem, root, sub)
    assert set(made) == {"changed", "operations", "subsystem", "diff"}
    assert made["subsystem"]["attributes"]["model"] == "aiinfra" and made["subsystem"]["allow_any_host"] is True
    assert made["diff"]["before"]["nqn"] == SUB and made["diff"]["after"] == made["subsystem"]
    gone = run(monkeypatch, nvmet_subsystem, root, {"nqn": SUB, "state": "absent"})
    assert gone["changed"] is True and gone["subsystem"] is None and gone["diff"]["after"] == {}


def test_nvmet_target_check_run_noop_and_refusal(monkeypatch, root, tmp_path):
    save = str(tmp_path / "etc" / "config.json")
    doc = {"hosts": [{"nqn": HOST, "dhchap": {"key": KEY}}],
           "subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "0", "model": "aiinfra"}, "allowed_hosts": [HOST]}]}
    args = {"document": doc, "save_file": save}
    check = run(monkeypatch, nvmet_target, root, args, check=True)
    assert set(check) == {"changed", "operations", "changed_keys", "target", "save_file", "save_file_mode", "diff"}
    assert check["changed"] is True and check["save_file"] == "would write" and check["save_file_mode"] == "0600"
    assert check["changed_keys"] == ["hosts/%s/dhchap_key" % HOST]
    assert check["diff"]["before"]["save_file_mode"] is None and check["diff"]["after"]["save_file_mode"] == "0600"
    assert check["diff"]["after"]["hosts"] == check["target"]["hosts"]
    refused = run(monkeypatch, nvmet_target, root, args, refuse={"subsystems/%s/attr_model" % SUB: errno.EINVAL})
    assert refused["failed"] is True and refused["changed"] is True
    assert refused["operations"][-1] == "mkdir subsystems/" + SUB and "save_file" not in refused
    assert refused["planned"] == check["operations"]
    done = run(monkeypatch, nvmet_target, root, args)
    assert done["save_file"] == "written" and KEY not in repr(done)
    assert done["target"]["hosts"] == check["target"]["hosts"] and done["target"]["subsystems"][0]["attr"]["model"] == "aiinfra"
    noop = run(monkeypatch, nvmet_target, root, args, diff=False)
    assert noop == {"changed": False, "operations": [], "changed_keys": [], "target": done["target"],
                    "save_file": "unchanged", "save_file_mode": "0600"}
    # remove: the save file is written first, so a refusal part way reports it.
    removed = run(monkeypatch, nvmet_target, root, {"remove": {"subsystems": [SUB]}, "save_file": save},
                  refuse={"rmdir subsystems/" + SUB: errno.EBUSY})
    assert removed["failed"] is True and removed["save_file"] == "written" and removed["changed"] is True
