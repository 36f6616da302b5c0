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
