# -*- coding: utf-8 -*-
"""Unit tests for the rdma_link module_utils (parsing, sysfs device kinds, planning, argv, boot unit)."""

from __future__ import annotations

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import state as hostconfig_state
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.rdma_link import (
    RdmaLinkError,
    RdmaLinkRunner,
    boot_unit_params,
    boot_unit_text,
    default_unit_name,
    op_argv,
    op_text,
    parse_links,
    plan_link,
    read_devices,
    validate,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "rdma")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


def test_parse_real_link_show():
    links = parse_links(fixture("link_show_rxe0.json"))
    assert links == [{"name": "rxe0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "eth1"}]


def test_parse_empty_outputs():
    assert parse_links(fixture("link_show_empty.json")) == []
    assert parse_links("") == []


def test_parse_infiniband_port_without_netdev():
    links = parse_links('[{"ifindex":1,"ifname":"mlx5_0","port":1,"state":"ACTIVE","physical_state":"LINK_UP"}]')
    assert links[0]["netdev"] is None


def test_parse_garbage_raises():
    with pytest.raises(RdmaLinkError, match="cannot parse"):
        parse_links("Object \"link\" is unknown")
    with pytest.raises(RdmaLinkError, match="expected a JSON list"):
        parse_links('{"a": 1}')


LINKS = [{"name": "rxe0", "port": 1, "state": "ACTIVE", "physical_state": "LINK_UP", "netdev": "eth1"}]


def test_plan_present_noop_when_link_matches():
    assert plan_link(LINKS, "rxe0", "eth1", "rxe", "present") == []


def test_plan_present_adds_missing_link():
    assert plan_link([], "rxe0", "eth1", "rxe", "present") == [
        {"op": "add", "name": "rxe0", "type": "rxe", "netdev": "eth1"}]


def test_plan_other_netdev_needs_force():
    with pytest.raises(RdmaLinkError, match="force=true"):
        plan_link(LINKS, "rxe0", "eth2", "rxe", "present")
    assert plan_link(LINKS, "rxe0", "eth2", "rxe", "present", force=True) == [
        {"op": "delete", "name": "rxe0"}, {"op": "add", "name": "rxe0", "type": "rxe", "netdev": "eth2"}]


def test_plan_netdev_taken_by_other_link_fails_with_its_name():
    with pytest.raises(RdmaLinkError, match="already carries RDMA link rxe0"):
        plan_link(LINKS, "rxe_eth1", "eth1", "rxe", "present")


def test_plan_absent():
    assert plan_link(LINKS, "rxe0", None, "rxe", "absent") == [{"op": "delete", "name": "rxe0"}]
    assert plan_link([], "rxe0", None, "rxe", "absent") == []


@pytest.mark.parametrize("name,netdev,typ,state,match", [
    ("", "eth1", "rxe", "present", "name="),
    ("rxe 0", "eth1", "rxe", "present", "name='rxe 0'"),
    ("rxe0", None, "rxe", "present", "netdev is required"),
    ("rxe0", "eth1/x", "rxe", "present", "netdev='eth1/x'"),
    ("rxe0", "averyveryverylongif", "rxe", "present", "netdev="),
    ("rxe0", "eth1", "mlx", "present", "type='mlx'"),
])
def test_validate_names_the_bad_parameter(name, netdev, typ, state, match):
    with pytest.raises(RdmaLinkError, match=match):
        validate(name, netdev, typ, state)


def test_validate_absent_needs_no_netdev():
    validate("rxe0", None, "rxe", "absent")


def test_read_devices_tells_hardware_from_software(tmp_path):
    root = tmp_path / "infiniband"
    (root / "rxe0").mkdir(parents=True)
    pci = tmp_path / "pci0000:00" / "0000:3b:00.0"
    (pci).mkdir(parents=True)
    drivers = tmp_path / "drivers" / "mlx5_core"
    drivers.mkdir(parents=True)
    os.symlink(str(drivers), str(pci / "driver"))
    (root / "mlx5_0").mkdir()
    os.symlink(str(pci), str(root / "mlx5_0" / "device"))
    devices = read_devices(str(root))
    assert devices == {"mlx5_0": {"hardware": True, "driver": "mlx5_core"},
                       "rxe0": {"hardware": False, "driver": None}}


def test_read_devices_without_sysfs_class(tmp_path):
    assert read_devices(str(tmp_path / "missing")) == {}


def test_op_argv():
    assert op_argv("/usr/bin/rdma", {"op": "add", "name": "rxe0", "type": "rxe", "netdev": "eth1"}) == [
        "/usr/bin/rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "eth1"]
    assert op_argv("rdma", {"op": "delete", "name": "rxe0"}) == ["rdma", "link", "delete", "rxe0"]


class Recorder(object):
    def __init__(self, replies):
        self.replies = list(replies)
        self.calls = []

    def __call__(self, argv, environ_update=None):
        self.calls.append((argv, environ_update))
        return self.replies.pop(0)


def test_runner_reads_and_applies_with_lc_all():
    rec = Recorder([(0, fixture("link_show_empty.json"), ""), (0, "", "")])
    runner = RdmaLinkRunner(rec, "rdma")
    assert runner.links() == []
    runner.apply([{"op": "add", "name": "rxe0", "type": "rxe", "netdev": "eth1"}])
    assert rec.calls[0] == (["rdma", "-j", "link", "show"], {"LC_ALL": "C"})
    assert rec.calls[1][0] == ["rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "eth1"]


def test_runner_failure_carries_command_output():
    rec = Recorder([(1, "", "error: File exists\n")])
    runner = RdmaLinkRunner(rec, "rdma")
    with pytest.raises(RdmaLinkError) as err:
        runner.apply([{"op": "add", "name": "rxe1", "type": "rxe", "netdev": "eth1"}])
    assert "File exists" in err.value.msg
    assert err.value.details["rc"] == 1


def test_op_text_is_the_rdma_command():
    assert op_text({"op": "add", "name": "rxe0", "type": "siw", "netdev": "eth1"}) == \
        "rdma link add rxe0 type siw netdev eth1"
    assert op_text({"op": "delete", "name": "rxe0"}) == "rdma link delete rxe0"


@pytest.mark.parametrize("link_type", ["rxe", "siw"])
def test_boot_unit_text_is_the_roles_template_rendering(link_type):
    # The fixture is what the soft_roce role's template rendered (see tests/fixtures/rdma/README.md).
    assert boot_unit_text("rxe0", "eth1", link_type) == fixture("boot_unit_rxe0_eth1_%s.service" % link_type)


def test_boot_unit_text_loads_the_types_kernel_module():
    assert "ExecStart=/sbin/modprobe rdma_rxe\n" in boot_unit_text("rxe1", "ens3", "rxe")
    assert "ExecStart=/sbin/modprobe siw\n" in boot_unit_text("siw0", "ens3", "siw")
    assert "rdma link show siw0/1 >/dev/null 2>&1 || rdma link add siw0 type siw netdev ens3'" in \
        boot_unit_text("siw0", "ens3", "siw")


def test_default_unit_name():
    assert default_unit_name("rxe0") == "aiinfra-soft-roce-rxe0.service"


def test_boot_unit_params_present_installs_and_enables_without_starting():
    params = boot_unit_params("x.service", "present", "rxe0", "eth1", "siw")
    desired = hostconfig_state.validate(params)
    assert desired["files"] == [dict(path="/etc/systemd/system/x.service", mode=0o644, owner="root", group="root",
                                     content=boot_unit_text("rxe0", "eth1", "siw"), secret=False)]
    assert desired["units"] == [dict(name="x.service", enabled=True, started=None)]
    assert desired["absent"] == []


def test_boot_unit_params_absent_stops_disables_and_removes():
    desired = hostconfig_state.validate(boot_unit_params("x.service", "absent"))
    assert desired["units"] == [dict(name="x.service", enabled=False, started=False)]
    assert desired["absent"] == ["/etc/systemd/system/x.service"]
    assert desired["files"] == []


@pytest.mark.parametrize("netdev,unit_name,state,match", [
    ("eth1", "rdma.conf", "present", "unit_name='rdma.conf'"),
    ("eth1", "../x.service", "present", "unit_name='../x.service'"),
    ("eth1", "my unit.service", "absent", "unit_name='my unit.service'"),
    ("eth'1", None, "present", "netdev=\"eth'1\" cannot go into the boot unit"),
    ("eth%n", None, "present", "netdev='eth%n' cannot go into the boot unit"),
])
def test_validate_persistent_names_the_bad_parameter(netdev, unit_name, state, match):
    with pytest.raises(RdmaLinkError) as err:
        validate("rxe0", netdev, "rxe", state, persistent=True, unit_name=unit_name)
    assert match in err.value.msg


def test_validate_checks_unit_arguments_only_when_persistent():
    validate("rxe0", "eth'1", "rxe", "present", persistent=False, unit_name="rdma.conf")
    validate("rxe0", "eth1.100", "rxe", "present", persistent=True, unit_name="rdma-rxe0@x.service")
