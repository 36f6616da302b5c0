"""Unit tests of the nvmeof_target role's one probe reader (plugins/plugin_utils/nvmet_probe.py,
the nvmet_probe and nvmet_backing filters).

The role's real probe (roles/nvmeof_target/files/probe.sh) runs with sh on the FAKE
configfs tree of nvmet_fake.py, with host_state.sh, exactly as the teardown's task in
roles/nvmeof_target/tasks/teardown_plan.yml calls it (marker paths as host_state.sh
arguments, no packages, firewall, save file or backing files). What the reader says
configfs holds must be what the module's own reader (ConfigfsTree) reads from the same
tree. The real kernel is the lab's job (molecule/nvmeof_rdma's destroy and
molecule/nvmeof_multipath: their teardowns run this probe on te1).
"""

import base64
import json
import os
import subprocess

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.filter import nvmet_topology as filters
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import record, snapshot
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.plugin_utils import nvmet_probe as probe

from nvmet_fake import HOST, HOST2, SUB, fake_host, fake_namespace, fake_port, fake_subsystem, link

HERE = os.path.dirname(__file__)
TOP = os.path.join(HERE, "..", "..", "..", "..")
PROBE = os.path.join(TOP, "roles", "nvmeof_target", "files", "probe.sh")
HOST_STATE = os.path.join(TOP, "files", "host_state.sh")
SUB2 = "nqn.2024-04.io.aiinfra.lab:te1.second"
SUB3 = "nqn.2024-04.io.aiinfra.lab:te1.third"


def read(path):
    with open(path) as fh:
        return fh.read()


def teardown_probe(root, markers, record_path=None):
    """probe.sh with the teardown's arguments (teardown_plan.yml), on the fake tree."""
    args = ["-", read(HOST_STATE), record_path or os.path.join(root, "record.json"), "-", "", "-",
            str(len(markers))] + ["a:" + p for p in markers.values()]
    env = dict(os.environ, AIINFRA_NVMET_CONFIGFS=os.path.join(root, "nvmet"),
               AIINFRA_SYS_MODULE=os.path.join(root, "sys", "module"))
    out = subprocess.run(["sh", PROBE] + args, check=True, capture_output=True, text=True, env=env).stdout
    return out.splitlines()


def two_targets(root):
    """Three subsystems, three hosts, two ports: SUB allows HOST and HOST2 and is on ports 1
    and 2, SUB2 allows HOST2 and is on port 1, SUB3 allows any host and is on no port."""
    fake_subsystem(root, SUB)
    fake_subsystem(root, SUB2)
    fake_subsystem(root, SUB3, allow_any="1")
    fake_namespace(root, SUB, 1, path="/srv/nvmet/disk0.img", enable="1")
    for h in (HOST, HOST2):
        fake_host(root, h)
    fake_host(root, "nqn.2014-08.org.nvmexpress:uuid:unused")
    fake_port(root, 1, "tcp", "10.99.0.1", "4420", "ipv4")
    fake_port(root, 2, "rdma", "10.99.0.1", "4420", "ipv4")
    for sub, hosts in ((SUB, (HOST, HOST2)), (SUB2, (HOST2,))):
        for h in hosts:
            link(root, "hosts/" + h, "subsystems/%s/allowed_hosts/%s" % (sub, h))
    for port, subs in ((1, (SUB, SUB2)), (2, (SUB,))):
        for s in subs:
            link(root, "subsystems/" + s, "ports/%d/subsystems/%s" % (port, s))


def as_nvmet_info(state):
    """The module's read (ConfigfsTree) in the keys the teardown plans with."""
    return {
        "subsystems": [{"nqn": nqn, "allowed_hosts": sorted(s["allowed_hosts"])}
                       for nqn, s in sorted(state["subsystems"].items())],
        "ports": [{"portid": p["port_id"], "subsystems": sorted(p["subsystems"])}
                  for p in sorted(state["ports"].values(), key=lambda port: port["port_id"])],
    }


