# -*- coding: utf-8 -*-
"""The nvmeof_target role's boot restorer, installed by the role's own task (tasks/restorer.yml,
on localhost, the script's path pointed into a temporary folder) and run as the boot unit
runs it (python3 <script>): it carries the nvmet package and atomic_write.py, the one module
outside the package that it imports, and its save writes a 0600 file. On a FAKE configfs (an
empty nvmet folder); the real boot restore is the lab's (molecule nvmeof_rdma, nvmeof_tls)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from role_harness import run_local_play  # tests/unit/plugins/modules/role_harness.py


def test_the_installed_restorer_imports_what_it_carries_and_saves_0600(tmp_path):
    script = tmp_path / "libexec" / "nvmet-restore"
    play = [{"hosts": "all", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "aiinfra.fabric.nvmeof_target", "tasks_from": "restorer.yml"}}]}]
    proc = run_local_play(tmp_path, play, {"__nvmeof_target_restore_script": str(script)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = script.read_text()
    assert '"atomic_write": ' in text and '"nvmet.savefile": ' in text and '"nvmet": ' in text
    for name in ("subsystems", "ports", "hosts"):
        (tmp_path / "cfs" / "nvmet" / name).mkdir(parents=True)
    save = tmp_path / "etc" / "nvmet" / "config.json"
    out = subprocess.run([sys.executable, str(script), "--configfs-root", str(tmp_path / "cfs"), "save",
                          "--output", str(save)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == "written\n"
    assert json.loads(save.read_text()) == {"hosts": [], "ports": [], "subsystems": []}
    assert stat.S_IMODE(os.stat(str(save)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(str(save.parent)).st_mode) == 0o700
