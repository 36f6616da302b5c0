"""The nvmeof_port_maintenance filters (plugins/plugin_utils/port_maintenance.py): the target
port from an nvmet_info tree, the refusal, the out/back waits and the closing lines. The hosts'
results come from the real nvme/health.py over a FAKE sysfs (nvme_multipath_fake's layout); the
lab proof on the real kernel is tests/lab/port_maintenance.sh."""

from __future__ import annotations

import copy
import os
import sys

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.filter import nvmeof_port_maintenance as f
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import health
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "module_utils"))
from nvme_multipath_fake import NQN, add_ctrl, add_subsys, write  # noqa: E402

ADDR_A, ADDR_B = "10.99.0.1", "10.99.1.1"
PATH_A = {"transport": "tcp", "traddr": ADDR_A, "trsvcid": "4420", "nqn": NQN}
PATH_B = dict(PATH_A, traddr=ADDR_B)
FACT = "__nvmeof_port_maintenance_health"


def nvmet(ana2=(("optimized", 1), ("non-optimized", 2)), linked=(NQN,)):
    """nvmet_info's tree (its RETURN shape) with ports 1 (10.99.0.1) and 2 (10.99.1.1)."""
    def port(pid, addr, groups):
        return {"portid": pid, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": addr, "trsvcid": "4420"},
                "param": {}, "referrals": [], "subsystems": list(linked),
                "ana_groups": [{"grpid": g, "ana": {"state": s}} for s, g in groups]}
    return {"hosts": [], "subsystems": [{"nqn": NQN}],
            "ports": [port(2, ADDR_B, ana2), port(1, ADDR_A, (("optimized", 1), ("optimized", 2)))]}


def host(root, a=("live", "optimized"), b=("live", "optimized"), paths=(PATH_A, PATH_B)):
    """nvme_health's result for a host with path A (controller 1) and path B (controller 2), each
    given as (controller state or None for removed, ANA state of both heads)."""
    add_subsys(root, 1, NQN, heads=(1, 2))
    ctl = os.path.join(str(root), "sys", "class", "nvme-fabrics", "ctl")
    os.makedirs(ctl, exist_ok=True)
    for c, addr, (state, ana) in ((1, ADDR_A, a), (2, ADDR_B, b)):
        if state is None:
            continue
        add_ctrl(root, c, 1, addr, state=state, heads=(1, 2), ana={1: ana, 2: ana})
        for name, value in (("subsysnqn", NQN), ("hostnqn", "nqn.2014-08.org.nvmexpress:uuid:te2"),
                            ("ctrl_loss_tmo", "600"), ("reconnect_delay", "2"), ("fast_io_fail_tmo", "off"),
                            ("kato", "5")):
            write(root, "sys/class/nvme/nvme%d/%s" % (c, name), value)
        os.symlink(os.path.join("..", "..", "nvme", "nvme%d" % c), os.path.join(ctl, "nvme%d" % c))
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import MultipathSysfs
    sys_root = os.path.join(str(root), "sys")
    configured = health.configured_from_records([("rec.json", {"connections": list(paths)})])
    return health.host_health(configured, FabricsSysfs(sys_root=sys_root).controllers(),
                              MultipathSysfs(sys_root=sys_root, dev_root=str(root)).subsystems())


def port2(tree=None):
    return f.nvmeof_port_maintenance_port(tree or nvmet(), "2", "te1")


def plan(results, action="round", record=None, force=False, port=None):
    hostvars = dict((h, {FACT: {"before": r}}) for h, r in results.items())
    return f.nvmeof_port_maintenance_plan(port or port2(), action, sorted(hostvars), hostvars, FACT, record, force)


def test_the_port_is_read_with_its_address_links_and_ana_states():
    port = port2()
    assert (port["port_id"], port["trtype"], port["traddr"], port["trsvcid"]) == (2, "tcp", ADDR_B, "4420")
    assert port["subsystems"] == [NQN]
    assert port["ana_groups"] == [{"grpid": 1, "state": "optimized"}, {"grpid": 2, "state": "non-optimized"}]
    assert port["label"] == "port 2 (tcp 10.99.1.1:4420 on te1)"


@pytest.mark.parametrize("value, message", [
    ("two", "the port id must be an integer from 0 to 65535, got 'two'"),
    (None, "got None"),
    (70000, "got 70000"),
    (7, "port 7 is not on te1 (its nvmet ports: 1, 2)"),
])
def test_a_bad_port_fails_naming_the_value(value, message):
    with pytest.raises(AnsibleFilterError, match=message.replace("(", r"\(").replace(")", r"\)")):
        f.nvmeof_port_maintenance_port(nvmet(), value, "te1")


