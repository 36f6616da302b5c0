"""testinfra hosts for the QEMU lab VMs, shared by every molecule scenario's verifier.

Scenario conftest files import this module and get ``te1`` / ``te2`` fixtures that talk
to the VMs over the SSH ports lab/labctl forwards to 127.0.0.1, with the lab's key.
"""

import os

import pytest
import testinfra

LAB_CACHE = os.environ.get(
    "AIINFRA_LAB_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "aiinfra-fabric-lab")
)
SSH_PORT_BASE = int(os.environ.get("AIINFRA_LAB_SSH_PORT_BASE", "2221"))
VMS = {"te1": {"port": SSH_PORT_BASE, "fabric": "10.99.0.1"}, "te2": {"port": SSH_PORT_BASE + 1, "fabric": "10.99.0.2"}}


# AIINFRA_LAB_USER=aiinfra (scenarios that log in as the lab's non-root account): the
# checks log in as it too and run every command through sudo, as root.
LAB_USER = os.environ.get("AIINFRA_LAB_USER", "root")


def lab_host(name):
    vm = VMS[name]
    return testinfra.get_host(
        "ssh://%s@127.0.0.1:%d" % (LAB_USER, vm["port"]),
        ssh_identity_file=os.path.join(LAB_CACHE, "id_ed25519"),
        ssh_extra_args="-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
        # One SSH connection per VM for the whole session: a fresh handshake with a
        # software-emulated guest costs seconds.
        controlpath="/tmp/aiinfra-lab-ssh-%s-%d.sock" % (LAB_USER, vm["port"]),
        controlpersist=120,
        sudo=LAB_USER != "root",
    )


@pytest.fixture(scope="session")
def te1():
    return lab_host("te1")


@pytest.fixture(scope="session")
def te2():
    return lab_host("te2")
