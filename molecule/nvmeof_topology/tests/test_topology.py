"""Verify the target topology on te1 after converge: configfs as the kernel shows it,
and the same through the collection's nvmet_info module."""

import json
import os
import subprocess

import pytest

NVMET = "/sys/kernel/config/nvmet"
A = "nqn.2024-04.com.example:te1.jbof-a"
B = "nqn.2024-04.com.example:te1.jbof-b"
BY_ID = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme%d"


def read(host, path):
    return host.check_output("cat %s", path).strip()


@pytest.mark.parametrize("nqn,nsid,drive,group", [(A, 1, 1, 1), (A, 2, 2, 1), (B, 1, 3, 2), (B, 2, 4, 2)])
def test_each_drive_is_exported_by_its_stable_id(te1, nqn, nsid, drive, group):
    ns = "%s/subsystems/%s/namespaces/%d" % (NVMET, nqn, nsid)
    assert read(te1, ns + "/device_path") == BY_ID % drive
    assert read(te1, ns + "/enable") == "1"
    assert read(te1, ns + "/ana_grpid") == str(group)
    # the by-id path is the drive with that serial, a whole NVMe namespace
    real = te1.check_output("readlink -f %s", BY_ID % drive)
    assert real.startswith("/dev/nvme") and te1.run("test -b %s", real).rc == 0


def test_the_four_drives_are_four_devices(te1):
    reals = set(te1.check_output("readlink -f %s", BY_ID % i) for i in range(1, 5))
    assert len(reals) == 4


@pytest.mark.parametrize("port,addr,states", [(1, "10.99.0.1", {1: "optimized", 2: "non-optimized"}),
                                              (2, "10.99.1.1", {1: "non-optimized", 2: "optimized"})])
def test_two_tcp_ports_with_their_ana_states_and_both_subsystems(te1, port, addr, states):
    base = "%s/ports/%d" % (NVMET, port)
    assert read(te1, base + "/addr_trtype") == "tcp"
    assert read(te1, base + "/addr_traddr") == addr
    assert read(te1, base + "/addr_trsvcid") == "4420"
    for grp, state in states.items():
        assert read(te1, "%s/ana_groups/%d/ana_state" % (base, grp)) == state
    assert te1.check_output("ls %s/ana_groups", base).split() == ["1", "2"]
    assert sorted(te1.check_output("ls %s/subsystems", base).split()) == [A, B]
    # the port listens on that fabric address
    assert te1.socket("tcp://%s:4420" % addr).is_listening


def test_only_te2_may_connect(te1, te2):
    te2_nqn = read(te2, "/etc/nvme/hostnqn")
    for nqn in (A, B):
        sub = "%s/subsystems/%s" % (NVMET, nqn)
        assert read(te1, sub + "/attr_allow_any_host") == "0"
        assert te1.check_output("ls %s/allowed_hosts", sub).split() == [te2_nqn]


def test_nvmet_info_reports_the_topology():
    root = os.environ["MOLECULE_PROJECT_DIRECTORY"]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(root, ".cache", "collections"),
               ANSIBLE_HOST_KEY_CHECKING="false", ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_STDOUT_CALLBACK="json")
    # AIINFRA_TEST_PROFILE=1 (scripts/test) enables profile_tasks, whose time lines would precede the JSON.
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    out = subprocess.run(["ansible", "te1", "-i", os.path.join(root, "inventory", "lab"), "-m", "aiinfra.fabric.nvmet_info"],
                         env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    result = json.loads(out.stdout)["plays"][0]["tasks"][0]["hosts"]["te1"]
    info = result["nvmet"]
    subs = dict((s["nqn"], s) for s in info["subsystems"])
    assert sorted(subs) == [A, B]
    assert [ns["device"]["path"] for ns in subs[A]["namespaces"]] == [BY_ID % 1, BY_ID % 2]
    assert [ns["device"]["path"] for ns in subs[B]["namespaces"]] == [BY_ID % 3, BY_ID % 4]
    ports = dict((p["portid"], p) for p in info["ports"])
    assert sorted(ports) == [1, 2]
    assert sorted(ports[2]["subsystems"]) == [A, B]
    assert {g["grpid"]: g["ana"]["state"] for g in ports[2]["ana_groups"]} == {1: "non-optimized", 2: "optimized"}
