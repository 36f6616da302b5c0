# -*- coding: utf-8 -*-
"""The nvmeof_target role's backing step (tasks/backing.yml) on localhost, fed the lines its
first probe (files/probe.sh, run for real) prints for a FAKE configfs tree (nvmet_fake.py).

An image deleted while its namespace is enabled is still served by the kernel (it keeps
the open inode), so the initiators still read their data; a new empty file at that path
would be what the next boot exports. The step must refuse to create it. The lab proof is
molecule/nvmeof_reboot (the second subsystem's image)."""

from __future__ import annotations

import os
import subprocess
import sys

from role_harness import TOP, run_local_play  # tests/unit/plugins/modules/role_harness.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
from nvmet_fake import SUB, fake_namespace, fake_subsystem  # noqa: E402

PROBE = os.path.join(TOP, "roles", "nvmeof_target", "files", "probe.sh")


def probe_lines(configfs, files):
    """The role's first probe for these backing files (no packages, firewall or persist step)."""
    env = dict(os.environ, AIINFRA_NVMET_CONFIGFS=os.path.join(configfs, "nvmet"),
               AIINFRA_SYS_MODULE=os.path.join(configfs, "sys", "module"))
    argv = ["sh", PROBE, "true", "true", os.path.join(configfs, "record.json"), "-", "", "-", "0"] + files
    return subprocess.run(argv, check=True, capture_output=True, text=True, env=env).stdout.splitlines()


def backing_step(tmp_path, files, lines):
    play = [{"hosts": "all", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "aiinfra.fabric.nvmeof_target", "tasks_from": "backing.yml"}}]}]
    extra = {"__nvmeof_target_topology": {"files": [{"path": f, "size_mb": 1} for f in files]},
             "__nvmeof_target_built": {"topology": {"devices": []}},
             "__nvmeof_target_register_probe": {"stdout_lines": lines}}
    return run_local_play(tmp_path, play, extra)


def test_the_backing_step_never_creates_a_file_where_an_enabled_namespace_lost_its_image(tmp_path):
    configfs = str(tmp_path / "configfs")
    gone, new = str(tmp_path / "images" / "gone.img"), str(tmp_path / "images" / "new.img")
    fake_subsystem(configfs, SUB)
    fake_namespace(configfs, SUB, 3, path=gone, enable="1")
    proc = backing_step(tmp_path, [new, gone], probe_lines(configfs, [new, gone]))
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "subsystems/%s/namespaces/3" % SUB in out and gone in out, out
    assert "initiators" in out and "until the target is stopped" in out, out
    assert not os.path.exists(gone) and not os.path.exists(new)


def test_the_backing_step_creates_a_missing_file_no_enabled_namespace_exports(tmp_path):
    configfs = str(tmp_path / "configfs")
    new, off = str(tmp_path / "images" / "new.img"), str(tmp_path / "images" / "off.img")
    fake_subsystem(configfs, SUB)
    fake_namespace(configfs, SUB, 1, path=off, enable="0")
    proc = backing_step(tmp_path, [new, off], probe_lines(configfs, [new, off]))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert os.path.getsize(new) == 1048576 and os.path.getsize(off) == 1048576
