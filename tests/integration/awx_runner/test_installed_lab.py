"""What users install, run the way they run it: the collection built with ansible-galaxy,
installed into an empty collections path, and its main playbook run by its full name
(``ansible-playbook aiinfra.fabric.nvmeof_tcp``) against the lab from a folder outside the
repository, with a copy of the lab's inventory and the stock Ansible settings - no repository
path in the run. Then its teardown, the same way. Run by the AWX phase of scripts/test (the
lab is up then)."""

import os
import re
import shutil
import subprocess

import pytest

from runner_jobs import TOP

VENV_BIN = os.path.join(TOP, ".venv", "bin")


def tool(name):
    return os.path.join(VENV_BIN, name)


def run(argv, cwd, env, timeout=1800):
    proc = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=timeout, check=False)
    return proc


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(collections path, a work folder with the lab inventory copied into it)."""
    root = tmp_path_factory.mktemp("installed")
    build = root / "build"
    build.mkdir()
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = run([tool("ansible-galaxy"), "collection", "build", "--output-path", str(build), TOP], cwd=str(build), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    (tarball,) = [p for p in os.listdir(str(build)) if p.endswith(".tar.gz")]
    cols = root / "collections"
    proc = run([tool("ansible-galaxy"), "collection", "install", "--offline", "-p", str(cols), str(build / tarball)],
               cwd=str(root), env=dict(env, ANSIBLE_COLLECTIONS_PATH=str(cols)))
    assert proc.returncode == 0, proc.stdout[-3000:]
    work = root / "work"
    work.mkdir()
    shutil.copytree(os.path.join(TOP, "inventory", "lab"), str(work / "inventory"))
    return cols, work


def playbook(installed, name):
    cols, work = installed
    # Stock settings (no ansible.cfg here or in the environment), the installed collection
    # only; the lab's SSH timeout, as its emulated guests answer slowly.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_COLLECTIONS_PATH=str(cols), ANSIBLE_NOCOLOR="1", ANSIBLE_TIMEOUT="60",
               ANSIBLE_HOST_KEY_CHECKING="False", PATH=VENV_BIN + os.pathsep + env.get("PATH", ""))
    proc = run([tool("ansible-playbook"), "aiinfra.fabric." + name, "-i", "inventory", "-e", "nvmeof_transport=tcp"],
               cwd=str(work), env=env)
    print(proc.stdout[-2500:])
    # Only the Ansible installation may appear (it lives in the repository's .venv here, and
    # prints a CryptographyDeprecationWarning with its path); no file of the repository.
    venv = os.path.join(TOP, ".venv")
    repo_paths = [line for line in proc.stdout.splitlines() if TOP in line and venv not in line]
    assert not repo_paths, "a repository path appears in the run: %s" % repo_paths[:5]
    return proc


def recap(out):
    found = dict((h, dict(zip(("ok", "changed", "unreachable", "failed"), map(int, n))))
                 for h, *n in re.findall(r"^(\S+)\s*: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)", out, re.M))
    assert found, out[-3000:]
    return found


def test_the_installed_collection_runs_its_main_playbook_and_teardown_by_full_name(installed, lab):
    assert lab
    proc = playbook(installed, "nvmeof_tcp")
    assert proc.returncode == 0, proc.stdout[-4000:]
    hosts = recap(proc.stdout)
    assert hosts["te1"]["failed"] == 0 and hosts["te2"]["failed"] == 0, hosts
    assert re.search(r"te2: I/O check: PASS", proc.stdout), proc.stdout[-3000:]
    proc = playbook(installed, "nvmeof_teardown")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert re.search(r"te2: NVMe-oF initiator: disconnected from", proc.stdout), proc.stdout[-3000:]