@pytest.fixture
def markers(tmp_path):
    legacy = tmp_path / "lib" / "nvmet"
    legacy.mkdir(parents=True)
    restorer = tmp_path / "nvmet-restore"
    restorer.write_text("# the restorer\n")
    return {"nvmetcli": str(tmp_path / "nvmet.service.masked"), "tls": str(tmp_path / "nvmeof_target.tls"),
            "legacy": str(legacy), "restorer": str(restorer)}


def test_the_teardown_probe_reads_configfs_as_the_module_does(root, markers):
    two_targets(root)
    lines = teardown_probe(root, markers)
    # The nvmet part comes packed (this machine has gzip and base64), as on the lab's guests.
    assert any(line.startswith("nvmet-dump ") for line in lines)
    got = probe.read_probe(lines, markers=markers, objects=True)
    assert got["configfs"] is True
    want = as_nvmet_info(ConfigfsTree(root).read())
    assert {"subsystems": got["subsystems"], "ports": got["ports"]} == want
    assert got["subsystems"] == [
        {"nqn": SUB, "allowed_hosts": sorted([HOST, HOST2])},
        {"nqn": SUB2, "allowed_hosts": [HOST2]},
        {"nqn": SUB3, "allowed_hosts": []},
    ]
    assert got["ports"] == [{"portid": 1, "subsystems": [SUB, SUB2]}, {"portid": 2, "subsystems": [SUB]}]
    # The same unpacked (a host without gzip prints the lines as they are).
    plain = list(snapshot._unpacked(lines))
    assert probe.read_probe(plain, markers=markers, objects=True) == got


def test_markers_are_the_names_whose_path_exists(root, markers):
    lines = teardown_probe(root, markers)
    assert probe.read_probe(lines, markers=markers)["markers"] == ["legacy", "restorer"]
    open(markers["tls"], "w").close()
    open(markers["nvmetcli"], "w").close()
    lines = teardown_probe(root, markers)
    assert probe.read_probe(lines, markers=markers)["markers"] == ["legacy", "nvmetcli", "restorer", "tls"]
    # Without markers asked for, none is reported, whatever host_state lines there are.
    assert probe.read_probe(lines)["markers"] == []


def test_the_record_and_no_configfs(tmp_path, markers):
    rec = {"version": 2, "ports": {}, "subsystems": {SUB: {"ports": [1], "hosts_created": [HOST], "files": [],
                                                           "files_created": [], "firewall_rules_added": []}}}
    path = tmp_path / "nvmeof_target.json"
    path.write_text(json.dumps(rec) + "\n")
    # A host where nvmet is not loaded: no nvmet directory.
    lines = teardown_probe(str(tmp_path / "empty"), markers, record_path=str(path))
    got = probe.read_probe(lines, markers=markers, objects=True)
    assert got["configfs"] is False
    assert got["record"] == rec
    assert got["subsystems"] == [] and got["ports"] == []
    # The teardown plans from these exactly as from nvmet_info's lists.
    plan = record.teardown_plan(got["record"], [SUB], got["subsystems"], got["ports"])
    assert plan["subsystems"] == [SUB] and plan["hosts"] == [HOST]


def test_the_teardown_plan_from_the_probe_keeps_what_other_subsystems_use(root, markers):
    two_targets(root)
    rec = {"version": 2, "ports": {"1": {}, "2": {}},
           "subsystems": {SUB: {"ports": [1, 2], "hosts_created": [HOST, HOST2], "files": [], "files_created": [],
                                "firewall_rules_added": []}}}
    now = probe.read_probe(teardown_probe(root, markers), markers=markers, objects=True)
    plan = record.teardown_plan(rec, [SUB], now["subsystems"], now["ports"])
    # Port 1 still carries SUB2, which also allows HOST2: both stay.
    assert plan["ports"] == [2]
    assert plan["hosts"] == [HOST]


