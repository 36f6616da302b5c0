"""Lab proof for the nvmet_* modules: what converge left on te1 is a working target.

Runs after converge + idempotence. te2 connects with plain nvme-cli over TCP and
RDMA (soft-RoCE) with DH-HMAC-CHAP, sees both namespaces, and is refused with a wrong
key. Every test disconnects what it connected.

The connects pass -k 30 (keep-alive timeout): the target expires a DH-HMAC-CHAP
transaction after the controller's keep-alive timeout (5 s by default), and the
ffdhe2048 exchange can take longer than that in a TCG guest on a loaded machine.
"""

import pytest

NQN = "nqn.2024-04.io.aiinfra.lab:te1.modules"
CFS = "/sys/kernel/config/nvmet"
# nvme-cli's JSON configurations on te2 (prepare.yml writes them, 0600), one per port, with
# te2's key; wrong-key.json with a key the target does not know. nvme-cli reads the key
# there (-J), not from its command line.
CONFIG = "/var/lib/nvmet-lab/%s.json"


@pytest.fixture(scope="module")
def hostnqn(te2):
    return te2.check_output("cat /etc/nvme/hostnqn").strip()


def test_configfs_layout(te1, hostnqn):
    sub = "%s/subsystems/%s" % (CFS, NQN)
    assert te1.check_output("cat %s/namespaces/1/device_path", sub) == "/var/lib/nvmet-lab/disk1.img"
    assert te1.check_output("cat %s/namespaces/2/device_path", sub) == "/dev/nullb0"
    assert te1.check_output("cat %s/namespaces/1/enable %s/namespaces/2/enable", sub, sub).split() == ["1", "1"]
    assert te1.check_output("cat %s/namespaces/2/device_nguid", sub) == "01234567-89ab-cdef-0123-456789abcdef"
    assert te1.check_output("cat %s/attr_allow_any_host", sub) == "0"
    assert te1.check_output("cat %s/attr_model", sub) == "aiinfra-lab"
    # What the kernel shows for serial abc, version 2.0.0, ieee_oui 0xABCDEF (converge
    # and idempotence passed with these): padded, canonical, lower case.
    assert te1.check_output("cat %s/attr_serial | tr ' ' _", sub) == "abc" + "_" * 17
    assert te1.check_output("cat %s/attr_version", sub) == "2.0"
    assert te1.check_output("cat %s/attr_ieee_oui", sub) == "0xabcdef"
    assert te1.check_output("cat %s/ports/1/param_inline_data_size", CFS) == "16384"
    assert te1.check_output("cat %s/ports/1/ana_groups/1/ana_state", CFS) == "optimized"
    assert te1.check_output("cat %s/ports/1/ana_groups/2/ana_state", CFS) == "non-optimized"
    assert te1.check_output("ls %s/allowed_hosts", sub).split() == [hostnqn]
    assert te1.check_output("cat %s/hosts/%s/dhchap_dhgroup", CFS, hostnqn) == "ffdhe2048"
    for port, trtype in (("1", "tcp"), ("2", "rdma")):
        assert te1.check_output("cat %s/ports/%s/addr_trtype", CFS, port) == trtype
        assert te1.check_output("cat %s/ports/%s/addr_traddr", CFS, port) == "10.99.0.1"
        assert te1.check_output("cat %s/ports/%s/addr_trsvcid", CFS, port) == "4420"
        assert te1.check_output("ls %s/ports/%s/subsystems", CFS, port).split() == [NQN]


@pytest.mark.parametrize("transport", ["tcp", "rdma"])
def test_te2_connects_with_dhchap(te2, transport):
    connect = te2.run("nvme connect -t %s -a 10.99.0.1 -s 4420 -k 30 -n %s -J %s", transport, NQN, CONFIG % transport)
    try:
        assert connect.rc == 0, connect.stderr
        subsys = te2.check_output("nvme list-subsys -o json")
        assert NQN in subsys and transport in subsys
        # Both namespaces arrive: the 256 MiB file and the 1 GiB null_blk device (te2 has
        # no other NVMe disks; multipath path nodes nvmeXcYnZ are skipped). Namespace scanning is asynchronous: wait up to 20 s.
        sizes = te2.check_output(
            "disks() { ls /sys/block | grep -E '^nvme[0-9]+n[0-9]+$'; }; "
            "for i in $(seq 20); do [ $(disks | wc -l) -ge 2 ] && break; sleep 1; done; "
            "for d in $(disks); do cat /sys/block/$d/size; done | sort -n").split()
        assert sizes == [str(256 * 2048), str(1024 * 2048)]
    finally:
        te2.run("nvme disconnect -n %s", NQN)


def test_wrong_key_is_refused(te2):
    try:
        result = te2.run("nvme connect -t tcp -a 10.99.0.1 -s 4420 -k 30 -n %s -J %s", NQN, CONFIG % "wrong-key")
        assert result.rc != 0
        assert NQN not in te2.check_output("cat /sys/class/nvme/*/subsysnqn 2>/dev/null || true")
    finally:
        te2.run("nvme disconnect -n %s", NQN)


def test_no_key_is_refused(te2):
    try:
        result = te2.run("nvme connect -t tcp -a 10.99.0.1 -s 4420 -n %s", NQN)
        assert result.rc != 0
    finally:
        te2.run("nvme disconnect -n %s", NQN)
