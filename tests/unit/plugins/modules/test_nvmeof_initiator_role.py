"""The nvmeof_initiator role's plan on localhost (connection local, --check): two hosts
given one namespace are refused before any task that changes a host; a shared namespace
gets one owner; the teardown works from the record converge wrote, not from its own
variables. Nothing here reaches an NVMe device: the lab proofs are tests/lab/
nvmeof_mkfs_signatures.yml, nvmeof_teardown_readme.yml and molecule/nvmeof_tcp."""

from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

PLAYBOOK = """
- name: Run the nvmeof_initiator role
  hosts: "{{ play_hosts_pattern | default('nvmeof_initiators') }}"
  gather_facts: false
  tasks:
    - name: Run the role, or one of its task files
      ansible.builtin.include_role:
        name: aiinfra.fabric.nvmeof_initiator
        tasks_from: "{{ tasks_from | default('main') }}"
    - name: Save what the role decided
      ansible.builtin.copy:
        content: "{{ {'do_mkfs': __nvmeof_initiator_do_mkfs | default(None),
                      'do_mount': __nvmeof_initiator_do_mount | default(None),
                      'result': nvmeof_initiator_result | default(None),
                      'disconnect': __nvmeof_initiator_register_disconnect | default(None)} | to_json }}"
        dest: "{{ out_dir }}/{{ inventory_hostname }}.json"
        mode: "0600"
      check_mode: false
"""


def play(tmp_path, hosts, extra, check=True, first=()):
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    inv = {"all": {"children": {"nvmeof_initiators": {"hosts": {
        h: dict({"ansible_connection": "local", "ansible_python_interpreter": sys.executable}, **hv)
        for h, hv in hosts.items()}}}}}
    if first:
        # A group listed ahead of nvmeof_initiators in the play's pattern changes the play's host order.
        inv["all"]["children"]["first"] = {"hosts": dict((h, {}) for h in first)}
        extra = dict(extra, play_hosts_pattern="first:nvmeof_initiators")
    (tmp_path / "hosts.yml").write_text(json.dumps(inv))
    extra = dict({"out_dir": str(tmp_path), "nvmeof_initiator_target_address": "10.99.0.1",
                  "nvmeof_initiator_manage_packages": False}, **extra)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_ROLES_PATH=os.path.join(TOP, "roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_STRATEGY="linear",
               PATH=str(tmp_path / "bin") + os.pathsep + os.environ.get("PATH", ""))
    env.pop("ANSIBLE_STRATEGY_PLUGINS", None)
    env.pop("ANSIBLE_CONFIG", None)
    argv = [ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml"),
            "-e", json.dumps(extra)] + (["--check"] if check else [])
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False)
    return proc


def saved(tmp_path, host):
    with open(str(tmp_path / ("%s.json" % host))) as handle:
        return json.load(handle)


def test_two_hosts_formatting_one_namespace_are_refused_before_any_change(tmp_path):
    proc = play(tmp_path, {"h1": {}, "h2": {}}, {})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "would be formatted or mounted by h1, h2" in out
    assert "nvmeof_initiator_shared=true" in out
    # Refused before present.yml: no package, module, identity or connect task ran.
    assert "Load the NVMe-oF host transport module" not in out
    assert "Record what this converge sets up" not in out and "Create the record directory" not in out
    assert not (tmp_path / "h1.json").exists() and not (tmp_path / "h2.json").exists()


