"""Desired-state validation, controller matching, drift, plan and nvme-cli config editing."""

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError, controller_drift, desired_from_params, expected_ctrl_loss_tmo, matching_controllers,
    other_identities_at_address, plan_connection,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.persist import (
    config_has_port, config_with_port, config_without_port, parse_config, unit_context, unit_needs_condition_fix,
)
from nvme_params import NQN, connect_params  # tests/unit/plugins/module_utils/nvme_params.py

HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:819aca5a-f59f-42a3-bc77-d440efb6a6b0"
KEY = "DHHC-1:00:ZmFrZS1ob3N0LWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"
KEY2 = "DHHC-1:00:ZmFrZS1jdHJsLWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"


def params(**over):
    return connect_params(**over)


def ctrl(name="nvme0", **over):
    base = dict(name=name, state="live", transport="tcp", subsysnqn=NQN, traddr="10.99.0.1", trsvcid="4420",
                host_traddr=None, host_iface=None, src_addr="10.99.0.2", hostnqn=HOSTNQN,
                hostid="819aca5a-f59f-42a3-bc77-d440efb6a6b0", ctrl_loss_tmo=600, reconnect_delay=10,
                keep_alive_tmo=5, nr_io_queues=2, queue_size=128, namespaces=["nvme0n1"])
    base.update(over)
    return base


# -- validation ------------------------------------------------------------------

@pytest.mark.parametrize("over,needle", [
    (dict(nqn="iqn.2024-01.io.x:a"), "nqn='iqn.2024-01.io.x:a' is not a valid NQN"),
    (dict(nqn="nqn.2024-13.io.x:a"), "not a valid NQN"),
    (dict(nqn="nqn.2024-01.io.x:" + "a" * 220), "at most 223"),
    (dict(nqn="nqn.2014-08.org.nvmexpress:uuid:not-a-uuid"), "not a valid UUID NQN"),
    (dict(nqn="nqn.2014-08.org.nvmexpress.discovery"), "nvme_discover"),
    (dict(traddr="10.99.0.256"), "traddr='10.99.0.256' is not an IPv4 or IPv6 address"),
    (dict(traddr=None), "traddr is required for transport=tcp"),
    (dict(traddr="target.example.com"), "not an IPv4 or IPv6"),
    (dict(trsvcid="70000"), "trsvcid='70000' is not a port number"),
    (dict(trsvcid="44x0"), "trsvcid='44x0'"),
    (dict(transport="fc", traddr="10.0.0.1"), "not an FC address"),
    (dict(transport="loop", traddr="10.0.0.1"), "transport=loop"),
    (dict(host_traddr="eth1"), "host_traddr='eth1'"),
    (dict(transport="rdma", host_iface="eth1"), "only supported with transport=tcp"),
    (dict(hostid="nope"), "hostid='nope' is not a UUID"),
    (dict(hostnqn="host1"), "hostnqn='host1'"),
    (dict(queue_size=4), "queue_size=4"),
    (dict(ctrl_loss_tmo=-2), "ctrl_loss_tmo=-2 must be >= -1"),
    (dict(nr_io_queues=0), "nr_io_queues=0 must be >= 1"),
    (dict(dhchap_ctrl_secret=KEY), "needs dhchap_secret"),
    (dict(tls_key="0x1"), "only used with tls=true"),
    (dict(transport="rdma", tls=True), "tls=true needs transport=tcp"),
])
def test_bad_input_is_named(over, needle):
    with pytest.raises(ValidationError) as info:
        desired_from_params(params(**over))
    assert needle in str(info.value)


def test_malformed_secret_is_rejected_without_echoing_it():
    with pytest.raises(ValidationError) as info:
        desired_from_params(params(dhchap_secret="hunter2-secret"))
    assert "dhchap_secret" in str(info.value) and "hunter2" not in str(info.value)


