# -*- coding: utf-8 -*-
"""Run a small playbook with this checkout's roles against localhost (connection local,
Ansible's own linear strategy), the way the role tests drive a role's teardown with every
host path pointed into a temporary folder by extra vars."""

from __future__ import annotations

import json
import os
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", ".."))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


def run_local_role(tmp_path, role, role_vars, extra, check=False):
    """ansible-playbook of one play applying ``role`` with ``role_vars`` on host h1 (local),
    ``extra`` as extra vars; returns the CompletedProcess."""
    play = [{"name": "Apply %s" % role, "hosts": "all", "gather_facts": False,
             "roles": [{"role": role, "vars": role_vars}]}]
    return run_local_play(tmp_path, play, extra, check=check)


def run_local_play(tmp_path, play, extra, check=False, env=None):
    """ansible-playbook of ``play`` (a list of plays) on host h1 (local), ``extra`` as extra
    vars, ``env`` as more environment; returns the CompletedProcess."""
    (tmp_path / "play.yml").write_text(json.dumps(play))
    inv = {"all": {"hosts": {"h1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inv))
    full_env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
                    ANSIBLE_ROLES_PATH=os.path.join(TOP, "roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_STRATEGY="linear",
                    **(env or {}))
    full_env.pop("ANSIBLE_STRATEGY_PLUGINS", None)
    full_env.pop("ANSIBLE_CONFIG", None)
    argv = [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"), "-e", json.dumps(extra)]
    argv += ["--check"] if check else []
    return subprocess.run(argv, capture_output=True, text=True, env=full_env, cwd=str(tmp_path), check=False)
