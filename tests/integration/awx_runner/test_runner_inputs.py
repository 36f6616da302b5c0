"""A wrong survey answer / extra var stops the job in the input check, before any
other task runs, with a message naming the variable and the value. Needs no lab: the
check runs on the controller."""

import json
import os

import pytest

from runner_jobs import TOP, run_job, surveys

INPUT_TASK = "Validate the variables of each role"  # the fabric_inputs role
ROLE_CHECK = "Validating arguments against arg spec"  # a role's own check, its first task


def is_input_check(task):
    return task == INPUT_TASK or (task or "").startswith(ROLE_CHECK)


def unreachable_inventory(tmp_path):
    """Every group the playbooks use, with hosts nobody can reach: should a playbook lack the
    check, its tasks touch no lab VM that may be up (port 1 refuses connections, so they
    fail as unreachable, and the test says so)."""
    hosts = {"h1": {"ansible_host": "127.0.0.1", "ansible_port": 1, "fabric_address": "10.99.0.1", "mpi_slots": 1},
             "h2": {"ansible_host": "127.0.0.1", "ansible_port": 1, "fabric_address": "10.99.0.2", "mpi_slots": 1}}
    groups = {"nvmeof_targets": ["h1"], "nvmeof_initiators": ["h2"], "mpi_nodes": ["h1", "h2"], "gpu_nodes": ["h1", "h2"]}
    inventory = {"all": {"hosts": hosts, "children": {g: {"hosts": {h: None for h in members}} for g, members in groups.items()}}}
    path = tmp_path / "inventory.yml"
    path.write_text(json.dumps(inventory))
    return path


def wrong_value(spec):
    """A value the option's spec must refuse."""
    if spec.get("choices"):
        return "no-such-choice"
    kind = spec.get("type", "str")
    if kind in ("int", "float"):
        return "lots"
    if kind == "bool":
        return "maybe"
    if kind in ("dict",):
        return "not a dict"
    return None


def pick_wrong_extra_var(stem, templates):
    """A variable the survey asks (else any option of the playbook's roles) and a wrong value for it."""
    playbook = os.path.join(TOP, "playbooks", stem + ".yml")
    options = surveys.role_options()
    specs = {}
    for role in surveys.playbook_roles(playbook):
        specs.update(options.get(role, {}))
    asked = [q["variable"] for q in (templates.get(stem) or {}).get("survey") or []]
    for var in asked + sorted(specs):
        if var in specs and wrong_value(specs[var]) is not None:
            return var, wrong_value(specs[var])
    return None, None


@pytest.mark.parametrize("stem", surveys.MAIN_PLAYBOOKS)
def test_wrong_extra_var_fails_in_the_input_check(stem, templates, tmp_path):
    if not os.path.exists(os.path.join(TOP, "playbooks", stem + ".yml")):
        pytest.fail("playbooks/%s.yml does not exist" % stem)
    var, value = pick_wrong_extra_var(stem, templates)
    assert var, "no option of the roles of playbooks/%s.yml has a type or choices to get wrong" % stem
    extravars = surveys.survey_extra_vars(templates.get(stem) or {})
    extravars[var] = value
    job = run_job(tmp_path, stem, extravars, timeout=300, inventory=str(unreachable_inventory(tmp_path)))
    print("%s with %s=%r: %s in %.1f s" % (stem, var, value, job.status, job.elapsed))
    assert job.status == "failed", job.explain()
    results = job.task_results()
    failed = [r for r in results if r[0] in ("runner_on_failed", "runner_on_unreachable")]
    assert failed and all(is_input_check(r[1]) for r in failed), (
        "the job did not fail in the input check:\n" + job.explain())
    first_failure = results.index(failed[0])
    before = [r for r in results[:first_failure] if r[2] != "fabric_inputs" and not is_input_check(r[1])]
    assert not before, "tasks ran before the input check: %s" % before
    # The message names the variable and the wrong value.
    msgs = [(e["event_data"].get("res") or {}).get("msg", "") for e in job.of("runner_item_on_failed", "runner_on_failed")]
    assert any(var in m and value in m for m in msgs), msgs
    assert not job.of("runner_on_unreachable"), "the input check must not need the hosts"
