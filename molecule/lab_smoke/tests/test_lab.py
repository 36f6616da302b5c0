"""The lab is what every other scenario stands on: check it is what it claims to be."""

import os
import re

import pytest

MODULES_LOADED_BY_CONVERGE = ["nvmet", "nvmet_tcp", "nvme_tcp", "rdma_rxe"]
# The kernel's Debian suffix of each lab distribution (AIINFRA_LAB_DISTRO).
KERNEL_SUFFIX = {"bookworm": "deb12", "trixie": "deb13"}


@pytest.mark.parametrize("vm", ["te1", "te2"])
def test_real_debian_612_kernel(vm, request):
    host = request.getfixturevalue(vm)
    release = host.check_output("uname -r")
    codename = host.check_output(". /etc/os-release && echo $VERSION_CODENAME")
    assert codename in KERNEL_SUFFIX, codename
    # The release's own 6.12 kernel, not one carried over from another distribution.
    assert re.match(r"^6\.12\.\d+\+%s-amd64$" % KERNEL_SUFFIX[codename], release), (codename, release)
    assert host.check_output("hostname") == vm


@pytest.mark.parametrize("vm", ["te1", "te2"])
def test_converge_loaded_the_fabric_modules(vm, request):
    host = request.getfixturevalue(vm)
    loaded = {line.split()[0] for line in host.check_output("cat /proc/modules").splitlines()}
    missing = [m for m in MODULES_LOADED_BY_CONVERGE if m not in loaded]
    assert not missing, "not loaded on %s: %s" % (vm, missing)
    assert host.file("/sys/kernel/config/nvmet/subsystems").is_directory


@pytest.mark.parametrize("vm", ["te1", "te2"])
def test_serial_console_getty_stays_up(vm, request):
    # The console's autologin getty execs /bin/login; where that is missing (trixie ships it
    # in the non-essential 'login' package) agetty fails and systemd restarts it for ever,
    # burning emulated CPU under every scenario.
    host = request.getfixturevalue(vm)
    assert host.file("/bin/login").exists
    show = host.check_output("systemctl show serial-getty@ttyS0.service -p ActiveState -p NRestarts")
    assert "ActiveState=active" in show and "NRestarts=0" in show, show


def test_vms_reach_each_other_over_the_private_link(te1, te2):
    assert te1.run("ping -c 2 -W 3 10.99.0.2").rc == 0
    assert te2.run("ping -c 2 -W 3 10.99.0.1").rc == 0
    # The fabric address sits on eth1, not on the user-mode NIC.
    assert "10.99.0.1/24" in te1.check_output("ip -o -4 addr show dev eth1")


def test_guests_cannot_reach_outside(te1):
    # No route off the VM, and restrict=on makes QEMU's user-mode NIC drop even a
    # connection to its own gateway (the build host's side): only SSH comes in.
    assert te1.run("ip route get 192.0.2.1").rc != 0
    assert te1.run("timeout 5 bash -c 'exec 3<>/dev/tcp/10.0.2.2/22'").rc != 0


def test_host_identity_is_unique_per_vm(te1, te2):
    for path in ("/etc/nvme/hostnqn", "/etc/nvme/hostid", "/etc/machine-id", "/etc/ssh/ssh_host_ed25519_key.pub"):
        a, b = te1.file(path).content_string.strip(), te2.file(path).content_string.strip()
        assert a and b and a != b, path
    nqn = te1.file("/etc/nvme/hostnqn").content_string.strip()
    assert re.match(r"^nqn\.2014-08\.org\.nvmexpress:uuid:[0-9a-f-]{36}$", nqn), nqn
    assert "00000000-0000-0000-0000-000000000000" not in nqn


def test_soft_roce_device_can_be_created(te1):
    # What the soft_roce role relies on: rdma_rxe binds to the fabric NIC.
    te1.run("rdma link delete smoke_rxe0 2>/dev/null")
    create = te1.run("rdma link add smoke_rxe0 type rxe netdev eth1")
    try:
        assert create.rc == 0, create.stderr
        assert "smoke_rxe0/1 state ACTIVE" in te1.check_output("rdma link show")
    finally:
        te1.run("rdma link delete smoke_rxe0")


@pytest.mark.parametrize("vm", ["te1", "te2"])
def test_the_scenario_logs_in_as_the_non_root_account_and_becomes_root(vm, request):
    """molecule.yml sets AIINFRA_LAB_USER=aiinfra (inventory/lab's ansible_user) and the
    verifier's sudo: SSH as aiinfra, sudo to root, as users log in on real clusters."""
    host = request.getfixturevalue(vm)
    assert os.environ.get("AIINFRA_LAB_USER") == "aiinfra"
    assert host.check_output("id -un") == "root"
    assert host.check_output("echo $SUDO_USER") == "aiinfra"
    assert host.check_output("stat -c '%U %a' /home/aiinfra/.ssh/authorized_keys") == "aiinfra 600"
