"""The controller-only actions the main playbooks run around their roles, through
ansible-playbook on localhost: fabric_result_save (roles/fabric_report/tasks/save.yml)
and validate_role_inputs (the fabric_inputs role)."""

import json
import os
import stat
import subprocess
import sys

import pytest
from ansible.release import __version__ as ansible_core_version

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.saved import read_saved_results

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))

SAVE = """---
- name: Save results
  hosts: h1
  gather_facts: false
  tasks:
    - name: Set the facts
      ansible.builtin.set_fact:
        nvmeof_target_result: {subsystems: [{nqn: "nqn.2024-04.com.example:t1", namespaces: 2}], changed: false,
                               note: "{{ 'templated ' ~ inventory_hostname }}"}
        mpi_bench_result: null
    - name: Save them as the main playbooks do
      ansible.builtin.import_role:
        name: aiinfra.fabric.fabric_report
        tasks_from: save.yml
"""

ansible_version = tuple(int(part) for part in ansible_core_version.split(".")[:2])

INPUTS = """---
- name: Check the inputs
  hosts: h1
  gather_facts: false
  roles:
    - role: aiinfra.fabric.fabric_inputs
      vars:
        fabric_inputs_roles: %s
"""


@pytest.fixture
def work(tmp_path):
    local = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}
    (tmp_path / "hosts.json").write_text(json.dumps({"all": {"hosts": {"h1": local}}}))
    (tmp_path / "elsewhere").mkdir()
    return tmp_path


def run(work, text, *extra):
    (work / "play.yml").write_text(text)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_CONFIG=os.path.join(TOP, "ansible.cfg"),
               ANSIBLE_LOCAL_TEMP=str(work / "tmp"), ANSIBLE_DEPRECATION_WARNINGS="0",
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "../hosts.json",
                           "../play.yml"] + list(extra), cwd=str(work / "elsewhere"), env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300, check=False)
    return proc.returncode, proc.stdout


def recap(out):
    line = [ln for ln in out.splitlines() if ln.startswith("h1 ")][-1]
    return dict(kv.split("=") for kv in line.split(":", 1)[1].split())


def test_save_writes_each_fact_the_host_has_and_reports_no_change(work):
    rc, out = run(work, SAVE, "-e", "fabric_report_dir=out")
    assert rc == 0, out
    assert recap(out)["changed"] == "0", out
    hdir = work / "elsewhere" / "out" / "hosts" / "h1"
    # A null fact is not saved; the others are, readable by the report's reader.
    assert sorted(os.listdir(str(hdir))) == ["nvmeof_target_result.json"]
    assert stat.S_IMODE(os.stat(str(hdir)).st_mode) == 0o755
    assert stat.S_IMODE(os.stat(str(hdir / "nvmeof_target_result.json")).st_mode) == 0o644
    doc = json.loads((hdir / "nvmeof_target_result.json").read_text())
    assert doc["schema"] == "aiinfra.fabric.host_result" and doc["schema_version"] == 1
    assert doc["host"] == "h1" and doc["fact"] == "nvmeof_target_result" and doc["playbook"] == "Save results"
    assert doc["result"]["note"] == "templated h1" and doc["result"]["subsystems"][0]["namespaces"] == 2
    assert doc["saved"].endswith("Z") and len(doc["saved"]) == 20
    facts, saved = read_saved_results(str(work / "elsewhere" / "out" / "hosts"))
    assert facts == {"h1": {"nvmeof_target_result": doc["result"]}}
    assert saved["h1"]["nvmeof_target_result"]["playbook"] == "Save results"


def test_save_under_check_writes_nothing(work):
    rc, out = run(work, SAVE, "-e", "fabric_report_dir=out", "--check")
    assert rc == 0, out
    assert not (work / "elsewhere" / "out").exists()


def test_save_can_be_turned_off(work):
    rc, out = run(work, SAVE, "-e", "fabric_report_dir=out", "-e", "fabric_report_save_results=false")
    assert rc == 0, out
    assert not (work / "elsewhere" / "out").exists()


def test_inputs_pass_for_good_values(work):
    rc, out = run(work, INPUTS % "[nvmeof_target, fabric_report]", "-e", "nvmeof_target_port_id=2")
    assert rc == 0, out
    assert recap(out)["ok"] == "2", out   # the role's own spec check and the one action


def test_inputs_name_every_wrong_variable_of_every_role_at_once(work):
    rc, out = run(work, INPUTS % "[nvmeof_target, nvmeof_initiator]", "-e", "nvmeof_target_port_id=lots",
                  "-e", "nvmeof_initiator_transport=carrier-pigeon")
    assert rc != 0, out
    assert "Validation of arguments failed" in out
    assert "nvmeof_target: " in out and "nvmeof_target_port_id" in out
    # ansible-core 2.19's conversion error names the value too; 2.16's says only the type.
    assert "lots" in out or ansible_version < (2, 19), out
    assert "nvmeof_initiator: " in out and "nvmeof_initiator_transport" in out and "carrier-pigeon" in out


def test_inputs_refuse_a_role_without_a_specification(work):
    rc, out = run(work, INPUTS % "[nvmeof_target, no_such_role]")
    assert rc != 0, out
    assert "fabric_inputs_roles lists no_such_role, but" in out and "argument_specs.yml does not exist" in out


DIRECT = """---
- name: Check the inputs of a role of our own
  hosts: h1
  gather_facts: false
  tasks:
    - name: Validate the variables of each role
      aiinfra.fabric.validate_role_inputs:
        roles: [mine]
        roles_dir: %s
"""


def test_inputs_leave_required_options_to_the_roles_but_check_their_type(work):
    meta = work / "roles" / "mine" / "meta"
    meta.mkdir(parents=True)
    meta.joinpath("argument_specs.yml").write_text(
        "argument_specs:\n  main:\n    options:\n      mine_size: {type: int, required: true}\n")
    # Required, but a play may pass it as a role parameter later: not asked for here ...
    rc, out = run(work, DIRECT % (work / "roles"))
    assert rc == 0, out
    # ... while a value that is set must still have the right type.
    rc, out = run(work, DIRECT % (work / "roles"), "-e", "mine_size=huge")
    assert rc != 0 and "mine: " in out and "mine_size" in out, out
    assert "huge" in out or ansible_version < (2, 19), out   # 2.16's message leaves the value out