def test_valid_input_is_normalized():
    desired = desired_from_params(params(traddr="fd00:0::1", trsvcid="04420", host_traddr="fd00::2",
                                         hostid="819ACA5A-F59F-42A3-BC77-D440EFB6A6B0", dhchap_secret=KEY))
    assert desired["traddr"] == "fd00::1" and desired["trsvcid"] == "4420" and desired["host_traddr"] == "fd00::2"
    assert desired["hostid"] == "819aca5a-f59f-42a3-bc77-d440efb6a6b0"
    fc = desired_from_params(params(transport="fc", traddr="NN-0x1000000044001123:PN-0x2000000055001123".lower()))
    assert fc["trsvcid"] is None
    loop = desired_from_params(params(transport="loop", traddr=None))
    assert loop["traddr"] is None and loop["trsvcid"] is None


# -- matching --------------------------------------------------------------------

def test_match_is_by_parsed_fields_never_substring():
    desired = desired_from_params(params(traddr="10.0.0.1"))
    others = [ctrl("nvme0", traddr="10.0.0.10"), ctrl("nvme1", traddr="110.0.0.1"),
              ctrl("nvme2", traddr="10.0.0.1", trsvcid="44200"), ctrl("nvme3", traddr="10.0.0.1")]
    assert [c["name"] for c in matching_controllers(others, desired)] == ["nvme3"]


def test_match_needs_same_nqn_and_transport_and_skips_deleting():
    desired = desired_from_params(params())
    ctrls = [ctrl("nvme0", subsysnqn=NQN + "2"), ctrl("nvme1", transport="rdma"), ctrl("nvme2", state="deleting"),
             ctrl("nvme3", state="connecting"), ctrl("nvme4")]
    assert [c["name"] for c in matching_controllers(ctrls, desired)] == ["nvme3", "nvme4"]


def test_match_ipv6_spellings_and_host_traddr():
    desired = desired_from_params(params(traddr="fd00::1", host_traddr="fd00::2"))
    ctrls = [ctrl("nvme0", traddr="fd00:0:0::1", host_traddr="fd00:0::2"), ctrl("nvme1", traddr="fd00::1"),
             ctrl("nvme2", traddr="fd00::1", host_traddr="fd00::3")]
    assert [c["name"] for c in matching_controllers(ctrls, desired)] == ["nvme0"]


def test_given_hostnqn_matches_only_that_host_identity():
    # One machine connecting to one subsystem as several hosts (nvme connect --hostnqn):
    # the kernel keeps one controller per host NQN, so each identity's connection is its
    # own; without a given hostnqn any host NQN matches (and differs as drift).
    other = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000002"
    ctrls = [ctrl("nvme0"), ctrl("nvme1", hostnqn=other)]
    mine = desired_from_params(params(hostnqn=other))
    assert [c["name"] for c in matching_controllers(ctrls, mine)] == ["nvme1"]
    mine["hostnqn"] = other  # the module fills in the resolved identity
    assert [c["name"] for c in matching_controllers(ctrls, mine)] == ["nvme1"]
    default = desired_from_params(params())
    default["hostnqn"] = HOSTNQN  # resolved from /etc/nvme/hostnqn
    assert [c["name"] for c in matching_controllers(ctrls, default)] == ["nvme0", "nvme1"]


def test_other_identities_at_the_same_address_are_found_for_the_kernel_connect():
    # nvme-cli 2.3 takes another host NQN's controller at this address for this one
    # ("already connected"); the module connects through /dev/nvme-fabrics then.
    other = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000002"
    mine = desired_from_params(params(hostnqn=other))
    mine["hostnqn"] = other
    assert [c["name"] for c in other_identities_at_address([ctrl("nvme0")], mine)] == ["nvme0"]
    # not: its own controller, another address, another subsystem, one being deleted
    assert other_identities_at_address([ctrl("nvme1", hostnqn=other), ctrl("nvme2", trsvcid="4421"),
                                        ctrl("nvme3", subsysnqn=NQN + "x"), ctrl("nvme4", state="deleting")],
                                       mine) == []
    first = desired_from_params(params())
    first["hostnqn"] = HOSTNQN
    assert other_identities_at_address([ctrl("nvme1", hostnqn=other)], first)[0]["name"] == "nvme1"
    assert other_identities_at_address([ctrl("nvme0")], first) == []


