"""TLS on nvmeof_target ports: the port's tls key in the topology (module_utils/nvmet/topology.py)
and the keys the target's TLS ports need (module_utils/nvmet/tls_keys.py).

The PSKs below are made-up strings in the interchange format's shape: tls_keys only pairs
them with NQNs (the nvme_tls_key module checks them)."""

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.tls_keys import (
    DISCOVERY_NQN,
    TlsKeyError,
    target_tls_keys,
    tls_ports,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.topology import (
    TopologyError,
    build_document,
    normalize,
    resolve_devices,
)

SUB = "nqn.2026-12.io.aiinfra.lab:te1.tls"
PLAIN = "nqn.2026-12.io.aiinfra.lab:te1.plain"
TE2 = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
TE3 = "nqn.2014-08.org.nvmexpress:uuid:66666666-2222-3333-4444-555555555555"
PSK2 = "NVMeTLSkey-1:01:te2te2te2te2te2te2te2te2te2te2te2te2te2te2te2te2te2te2:"
PSK3 = "NVMeTLSkey-1:01:te3te3te3te3te3te3te3te3te3te3te3te3te3te3te3te3te3te3:"
SHORT = dict(nqn=SUB, nsid=1, backing_file="/var/tmp/tls.img", backing_size_mb=64, backing_device="",
             transport="tcp", address="10.99.0.1", trsvcid="4420", port_id=30, allowed_hosts=[TE2, TE3],
             initiator_group="", allow_any_host=False)


def document(subsystems, ports, short=None):
    topo = resolve_devices(normalize(subsystems, ports, short or SHORT, []), [])
    return build_document(topo, {}, {})


def test_short_form_tls_required_sets_tsas_and_treq_required():
    doc = document([], [], dict(SHORT, tls="required"))
    assert doc["ports"][0]["addr"] == {"trtype": "tcp", "adrfam": "ipv4", "traddr": "10.99.0.1", "trsvcid": "4420",
                                       "treq": "required", "tsas": "tls1.3"}
    assert tls_ports(doc) == {30: "required"}


def test_tls_allowed_lets_plain_tcp_in_too():
    doc = document([], [], dict(SHORT, tls="allowed"))
    assert doc["ports"][0]["addr"]["treq"] == "not required"
    assert doc["ports"][0]["addr"]["tsas"] == "tls1.3"
    assert tls_ports(doc) == {30: "allowed"}


def test_without_tls_the_port_address_is_as_before():
    for short in (SHORT, dict(SHORT, tls="none")):
        addr = document([], [], short)["ports"][0]["addr"]
        assert "tsas" not in addr and "treq" not in addr


def test_tls_on_rdma_and_unknown_modes_are_refused_naming_the_variable():
    with pytest.raises(TopologyError) as exc:
        normalize([], [], dict(SHORT, transport="rdma", tls="required"), [])
    assert exc.value.errors == ["nvmeof_target_tls: TLS is for NVMe/TCP ports; this port's transport is rdma"]
    with pytest.raises(TopologyError) as exc:
        normalize([], [{"id": 1, "transport": "tcp", "address": "10.99.0.1", "tls": True}], SHORT, [])
    assert exc.value.errors == ["nvmeof_target_ports[0].tls: True is not one of none, required, allowed"]


def test_keys_pair_each_allowed_host_with_its_subsystems_and_discovery():
    ports = [{"id": 1, "transport": "tcp", "address": "10.99.0.1", "tls": "required"},
             {"id": 2, "transport": "tcp", "address": "10.99.0.1", "service_id": "4421"}]
    subs = [{"nqn": SUB, "namespaces": [{"file": "/var/tmp/a.img"}], "allowed_hosts": [TE2, TE3], "ports": [1]},
            {"nqn": PLAIN, "namespaces": [{"file": "/var/tmp/b.img"}], "allowed_hosts": [TE2], "ports": [2]}]
    keys = target_tls_keys(document(subs, ports), {TE2: PSK2, TE3: PSK3})
    assert [(k["hostnqn"], k["subsysnqn"], k["psk"]) for k in keys] == [
        (TE2, DISCOVERY_NQN, PSK2), (TE2, SUB, PSK2), (TE3, DISCOVERY_NQN, PSK3), (TE3, SUB, PSK3)]


def test_a_host_without_psk_is_an_error_on_a_required_port_and_left_out_on_an_allowed_one():
    with pytest.raises(TlsKeyError) as exc:
        target_tls_keys(document([], [], dict(SHORT, tls="required")), {TE2: PSK2, TE3: ""})
    assert len(exc.value.errors) == 1
    assert exc.value.errors[0].startswith("host %s is allowed on %s, which a port requiring TLS exports" % (TE3, SUB))
    keys = target_tls_keys(document([], [], dict(SHORT, tls="allowed")), {TE2: PSK2})
    assert [k["hostnqn"] for k in keys] == [TE2, TE2]


def test_allow_any_host_gets_a_key_for_every_host_with_a_psk():
    short = dict(SHORT, tls="required", allowed_hosts=[], allow_any_host=True)
    keys = target_tls_keys(document([], [], short), {TE3: PSK3, TE2: PSK2})
    assert sorted(set(k["hostnqn"] for k in keys)) == [TE2, TE3]


def test_no_tls_port_needs_no_key():
    assert target_tls_keys(document([], [], SHORT), {TE2: PSK2}) == []
