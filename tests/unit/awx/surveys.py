"""Load the AWX job templates (awx/job_templates/*.yml) and the roles' argument specs,
and check one against the other.

Shared by the unit test (static comparison) and the ansible-runner tests (which turn
survey answers into extra_vars the way AWX does).
"""

import glob
import os
import re

import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
TEMPLATES_DIR = os.path.join(TOP, "awx", "job_templates")
ROLES_DIR = os.path.join(TOP, "roles")
PLAYBOOKS_DIR = os.path.join(TOP, "playbooks")
COLLECTION = "aiinfra.fabric."

# The playbooks users run; each gets a job template.
MAIN_PLAYBOOKS = ["nvmeof_rdma", "nvmeof_tcp", "nvmeof_teardown", "nccl_bench", "mpi_bench", "fabric_report", "fabric_health",
                  "nvmeof_port_maintenance"]

# AWX survey question types (awx/main/models/mixins.py, SurveyJobTemplateMixin).
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}


def load_yaml(path):
    with open(path) as f:
        return yaml.safe_load(f)


def job_templates():
    """{playbook stem: template dict} for every file in awx/job_templates."""
    out = {}
    for name in sorted(os.listdir(TEMPLATES_DIR)):
        if name.endswith(".yml"):
            out[name[:-4]] = load_yaml(os.path.join(TEMPLATES_DIR, name))
    return out


def role_options():
    """{role: {option: spec}} from each role's meta/argument_specs.yml, entry point main."""
    out = {}
    for role in sorted(os.listdir(ROLES_DIR)):
        path = os.path.join(ROLES_DIR, role, "meta", "argument_specs.yml")
        if os.path.exists(path):
            out[role] = (load_yaml(path)["argument_specs"].get("main") or {}).get("options") or {}
    return out


def _role_name(name):
    return name[len(COLLECTION):] if name.startswith(COLLECTION) else name


def _task_roles(tasks):
    for task in tasks or []:
        for key in ("block", "rescue", "always"):
            yield from _task_roles(task.get(key))
        for action in ("ansible.builtin.include_role", "ansible.builtin.import_role", "include_role", "import_role"):
            if action in task:
                yield _role_name(task[action]["name"])


def playbook_plays(path):
    """The plays of a playbook, following import_playbook."""
    plays = []
    for play in load_yaml(path) or []:
        target = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
        if target:
            plays.extend(playbook_plays(os.path.join(os.path.dirname(path), target)))
        else:
            plays.append(play)
    return plays


def play_roles(play):
    roles = []
    for entry in play.get("roles") or []:
        roles.append(_role_name(entry if isinstance(entry, str) else entry.get("role") or entry.get("name")))
    for key in ("pre_tasks", "tasks", "post_tasks", "handlers"):
        roles.extend(_task_roles(play.get(key)))
    return roles


def playbook_roles(path):
    """Every role of this collection a playbook uses, in order, without repeats."""
    seen = []
    for play in playbook_plays(path):
        for role in play_roles(play):
            if role not in seen:
                seen.append(role)
    return seen


def is_template(value):
    return isinstance(value, str) and "{{" in value


def survey_default(spec, question_type):
    """The survey default that matches a role option's default, as AWX stores it."""
    default = spec.get("default")
    if default is None:
        return None
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, list):
        return "\n".join(str(x) for x in default)
    if question_type in ("integer", "float"):
        return default
    return str(default)


def allowed_survey_types(spec):
    kind = spec.get("type", "str")
    choices = spec.get("choices")
    if spec.get("no_log"):
        return {"password"}
    if kind in ("str", "path", "raw"):
        return {"multiplechoice"} if choices else {"text", "textarea"}
    if kind == "int":
        return {"integer"}
    if kind == "float":
        return {"float"}
    if kind == "bool":
        return {"multiplechoice"}
    if kind == "list":
        # AWX sends a text answer as a string; the role would loop over its characters.
        return {"multiselect"} if choices else set()
    return set()


def expected_choices(spec):
    if spec.get("type") == "bool":
        return ["true", "false"]
    return [str(c) for c in spec.get("choices") or []] or None


def answer_to_extra_var(question, answer):
    """An answer as AWX puts it into extra_vars: numbers as numbers, multiselect as a list."""
    kind = question["type"]
    if kind == "integer":
        return int(answer)
    if kind == "float":
        return float(answer)
    if kind == "multiselect":
        return answer if isinstance(answer, list) else [x for x in str(answer).split("\n") if x]
    return str(answer)


