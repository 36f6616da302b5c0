"""Unit tests of what the nvmeof_initiator role reads from a host, read on the controller
(plugins/plugin_utils/nvmeof_initiator_state.py, the mount_entry and
nvmeof_initiator_records filters). The mount table is the text of /proc/self/mounts as
the role's first task reads it back (Debian 12 on the lab's ini1, with an NVMe-oF namespace
mounted on /mnt/nvmeof and one on a path with a blank); the teardown's lines are its
first task's (tasks/teardown.yml), run for real with sh on a temporary folder."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest
import yaml
from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.filter import nvmeof_initiator as filters
from ansible_collections.aiinfra.fabric.plugins.plugin_utils import nvmeof_initiator_state as state

TEARDOWN = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "nvmeof_initiator", "tasks",
                        "teardown.yml")

MOUNTS = """\
sysfs /sys sysfs rw,nosuid,nodev,noexec,relatime 0 0
proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0
udev /dev devtmpfs rw,nosuid,relatime,size=987676k,nr_inodes=246919,mode=755,inode64 0 0
/dev/vda1 / ext4 rw,relatime,errors=remount-ro 0 0
tmpfs /run tmpfs rw,nosuid,nodev,noexec,relatime,size=201516k,mode=755,inode64 0 0
/dev/nvme0n1 /mnt/nvmeof xfs rw,relatime,attr2,inode64,logbufs=8,logbsize=32k,noquota 0 0
/dev/nvme1n1 /mnt/fabric\\040data ext4 rw,relatime 0 0
/dev/vdb /mnt/back\\134slash ext4 rw,relatime 0 0
"""


def test_what_is_mounted_on_a_mount_point():
    assert state.mounted_on(MOUNTS, "/mnt/nvmeof") == ["/dev/nvme0n1", "xfs"]
    # The kernel writes a blank as \040 and a backslash as \134.
    assert state.mounted_on(MOUNTS, "/mnt/fabric data") == ["/dev/nvme1n1", "ext4"]
    assert state.mounted_on(MOUNTS, "/mnt/back\\slash") == ["/dev/vdb", "ext4"]
    assert state.mounted_on(MOUNTS, "/mnt/fabric") == []
    assert state.mounted_on("", "/mnt/nvmeof") == [] and state.mounted_on(None, "/mnt/nvmeof") == []


def test_the_last_mount_on_a_point_is_the_one_seen_there():
    over = MOUNTS + "tmpfs /mnt/nvmeof tmpfs rw,relatime 0 0\n"
    assert filters.mount_entry(over, "/mnt/nvmeof") == ["tmpfs", "tmpfs"]


def teardown_script():
    """The shell of the teardown's first task, as the role has it."""
    with open(TEARDOWN) as fh:
        tasks = yaml.safe_load(fh)
    return next(t for t in tasks if t["name"] == "Read what converge recorded on this host")["vars"]["__script"]


RECORD = {"file": "/var/lib/aiinfra-fabric/nvmeof_initiator-3f2a9c1b7d4e.json", "iopolicy_rule": "",
          "written_by": "aiinfra.fabric.nvmeof_initiator", "kernel_module": "nvme_rdma",
          "kernel_modules": ["nvme_rdma"], "multipath_conf": True,
          "connections": [{"transport": "rdma", "traddr": "10.99.0.1", "trsvcid": "4420",
                           "nqn": "nqn.2024-04.io.aiinfra.lab:te1.nvmeof", "host_traddr": "", "host_iface": ""}],
          "nsid": 1, "persistent": True, "tls_keys": False, "mount_point": "/mnt/nvmeof", "fstab": True}