def test_no_host_traddr_given_matches_any_source():
    desired = desired_from_params(params())
    assert len(matching_controllers([ctrl("nvme0", host_traddr="10.99.0.2"), ctrl("nvme1")], desired)) == 2


# -- drift -----------------------------------------------------------------------

def test_no_drift_when_nothing_requested():
    desired = desired_from_params(params())
    assert controller_drift(ctrl(), {}, desired) == {}


def test_drift_of_tunables_uses_kernel_rounding_and_cpu_cap():
    desired = desired_from_params(params(ctrl_loss_tmo=25, reconnect_delay=10, nr_io_queues=8, queue_size=64,
                                         keep_alive_tmo=5))
    # 25 s with 10 s delay is stored as 3 reconnects: sysfs says 30.
    assert controller_drift(ctrl(ctrl_loss_tmo=30, queue_size=64), {}, desired, online_cpus=2) == {}
    drift = controller_drift(ctrl(ctrl_loss_tmo=600, queue_size=128), {}, desired, online_cpus=2)
    assert drift == {"ctrl_loss_tmo": {"current": 600, "desired": 30},
                     "queue_size": {"current": 128, "desired": 64}}
    assert controller_drift(ctrl(nr_io_queues=2), {}, desired, online_cpus=4)["nr_io_queues"] == {
        "current": 2, "desired": 4}


@pytest.mark.parametrize("tmo,delay,expected", [(600, None, 600), (-1, 10, -1), (5, 10, 10), (0, 10, 0), (None, 1, None)])
def test_expected_ctrl_loss_tmo(tmo, delay, expected):
    assert expected_ctrl_loss_tmo(tmo, delay) == expected


def test_secret_drift_never_shows_values():
    desired = desired_from_params(params(dhchap_secret=KEY, dhchap_ctrl_secret=KEY2))
    assert controller_drift(ctrl(), {"dhchap_secret": KEY, "dhchap_ctrl_secret": KEY2}, desired) == {}
    drift = controller_drift(ctrl(), {"dhchap_secret": KEY2, "dhchap_ctrl_secret": None}, desired)
    assert drift == {"dhchap_secret": {"current": "set", "desired": "set, different"},
                     "dhchap_ctrl_secret": {"current": "unset", "desired": "set"}}
    assert KEY not in repr(drift) and KEY2 not in repr(drift)
    no_auth = desired_from_params(params())
    assert controller_drift(ctrl(), {"dhchap_secret": KEY}, no_auth) == {
        "dhchap_secret": {"current": "set", "desired": "unset"}}


def test_hostnqn_drift():
    desired = desired_from_params(params(hostnqn="nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"))
    assert set(controller_drift(ctrl(), {}, desired)) == {"hostnqn"}


# -- plan ------------------------------------------------------------------------

def test_plan_connect_when_absent_and_nothing_when_present():
    desired = desired_from_params(params())
    assert plan_connection([], {}, desired, "connected", False, False, []) == ([("connect", None)], None)
    assert plan_connection([ctrl()], {}, desired, "connected", False, False, []) == ([], None)


def test_plan_drift_reconnects_only_when_allowed():
    desired = desired_from_params(params())
    drifts = {"nvme0": {"queue_size": {}}}
    assert plan_connection([ctrl()], drifts, desired, "connected", False, False, []) == ([], None)
    assert plan_connection([ctrl()], drifts, desired, "connected", True, False, []) == (
        [("disconnect", "nvme0"), ("connect", None)], None)
    ops, refusal = plan_connection([ctrl()], drifts, desired, "connected", True, False, ["/dev/nvme0n1 mounted on /mnt"])
    assert ops == [] and "mounted on /mnt" in refusal and "force=true" in refusal


