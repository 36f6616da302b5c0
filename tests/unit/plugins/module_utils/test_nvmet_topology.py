"""nvmeof_target's variables to one nvmet_target document (module_utils/nvmet/topology.py).

The by-id listings are in the form the role's probe prints (``find /dev/disk/by-id
-maxdepth 1 -type l -printf '%f %l'``); the QEMU names follow the lab's drives
(serial aiinfra-te1-nvme<i>).
"""

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.topology import (
    TopologyError,
    add_keys,
    build_document,
    normalize,
    port_rules,
    resolve_devices,
)

SHORT = dict(nqn="nqn.2024-04.com.example:te1.target1", nsid=1, backing_file="/var/lib/nvmet/disk1.img",
             backing_size_mb=1024, backing_device="", transport="rdma", address="10.99.0.1", trsvcid="4420",
             port_id=1, allowed_hosts=[], initiator_group="nvmeof_initiators", allow_any_host=False)
GROUPS = ["all", "nvmeof_initiators", "nvmeof_targets", "trainers"]
BY_ID = [
    "nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme1 ../../nvme0n1",
    "nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme1_1 ../../nvme0n1",
    "nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme2 ../../nvme1n1",
    "nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme3 ../../nvme2n1",
    "nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme3-part1 ../../nvme2n1p1",
    "nvme-eui.0123456789abcdef ../../nvme2n1",
    "wwn-0x5000c500a1b2c3d4 ../../sda",
    "nvme-QEMU_NVMe_Ctrl_dup ../../nvme3n1",
    "nvme-OTHER_dup ../../nvme4n1",
]
TE2 = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
TE3 = "nqn.2014-08.org.nvmexpress:uuid:66666666-2222-3333-4444-555555555555"


def errors_of(call, *args):
    with pytest.raises(TopologyError) as exc:
        call(*args)
    return exc.value.errors


def test_short_form_is_one_subsystem_one_port_and_builds_the_seed_document():
    topo = normalize([], [], SHORT, GROUPS)
    assert [s["nqn"] for s in topo["subsystems"]] == [SHORT["nqn"]]
    assert topo["files"] == [{"path": "/var/lib/nvmet/disk1.img", "size_mb": 1024}]
    assert topo["groups"] == ["nvmeof_initiators"] and topo["transports"] == ["rdma"]
    resolved = resolve_devices(topo, [])
    doc = build_document(resolved, {"nvmeof_initiators": ["te2"]},
                         {"te2": {"hostnqn": TE2}})
    assert doc == {
        "hosts": [{"nqn": TE2}],
        "subsystems": [{"nqn": SHORT["nqn"], "attr": {"allow_any_host": "0"}, "allowed_hosts": [TE2],
                        "namespaces": [{"nsid": 1, "enable": 1, "device": {"path": "/var/lib/nvmet/disk1.img"}}]}],
        "ports": [{"portid": 1, "addr": {"trtype": "rdma", "adrfam": "ipv4", "traddr": "10.99.0.1", "trsvcid": "4420"},
                   "subsystems": [SHORT["nqn"]]}],
    }
    assert port_rules(resolved) == {"1": {"port": "4791", "proto": "udp"}}


def test_short_form_errors_name_the_seed_variables():
    errs = errors_of(normalize, [], [], dict(SHORT, address="", trsvcid="0", backing_file="disk.img"), GROUPS)
    assert "nvmeof_target_address: is required (the address the port listens on)" in errs
    assert any(e.startswith("nvmeof_target_trsvcid: 0 is not in 1..65535") for e in errs)
    assert any(e.startswith("nvmeof_target_backing_file: 'disk.img' is not an absolute path") for e in errs)


def test_short_form_allow_any_host_drops_the_group_and_keys():
    topo = normalize([], [], dict(SHORT, allow_any_host=True), GROUPS)
    doc = build_document(resolve_devices(topo, []), {}, {"te2": {"hostnqn": TE2}})
    assert doc["subsystems"][0]["attr"] == {"allow_any_host": "1"} and doc["hosts"] == []


