"""mkfs is refused on any signature, not only a file-system TYPE (wipefs fixtures: see
tests/fixtures/wipefs/README.md for how each was made)."""

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.signatures import (
    SignatureError, filesystem_uuid, parse_wipefs, plan_filesystem,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "wipefs")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return parse_wipefs(handle.read())


def test_blank_device_gets_the_file_system():
    assert fixture("blank.json") == []
    assert plan_filesystem("/dev/nvme1n1", [], "ext4", False) == {"action": "mkfs", "wipe": False, "msg": None}


def test_the_wanted_file_system_is_kept_even_when_forced():
    sigs = fixture("ext4.json")
    assert [s["type"] for s in sigs] == ["ext4"]
    for force in (False, True):
        assert plan_filesystem("/dev/nvme1n1", sigs, "ext4", force)["action"] == "keep"
    assert filesystem_uuid(sigs, "ext4") == sigs[0]["uuid"]


def test_gpt_without_a_file_system_type_is_refused_naming_it():
    # The case community.general.filesystem misses: blkid reports no TYPE for it.
    sigs = fixture("gpt.json")
    plan = plan_filesystem("/dev/nvme1n1", sigs, "ext4", False)
    assert plan["action"] == "refuse"
    assert "partition-table" in plan["msg"]
    assert "gpt (partition-table) at 0x200" in plan["msg"] and "PMBR (partition-table) at 0x1fe" in plan["msg"]
    assert "nvmeof_initiator_force_mkfs" in plan["msg"]


@pytest.mark.parametrize("name,kind,sig", [
    ("lvm.json", "raid", "LVM2_member"),
    ("raid.json", "raid", "linux_raid_member"),
    ("ext4.json", "filesystem", "ext4"),
])
def test_lvm_raid_and_another_file_system_are_refused(name, kind, sig):
    plan = plan_filesystem("/dev/nvme1n1", fixture(name), "xfs", False)
    assert plan["action"] == "refuse"
    assert ("%s (%s)" % (sig, kind)) in plan["msg"]


def test_force_wipes_then_formats():
    assert plan_filesystem("/dev/nvme1n1", fixture("gpt.json"), "ext4", True) == {
        "action": "mkfs", "wipe": True, "msg": None}


def test_wanted_file_system_over_a_leftover_partition_table_is_refused():
    # mkfs over a GPT without wiping leaves the backup header at the end of the device.
    sigs = fixture("ext4.json") + [s for s in fixture("gpt.json") if s["offset"] != "0x200" and s["type"] == "gpt"]
    assert plan_filesystem("/dev/nvme1n1", sigs, "ext4", False)["action"] == "refuse"


@pytest.mark.parametrize("text", ["not json", "[]", '{"signatures": 3}'])
def test_unreadable_wipefs_output_is_an_error(text):
    with pytest.raises(SignatureError):
        parse_wipefs(text)


def test_empty_output_is_no_signature():
    assert parse_wipefs("") == []
