"""The initiator's NVMe identity: read from /etc/nvme, generated only when asked, never in check mode."""

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import ValidationError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.host import PLANNED_HOSTNQN, host_identity

GENERATED = "nqn.2014-08.org.nvmexpress:uuid:3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11"


def params(**kw):
    base = {"hostnqn": None, "hostid": None, "generate_host_identity": False}
    base.update(kw)
    return base


def never():
    raise AssertionError("gen_hostnqn must not be called")


def test_identity_is_read_from_etc(tmp_path):
    (tmp_path / "hostnqn").write_text(GENERATED + "\n")
    (tmp_path / "hostid").write_text("3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11\n")
    assert host_identity(params(), "connected", False, never, etc=str(tmp_path)) == (
        GENERATED, "3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11", [])


def test_missing_identity_without_generate_is_a_clear_error(tmp_path):
    with pytest.raises(ValidationError, match="hostnqn is missing or empty.*generate_host_identity=true"):
        host_identity(params(), "connected", False, never, etc=str(tmp_path))


def test_disconnect_needs_no_identity(tmp_path):
    assert host_identity(params(), "disconnected", False, never, etc=str(tmp_path)) == (None, None, [])


def test_check_mode_plans_the_write_without_generating(tmp_path):
    hostnqn, hostid, writes = host_identity(params(generate_host_identity=True), "connected", True, never,
                                            etc=str(tmp_path))
    assert (hostnqn, hostid, writes) == (PLANNED_HOSTNQN, None, [("hostnqn", None)])


def test_generated_nqn_gives_the_hostid_of_its_uuid(tmp_path):
    hostnqn, hostid, writes = host_identity(params(generate_host_identity=True), "connected", False,
                                            lambda: GENERATED, etc=str(tmp_path))
    assert hostnqn == GENERATED
    assert hostid == "3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11"
    assert writes == [("hostnqn", GENERATED), ("hostid", hostid)]


def test_another_identity_gets_its_own_hostid_not_the_machines(tmp_path):
    # The kernel refuses one host ID under two host NQNs ("found same hostid ... but
    # different hostnqn"): a second identity must not borrow /etc/nvme/hostid.
    (tmp_path / "hostnqn").write_text(GENERATED + "\n")
    (tmp_path / "hostid").write_text("3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11\n")
    other = "nqn.2014-08.org.nvmexpress:uuid:0f3b8a52-6c4e-4d4e-8f0e-2b7d9c1a5e33"
    assert host_identity(params(hostnqn=other), "connected", False, never, etc=str(tmp_path)) == (
        other, "0f3b8a52-6c4e-4d4e-8f0e-2b7d9c1a5e33", [])
    named = "nqn.2024-04.io.aiinfra.bench:host07"
    hostid = host_identity(params(hostnqn=named), "connected", False, never, etc=str(tmp_path))[1]
    assert hostid not in (None, "3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11")
    assert host_identity(params(hostnqn=named), "connected", False, never, etc=str(tmp_path))[1] == hostid
    assert host_identity(params(hostnqn="nqn.2024-04.io.aiinfra.bench:host08"), "connected", False, never,
                         etc=str(tmp_path))[1] != hostid
    # The machine's own NQN given explicitly keeps the machine's host ID; a given hostid wins.
    assert host_identity(params(hostnqn=GENERATED), "connected", False, never, etc=str(tmp_path))[1] == (
        "3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11")
    assert host_identity(params(hostnqn=named, hostid="11111111-2222-3333-4444-555555555555"), "connected", False,
                         never, etc=str(tmp_path))[1] == "11111111-2222-3333-4444-555555555555"