def test_plan_disconnect_exactly_the_matches_and_refuses_when_mounted():
    desired = desired_from_params(params())
    matched = [ctrl("nvme1"), ctrl("nvme4")]
    assert plan_connection(matched, {}, desired, "disconnected", False, False, []) == (
        [("disconnect", "nvme1"), ("disconnect", "nvme4")], None)
    assert plan_connection([], {}, desired, "disconnected", False, False, []) == ([], None)
    ops, refusal = plan_connection(matched, {}, desired, "disconnected", False, False, ["/dev/nvme1n1 mounted on /data"])
    assert ops == [] and refusal.startswith("refusing to disconnect nvme1, nvme4 from " + NQN)
    assert plan_connection(matched, {}, desired, "disconnected", False, True, ["x"])[0] == [
        ("disconnect", "nvme1"), ("disconnect", "nvme4")]


def test_plan_disconnect_as_one_identity_leaves_the_others():
    # The nvmeof_initiator teardown disconnects a connection recorded with a hostnqn as
    # that identity: the controllers of the other identities at the same address stay.
    others = ["nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-00000000000%d" % i for i in (1, 2)]
    ctrls = [ctrl("nvme0"), ctrl("nvme1", hostnqn=others[0]), ctrl("nvme2", hostnqn=others[1])]
    desired = desired_from_params(params(hostnqn=others[1]))
    assert plan_connection(matching_controllers(ctrls, desired), {}, desired, "disconnected", False, False, []) == (
        [("disconnect", "nvme2")], None)
    # Without a hostnqn (records of paths that connect as this host) every identity's goes, as before.
    everyone = desired_from_params(params())
    assert plan_connection(matching_controllers(ctrls, everyone), {}, everyone, "disconnected", False, False, [])[0] == [
        ("disconnect", "nvme0"), ("disconnect", "nvme1"), ("disconnect", "nvme2")]


# -- /etc/nvme/config.json -----------------------------------------------------------

def test_config_add_update_remove_roundtrip():
    desired = desired_from_params(params(dhchap_secret=KEY, dhchap_ctrl_secret=KEY2, ctrl_loss_tmo=300))
    config = config_with_port([], desired, HOSTNQN, "819aca5a-f59f-42a3-bc77-d440efb6a6b0")
    assert config == [{"hostnqn": HOSTNQN, "hostid": "819aca5a-f59f-42a3-bc77-d440efb6a6b0", "subsystems": [
        {"nqn": NQN, "ports": [{"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "ctrl_loss_tmo": 300,
                                "dhchap_key": KEY, "dhchap_ctrl_key": KEY2}]}]}]
    assert config_has_port(config, desired, HOSTNQN)
    # Same again: no change (idempotent).
    assert config_with_port(config, desired, HOSTNQN, None) == config
    # A changed setting replaces the port, does not add a second one.
    changed = config_with_port(config, desired_from_params(params(ctrl_loss_tmo=60)), HOSTNQN, None)
    assert changed[0]["subsystems"][0]["ports"] == [{"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420",
                                                     "ctrl_loss_tmo": 60}]
    assert config_without_port(config, desired, HOSTNQN) == []


def test_config_removal_keeps_everything_else():
    other_port = desired_from_params(params(transport="rdma", trsvcid="4421"))
    other_subsys = desired_from_params(params(nqn=NQN + "2"))
    desired = desired_from_params(params())
    config = [{"hostnqn": HOSTNQN, "dhchap_key": KEY, "subsystems": []}]
    for item in (desired, other_port, other_subsys):
        config = config_with_port(config, item, HOSTNQN, None)
    left = config_without_port(config, desired, HOSTNQN)
    assert not config_has_port(left, desired, HOSTNQN)
    assert config_has_port(left, other_port, HOSTNQN) and config_has_port(left, other_subsys, HOSTNQN)
    # A host entry with its own settings stays even when its subsystems go.
    only = config_with_port([{"hostnqn": HOSTNQN, "dhchap_key": KEY}], desired, HOSTNQN, None)
    assert config_without_port(only, desired, HOSTNQN) == [{"hostnqn": HOSTNQN, "dhchap_key": KEY, "subsystems": []}]