def test_own_namespaces_and_raw_use_are_not_refused(tmp_path):
    proc = play(tmp_path, {"h1": {"nvmeof_initiator_nsid": 1}, "h2": {"nvmeof_initiator_nsid": 2},
                           "h3": {"nvmeof_initiator_nsid": 1, "nvmeof_initiator_mkfs": False,
                                  "nvmeof_initiator_mount": False}},
                {"tasks_from": "claims.yml"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert saved(tmp_path, "h1")["do_mkfs"] and saved(tmp_path, "h2")["do_mkfs"]
    assert saved(tmp_path, "h3")["do_mount"] is False


def test_a_shared_namespace_is_formatted_and_mounted_by_one_owner(tmp_path):
    proc = play(tmp_path, {"h1": {}, "h2": {}, "h3": {}}, {"tasks_from": "claims.yml", "nvmeof_initiator_shared": True})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    decided = dict((h, (saved(tmp_path, h)["do_mkfs"], saved(tmp_path, h)["do_mount"])) for h in ("h1", "h2", "h3"))
    assert decided == {"h1": (True, True), "h2": (False, False), "h3": (False, False)}

    proc = play(tmp_path, {"h1": {}, "h2": {}}, {"tasks_from": "claims.yml", "nvmeof_initiator_shared": True,
                                                 "nvmeof_initiator_shared_owner": "h2", "nvmeof_initiator_fstype": "gfs2"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (saved(tmp_path, "h1")["do_mkfs"], saved(tmp_path, "h1")["do_mount"]) == (False, True)
    assert (saved(tmp_path, "h2")["do_mkfs"], saved(tmp_path, "h2")["do_mount"]) == (True, True)


def test_the_owner_follows_the_group_order_whatever_the_play_order(tmp_path):
    # playbooks/nvmeof_rdma.yml checks in a play over nvmeof_targets:nvmeof_initiators and
    # formats in one over nvmeof_initiators: both must name the same owner.
    proc = play(tmp_path, {"h1": {}, "h2": {}, "h3": {}}, {"tasks_from": "claims.yml", "nvmeof_initiator_shared": True},
                first=("h3",))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert [saved(tmp_path, h)["do_mkfs"] for h in ("h1", "h2", "h3")] == [True, False, False]


def test_shared_on_one_host_only_is_still_refused(tmp_path):
    proc = play(tmp_path, {"h1": {"nvmeof_initiator_shared": True}, "h2": {}}, {"tasks_from": "claims.yml"})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 and "hosts declaring it: h1" in out, out


def fake_nvme(tmp_path):
    """A stand-in nvme binary on play()'s PATH: nvme_connect needs one; in check mode it is never run."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvme").write_text("#!/bin/sh\nexit 99\n")
    (tmp_path / "bin" / "nvme").chmod(0o755)


def test_teardown_works_from_the_record_not_its_variables(tmp_path):
    fake_nvme(tmp_path)
    records = tmp_path / "records"
    records.mkdir()
    conn = {"transport": "tcp", "traddr": "10.99.0.7", "trsvcid": "4420", "nqn": "nqn.2024-04.com.example:recorded",
            "host_traddr": ""}
    record = {"file": str(records / "nvmeof_initiator-0123456789ab.json"), "written_by": "aiinfra.fabric.nvmeof_initiator",
              "kernel_module": "nvme_tcp", "connections": [conn], "nsid": 1, "persistent": True,
              "mount_point": str(tmp_path / "mnt"), "fstab": False}
    (records / "nvmeof_initiator-0123456789ab.json").write_text(json.dumps(record) + "\n")
    proc = play(tmp_path, {"h1": {}}, {"nvmeof_initiator_state": "absent", "nvmeof_initiator_transport": "rdma",
                                       "__nvmeof_initiator_record_dir": str(records)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    result = saved(tmp_path, "h1")["result"]
    assert result["from_record"] is True
    assert result["connections"] == [conn]
    assert result["mount_points"] == [str(tmp_path / "mnt")]
    # The one disconnect task planned the recorded path (tcp), not the variables' transport (rdma).
    disconnect = saved(tmp_path, "h1")["disconnect"]
    assert [c["label"] for c in disconnect["connections"]] == ["nqn.2024-04.com.example:recorded tcp 10.99.0.7:4420"]


def test_teardown_without_a_record_uses_the_variables(tmp_path):
    fake_nvme(tmp_path)
    proc = play(tmp_path, {"h1": {}}, {"nvmeof_initiator_state": "absent", "nvmeof_initiator_transport": "tcp",
                                       "__nvmeof_initiator_record_dir": str(tmp_path / "none")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = saved(tmp_path, "h1")["result"]
    assert result["from_record"] is False
    assert [c["transport"] for c in result["connections"]] == ["tcp"]


def test_teardown_removes_the_iopolicy_rule_the_record_names(tmp_path):
    fake_nvme(tmp_path)
    records = tmp_path / "records"
    records.mkdir()
    rule = tmp_path / "71-aiinfra-fabric-iopolicy-0123456789ab.rules"
    rule.write_text("# a rule\n")
    conn = {"transport": "tcp", "traddr": "10.99.0.7", "trsvcid": "4420", "nqn": "nqn.2024-04.com.example:recorded",
            "host_traddr": ""}
    record = {"file": str(records / "nvmeof_initiator-0123456789ab.json"), "written_by": "aiinfra.fabric.nvmeof_initiator",
              "kernel_module": "aiinfra_test_no_such_module", "connections": [conn], "nsid": 1, "persistent": False,
              "mount_point": "", "fstab": False, "iopolicy_rule": str(rule)}
    (records / "nvmeof_initiator-0123456789ab.json").write_text(json.dumps(record) + "\n")
    extra = {"nvmeof_initiator_state": "absent", "__nvmeof_initiator_record_dir": str(records),
             "__nvmeof_initiator_autoconnect_marker": str(tmp_path / "autoconnect.enabled"),
             "__nvmeof_initiator_tls_dropin": str(tmp_path / "60-aiinfra-tls.conf")}
    checked = play(tmp_path, {"h1": {}}, extra)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert rule.exists(), "check mode removed the rule"
    task = checked.stdout.split("Remove what converge wrote and the empty mount points")[1].split("TASK [")[0]
    assert "changed: [h1]" in task, task
    # Not in check mode: the recorded connection is gone already (no controller), so only files go.
    proc = play(tmp_path, {"h1": {}}, extra, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not rule.exists(), "the teardown left the I/O policy rule the record names"
    assert not records.exists(), "the record and its emptied folder should be gone"


def test_tls_over_rdma_and_concat_without_dhchap_are_refused_before_any_change(tmp_path):
    for extra in ({"nvmeof_initiator_tls": True, "nvmeof_initiator_transport": "rdma"},
                  {"nvmeof_initiator_tls": True, "nvmeof_initiator_transport": "tcp", "nvmeof_initiator_tls_concat": True},
                  {"nvmeof_initiator_subsystems": [{"nqn": "nqn.2026-12.io.aiinfra.lab:x", "tls": True,
                                                    "paths": [{"transport": "rdma", "traddr": "10.99.0.1"}]}]}):
        proc = play(tmp_path, {"h1": {}}, extra)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, out
        assert "TLS is NVMe/TCP only" in out or "with tls (TLS is NVMe/TCP only)" in out, out
        assert "Record what this converge sets up" not in out and "Create the record directory" not in out
