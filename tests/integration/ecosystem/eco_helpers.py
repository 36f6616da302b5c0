"""Helpers of the ecosystem tests: the venv's tools run with a clean Ansible environment."""

import os
import subprocess
import sys

import pytest

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
BIN = os.path.dirname(sys.executable)


def tool(name):
    return os.path.join(BIN, name)


def run(argv, cwd, env=None, check=True):
    """Run a tool of the venv with a clean Ansible configuration (no ansible.cfg of the repo)."""
    full_env = dict(os.environ)
    for key in list(full_env):
        if key.startswith("ANSIBLE_"):
            del full_env[key]
    full_env.update(env or {})
    proc = subprocess.run(argv, cwd=cwd, env=full_env, capture_output=True, text=True, timeout=600, check=False)
    if check and proc.returncode != 0:
        pytest.fail("%s failed (rc %d):\n%s\n%s" % (" ".join(argv), proc.returncode, proc.stdout, proc.stderr))
    return proc


def galaxy_meta():
    import yaml

    with open(os.path.join(TOP, "galaxy.yml")) as f:
        return yaml.safe_load(f)


def repo_files():
    """Files git knows of in the checkout (tracked, and new ones not ignored)."""
    out = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                         cwd=TOP, capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if os.path.exists(os.path.join(TOP, f))]