def survey_extra_vars(template, answers=None):
    """extra_vars of a launch that accepts every default and overrides ``answers``."""
    answers = answers or {}
    asked = {q["variable"] for q in template.get("survey") or []}
    unknown = sorted(set(answers) - asked)
    if unknown:
        raise ValueError("%s: the survey asks no question for %s" % (template.get("name"), ", ".join(unknown)))
    out = {}
    for q in template.get("survey") or []:
        if q["variable"] in answers:
            out[q["variable"]] = answer_to_extra_var(q, answers[q["variable"]])
        elif q.get("default") not in (None, ""):
            out[q["variable"]] = answer_to_extra_var(q, q["default"])
    return out


def survey_problems(stem, template, options):
    """Everything in one job template that disagrees with AWX's rules or the role specs."""
    problems = []
    playbook = os.path.join(TOP, template.get("playbook", ""))
    if template.get("playbook") != "playbooks/%s.yml" % stem:
        problems.append("%s: playbook is %r, expected playbooks/%s.yml" % (stem, template.get("playbook"), stem))
    if not os.path.exists(playbook):
        return problems + ["%s: %s does not exist" % (stem, template.get("playbook"))]
    for key in ("name", "description"):
        if not template.get(key):
            problems.append("%s: %s is empty" % (stem, key))
    used = playbook_roles(playbook)
    seen = set()
    for q in template.get("survey") or []:
        var = q.get("variable")
        where = "%s: question %r" % (stem, var)
        if var in seen:
            problems.append(where + " is asked twice")
        seen.add(var)
        if not q.get("question_name"):
            problems.append(where + " has no question_name")
        if q.get("type") not in SURVEY_TYPES:
            problems.append(where + " has type %r, not an AWX survey type" % q.get("type"))
            continue
        if not isinstance(q.get("required"), bool):
            problems.append(where + " needs required: true or false")
        owners = [r for r in used if var in options.get(r, {})]
        if not owners:
            problems.append(where + " is not an option of any role the playbook uses (%s)" % ", ".join(used))
            continue
        spec = options[owners[0]][var]
        allowed = allowed_survey_types(spec)
        if q["type"] not in allowed:
            problems.append(where + " has type %s; role %s declares type %s%s, so the survey type must be one of %s" % (
                q["type"], owners[0], spec.get("type", "str"), " with choices" if spec.get("choices") else "",
                ", ".join(sorted(allowed)) or "(none: do not ask it in a survey)"))
        if is_template(spec.get("default")):
            problems.append(where + ": the role computes its default (%s); leave it out of the survey" % spec["default"])
            continue
        want = survey_default(spec, q["type"])
        have = q.get("default")
        if have in ("", None):
            have = None
        if want in ("", None):
            want = None
        if have != want:
            problems.append(where + " has default %r, role %s has %r" % (have, owners[0], want))
        want_choices = expected_choices(spec)
        have_choices = q.get("choices")
        if isinstance(have_choices, str):
            have_choices = have_choices.split("\n")
        if q["type"] in ("multiplechoice", "multiselect"):
            if have_choices != want_choices:
                problems.append(where + " has choices %r, role %s has %r" % (have_choices, owners[0], want_choices))
        elif have_choices:
            problems.append(where + " has choices but type %s" % q["type"])
        if q.get("required") is not None and q["required"] != bool(spec.get("required", False)):
            problems.append(where + " has required %s, role %s has %s" % (
                q["required"], owners[0], bool(spec.get("required", False))))
    return problems


CONDITION_KEYS = ("when", "failed_when", "changed_when", "until", "that")
JINJA = re.compile(r"{{(.*?)}}|{%(.*?)%}", re.S)


def _expressions(node, bare=False):
    """(expression, whole_value) for every Jinja expression in a parsed task file."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _expressions(value, bare=key in CONDITION_KEYS)
    elif isinstance(node, list):
        for item in node:
            yield from _expressions(item, bare)
    elif isinstance(node, str):
        if bare:
            yield node, False
        for m in JINJA.finditer(node):
            yield (m.group(1) or m.group(2)), node.strip() == m.group(0)


def unsafe_bool_uses(role, var):
    """Places where a role uses a bool variable as a truth value without `| bool`.

    AWX passes a multiple-choice answer as the string "true"/"false" (so does `-e var=false`
    on the command line); "false" is a true value in Jinja, and ansible-core 2.19 refuses
    a string as a conditional. A whole "{{ var }}" given to a module parameter is fine:
    the module converts it.
    """
    uses = []
    pattern = re.compile(r"\b%s\b(?!\s*\|\s*(ansible\.builtin\.)?bool)" % re.escape(var))
    for sub in ("tasks", "handlers", "vars"):
        for path in sorted(glob.glob(os.path.join(ROLES_DIR, role, sub, "**", "*.yml"), recursive=True)):
            for expr, whole in _expressions(load_yaml(path)):
                if whole and expr.strip() == var:
                    continue
                if pattern.search(expr):
                    uses.append("%s: %s" % (os.path.relpath(path, TOP), expr.strip()[:120]))
    return uses
