"""The AWX job templates and their surveys agree with the playbooks and the roles'
argument specs (types, defaults, choices, required), and survey answers are values the
roles accept."""

import os

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from . import surveys


@pytest.fixture(scope="module")
def options():
    return surveys.role_options()


@pytest.fixture(scope="module")
def templates():
    return surveys.job_templates()


def test_every_main_playbook_has_a_job_template(templates):
    missing = [p for p in surveys.MAIN_PLAYBOOKS if p not in templates]
    assert not missing, "no awx/job_templates/<name>.yml for: %s" % ", ".join(missing)


def test_job_template_names_are_unique(templates):
    names = [t["name"] for t in templates.values()]
    assert len(names) == len(set(names)), names


@pytest.mark.parametrize("stem", surveys.MAIN_PLAYBOOKS)
def test_survey_matches_role_argument_specs(stem, templates, options):
    if stem not in templates:
        pytest.fail("awx/job_templates/%s.yml is missing" % stem)
    problems = surveys.survey_problems(stem, templates[stem], options)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("stem", surveys.MAIN_PLAYBOOKS)
def test_survey_answers_are_accepted_by_the_roles(stem, templates, options):
    """Every default and every choice, as AWX passes it in extra_vars, passes the role's own check."""
    template = templates.get(stem)
    if template is None:
        pytest.fail("awx/job_templates/%s.yml is missing" % stem)
    specs = {}
    for role in surveys.playbook_roles(os.path.join(surveys.TOP, template["playbook"])):
        specs.update(options.get(role, {}))
    launches = [surveys.survey_extra_vars(template)]
    for q in template.get("survey") or []:
        for choice in q.get("choices") or []:
            launches.append(surveys.survey_extra_vars(template, {q["variable"]: choice}))
    for extra_vars in launches:
        asked = {k: v for k, v in specs.items() if k in extra_vars}
        result = ArgumentSpecValidator(asked).validate(extra_vars, validate_role_argument_spec=True)
        assert not result.error_messages, (extra_vars, result.error_messages)


def test_the_comparison_catches_a_wrong_survey(options):
    """The checker itself: a survey that disagrees with a real role spec is reported."""
    role = "fabric_inputs"
    template = {
        "name": "t", "description": "d", "playbook": "playbooks/awx_setup.yml",
        "survey": [{"question_name": "q", "variable": "fabric_inputs_roles", "type": "integer",
                    "required": False, "default": 3}],
    }
    problems = surveys.survey_problems("awx_setup", template, {role: options[role]})
    # awx_setup.yml does not use the role, so the question maps to nothing.
    assert any("not an option of any role" in p for p in problems), problems
    template["playbook"] = "playbooks/nvmeof_rdma.yml"
    problems = surveys.survey_problems("nvmeof_rdma", template, {"fabric_preflight": options["fabric_preflight"]})
    assert any("not an option of any role" in p for p in problems), problems
    template["survey"][0]["variable"] = "fabric_preflight_address"
    problems = surveys.survey_problems("nvmeof_rdma", template, {"fabric_preflight": options["fabric_preflight"]})
    joined = "\n".join(problems)
    assert "survey type must be one of text, textarea" in joined
    assert "has default 3, role fabric_preflight has None" in joined


@pytest.mark.parametrize("stem", surveys.MAIN_PLAYBOOKS)
def test_roles_read_survey_booleans_with_the_bool_filter(stem, templates, options):
    template = templates.get(stem)
    if template is None:
        pytest.fail("awx/job_templates/%s.yml is missing" % stem)
    problems = []
    for q in template.get("survey") or []:
        for role, opts in options.items():
            if opts.get(q["variable"], {}).get("type") == "bool":
                problems.extend(surveys.unsafe_bool_uses(role, q["variable"]))
    assert not problems, "survey booleans arrive as the strings 'true'/'false'; add | bool:\n" + "\n".join(problems)


def test_the_bool_check_finds_a_bare_use(tmp_path, monkeypatch):
    role = tmp_path / "demo" / "tasks"
    role.mkdir(parents=True)
    (role / "main.yml").write_text(
        "- name: Bare\n  ansible.builtin.debug:\n    msg: x\n  when: demo_flag\n"
        "- name: Filtered\n  ansible.builtin.debug:\n    msg: \"{{ 'a' if demo_flag | bool else 'b' }}\"\n"
        "- name: Passed whole to a module\n  ansible.builtin.debug:\n    var: \"{{ demo_flag }}\"\n"
        "- name: Inline\n  ansible.builtin.debug:\n    msg: \"{{ 'a' if demo_flag else 'b' }}\"\n")
    monkeypatch.setattr(surveys, "ROLES_DIR", str(tmp_path))
    monkeypatch.setattr(surveys, "TOP", str(tmp_path))
    uses = surveys.unsafe_bool_uses("demo", "demo_flag")
    assert uses == ["demo/tasks/main.yml: demo_flag", "demo/tasks/main.yml: 'a' if demo_flag else 'b'"], uses
