"""The nvmeof_target role's teardown on localhost (connection local, not in check mode):
its record lives in /var/lib/aiinfra-fabric next to the records of other roles (the
initiator's, on a host that is both target and initiator). Removing the target's record
must leave theirs, and the directory with them. Paths are pointed into a temporary
folder with extra vars; no configfs here, so no target object is touched (the lab proof
is molecule/nvmeof_multipath, where te1 is target and initiator)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

PLAYBOOK = """
- name: Tear the target down
  hosts: all
  gather_facts: false
  roles:
    - role: aiinfra.fabric.nvmeof_target
      vars:
        nvmeof_target_state: absent
"""


def teardown(tmp_path, record_dir):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    inv = {"all": {"hosts": {"h1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inv))
    extra = {
        "__nvmeof_target_record": str(record_dir / "nvmeof_target.json"),
        "__nvmeof_target_nvmetcli_marker": str(record_dir / "nvmet.service.masked"),
        # Keep the unit, restorer, save file and boot-time modules of this machine out of it.
        "__nvmeof_target_others_left": True,
        "nvmeof_target_save_file": str(tmp_path / "etc-nvmet" / "config.json"),
    }
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_ROLES_PATH=os.path.join(TOP, "roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_STRATEGY="linear")
    env.pop("ANSIBLE_STRATEGY_PLUGINS", None)
    env.pop("ANSIBLE_CONFIG", None)
    argv = [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), "-e", json.dumps(extra)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)


def test_target_teardown_keeps_the_initiator_records_beside_its_own(tmp_path):
    records = tmp_path / "aiinfra-fabric"
    records.mkdir()
    (records / "nvmeof_target.json").write_text("{}\n")
    initiator = records / "nvmeof_initiator-0123456789ab.json"
    initiator.write_text('{"written_by": "aiinfra.fabric.nvmeof_initiator"}\n')
    proc = teardown(tmp_path, records)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (records / "nvmeof_target.json").exists()
    assert initiator.exists(), "the target teardown removed the initiator's record"


def test_target_teardown_removes_its_record_directory_when_nothing_else_is_in_it(tmp_path):
    records = tmp_path / "aiinfra-fabric"
    records.mkdir()
    (records / "nvmeof_target.json").write_text("{}\n")
    proc = teardown(tmp_path, records)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not records.exists()
