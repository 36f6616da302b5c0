"""FabricsSysfs against a temporary tree rebuilt from a real capture (tests/fixtures/nvme_cli)."""

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs, parse_address

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvme_cli")


def build_tree(root, tsv="sysfs-te2-tcp-rdma.tsv"):
    """Recreate the captured /sys files; a path ending in /uevent only marks its directory."""
    with open(os.path.join(FIXTURES, tsv)) as handle:
        for line in handle:
            if line.startswith("#") or not line.strip():
                continue
            path, value = line.rstrip("\n").split("\t", 1)
            full = os.path.join(str(root), "sys", path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w") as out:
                out.write(value + "\n")
    os.makedirs(os.path.join(str(root), "proc", "self"), exist_ok=True)
    return FabricsSysfs(sys_root=os.path.join(str(root), "sys"), proc_root=os.path.join(str(root), "proc"))


def write(root, rel, text):
    full = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as out:
        out.write(text)


def test_parse_address_tcp_with_src_addr():
    assert parse_address("traddr=10.99.0.1,trsvcid=4420,src_addr=10.99.0.2\n") == {
        "traddr": "10.99.0.1", "trsvcid": "4420", "src_addr": "10.99.0.2"}


def test_parse_address_ipv6_and_host_fields():
    parsed = parse_address("traddr=fd00::1,trsvcid=4420,host_traddr=fd00::2,host_iface=eth1")
    assert parsed == {"traddr": "fd00::1", "trsvcid": "4420", "host_traddr": "fd00::2", "host_iface": "eth1"}


def test_parse_address_fc_and_garbage():
    assert parse_address("traddr=nn-0x1000000044001123:pn-0x2000000055001123,host_traddr=nn-0x1:pn-0x2") == {
        "traddr": "nn-0x1000000044001123:pn-0x2000000055001123", "host_traddr": "nn-0x1:pn-0x2"}
    assert parse_address("") == {}
    assert parse_address("junk,,traddr=1.2.3.4") == {"traddr": "1.2.3.4"}


def test_reads_captured_controllers(tmp_path):
    sysfs = build_tree(tmp_path)
    ctrls = sysfs.controllers()
    assert [c["name"] for c in ctrls] == ["nvme0", "nvme1"]
    tcp, rdma = ctrls
    assert tcp["transport"] == "tcp"
    assert tcp["subsysnqn"] == "nqn.2024-01.io.aiinfra.test:plain"
    assert (tcp["traddr"], tcp["trsvcid"], tcp["src_addr"], tcp["host_traddr"]) == ("10.99.0.1", "4420", "10.99.0.2", None)
    assert tcp["state"] == "live"
    assert tcp["nr_io_queues"] == 2 and tcp["queue_size"] == 128
    assert tcp["keep_alive_tmo"] == 5 and tcp["ctrl_loss_tmo"] == 600 and tcp["reconnect_delay"] == 10
    # Multipath path device nvme0c0n1 → the head users see, nvme0n1.
    assert tcp["namespaces"] == ["nvme0n1"]
    assert rdma["transport"] == "rdma" and rdma["queue_size"] == 64 and rdma["src_addr"] is None
    assert rdma["hostid"] == "819aca5a-f59f-42a3-bc77-d440efb6a6b0"


def test_secrets_stay_out_of_controller_dicts(tmp_path):
    sysfs = build_tree(tmp_path)
    for ctrl in sysfs.controllers():
        assert not any("DHHC-1" in str(v) for v in ctrl.values()), ctrl
    assert sysfs.read_secrets("nvme0") == {"dhchap_secret": None, "dhchap_ctrl_secret": None}
    secrets = sysfs.read_secrets("nvme1")
    assert secrets["dhchap_secret"].startswith("DHHC-1:00:ZmFrZS1ob3N0")
    assert secrets["dhchap_ctrl_secret"].startswith("DHHC-1:00:ZmFrZS1jdHJs")


def test_ctrl_loss_tmo_off_is_minus_one(tmp_path):
    sysfs = build_tree(tmp_path)
    write(tmp_path, "sys/class/nvme-fabrics/ctl/nvme0/ctrl_loss_tmo", "off\n")
    assert sysfs.read_controller("nvme0")["ctrl_loss_tmo"] == -1


def test_block_devices_of_controllers(tmp_path):
    sysfs = build_tree(tmp_path)
    devices = sysfs.devices_of(sysfs.controllers())
    assert [d["path"] for d in devices] == ["/dev/nvme0n1", "/dev/nvme1n1"]
    dev = devices[0]
    assert dev["nsid"] == 1 and dev["size_bytes"] == 268435456 and dev["controller"] == "nvme0"
    assert dev["uuid"] == "7e824b3e-c61f-46d2-8e0f-c60f82d8161b"
    assert dev["wwid"] == "uuid." + dev["uuid"]
    assert dev["nguid"] is None


def test_non_multipath_namespace_names(tmp_path):
    sysfs = build_tree(tmp_path)
    os.rename(os.path.join(str(tmp_path), "sys/class/nvme-fabrics/ctl/nvme1/nvme1c1n1"),
              os.path.join(str(tmp_path), "sys/class/nvme-fabrics/ctl/nvme1/nvme1n1"))
    assert sysfs.read_controller("nvme1")["namespaces"] == ["nvme1n1"]


def test_no_fabrics_class_means_no_controllers(tmp_path):
    assert FabricsSysfs(sys_root=str(tmp_path)).controllers() == []


def test_non_controller_entries_are_ignored(tmp_path):
    sysfs = build_tree(tmp_path)
    for entry in ("power", "subsystem", "uevent"):
        os.makedirs(os.path.join(str(tmp_path), "sys/class/nvme-fabrics/ctl", entry), exist_ok=True)
    assert sysfs.controller_names() == ["nvme0", "nvme1"]


def test_usage_finds_mounts_of_disk_and_partitions(tmp_path):
    sysfs = build_tree(tmp_path)
    write(tmp_path, "sys/block/nvme0n1/nvme0n1p1/dev", "259:5\n")
    write(tmp_path, "proc/self/mountinfo",
          "22 1 254:0 / / rw - ext4 /dev/vda rw\n"
          "40 22 259:5 / /mnt/my\\040data rw - ext4 /dev/nvme0n1p1 rw\n")
    assert sysfs.usage(["nvme0n1"]) == ["/dev/nvme0n1p1 mounted on /mnt/my data"]
    assert sysfs.usage(["nvme1n1"]) == []


def test_usage_finds_swap_and_holders(tmp_path):
    sysfs = build_tree(tmp_path)
    write(tmp_path, "proc/self/mountinfo", "")
    write(tmp_path, "proc/swaps", "Filename Type Size Used Priority\n/dev/nvme1n1 partition 1 0 -2\n")
    os.makedirs(os.path.join(str(tmp_path), "sys/block/nvme0n1/holders/dm-0"))
    assert sysfs.usage(["nvme0n1", "nvme1n1"]) == ["/dev/nvme1n1 is in use as swap", "/dev/nvme0n1 is held by dm-0"]


def test_unmounted_similar_device_is_not_a_user(tmp_path):
    # 259:1 is nvme0n1; a mount of 259:10 must not count (no substring matching).
    sysfs = build_tree(tmp_path)
    write(tmp_path, "proc/self/mountinfo", "40 22 259:10 / /mnt rw - ext4 /dev/nvme9n1 rw\n")
    assert sysfs.usage(["nvme0n1"]) == []


@pytest.mark.parametrize("text,count", [("0-1", 2), ("0", 1), ("0-3,8-11", 8), ("", None)])
def test_online_cpus(tmp_path, text, count):
    write(tmp_path, "sys/devices/system/cpu/online", text)
    assert FabricsSysfs(sys_root=os.path.join(str(tmp_path), "sys")).online_cpus() == count


def test_transport_module_and_fabrics_device(tmp_path):
    sysfs = FabricsSysfs(sys_root=str(tmp_path))
    assert not sysfs.transport_module_loaded("tcp")
    os.makedirs(os.path.join(str(tmp_path), "module", "nvme_tcp"))
    assert sysfs.transport_module_loaded("tcp") and not sysfs.transport_module_loaded("rdma")
    assert not sysfs.fabrics_device_present(dev_root=str(tmp_path))
    write(tmp_path, "nvme-fabrics", "")
    assert sysfs.fabrics_device_present(dev_root=str(tmp_path))


def test_tls_is_read_from_the_tls_key_attribute(tmp_path):
    # The captured (plain TCP, bookworm) controllers have no tls_key; a TLS controller on the
    # trixie lab showed "tls_key" with the PSK's key serial (2d57d9e8, molecule nvmeof_tls).
    sysfs = build_tree(tmp_path)
    assert [c["tls"] for c in sysfs.controllers()] == [False, False]
    write(tmp_path, "sys/class/nvme-fabrics/ctl/nvme0/tls_key", "2d57d9e8\n")
    assert sysfs.read_controller("nvme0")["tls"] is True


def test_a_match_reads_the_other_controllers_identity_only(tmp_path, monkeypatch):
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import sysfs as sysfs_mod
    sysfs = build_tree(tmp_path)
    whole = sysfs.controllers()
    read = []
    real_read = sysfs_mod._read
    monkeypatch.setattr(sysfs_mod, "_read", lambda path: read.append(path) or real_read(path))
    rdma = sysfs.controllers(match=lambda c: c["transport"] == "rdma")
    assert rdma == [whole[1]]  # the full controller, as without a match
    nvme0 = sorted(os.path.basename(p) for p in read if "/ctl/nvme0/" in p)
    assert nvme0 == sorted(sysfs_mod.IDENTITY_ATTRIBUTES)
    assert any(p.endswith("/ctl/nvme1/cntlid") for p in read)


def test_held_controllers_are_read_once_until_released(tmp_path):
    sysfs = build_tree(tmp_path)
    sysfs.hold()
    before = sysfs.controllers()
    write(tmp_path, "sys/class/nvme-fabrics/ctl/nvme0/state", "deleting\n")
    # Held: the same read answers every call, with or without a match.
    assert sysfs.controllers() == before
    assert [c["name"] for c in sysfs.controllers(match=lambda c: c["state"] == "live")] == ["nvme0", "nvme1"]
    sysfs.release()
    assert [c["state"] for c in sysfs.controllers()] == ["deleting", "live"]