TOPOLOGY_SUBS = [
    {"nqn": "nqn.2024-04.com.example:te1.jbof-a",
     "namespaces": [{"device": "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme1"},
                    {"serial": "aiinfra-te1-nvme2", "ana_group": 2}],
     "allowed_hosts": ["nvmeof_initiators"]},
    {"nqn": "nqn.2024-04.com.example:te1.jbof-b",
     "namespaces": [{"nsid": 5, "wwn": "eui.0123456789ABCDEF"}, {"nsid": 6, "file": "/srv/x.img", "size_mb": 16}],
     "allowed_hosts": [TE3, "trainers"], "ports": [2]},
]
TOPOLOGY_PORTS = [
    {"id": 1, "transport": "tcp", "address": "10.99.0.1",
     "ana_groups": [{"id": 1, "state": "optimized"}, {"id": 2, "state": "non-optimized"}]},
    {"id": 2, "transport": "rdma", "address": "10.99.1.1", "service_id": 4421},
]


def test_long_form_resolves_serial_and_wwn_to_by_id_and_groups_to_host_nqns():
    topo = resolve_devices(normalize(TOPOLOGY_SUBS, TOPOLOGY_PORTS, SHORT, GROUPS), BY_ID)
    paths = [[ns["path"] for ns in s["namespaces"]] for s in topo["subsystems"]]
    assert paths == [["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme1",
                      "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme2"],
                     ["/dev/disk/by-id/nvme-eui.0123456789abcdef", "/srv/x.img"]]
    assert topo["devices"] == paths[0] + paths[1][:1]
    doc = build_document(topo, {"nvmeof_initiators": ["te2"], "trainers": ["te2", "te3"]},
                         {"te2": {"hostnqn": TE2}, "te3": {"hostnqn": TE3}})
    assert doc["hosts"] == [{"nqn": TE2}, {"nqn": TE3}]
    doc = add_keys(doc, {TE2: {"key": "DHHC-1:00:secret:", "ctrl_key": ""}, "nqn.other": {"key": "x"}})
    a, b = doc["subsystems"]
    assert a["allowed_hosts"] == [TE2] and b["allowed_hosts"] == [TE3, TE2]
    assert a["namespaces"][1] == {"nsid": 2, "enable": 1, "ana_grpid": 2,
                                  "device": {"path": "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme2"}}
    assert [n["nsid"] for n in b["namespaces"]] == [5, 6]
    assert doc["hosts"] == [{"nqn": TE2, "dhchap": {"key": "DHHC-1:00:secret:"}}, {"nqn": TE3}]
    assert [p["subsystems"] for p in doc["ports"]] == [[a["nqn"]], [a["nqn"], b["nqn"]]]
    assert doc["ports"][0]["ana_groups"] == [{"grpid": 1, "ana": {"state": "optimized"}},
                                             {"grpid": 2, "ana": {"state": "non-optimized"}}]
    assert doc["ports"][1]["addr"]["trsvcid"] == "4421"
    assert port_rules(topo) == {"1": {"port": "4420", "proto": "tcp"}, "2": {"port": "4791", "proto": "udp"}}


@pytest.mark.parametrize("name", ["/dev/nvme0n1", "/dev/nvme1n2p3", "/dev/sdb", "/dev/vda1", "/dev/../dev/sdc"])
def test_kernel_device_names_are_refused_in_both_forms(name):
    subs = [{"nqn": "nqn.2024-04.com.example:x", "namespaces": [{"device": name}], "allowed_hosts": [TE2]}]
    errs = errors_of(normalize, subs, TOPOLOGY_PORTS, SHORT, GROUPS)
    assert len(errs) == 1 and "is a kernel name that can change at the next boot" in errs[0]
    assert errs[0].startswith("nvmeof_target_subsystems[0].namespaces[0].device:")
    errs = errors_of(normalize, [], [], dict(SHORT, backing_device=name), GROUPS)
    assert errs[0].startswith("nvmeof_target_backing_device:") and "/dev/disk/by-id/" in errs[0]


def test_long_form_device_must_be_by_id_while_the_short_form_keeps_other_stable_names():
    subs = [{"nqn": "nqn.2024-04.com.example:x", "namespaces": [{"device": "/dev/mapper/vg-lv"}],
             "allowed_hosts": [TE2]}]
    assert "is not a stable id" in errors_of(normalize, subs, TOPOLOGY_PORTS, SHORT, GROUPS)[0]
    topo = normalize([], [], dict(SHORT, backing_device="/dev/mapper/vg-lv"), GROUPS)
    assert topo["subsystems"][0]["namespaces"][0]["kind"] == "device" and topo["needs_by_id"]