def test_a_host_with_another_usable_path_is_affected_and_not_refused(tmp_path):
    decided = plan({"te2": host(tmp_path)})
    assert decided["refusals"] == []
    [path] = decided["hosts"]["te2"]
    assert path["label"] == NQN + " tcp 10.99.1.1:4420"
    assert path["other_usable"] == [NQN + " tcp 10.99.0.1:4420"]
    assert path["ana_states"] == {"nvme1n1": "optimized", "nvme1n2": "optimized"}
    assert decided["out_groups"] == [{"grpid": 1, "state": "inaccessible"}, {"grpid": 2, "state": "inaccessible"}]
    assert decided["back_groups"] == [{"grpid": 1, "state": "optimized"}, {"grpid": 2, "state": "non-optimized"}]
    assert decided["record"]["ana_groups"] == decided["back_groups"]
    assert decided["record"]["hosts"] == decided["hosts"]
    assert decided["lines"] == ["te2: %s moves its I/O from tcp 10.99.1.1:4420 to tcp 10.99.0.1:4420" % NQN]


@pytest.mark.parametrize("other", [("connecting", "optimized"), ("live", "inaccessible"), (None, "optimized")],
                         ids=["reconnecting", "ana-inaccessible", "removed"])
def test_the_last_usable_path_through_the_port_is_refused_naming_host_subsystem_and_port(tmp_path, other):
    decided = plan({"te2": host(tmp_path, a=other)})
    [refusal] = decided["refusals"]
    assert refusal.startswith("te2: subsystem %s would be left with no usable path: its only usable path goes "
                              "through port 2 (tcp 10.99.1.1:4420 on te1)" % NQN)
    assert refusal.endswith("; its other paths: tcp 10.99.0.1:4420 %s" % (other[0] or "missing") + (
        " (ANA nvme1n1 %s, nvme1n2 %s)" % (other[1], other[1]) if other[0] else ""))


def test_a_live_controller_through_the_port_that_no_configured_path_accounts_for_is_refused(tmp_path):
    # te2 configured only path A; controller 2 (path B, through port 2) is another tool's.
    result = host(tmp_path, paths=(PATH_A,))
    assert result["other_controllers"][0]["controller"] == "nvme2"
    decided = plan({"te2": result})
    assert decided["refusals"] == [
        "te2: nvme2 holds %s through port 2 (tcp 10.99.1.1:4420 on te1) (live), a connection the nvmeof_initiator "
        "role did not configure, so its other paths are unknown" % NQN]
    assert decided["hosts"] == {}
    # Another tool's controller through port 1 is no refusal for port 2, and no other path either:
    # the configured path B through port 2 has none the role configured.
    [refusal] = plan({"te2": host(tmp_path / "b", paths=(PATH_B,))})["refusals"]
    assert refusal.endswith("its only usable path goes through port 2 (tcp 10.99.1.1:4420 on te1); its other paths: "
                            "none configured")


def test_an_initiator_whose_paths_were_not_read_is_refused_since_its_use_of_the_port_is_unknown(tmp_path):
    hostvars = {"te2": {FACT: {"before": host(tmp_path)}}, "te3": {}}
    decided = f.nvmeof_port_maintenance_plan(port2(), "out", ["te2", "te3"], hostvars, FACT)
    assert decided["refusals"] == ["te3: its paths could not be read (unreachable, failed, or outside --limit), so "
                                   "whether it uses port 2 (tcp 10.99.1.1:4420 on te1) is unknown"]
    forced = f.nvmeof_port_maintenance_plan(port2(), "out", ["te2", "te3"], hostvars, FACT, None, True)
    assert forced["refusals"] == [] and forced["lines"][-1].startswith("forced: te3: its paths could not be read")


def test_force_lets_the_refusal_pass_and_says_so(tmp_path):
    decided = plan({"te2": host(tmp_path, a=("connecting", "optimized"))}, force=True)
    assert decided["refusals"] == []
    assert decided["lines"][-1].startswith("forced: te2: subsystem")


def test_force_false_as_an_awx_survey_passes_it_still_refuses(tmp_path):
    assert plan({"te2": host(tmp_path, a=("connecting", "optimized"))}, force="false")["refusals"]


def test_a_host_without_a_usable_path_through_the_port_is_not_affected(tmp_path):
    # Path B already out (ANA inaccessible) and path A live: nothing to refuse, nobody to wait for.
    decided = plan({"te2": host(tmp_path, b=("live", "inaccessible"))})
    assert decided["hosts"] == {} and decided["refusals"] == []
    assert decided["lines"] == ["no initiator has a usable path through port 2 (tcp 10.99.1.1:4420 on te1)"]


