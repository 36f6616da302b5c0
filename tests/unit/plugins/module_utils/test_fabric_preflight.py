"""Unit tests of the fabric_preflight role's probe reader (plugins/plugin_utils/fabric_preflight.py,
the fabric_preflight_result filter). LINES are what the probe prints on a lab guest (Debian,
kernel 6.12.117: nvmet and nvmet_rdma as module files, nvme_core built in and shown by
modinfo as "(builtin)", rdma_rxe unknown to this kernel; nvme-cli installed, rdma not); the
probe itself also runs here, with sh, from the role's task."""

from __future__ import annotations

import os
import subprocess

import yaml

from ansible_collections.aiinfra.fabric.plugins.filter.fabric_preflight import fabric_preflight_result

TASKS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "roles", "fabric_preflight", "tasks", "main.yml")

LINES = [
    "6.12.117+deb13-amd64",
    "module nvmet /lib/modules/6.12.117+deb13-amd64/kernel/drivers/nvme/target/nvmet.ko.xz",
    "module nvmet_rdma /lib/modules/6.12.117+deb13-amd64/kernel/drivers/nvme/target/nvmet-rdma.ko.xz",
    "module nvme_core (builtin)",
    "module rdma_rxe -",
    "command nvme /usr/sbin/nvme",
    "command rdma -",
    "addr 127.0.0.1/8",
    "addr 10.0.2.15/24",
    "addr 10.99.0.1/24",
    "addr ::1/128",
    "addr fe80::5054:ff:fe12:3456/64",
]


def test_the_result_from_a_guests_lines():
    assert fabric_preflight_result(LINES, "10.99.0.1") == {
        "kernel": "6.12.117+deb13-amd64",
        "modules": {
            "nvmet": "/lib/modules/6.12.117+deb13-amd64/kernel/drivers/nvme/target/nvmet.ko.xz",
            "nvmet_rdma": "/lib/modules/6.12.117+deb13-amd64/kernel/drivers/nvme/target/nvmet-rdma.ko.xz",
            "nvme_core": "(builtin)",
            "rdma_rxe": "",
        },
        "missing_modules": ["rdma_rxe"],
        "missing_commands": ["rdma"],
        "address": "10.99.0.1",
        "address_present": True,
    }


def test_the_address_is_matched_whole_without_its_prefix():
    assert fabric_preflight_result(LINES, "10.99.0.2")["address_present"] is False
    assert fabric_preflight_result(LINES, "10.99.0")["address_present"] is False
    assert fabric_preflight_result(LINES, "fe80::5054:ff:fe12:3456")["address_present"] is True
    # No address asked for: nothing to find.
    assert fabric_preflight_result(LINES, "")["address_present"] is True
    assert fabric_preflight_result(LINES[:1], "")["missing_modules"] == []


def test_the_roles_probe_run_here():
    with open(TASKS) as fh:
        task = yaml.safe_load(fh)[0]
    script = task["vars"]["__script"]
    out = subprocess.run(["sh", "-c", script, "sh", "m:aiinfra_no_such_module", "c:sh", "c:aiinfra-no-such-command"],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    got = fabric_preflight_result(out, "")
    assert got["kernel"] == os.uname().release
    assert got["missing_modules"] == ["aiinfra_no_such_module"]
    assert got["missing_commands"] == ["aiinfra-no-such-command"]
