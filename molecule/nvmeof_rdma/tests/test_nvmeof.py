"""Verify the NVMe-oF flow from both sides after playbooks/nvmeof_rdma.yml converged.

te1: the configfs objects the target role made, persisted config and boot units.
te2: the live controller, its block device, the mounted file system, and data written
through it and read back after dropping the page cache.
The transport under test comes from NVMEOF_TRANSPORT (rdma or tcp).
"""

import json
import os

import pytest

TRANSPORT = os.environ.get("NVMEOF_TRANSPORT", "rdma")
NQN = "nqn.2024-04.com.example:te1.target1"
NVMET = "/sys/kernel/config/nvmet"
MOUNT = "/mnt/nvmeof_rdma_test"


def read(host, path):
    return host.check_output("cat %s", path).strip()


@pytest.fixture(scope="module")
def te2_hostnqn(te2):
    return read(te2, "/etc/nvme/hostnqn")


def test_target_subsystem_allows_exactly_the_initiator(te1, te2_hostnqn):
    sub = "%s/subsystems/%s" % (NVMET, NQN)
    assert read(te1, sub + "/attr_allow_any_host") == "0"
    assert te1.check_output("ls %s/allowed_hosts", sub).split() == [te2_hostnqn]
    assert te1.file("%s/hosts/%s" % (NVMET, te2_hostnqn)).is_directory


def test_target_namespace_serves_the_sparse_file(te1):
    ns = "%s/subsystems/%s/namespaces/1" % (NVMET, NQN)
    assert read(te1, ns + "/device_path") == "/var/lib/nvmet/disk1.img"
    assert read(te1, ns + "/enable") == "1"
    f = te1.file("/var/lib/nvmet/disk1.img")
    assert f.size == 1024 * 1024 * 1024
    # Sparse: far fewer blocks allocated than the apparent size.
    allocated = int(te1.check_output("stat -c %b /var/lib/nvmet/disk1.img")) * 512
    assert allocated < f.size // 2
    assert te1.check_output("losetup -a") == ""


def test_target_port(te1):
    port = "%s/ports/1" % NVMET
    assert read(te1, port + "/addr_trtype") == TRANSPORT
    assert read(te1, port + "/addr_traddr") == "10.99.0.1"
    assert read(te1, port + "/addr_trsvcid") == "4420"
    assert te1.check_output("ls %s/subsystems", port).split() == [NQN]


def test_target_persisted_for_reboot(te1):
    save = json.loads(read(te1, "/etc/nvmet/config.json"))
    assert [s["nqn"] for s in save["subsystems"]] == [NQN]
    assert save["ports"][0]["addr"]["trtype"] == TRANSPORT
    assert te1.file("/etc/nvmet/config.json").mode == 0o600
    assert te1.service("aiinfra-nvmet.service").is_enabled
    if TRANSPORT == "rdma":
        assert te1.service("aiinfra-soft-roce-rxe0.service").is_enabled


def test_initiator_controller_is_live(te2, te2_hostnqn):
    ctrls = te2.check_output("ls /sys/class/nvme-fabrics/ctl").split()
    ours = [c for c in ctrls if c.startswith("nvme") and read(te2, "/sys/class/nvme-fabrics/ctl/%s/subsysnqn" % c) == NQN]
    assert len(ours) == 1
    base = "/sys/class/nvme-fabrics/ctl/%s" % ours[0]
    assert read(te2, base + "/state") == "live"
    assert read(te2, base + "/transport") == TRANSPORT
    assert "traddr=10.99.0.1" in read(te2, base + "/address").split(",")
    assert read(te2, base + "/hostnqn") == te2_hostnqn


def test_initiator_block_device_and_mount(te2):
    mnt = te2.mount_point(MOUNT)
    assert mnt.exists
    assert mnt.filesystem == "ext4"
    dev = mnt.device
    assert dev.startswith("/dev/nvme")
    assert int(te2.check_output("blockdev --getsize64 %s", dev)) == 1024 * 1024 * 1024
    # Not written to fstab by default.
    assert MOUNT not in te2.file("/etc/fstab").content_string


def test_data_written_on_initiator_reads_back(te2):
    f = MOUNT + "/verify-readback.bin"
    written = te2.check_output(
        "dd if=/dev/urandom of=%s bs=1M count=2 oflag=direct conv=fsync status=none && sha256sum %s", f, f).split()[0]
    te2.run_expect([0], "sync && echo 3 > /proc/sys/vm/drop_caches")
    read_back = te2.check_output("dd if=%s bs=1M iflag=direct status=none | sha256sum", f).split()[0]
    te2.run_expect([0], "rm -f %s", f)
    assert read_back == written