# What the converge's probe prints besides the nvmet part and host_state.sh's lines
# (probe.sh on te1, Debian 12, with a backing file and an NVMe disk; the record shortened).
RECORD = {"version": 2, "ports": {}, "subsystems": {}}
CONVERGE_LINES = [
    "p - /usr/local/libexec/aiinfra-fabric",
    "m loaded nvmet",
    "m - nvmet_rdma",
    "l nvmet",
    "u enabled active aiinfra-nvmet.service",
    "r - /run/aiinfra-fabric/nvmet-restore.json",
    "file exists 1073741824 /srv/nvmet/disk0.img",
    "file exists 2147483648 /srv/nvmet/disk name.img",
    "configfs",
    "nvmet-dump H4sIAAAAAAAAAwMAAAAAAAAAAAA=",
    "missing nvme-cli",
    "missing rdma-core",
    "byid nvme-QEMU_NVMe_Ctrl_deadbeef ../../nvme0n1",
    "byid wwn-0x5000c500a1b2c3d4 ../../sda",
    "firewall ufw",
    "nvmetcli unit masked",
    "record " + base64.b64encode(json.dumps(RECORD).encode()).decode(),
]


def test_the_converge_probe_lines():
    got = probe.read_probe(CONVERGE_LINES)
    assert got == {
        "configfs": True,
        "missing_packages": ["nvme-cli", "rdma-core"],
        "byid": ["nvme-QEMU_NVMe_Ctrl_deadbeef ../../nvme0n1", "wwn-0x5000c500a1b2c3d4 ../../sda"],
        "firewall": "ufw",
        "nvmetcli": {"installed": True, "masked": True},
        "record": RECORD,
        "file_lines": ["exists 1073741824 /srv/nvmet/disk0.img", "exists 2147483648 /srv/nvmet/disk name.img"],
        "files": {"/srv/nvmet/disk0.img": 1073741824, "/srv/nvmet/disk name.img": 2147483648},
        "markers": [],
    }


def test_what_the_probe_did_not_print_reads_as_the_role_assumed_before():
    got = probe.read_probe(["no-configfs", "nvmetcli none unmasked"])
    assert got["configfs"] is False
    assert got["firewall"] == "none"
    assert got["nvmetcli"] == {"installed": False, "masked": False}
    assert got["record"] == {} and got["files"] == {} and got["missing_packages"] == []
    assert probe.read_probe([])["nvmetcli"] == {"installed": False, "masked": False}
    assert probe.read_probe(["nvmetcli unit unmasked"])["nvmetcli"] == {"installed": True, "masked": False}


def test_a_record_that_does_not_decode_is_an_error_that_says_so():
    with pytest.raises(probe.ProbeError, match="not base64-encoded JSON"):
        probe.read_probe(["record not-base64!"])
    with pytest.raises(AnsibleFilterError, match="not base64-encoded JSON"):
        filters.nvmet_probe(["record " + base64.b64encode(b"{truncated").decode()])


def test_a_configfs_copy_that_does_not_parse_is_an_error_only_when_objects_are_asked_for():
    lines = ["configfs", "nvmet-counts", "./subsystems/x/attr_model:1"]  # no nvmet-text, no nvmet-end
    assert probe.read_probe(lines)["configfs"] is True
    with pytest.raises(AnsibleFilterError, match="cannot be read"):
        filters.nvmet_probe(lines, objects=True)


def test_backing_lines():
    lines = ["exists 1073741824 /srv/nvmet/disk0.img", "created 2147483648 /srv/nvmet/disk name.img",
             "would-create 4194304 /srv/nvmet/new.img", "size 960197124096 /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_deadbeef",
             "/srv/x exists and is not a regular file"]
    assert filters.nvmet_backing(lines) == {
        "sizes": {"/srv/nvmet/disk0.img": 1073741824, "/srv/nvmet/disk name.img": 2147483648,
                  "/srv/nvmet/new.img": 4194304, "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_deadbeef": 960197124096},
        "created": ["/srv/nvmet/disk name.img"],
        "would_create": ["/srv/nvmet/new.img"],
    }
    assert filters.nvmet_backing(None) == {"sizes": {}, "created": [], "would_create": []}
