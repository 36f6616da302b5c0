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
# Set by scenarios that converge with DH-HMAC-CHAP secrets (nvmeof_tcp): the YAML file
# with nvmeof_initiator_dhchap_secret and nvmeof_initiator_dhchap_ctrl_secret.
DHCHAP_FILE = os.environ.get("NVMEOF_DHCHAP_FILE", "")
# Set by scenarios whose prepare turns on a host firewall on the target (nvmeof_tcp: ufw).
FIREWALL = os.environ.get("NVMEOF_FIREWALL", "")
# Set by scenarios that keep fabric_report's saved results (nvmeof_tcp): the results folder.
RESULTS_DIR = os.environ.get("NVMEOF_RESULTS_DIR", "")
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
    unit = te1.service("aiinfra-nvmet.service")
    assert unit.is_enabled
    # Active now, so that its stop takes the target down cleanly at the next shutdown.
    assert unit.is_running
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


def test_noop_rerun_wrote_no_test_data():
    # The last run before verify is molecule's idempotence run, which changed nothing: the
    # initiator's I/O check (4 MiB written and read back) must not have run in it.
    if not RESULTS_DIR:
        pytest.skip("this scenario does not keep the saved results")
    with open(os.path.join(RESULTS_DIR, "hosts", "te2", "nvmeof_initiator_result.json")) as handle:
        saved = json.load(handle)
    assert saved["result"]["device"].startswith("/dev/nvme")
    assert saved["result"]["io_check"] is None, saved["result"]["io_check"]


@pytest.fixture(scope="module")
def dhchap():
    if not DHCHAP_FILE:
        pytest.skip("this scenario converges without DH-HMAC-CHAP")
    import yaml
    with open(DHCHAP_FILE) as f:
        return yaml.safe_load(f)


def test_dhchap_target_requires_the_host_key(te1, te2_hostnqn, dhchap):
    host = "%s/hosts/%s" % (NVMET, te2_hostnqn)
    assert read(te1, host + "/dhchap_key") == dhchap["nvmeof_initiator_dhchap_secret"]
    assert read(te1, host + "/dhchap_ctrl_key") == dhchap["nvmeof_initiator_dhchap_ctrl_secret"]
    # Persisted with the keys, readable by root only, so the target authenticates after a reboot.
    save = json.loads(read(te1, "/etc/nvmet/config.json"))
    keys = [h.get("dhchap", {}).get("key") for h in save["hosts"] if h["nqn"] == te2_hostnqn]
    assert keys == [dhchap["nvmeof_initiator_dhchap_secret"]]


def test_dhchap_initiator_authenticated_both_ways(te2, dhchap):
    ctrls = [c for c in te2.check_output("ls /sys/class/nvme-fabrics/ctl").split()
             if c.startswith("nvme") and read(te2, "/sys/class/nvme-fabrics/ctl/%s/subsysnqn" % c) == NQN]
    assert len(ctrls) == 1
    base = "/sys/class/nvme/%s" % ctrls[0]
    assert read(te2, base + "/state") == "live"
    assert read(te2, base + "/dhchap_secret") == dhchap["nvmeof_initiator_dhchap_secret"]
    assert read(te2, base + "/dhchap_ctrl_secret") == dhchap["nvmeof_initiator_dhchap_ctrl_secret"]


def test_dhchap_wrong_key_is_refused(te1, te2, te2_hostnqn, dhchap):
    """A second connection with another well-formed host key fails authentication.

    Written to /dev/nvme-fabrics directly: nvme-cli 2.3 (Debian 12) answers "already
    connected" without trying, even with --duplicate-connect.
    """
    import base64
    import zlib
    raw = bytes(range(32))
    wrong = "DHHC-1:00:%s:" % base64.b64encode(raw + zlib.crc32(raw).to_bytes(4, "little")).decode()
    assert wrong != dhchap["nvmeof_initiator_dhchap_secret"]
    options = ",".join([
        "transport=%s" % TRANSPORT, "traddr=10.99.0.1", "trsvcid=4420", "nqn=" + NQN,
        "hostnqn=" + te2_hostnqn, "hostid=" + read(te2, "/etc/nvme/hostid"),
        "duplicate_connect", "dhchap_secret=" + wrong])
    before = set(te2.check_output("ls /sys/class/nvme-fabrics/ctl").split())
    # Only the kernel lines written from here on count: a marker in each kernel log.
    import uuid
    marker = "aiinfra-fabric test %s: wrong DH-HMAC-CHAP key" % uuid.uuid4()
    for host in (te1, te2):
        host.check_output("echo %s > /dev/kmsg", marker)
    since = "dmesg | sed -n '/%s/,$p'" % marker
    cmd = te2.run("echo %s > /dev/nvme-fabrics", options)
    new = set(te2.check_output("ls /sys/class/nvme-fabrics/ctl").split()) - before
    for ctrl in new:
        te2.run("nvme disconnect -d %s", ctrl)
    assert cmd.rc != 0 and not new, (cmd.rc, cmd.stderr)
    # The host answers EKEYREJECTED when the target's failure message arrives, or EIO
    # when the target has already torn the admin queue down (seen on nvme-tcp in CI):
    # the target drops a controller whose host failed authentication.
    assert "Key was rejected" in cmd.stderr or "Input/output error" in cmd.stderr, cmd.stderr
    # Both kernels say why: the host's DH-HMAC-CHAP exchange failed, the target saw a
    # response that did not match the host's key. This is what proves the key, not
    # something else, was refused.
    target_log, host_log = te1.check_output(since), te2.check_output(since)
    assert marker in target_log and "host response mismatch" in target_log, target_log
    assert marker in host_log and "authentication failed" in host_log, host_log


def test_target_firewall_lets_the_transport_in(te1):
    if FIREWALL != "ufw":
        pytest.skip("no host firewall on the target in this scenario")
    status = te1.check_output("ufw status")
    assert status.startswith("Status: active")
    port = "4791/udp" if TRANSPORT == "rdma" else "4420/tcp"
    assert any(line.split()[:2] == [port, "ALLOW"] for line in status.splitlines()), status
    record = json.loads(read(te1, "/var/lib/aiinfra-fabric/nvmeof_target.json"))
    number, proto = port.split("/")
    assert record["version"] == 2
    assert record["subsystems"][NQN]["firewall_rules_added"] == [{"tool": "ufw", "port": number, "proto": proto}]
