"""The slurm role's slurm.conf template rendered by Ansible on localhost for a two-node
inventory with given facts (no Slurm here: the lab, molecule/slurm, starts the daemons
on what it writes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

PLAYBOOK = """
- name: Render slurm.conf as the role does
  hosts: mpi_nodes
  gather_facts: false
  vars_files: [%(top)s/roles/slurm/defaults/main.yml]
  tasks:
    - name: Facts as setup would give them
      ansible.builtin.set_fact:
        ansible_hostname: "{{ inventory_hostname }}"
        ansible_processor_vcpus: "{{ cpus }}"
        ansible_memtotal_mb: "{{ mem }}"
        ansible_default_ipv4: {address: "{{ ipv4 }}"}
        __slurm_controller: n1
        __slurm_nodes: [n1, n2]
    - name: Render
      ansible.builtin.template:
        src: %(top)s/roles/slurm/templates/slurm.conf.j2
        dest: "%(out)s/{{ inventory_hostname }}.conf"
        mode: "0644"
      delegate_to: localhost
"""


def render(tmp_path, extra=None):
    inventory = {"all": {"children": {"mpi_nodes": {"hosts": {
        "n1": {"cpus": 2, "mem": 1963, "ipv4": "192.168.1.1", "fabric_address": "10.99.0.1"},
        "n2": {"cpus": 1, "mem": 40, "ipv4": "192.168.1.2"}}}},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inventory))
    (tmp_path / "play.yml").write_text(PLAYBOOK % {"top": TOP, "out": tmp_path})
    (tmp_path / "vars.json").write_text(json.dumps(extra or {}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_HOME=str(tmp_path / "home"))
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
                           "-e", "@" + str(tmp_path / "vars.json")], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, env=env, timeout=300, check=False, universal_newlines=True)
    assert proc.returncode == 0, proc.stdout
    first, second = (tmp_path / "n1.conf").read_text(), (tmp_path / "n2.conf").read_text()
    assert first == second    # one file for every node, as Slurm requires
    return first.splitlines()


def test_nodes_from_facts_and_the_controller_on_the_fabric(tmp_path):
    lines = render(tmp_path)
    assert "SlurmctldHost=n1(10.99.0.1)" in lines
    # n2 has no fabric_address: its default IPv4; memory less the reserve, never below 1.
    assert "NodeName=n1 NodeAddr=10.99.0.1 CPUs=2 RealMemory=1899 State=UNKNOWN" in lines
    assert "NodeName=n2 NodeAddr=192.168.1.2 CPUs=1 RealMemory=1 State=UNKNOWN" in lines
    assert lines[-1] == "PartitionName=fabric Nodes=n1,n2 Default=YES MaxTime=INFINITE State=UP"
    assert "AuthType=auth/munge" in lines and "SelectTypeParameters=CR_CPU" in lines


def test_extra_settings_replace_the_roles_own(tmp_path):
    lines = render(tmp_path, {"slurm_conf_extra": {"MpiDefault": "pmix", "MinJobAge": 600},
                              "slurm_partition": "gpu"})
    assert "MpiDefault=pmix" in lines and "MpiDefault=none" not in lines
    assert "MinJobAge=600" in lines and "MinJobAge=300" not in lines
    assert lines[-1].startswith("PartitionName=gpu Nodes=n1,n2 ")
