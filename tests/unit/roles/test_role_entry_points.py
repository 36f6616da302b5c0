"""A role that calls another role goes through that role's documented interface: a
``tasks_from`` names an entry point of its meta/argument_specs.yml (so Ansible validates the
variables against it), and the variables it sets are public ones of that entry point, never
the other role's private ``__<role>_*``."""

from __future__ import annotations

import glob
import os

import pytest
import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TASK_FILES = sorted(glob.glob(os.path.join(TOP, "roles", "*", "tasks", "*.yml")))


def _tasks(node):
    """Every task of a task list, blocks opened."""
    for task in node or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def role_calls(path):
    """(called role, its tasks_from or 'main', the vars set) for each include/import_role."""
    with open(path) as handle:
        data = yaml.safe_load(handle)
    for task in _tasks(data):
        for action in ("ansible.builtin.include_role", "ansible.builtin.import_role"):
            if action in task:
                args = task[action]
                yield args["name"].split(".")[-1], args.get("tasks_from", "main"), dict(task.get("vars") or {})


def entry_points(role):
    with open(os.path.join(TOP, "roles", role, "meta", "argument_specs.yml")) as handle:
        return yaml.safe_load(handle)["argument_specs"]


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: os.path.relpath(p, TOP))
def test_a_role_calls_another_through_its_entry_points(path):
    caller = os.path.relpath(path, TOP).split(os.sep)[1]
    for role, entry, variables in role_calls(path):
        if role == caller:
            continue
        specs = entry_points(role)
        assert entry in specs, "%s calls %s with tasks_from %r, not an entry point of its argument_specs (%s)" % (
            os.path.relpath(path, TOP), role, entry, ", ".join(sorted(specs)))
        private = sorted(v for v in variables if v.startswith("__"))
        assert not private, "%s sets %s's private variables %s" % (os.path.relpath(path, TOP), role, private)
        unknown = sorted(set(variables) - set(specs[entry].get("options") or {}))
        assert not unknown, "%s sets %s, not options of %s's entry point %s" % (
            os.path.relpath(path, TOP), unknown, role, entry)


def test_the_initiator_runs_tlshd_through_nvme_tls_entry_point():
    calls = list(role_calls(os.path.join(TOP, "roles", "nvmeof_initiator", "tasks", "tls.yml")))
    assert [(role, entry) for role, entry, _vars in calls] == [("nvme_tls", "main"), ("nvme_tls", "tlshd")]
    assert os.path.isfile(os.path.join(TOP, "roles", "nvme_tls", "tasks", "tlshd.yml"))
    assert set(entry_points("nvme_tls")["tlshd"]["options"]) == {
        "nvme_tls_keyring", "nvme_tls_manage_packages", "nvme_tls_manage_tlshd"}


def test_the_check_above_can_fail(tmp_path):
    bad = tmp_path / "roles" / "x" / "tasks" / "main.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text("- name: Reach in\n  ansible.builtin.include_role:\n    name: aiinfra.fabric.nvme_tls\n"
                   "    tasks_from: tlshd.yml\n  vars:\n    __nvme_tls_tlshd_only: true\n")
    [(role, entry, variables)] = list(role_calls(str(bad)))
    assert role == "nvme_tls" and entry not in entry_points(role) and "__nvme_tls_tlshd_only" in variables
