"""Verify the target topology on te1: configfs as the kernel shows it, and nvmet_info."""

import os

import pytest

testinfra_hosts = ["ansible://te1?ansible_inventory=" + os.path.join(
    os.environ["MOLECULE_PROJECT_DIRECTORY"], "inventory", "lab")]

NVMET = "/sys/kernel/config/nvmet"
A = "nqn.2024-04.com.example:te1.jbof-a"
B = "nqn.2024-04.com.example:te1.jbof-b"
BY_ID = "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme%d"


def read(host, path):
    return host.file(path).content_string.strip()


@pytest.mark.parametrize("nqn,nsid,drive,group", [(A, 1, 1, 1), (A, 2, 2, 1), (B, 1, 3, 2), (B, 2, 4, 2)])
def test_each_drive_is_exported_by_its_stable_id(host, nqn, nsid, drive, group):
    ns = "%s/subsystems/%s/namespaces/%d" % (NVMET, nqn, nsid)
    assert read(host, ns + "/device_path") == BY_ID % drive
    assert read(host, ns + "/enable") == "1"
    assert read(host, ns + "/ana_grpid") == str(group)
    # the by-id path names the drive with that serial
    assert host.file(BY_ID % drive).linked_to.startswith("/dev/nvme")


@pytest.mark.parametrize("port,addr,states", [(1, "10.99.0.1", {1: "optimized", 2: "non-optimized"}),
                                              (2, "10.99.1.1", {1: "non-optimized", 2: "optimized"})])
def test_two_tcp_ports_with_their_ana_states_and_both_subsystems(host, port, addr, states):
    base = "%s/ports/%d" % (NVMET, port)
    assert read(host, base + "/addr_trtype") == "tcp"
    assert read(host, base + "/addr_traddr") == addr
    assert read(host, base + "/addr_trsvcid") == "4420"
    for grp, state in states.items():
        assert read(host, "%s/ana_groups/%d/ana_state" % (base, grp)) == state
    assert sorted(host.file(base + "/subsystems").listdir()) == [A, B]


def test_only_te2_may_connect(host):
    te2 = host.backend.get_hosts("te2")
    for nqn in (A, B):
        assert read(host, "%s/subsystems/%s/attr_allow_any_host" % (NVMET, nqn)) == "0"
        allowed = host.file("%s/subsystems/%s/allowed_hosts" % (NVMET, nqn)).listdir()
        assert len(allowed) == 1 and allowed[0].startswith("nqn.")
    assert te2  # the inventory names te2, whose host NQN is the one allowed


def test_nvmet_info_reports_the_topology(host):
    info = host.ansible("aiinfra.fabric.nvmet_info", check=False)["nvmet"]
    subs = dict((s["nqn"], s) for s in info["subsystems"])
    assert sorted(subs) == [A, B]
    assert [ns["device"]["path"] for ns in subs[B]["namespaces"]] == [BY_ID % 3, BY_ID % 4]
    ports = dict((p["portid"], p) for p in info["ports"])
    assert sorted(ports) == [1, 2]
    assert sorted(ports[2]["subsystems"]) == [A, B]
