"""The nvmeof_target role's last teardown on localhost (connection local, not in check
mode, no configfs): it removes the restorer it installed, but the restorer's folder also
holds what the nvme_tls role installs there (its key loader and library), which must stay.
Every path the teardown touches is pointed into a temporary folder with extra vars."""

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


def last_teardown(tmp_path, libexec):
    lib = libexec / "lib" / "ansible_collections" / "aiinfra" / "fabric" / "plugins" / "module_utils"
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    inv = {"all": {"hosts": {"h1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inv))
    parents = [lib, lib.parent, lib.parent.parent, lib.parent.parent.parent, lib.parent.parent.parent.parent,
               libexec / "lib"]
    extra = {
        "__nvmeof_target_record": str(tmp_path / "records" / "nvmeof_target.json"),
        "__nvmeof_target_nvmetcli_marker": str(tmp_path / "records" / "nvmet.service.masked"),
        "__nvmeof_target_unit": "aiinfra-test-absent-%d.service" % os.getpid(),
        "__nvmeof_target_restore_script": str(libexec / "nvmet-restore"),
        "__nvmeof_target_restore_legacy_package": str(lib / "nvmet"),
        "__nvmeof_target_restore_status": str(tmp_path / "run" / "nvmet-restore.json"),
        "__nvmeof_target_restore_dirs": [str(p) for p in parents] + [str(libexec), str(tmp_path / "run")],
        "nvmeof_target_save_file": str(tmp_path / "etc-nvmet" / "config.json"),
    }
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_ROLES_PATH=os.path.join(TOP, "roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_STRATEGY="linear")
    env.pop("ANSIBLE_STRATEGY_PLUGINS", None)
    env.pop("ANSIBLE_CONFIG", None)
    argv = [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), "-e", json.dumps(extra)]
    return subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False), lib


def installed(tmp_path, with_tls):
    libexec = tmp_path / "libexec"
    lib = libexec / "lib" / "ansible_collections" / "aiinfra" / "fabric" / "plugins" / "module_utils"
    (lib / "nvmet").mkdir(parents=True)
    (lib / "nvmet" / "model.py").write_text("# an install from before the one-file restorer\n")
    (libexec / "nvmet-restore").write_text("# the restorer\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "nvmet-restore.json").write_text("{}\n")
    if with_tls:
        (lib / "tls").mkdir()
        (lib / "tls" / "keys.py").write_text("# nvme_tls's library\n")
        (libexec / "nvme-tls-keys").write_text("# nvme_tls's loader\n")
    return libexec


def test_last_teardown_keeps_what_nvme_tls_installed_beside_the_restorer(tmp_path):
    libexec = installed(tmp_path, with_tls=True)
    proc, lib = last_teardown(tmp_path, libexec)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (libexec / "nvmet-restore").exists()
    assert not (lib / "nvmet").exists()
    assert not (tmp_path / "run").exists()
    assert (libexec / "nvme-tls-keys").exists(), "the target teardown removed nvme_tls's key loader"
    assert (lib / "tls" / "keys.py").exists(), "the target teardown removed nvme_tls's library"


def test_last_teardown_leaves_no_empty_folder_of_its_own(tmp_path):
    libexec = installed(tmp_path, with_tls=False)
    proc, _lib = last_teardown(tmp_path, libexec)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not libexec.exists()
    assert not (tmp_path / "run").exists()