@pytest.mark.parametrize("autoconnect, heal", [(False, False), (True, True)])
def test_the_teardown_probe_lines(tmp_path, autoconnect, heal):
    records = tmp_path / "aiinfra-fabric"
    records.mkdir()
    (records / "nvmeof_initiator-3f2a9c1b7d4e.json").write_text(json.dumps(RECORD) + "\n")
    second = dict(RECORD, file=str(records / "nvmeof_initiator-000000000000.json"), mount_point="")
    (records / "nvmeof_initiator-000000000000.json").write_text(json.dumps(second) + "\n")
    (records / "nvmeof_target.json").write_text("{}\n")  # the target role's record: not the initiator's
    marker = records / "nvmf-autoconnect.enabled"
    heal_dir = tmp_path / "heal"
    cache = tmp_path / "cache" / "nvme-heal"
    deep = cache / "usr" / "lib" / "nvme"
    if autoconnect:
        marker.write_text("")
    if heal:
        heal_dir.mkdir()
        deep.mkdir(parents=True)
        for name in ("heal.cpython-313.pyc", "cli.cpython-313.pyc"):
            (deep / name).write_bytes(b"\x00")
        (cache / "usr" / "top.cpython-313.pyc").write_bytes(b"\x00")
    out = subprocess.run(["sh", "-c", teardown_script(), "sh", str(records), str(marker), str(heal_dir), str(cache)],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    got = filters.nvmeof_initiator_records(out)
    assert got["records"] == [second, RECORD]
    want = (["autoconnect"] if autoconnect else []) + (["heal"] if heal else [])
    assert got["markers"] == want
    if not heal:
        assert got["cache"] == {"files": [], "dirs": []}
        return
    # Every file and folder of the cache, each folder after everything in it (host_config's
    # remove_empty_dirs removes them in the order given), the cache's own folder last.
    assert sorted(got["cache"]["files"]) == sorted(str(p) for p in (
        deep / "heal.cpython-313.pyc", deep / "cli.cpython-313.pyc", cache / "usr" / "top.cpython-313.pyc"))
    assert got["cache"]["dirs"] == [str(deep), str(deep.parent), str(cache / "usr"), str(cache)]


def test_a_bytecode_cache_alone_still_marks_the_healer(tmp_path):
    """A teardown that stopped half way (the healer's folders gone, its cache left) finds
    the cache, and the last task removes it."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "x.pyc").write_bytes(b"")
    out = subprocess.run(["sh", "-c", teardown_script(), "sh", str(tmp_path / "none"), str(tmp_path / "marker"),
                          str(tmp_path / "heal"), str(cache)], check=True, capture_output=True, text=True).stdout.splitlines()
    got = filters.nvmeof_initiator_records(out)
    assert got["markers"] == ["heal"]
    assert got["cache"] == {"files": [str(cache / "x.pyc")], "dirs": [str(cache)]}


def test_a_record_that_is_not_json_is_an_error_that_says_so():
    with pytest.raises(AnsibleFilterError, match="not JSON"):
        filters.nvmeof_initiator_records(['{"file": "/var/lib/aiinfra-fabric/nvmeof_initiator-x.json", "nsid"'])
    assert filters.nvmeof_initiator_records(None) == {"records": [], "markers": [], "cache": {"files": [], "dirs": []}}


# The role's connections and I/O policies, computed from its variables
# (plugins/plugin_utils/nvmeof_initiator_record.py). The record names below were written by
# the role before (vars/main.yml's Jinja loops, rendered with ansible-core 2.19 from the
# role's defaults and these variables): a record must keep its name, or a converge after an
# upgrade would write a second record beside the first.
LONG = [
    {"nqn": "nqn.2024-04.io.aiinfra.lab:te1.a", "iopolicy": "queue-depth", "paths": [
        {"traddr": "10.99.0.1"},
        {"transport": "tcp", "traddr": "10.99.1.1", "trsvcid": 4421, "host_iface": "eth1",
         "hostnqn": "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555",
         "hostid": "11111111-2222-3333-4444-555555555555"}]},
    {"nqn": "nqn.2024-04.io.aiinfra.lab:te1.b", "iopolicy": "", "paths": [
        {"traddr": "10.99.0.1", "trsvcid": "4420", "host_traddr": None, "hostnqn": ""}]},
]
# The short form as vars/main.yml builds it from the single-target variables.
SHORT = [{"nqn": "nqn.2024-04.com.example:te1.target1", "paths": [
    {"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "host_traddr": "10.99.0.2"}]}]


def record_name(connections, nsid=1):
    """vars/main.yml's __nvmeof_initiator_record_file, as Ansible's to_json and hash('sha1') make it."""
    text = json.dumps(connections) + " " + str(nsid)
    return "nvmeof_initiator-%s.json" % hashlib.sha1(text.encode()).hexdigest()[:12]


@pytest.mark.parametrize("subsystems, iopolicy, name, policies", [
    (LONG, "numa", "nvmeof_initiator-db4f3418f9f0.json",
     [{"nqn": "nqn.2024-04.io.aiinfra.lab:te1.a", "iopolicy": "queue-depth"},
      {"nqn": "nqn.2024-04.io.aiinfra.lab:te1.b", "iopolicy": "numa"}]),
    (SHORT, "round-robin", "nvmeof_initiator-511295b731cd.json",
     [{"nqn": "nqn.2024-04.com.example:te1.target1", "iopolicy": "round-robin"}]),
    ([{"nqn": "nqn.2024-04.io.aiinfra.lab:te1.c", "paths": [{"traddr": "fe80::1", "transport": "rdma"}]}], "",
     "nvmeof_initiator-dff3fc214f82.json", []),
])
def test_the_record_keeps_the_name_and_policies_it_had(subsystems, iopolicy, name, policies):
    conns = filters.nvmeof_initiator_record_connections(subsystems, {"transport": "rdma", "trsvcid": 4420})
    assert record_name(conns) == name
    assert filters.nvmeof_initiator_iopolicies(subsystems, iopolicy) == policies


def test_record_connections_fill_in_the_role_defaults_and_keep_another_identity():
    conns = filters.nvmeof_initiator_record_connections(LONG, {"transport": "rdma", "trsvcid": 4420})
    assert conns[0] == {"transport": "rdma", "traddr": "10.99.0.1", "trsvcid": "4420",
                        "nqn": "nqn.2024-04.io.aiinfra.lab:te1.a", "host_traddr": "", "host_iface": ""}
    assert conns[1]["hostnqn"].endswith("555555555555") and conns[1]["hostid"] == "11111111-2222-3333-4444-555555555555"
    assert conns[1]["trsvcid"] == "4421"
    # An empty host NQN is no other identity.
    assert "hostnqn" not in conns[2] and conns[2]["host_traddr"] == ""


IDENTITY = os.path.join(os.path.dirname(TEARDOWN), "..", "files", "identity.sh")


def test_the_identity_lines_of_a_host_that_has_one(tmp_path):
    """identity.sh in check mode on this machine: /etc/nvme/hostnqn may exist or not, so
    the made word is one of three; the missing packages come first, from the package script."""
    with open(IDENTITY) as fh:
        script = fh.read()
    out = subprocess.run(["sh", "-c", script, "sh", "check", 'for p; do echo "$p"; done', "nvme-cli", "fio"],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    got = filters.nvmeof_initiator_identity(out)
    assert got["missing_packages"] == ["nvme-cli", "fio"]
    assert got["made"] in ("exists", "would-create")
    assert got["hostnqn"].startswith("nqn.") and got["hostnqn"] == out[-1].split(" ", 1)[1]


def test_identity_lines():
    nqn = "nqn.2014-08.org.nvmexpress:uuid:6d4104d1-02ff-4b25-86c0-e09cdeb71663"
    assert filters.nvmeof_initiator_identity(["missing nvme-cli", "created " + nqn]) == {
        "hostnqn": nqn, "made": "created", "missing_packages": ["nvme-cli"]}
    assert filters.nvmeof_initiator_identity(["exists " + nqn])["missing_packages"] == []
    # A script that failed part way: no identity, nothing made.
    assert filters.nvmeof_initiator_identity(["missing nvme-cli"]) == {
        "hostnqn": "", "made": "", "missing_packages": ["nvme-cli"]}
    assert filters.nvmeof_initiator_identity(None)["made"] == ""
