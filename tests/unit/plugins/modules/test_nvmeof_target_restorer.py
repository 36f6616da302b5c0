# -*- coding: utf-8 -*-
"""The nvmeof_target role's boot restorer, installed by the role's own task (tasks/restorer.yml,
on localhost, the script's path pointed into a temporary folder) and run as the boot unit
runs it (python3 <script>): it carries nvmet/restore.py and what that imports (atomic_write.py
and transports.py outside the package), none of what only the controller or the nvmet_target
module runs, and its save writes a 0600 file. On a FAKE configfs (an empty nvmet folder, or
nvmet_fake.py's EmulatedTree); the real boot restore is the lab's (molecule nvmeof_reboot,
nvmeof_rdma, nvmeof_tls)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from role_harness import run_local_play  # tests/unit/plugins/modules/role_harness.py

HERE = os.path.dirname(os.path.abspath(__file__))
FAKES = os.path.join(os.path.dirname(HERE), "module_utils")  # nvmet_fake.py
SUB = "nqn.2024-04.io.aiinfra.lab:te1.restorer"
HOST = "nqn.2014-08.org.nvmexpress:uuid:6d4104d1-02ff-4b25-86c0-e09cdeb71663"
# Controller-only (topology, record, snapshot, tls_keys) and the nvmet_target module's own
# (document, target) and the modules' apply-and-exit (result, the only one importing Ansible).
NOT_CARRIED = ("topology", "record", "snapshot", "tls_keys", "document", "target", "result")

# Runs the installed restorer on the FAKE tree of nvmet_fake.py, in a Python that sees nothing
# of the collection but what the restorer carries (-I: no PYTHONPATH, no user site; the test's
# own sys.path is not inherited): the restorer's finder serves ConfigfsTree to nvmet_fake too.
DRIVER = r"""
import os, runpy, sys
script, fakes, root = sys.argv[1:4]
runpy.run_path(script)  # installs the restorer's importer; its __main__ block does not run
sys.path.insert(0, fakes)
import nvmet_fake
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import bootrestore, restore
for name in %r:
    try:
        __import__("ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet." + name)
    except ImportError:
        continue
    raise SystemExit("the restorer carries nvmet.%%s" %% name)
restore.ConfigfsTree = nvmet_fake.EmulatedTree

def modprobe(name):  # FAKE: 'loads' a module by making <root>/sys/module/<name>
    os.makedirs(os.path.join(root, "sys", "module", name), exist_ok=True)

bootrestore.modprobe = modprobe
raise SystemExit(restore.main(["--configfs-root", root] + sys.argv[4:]))
""" % (NOT_CARRIED,)


@pytest.fixture(scope="module")
def restorer(tmp_path_factory):
    """The restorer as the role installs it (one play for the module's tests)."""
    tmp_path = tmp_path_factory.mktemp("restorer")
    script = tmp_path / "libexec" / "nvmet-restore"
    play = [{"hosts": "all", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "aiinfra.fabric.nvmeof_target", "tasks_from": "restorer.yml"}}]}]
    proc = run_local_play(tmp_path, play, {"__nvmeof_target_restore_script": str(script)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return script


def test_the_installed_restorer_imports_what_it_carries_and_saves_0600(restorer, tmp_path):
    text = restorer.read_text()
    assert '"atomic_write": ' in text and '"nvmet.savefile": ' in text and '"nvmet": ' in text
    for name in ("subsystems", "ports", "hosts"):
        (tmp_path / "cfs" / "nvmet" / name).mkdir(parents=True)
    save = tmp_path / "etc" / "nvmet" / "config.json"
    out = subprocess.run([sys.executable, str(restorer), "--configfs-root", str(tmp_path / "cfs"), "save",
                          "--output", str(save)], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout == "written\n"
    assert json.loads(save.read_text()) == {"hosts": [], "ports": [], "subsystems": []}
    assert stat.S_IMODE(os.stat(str(save)).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(str(save.parent)).st_mode) == 0o700


def test_the_restorer_carries_only_what_it_runs(restorer):
    text = restorer.read_text()
    carried = sorted(line.split('"')[1] for line in text.splitlines() if line.startswith('    "') and '": "' in line)
    assert carried == ["atomic_write", "nvmet", "nvmet.applier", "nvmet.backing", "nvmet.bootrestore",
                       "nvmet.canonical", "nvmet.common", "nvmet.discovery", "nvmet.model", "nvmet.planner",
                       "nvmet.restore", "nvmet.savefile", "nvmet.validate", "transports"]
    for name in NOT_CARRIED:
        assert '"nvmet.%s": ' % name not in text
    assert "import ansible." not in text and "from ansible." not in text


def test_the_restorer_alone_restores_saves_and_clears_a_fake_tree(restorer, tmp_path):
    root = tmp_path / "cfs"
    for name in ("subsystems", "ports", "hosts"):
        (root / "nvmet" / name).mkdir(parents=True)
    disk = tmp_path / "disk1.img"
    disk.write_bytes(b"\0" * 4096)
    doc = {"hosts": [{"nqn": HOST}],
           "subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "0"}, "allowed_hosts": [HOST],
                           "namespaces": [{"nsid": 1, "enable": 1, "device": {"path": str(disk)}}]}],
           "ports": [{"portid": 1, "addr": {"trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420",
                                            "adrfam": "ipv4"}, "param": {}, "subsystems": [SUB]}]}
    config = tmp_path / "config.json"
    config.write_text(json.dumps(doc))

    def run(*args):
        return subprocess.run([sys.executable, "-I", "-c", DRIVER, str(restorer), FAKES, str(root)] + list(args),
                              capture_output=True, text=True, check=False, cwd=str(tmp_path))

    out = run("restore", str(config))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "restore complete" in out.stderr, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "mkdir hosts/" + HOST
    assert lines.index("mkdir subsystems/" + SUB) < lines.index("mkdir ports/1")
    assert lines[-1] == "link ports/1/subsystems/%s -> subsystems/%s" % (SUB, SUB)
    assert (root / "sys" / "module" / "nvmet_tcp").is_dir()  # the port's transport, loaded (FAKE modprobe)
    again = run("restore", str(config))
    assert again.returncode == 0 and again.stdout == "", again.stdout + again.stderr

    saved = run("save", "--keys")
    assert saved.returncode == 0, saved.stderr
    shown = json.loads(saved.stdout)
    assert [s["nqn"] for s in shown["subsystems"]] == [SUB] and shown["subsystems"][0]["allowed_hosts"] == [HOST]
    assert [(p["portid"], p["subsystems"]) for p in shown["ports"]] == [(1, [SUB])]

    cleared = run("clear", str(config))
    assert cleared.returncode == 0, cleared.stdout + cleared.stderr
    assert cleared.stdout.splitlines()[:2] == ["unlink ports/1/subsystems/" + SUB, "rmdir ports/1"]
    assert cleared.stdout.splitlines()[-1] == "rmdir hosts/" + HOST
    assert json.loads(run("save").stdout) == {"hosts": [], "ports": [], "subsystems": []}