def test_parse_config_errors_name_the_file():
    assert parse_config(None, "/etc/nvme/config.json") == []
    assert parse_config("  \n", "/etc/nvme/config.json") == []
    with pytest.raises(ValidationError, match="/etc/nvme/config.json is not valid JSON"):
        parse_config("{", "/etc/nvme/config.json")
    with pytest.raises(ValidationError, match="JSON list of hosts"):
        parse_config("{}", "/etc/nvme/config.json")


def test_autoconnect_condition_quirk_detection():
    bookworm = "[Unit]\nConditionPathExists=|!/etc/nvme/config.json\nConditionPathExists=|!/etc/nvme/discovery.conf\n"
    fixed = "[Unit]\nConditionPathExists=|/etc/nvme/config.json\nConditionPathExists=|/etc/nvme/discovery.conf\n"
    assert unit_needs_condition_fix(bookworm)
    assert not unit_needs_condition_fix(fixed) and not unit_needs_condition_fix(None)


def test_config_port_of_a_tls_connection_says_tls_and_holds_no_key():
    desired = desired_from_params(params(tls=True, keyring=".nvme"))
    port = config_with_port([], desired, HOSTNQN, None)[0]["subsystems"][0]["ports"][0]
    assert port == {"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "tls": True, "keyring": ".nvme"}


def test_a_tls_connection_also_saves_its_discovery_entry_until_the_last_tls_subsystem_goes():
    # Lab (trixie, nvme-cli 2.13): without it nvme connect-all reached the TLS port's discovery
    # controller over plain TCP, was reset, and connected nothing, silently, at boot.
    disc = "nqn.2014-08.org.nvmexpress.discovery"
    one = desired_from_params(params(tls=True))
    two = desired_from_params(params(tls=True, nqn=NQN + "2"))
    config = config_with_port([], one, HOSTNQN, None)
    subs = config[0]["subsystems"]
    assert [s["nqn"] for s in subs] == [NQN, disc]
    assert subs[1]["ports"] == [{"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "tls": True}]
    assert config_with_port(config, one, HOSTNQN, None) == config
    config = config_with_port(config, two, HOSTNQN, None)
    assert [s["nqn"] for s in config[0]["subsystems"]] == [NQN, disc, NQN + "2"]
    left = config_without_port(config, one, HOSTNQN)
    assert [s["nqn"] for s in left[0]["subsystems"]] == [disc, NQN + "2"]
    assert config_without_port(left, two, HOSTNQN) == []
    # A plain connection saves no discovery entry.
    plain = config_with_port([], desired_from_params(params()), HOSTNQN, None)
    assert [s["nqn"] for s in plain[0]["subsystems"]] == [NQN]


def test_concat_needs_tls_and_a_dhchap_secret():
    with pytest.raises(ValidationError, match="concat=true .* needs tls=true and dhchap_secret"):
        desired_from_params(params(concat=True, tls=True))
    assert desired_from_params(params(concat=True, tls=True, dhchap_secret=KEY))["concat"] is True


def test_tls_drift_both_ways():
    # Before this check a plain connection satisfied tls=true (no drift, no change).
    assert controller_drift(ctrl(tls=False), {}, desired_from_params(params(tls=True))) == {
        "tls": {"current": False, "desired": True}}
    assert controller_drift(ctrl(tls=True), {}, desired_from_params(params())) == {
        "tls": {"current": True, "desired": False}}
    assert controller_drift(ctrl(tls=True), {}, desired_from_params(params(tls=True))) == {}


def test_fast_io_fail_tmo_drift_reads_off_as_minus_one():
    # sysfs (6.12) shows "off" for the kernel default and seconds otherwise.
    desired = desired_from_params(params(fast_io_fail_tmo=-1))
    assert controller_drift(ctrl(fast_io_fail_tmo="off"), {}, desired) == {}
    desired = desired_from_params(params(fast_io_fail_tmo=2))
    assert controller_drift(ctrl(fast_io_fail_tmo="2"), {}, desired) == {}
    assert controller_drift(ctrl(fast_io_fail_tmo="off"), {}, desired) == {
        "fast_io_fail_tmo": {"current": -1, "desired": 2}}
    with pytest.raises(ValidationError, match="fast_io_fail_tmo=-2 must be >= -1"):
        desired_from_params(params(fast_io_fail_tmo=-2))


def test_the_autoconnect_context_of_nvme_cli_2_13_is_written_as_the_application():
    # nvme-cli 2.13's unit runs 'nvme connect-all --context=autoconnect'; on the trixie lab that
    # command applied no saved entry without an application (the TLS discovery connection went
    # out as plain TCP and was reset) while a plain 'nvme connect-all' connected over TLS.
    import os
    fixtures = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvme_cli")
    with open(os.path.join(fixtures, "nvmf-autoconnect-service-nvme-cli-2.13.txt")) as handle:
        assert unit_context(handle.read()) == "autoconnect"
    bookworm = "[Service]\nExecStartPre=/sbin/modprobe nvme-fabrics\nExecStart=/usr/sbin/nvme connect-all\n"
    assert unit_context(bookworm) is None and unit_context(None) is None
    desired = desired_from_params(params(tls=True))
    config = config_with_port([], desired, HOSTNQN, None, "autoconnect")
    assert [s.get("application") for s in config[0]["subsystems"]] == ["autoconnect", "autoconnect"]
    assert "application" not in config_with_port([], desired, HOSTNQN, None)[0]["subsystems"][0]


class PollSysfs(object):
    """FAKE FabricsSysfs for the waits: controllers appear live; their block devices are
    files under ``dev`` (created by the test); every controllers() call is counted."""

    def __init__(self, ctrls, dev):
        self.ctrls, self.dev, self.reads = ctrls, dev, 0

    def controllers(self, match=None):
        self.reads += 1
        return [dict(c) for c in self.ctrls if match is None or match(c)]

    def devices_of(self, controllers):
        return [dict(name=n, path=str(self.dev / n)) for c in controllers for n in c["namespaces"]]


def test_new_connections_are_waited_for_together(tmp_path, monkeypatch):
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import host
    sleeps = []
    monkeypatch.setattr(host.time, "sleep", sleeps.append)
    ids = ["nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-%012d" % i for i in range(3)]
    ctrls = [ctrl("nvme%d" % i, hostnqn=h, namespaces=["nvme%dn1" % i]) for i, h in enumerate(ids)]
    for c in ctrls:
        (tmp_path / c["namespaces"][0]).write_text("")
    sysfs = PollSysfs(ctrls, tmp_path)
    wanted = [desired_from_params(params(hostnqn=h)) for h in ids]
    out = host.wait_for_connections(sysfs, wanted, 30)
    # Two rounds that see the same devices, each one read of sysfs for all three.
    assert [(([c["name"] for c in cs]), [d["name"] for d in ds], w) for cs, ds, w in out] == [
        (["nvme%d" % i], ["nvme%dn1" % i], None) for i in range(3)]
    assert sysfs.reads == 2 and sleeps == [0.5]


def test_a_connection_without_its_device_is_reported_after_the_timeout(tmp_path, monkeypatch):
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import host
    monkeypatch.setattr(host.time, "sleep", lambda s: None)
    ids = ["nqn.2014-08.org.nvmexpress:uuid:00000000-0000-4000-8000-%012d" % i for i in range(2)]
    ctrls = [ctrl("nvme%d" % i, hostnqn=h, namespaces=["nvme%dn1" % i]) for i, h in enumerate(ids)]
    (tmp_path / "nvme0n1").write_text("")  # nvme1n1 never appears
    out = host.wait_for_connections(PollSysfs(ctrls, tmp_path), [desired_from_params(params(hostnqn=h)) for h in ids], 0)
    assert [d["name"] for d in out[0][1]] == ["nvme0n1"]
    assert out[1][2] == "controller nvme1 is live but no namespace block device appeared within 0s"
    assert host.wait_for_connections(PollSysfs(ctrls, tmp_path), [], 30) == []