def test_a_subsystem_not_linked_to_the_port_is_not_affected(tmp_path):
    port = port2(nvmet(linked=("nqn.2024-04.io.aiinfra.lab:te1.other",)))
    decided = plan({"te2": host(tmp_path, a=("connecting", "optimized"))}, port=port)
    assert decided["hosts"] == {} and decided["refusals"] == []


def test_an_unknown_action_is_refused(tmp_path):
    with pytest.raises(AnsibleFilterError, match="unknown action 'drain': use one of out, back, round"):
        plan({"te2": host(tmp_path)}, action="drain")


def test_back_puts_back_the_recorded_states_and_waits_for_the_recorded_paths(tmp_path):
    first = plan({"te2": host(tmp_path / "a")}, action="out")
    # The port is out now (both groups inaccessible), the record on the target says what was there.
    out_now = port2(nvmet(ana2=(("inaccessible", 1), ("inaccessible", 2))))
    decided = plan({"te2": host(tmp_path / "b", b=("live", "inaccessible"))}, action="back",
                   record=copy.deepcopy(first["record"]), port=out_now)
    assert decided["back_groups"] == [{"grpid": 1, "state": "optimized"}, {"grpid": 2, "state": "non-optimized"}]
    assert decided["hosts"] == first["hosts"]
    assert decided["record"] == first["record"]
    assert decided["lines"][0].startswith("port 2 (tcp 10.99.1.1:4420 on te1) is out of service since an earlier run")


def test_back_without_a_record_on_a_port_in_service_changes_nothing(tmp_path):
    decided = plan({"te2": host(tmp_path)}, action="back")
    assert decided["back_groups"] == [{"grpid": 1, "state": "optimized"}, {"grpid": 2, "state": "non-optimized"}]
    assert decided["hosts"] == {} and decided["refusals"] == []
    assert decided["lines"] == ["port 2 (tcp 10.99.1.1:4420 on te1) is in service (no maintenance record, every ANA "
                                "group optimized or non-optimized): nothing to put back"]


def test_back_without_a_record_on_a_port_out_of_service_fails_saying_there_is_nothing_to_put_back(tmp_path):
    out_now = port2(nvmet(ana2=(("inaccessible", 1), ("optimized", 2))))
    with pytest.raises(AnsibleFilterError, match="has no maintenance record"):
        plan({"te2": host(tmp_path)}, action="back", port=out_now)


def test_a_record_of_a_port_that_changed_since_is_refused(tmp_path):
    before = host(tmp_path)
    rec = plan({"te2": before}, action="out")["record"]
    rec["traddr"] = "10.99.9.9"
    with pytest.raises(AnsibleFilterError, match="was written for port 2 .*10.99.9.9.*which has changed"):
        plan({"te2": before}, action="back", record=rec)


def test_out_waits_until_the_path_is_no_longer_usable_and_back_until_its_ana_states_are_back(tmp_path):
    expected = plan({"te2": host(tmp_path / "before")})["hosts"]["te2"]
    both = host(tmp_path / "both")
    out = host(tmp_path / "out", b=("live", "inaccessible"))
    half = host(tmp_path / "half", b=("live", "non-optimized"))
    pending = f.nvmeof_port_maintenance_pending
    assert pending(both, expected, "out") == [
        "%s tcp 10.99.1.1:4420 live (ANA nvme1n1 optimized, nvme1n2 optimized): still usable, waiting for ANA "
        "inaccessible" % NQN]
    assert pending(out, expected, "out") == []
    assert pending(out, expected, "back")[0].endswith("waiting for it live with ANA nvme1n1 optimized, nvme1n2 optimized")
    # Usable again but not yet with the states it had: still waiting.
    assert len(pending(half, expected, "back")) == 1
    assert pending(both, expected, "back") == []
    assert pending({}, expected, "back") == ["%s tcp 10.99.1.1:4420: not configured on the host any more" % NQN]
    with pytest.raises(AnsibleFilterError, match="phase must be out or back"):
        pending(both, expected, "round")


def test_the_report_gives_usable_paths_before_during_and_after_per_host(tmp_path):
    before = host(tmp_path / "before")
    decided = plan({"te2": before})
    hostvars = {"te2": {FACT: {"before": before, "during": host(tmp_path / "out", b=("live", "inaccessible")),
                               "after": host(tmp_path / "after")}},
                "te3": {FACT: {"before": host(tmp_path / "te3", b=("live", "inaccessible"))}}, "te9": {}}
    lines = f.nvmeof_port_maintenance_report(decided, ["te2", "te3", "te9"], hostvars, FACT)
    assert lines == [
        "port 2 (tcp 10.99.1.1:4420 on te1) round: 1 host(s) with a path through it",
        "te2 %s: usable paths before 2/2, during 1/2, after 2/2" % NQN,
        "te3 %s: usable paths before 1/2, during -, after - (not using the port)" % NQN,
    ]
