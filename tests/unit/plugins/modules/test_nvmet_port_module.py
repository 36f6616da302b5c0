# -*- coding: utf-8 -*-
"""nvmet_port module glue on the FAKE configfs tree (nvmet_fake.py), tried the way a new
user would: a second port given the transport address another port already has. The
kernel cannot listen twice on one address, so such a port could never be enabled (the
first subsystem link fails with EADDRINUSE while the other port listens). The fake tree
does not emulate that refusal; it is the kernel's, not proven here."""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.aiinfra.fabric.plugins.modules import nvmet_port
from module_harness import run_main, tree_listing  # tests/unit/plugins/modules/module_harness.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
from nvmet_fake import SUB, EmulatedTree, fake_port, fake_subsystem, link  # noqa: E402


@pytest.fixture
def root(tmp_path):
    for d in ("subsystems", "ports", "hosts"):
        os.makedirs(str(tmp_path / "nvmet" / d))
    for mod in ("nvmet", "nvmet_tcp", "nvmet_rdma"):
        os.makedirs(str(tmp_path / "sys" / "module" / mod))
    # Port 1 as the nvmeof_target role leaves it: rdma 10.99.0.1:4420, a subsystem linked.
    fake_subsystem(str(tmp_path), SUB)
    fake_port(str(tmp_path), 1, trtype="rdma", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4")
    link(str(tmp_path), "subsystems/" + SUB, "ports/1/subsystems/" + SUB)
    return str(tmp_path)


def run(monkeypatch, root, args, check=False):
    monkeypatch.setattr(nvmet_port, "ConfigfsTree", lambda configfs_root: EmulatedTree(root))
    return run_main(monkeypatch, nvmet_port, dict(args, _ansible_check_mode=check))


@pytest.mark.parametrize("check", [False, True])
@pytest.mark.parametrize("address", [
    {"traddr": "10.99.0.1", "trsvcid": "4420"},
    # The same address written another way, and trsvcid left to its default (4420).
    {"traddr": "10.99.0.1"},
])
def test_a_port_on_the_address_of_another_port_is_refused_before_any_change(monkeypatch, root, check, address):
    before = tree_listing(root)
    result = run(monkeypatch, root, dict({"port_id": 9, "trtype": "rdma"}, **address), check=check)
    assert result.get("failed") is True, result
    assert result["changed"] is False and result["operations"] == []
    assert "port 1" in result["msg"] and "10.99.0.1" in result["msg"], result["msg"]
    assert tree_listing(root) == before


def test_a_port_on_another_service_id_or_transport_is_made(monkeypatch, root):
    result = run(monkeypatch, root, {"port_id": 9, "trtype": "rdma", "traddr": "10.99.0.1", "trsvcid": "4421"})
    assert result.get("failed") is not True and result["changed"] is True, result
    result = run(monkeypatch, root, {"port_id": 10, "trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420"})
    assert result.get("failed") is not True and result["changed"] is True, result


def test_moving_a_port_onto_the_address_of_another_is_refused(monkeypatch, root):
    fake_port(root, 2, trtype="rdma", traddr="10.99.0.1", trsvcid="4421", adrfam="ipv4")
    before = tree_listing(root)
    result = run(monkeypatch, root, {"port_id": 2, "trtype": "rdma", "traddr": "10.99.0.1", "trsvcid": "4420"})
    assert result.get("failed") is True and "port 1" in result["msg"], result
    assert tree_listing(root) == before
