"""Every main playbook checks its inputs before it does any work, so a wrong AWX survey
answer or extra var fails in seconds instead of when the role that reads it is reached:
either its first play runs the fabric_inputs role over every role the playbook uses, or
the playbook runs a single role, first thing, without gathering facts (then the role's
own argument spec check is the first task)."""

import os

import pytest

from . import surveys


def _inputs_roles(play):
    for entry in play.get("roles") or []:
        if isinstance(entry, dict) and surveys._role_name(entry.get("role", "")) == "fabric_inputs":
            return (entry.get("vars") or {}).get("fabric_inputs_roles")
    return None


@pytest.mark.parametrize("stem", surveys.MAIN_PLAYBOOKS)
def test_first_play_validates_every_role(stem):
    path = os.path.join(surveys.PLAYBOOKS_DIR, stem + ".yml")
    if not os.path.exists(path):
        pytest.fail("playbooks/%s.yml does not exist" % stem)
    plays = surveys.playbook_plays(path)
    first = plays[0]
    with_specs = set(surveys.role_options())
    used = [r for p in plays for r in surveys.play_roles(p) if r in with_specs]
    if len(set(used)) == 1 and surveys.play_roles(first)[:1] == used[:1] and not first.get("pre_tasks"):
        assert first.get("gather_facts") is False, "gathering facts comes before the role's argument check"
        return
    checked = _inputs_roles(first)
    assert checked is not None, (
        "the first play of playbooks/%s.yml (%r) does not run aiinfra.fabric.fabric_inputs" % (stem, first.get("name")))
    assert first.get("gather_facts") is False, "the input check play must not gather facts (it needs no host)"
    assert "always" in (first.get("tags") or []), "the input check play needs tags: [always], or --tags skips it"
    used = [r for p in plays[1:] for r in surveys.play_roles(p)]
    missing = sorted({r for r in used if r in with_specs and r != "fabric_inputs"} - set(checked))
    assert not missing, "playbooks/%s.yml uses roles whose inputs are not checked first: %s" % (stem, ", ".join(missing))