def test_every_variable_error_is_reported_at_once_with_its_place():
    subs = [
        {"nqn": "not-an-nqn", "namespaces": [{"serial": "s", "file": "/x"}], "allowed_hosts": ["nogroup"],
         "colour": "red"},
        {"nqn": "nqn.2024-04.com.example:y", "namespaces": [{"file": "/a"}, {"nsid": 1, "file": "/b"}],
         "allowed_hosts": [TE2], "allow_any_host": True, "ports": [9]},
        {"nqn": "nqn.2024-04.com.example:z", "namespaces": [{"file": "/c", "ana_group": 3}], "allowed_hosts": [TE2]},
    ]
    ports = [{"id": 1, "transport": "fc", "address": "10.0.0.1", "ana_groups": [{"id": 2, "state": "fast"}]},
             {"id": 1, "transport": "tcp", "address": "10.0.0.1"}]
    errs = errors_of(normalize, subs, ports, SHORT, GROUPS)
    expected = [
        "nvmeof_target_ports[0].transport: 'fc' is not one of ",  # the role's transports, from the table
        "nvmeof_target_ports[0].ana_groups[0].state: 'fast' is not one of",
        "nvmeof_target_ports[1].id: port 1 is listed twice",
        "nvmeof_target_subsystems[0].colour: unknown key",
        "nvmeof_target_subsystems[0].nqn: 'not-an-nqn' is not an NQN",
        "nvmeof_target_subsystems[0].namespaces[0]: give exactly one of",
        "nvmeof_target_subsystems[0].allowed_hosts[0]: 'nogroup' is neither a host NQN",
        "nvmeof_target_subsystems[1].namespaces[1].nsid: 1 is listed twice",
        "nvmeof_target_subsystems[1]: allow_any_host is true and allowed_hosts is not empty",
        "nvmeof_target_subsystems[1].ports: port 9 is not in nvmeof_target_ports",
        "nvmeof_target_subsystems[2]: namespace 1 is in ANA group 3, which none of its ports declares",
    ]
    for want in expected:
        assert any(e.startswith(want) for e in errs), (want, errs)
    assert len(errs) == len(expected)


def test_serial_and_wwn_that_match_nothing_or_several_devices_are_refused():
    subs = [{"nqn": "nqn.2024-04.com.example:x", "allowed_hosts": [TE2],
             "namespaces": [{"serial": "nosuch"}, {"serial": "dup"}, {"wwn": "0x5000c500a1b2c3d4"},
                            {"device": "/dev/disk/by-id/nvme-gone"},
                            {"device": "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_aiinfra-te1-nvme3"},
                            {"wwn": "eui.0123456789abcdef"}]}]
    errs = errors_of(resolve_devices, normalize(subs, TOPOLOGY_PORTS, SHORT, GROUPS), BY_ID)
    assert len(errs) == 4, errs
    assert "(serial nosuch): no device in /dev/disk/by-id/ on the target has this serial" in errs[0]
    assert "(serial dup): matches several devices" in errs[1] and "nvme3n1" in errs[1] and "nvme4n1" in errs[1]
    assert "nvme-gone): no such entry" in errs[2]
    assert "(wwn eui.0123456789abcdef): the same device as" in errs[3]
    # the WWN of the SCSI disk resolved (0x form), and a partition is never taken for its disk
    topo = resolve_devices(normalize([dict(subs[0], namespaces=[{"wwn": "5000C500A1B2C3D4"}])], TOPOLOGY_PORTS,
                                     SHORT, GROUPS), BY_ID)
    assert topo["devices"] == ["/dev/disk/by-id/wwn-0x5000c500a1b2c3d4"]


def test_a_group_member_without_host_nqn_and_no_allowed_host_are_errors():
    topo = resolve_devices(normalize([], [], SHORT, GROUPS), [])
    errs = errors_of(build_document, topo, {"nvmeof_initiators": ["te2"]}, {"te2": {"hostnqn": ""}})
    assert errs[0].startswith("nqn.2024-04.com.example:te1.target1: host te2 of group nvmeof_initiators has no host NQN")
    assert "no host would be allowed" in errs[1]
