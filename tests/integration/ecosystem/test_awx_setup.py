"""playbooks/awx_setup.yml against a FAKE of the AWX API (fake_awx_api.py): it creates the
execution environment, project, inventory, inventory source and one job template with
its survey per awx/job_templates file, changes nothing on a second run, and removes
everything with awx_setup_state=absent. The fake stands in for AWX's storage only; it
is no evidence that a real AWX accepts every field."""

import os
import re

import pytest
import yaml

from eco_helpers import TOP, run, tool
from fake_awx_api import FakeAwx


@pytest.fixture
def awx():
    fake = FakeAwx().start()
    fake.add("credentials", name="cluster ssh", organization=1)
    yield fake
    fake.stop()


def setup(awx, *extra):
    env = {"CONTROLLER_HOST": awx.url, "CONTROLLER_OAUTH_TOKEN": "fake-token", "CONTROLLER_VERIFY_SSL": "false",
           "ANSIBLE_CONFIG": os.path.join(TOP, "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"}
    argv = [tool("ansible-playbook"), "playbooks/awx_setup.yml",
            "-e", "awx_setup_scm_url=https://git.example.invalid/aiinfra/fabric.git",
            "-e", "awx_setup_ee_image=registry.example.invalid/aiinfra-fabric-ee:0.1.0",
            "-e", "awx_setup_machine_credential='cluster ssh'"] + list(extra)
    proc = run(argv, cwd=TOP, env=env)
    recap = re.search(r"localhost\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", proc.stdout)
    assert recap, proc.stdout[-3000:]
    return dict(zip(("ok", "changed", "unreachable", "failed"), map(int, recap.groups()))), proc.stdout


def test_awx_setup_defines_everything_and_is_idempotent(awx):
    recap, out = setup(awx)
    assert recap["failed"] == 0 and recap["changed"] > 0, out[-3000:]
    ee = awx.named("execution_environments")["aiinfra.fabric EE"]
    assert ee["image"] == "registry.example.invalid/aiinfra-fabric-ee:0.1.0"
    project = awx.named("projects")["aiinfra.fabric"]
    assert project["scm_url"] == "https://git.example.invalid/aiinfra/fabric.git"
    assert project["scm_type"] == "git" and project["default_environment"] == ee["id"]
    inventory = awx.named("inventories")["aiinfra.fabric"]
    source = awx.named("inventory_sources")["aiinfra.fabric from aiinfra.fabric"]
    assert source["source"] == "scm" and source["source_project"] == project["id"]
    assert source["inventory"] == inventory["id"] and source["source_path"] == "inventory/lab/hosts.yml"
    credential = awx.named("credentials")["cluster ssh"]
    templates = awx.named("job_templates")
    for name in sorted(os.listdir(os.path.join(TOP, "awx", "job_templates"))):
        with open(os.path.join(TOP, "awx", "job_templates", name)) as f:
            want = yaml.safe_load(f)
        jt = templates.pop(want["name"])
        assert jt["playbook"] == want["playbook"] and jt["project"] == project["id"], jt
        assert jt["inventory"] == inventory["id"] and jt["execution_environment"] == ee["id"], jt
        assert jt["survey_enabled"] is bool(want["survey"]), jt
        spec = awx.surveys.get(("job_templates", jt["id"]))
        if want["survey"]:
            assert spec["spec"] == want["survey"], (name, spec)
        assert awx.associations[("job_templates", jt["id"], "credentials")] == [credential["id"]]
    assert not templates, "job templates nobody asked for: %s" % sorted(templates)
    # fabric_health's schedule, on its job template.
    schedule = awx.named("schedules")["aiinfra.fabric: fabric health every 15 minutes"]
    health = awx.named("job_templates")["aiinfra.fabric: fabric health"]
    assert schedule["unified_job_template"] == health["id"], schedule
    assert schedule["rrule"] == "DTSTART:20260101T000000Z RRULE:FREQ=MINUTELY;INTERVAL=15" and schedule["enabled"] is True

    again, out = setup(awx)
    assert again["failed"] == 0 and again["changed"] == 0, "second run changed something:\n" + out[-4000:]

    gone, out = setup(awx, "-e", "awx_setup_state=absent")
    assert gone["failed"] == 0, out[-3000:]
    for endpoint in ("schedules", "job_templates", "projects", "inventories", "execution_environments"):
        assert not awx.objects.get(endpoint), (endpoint, awx.objects.get(endpoint))
