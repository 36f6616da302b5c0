"""What the failover runs in side_effect recorded (/root/aiinfra-mp-failover.json on te2)
and what te2's sysfs shows afterwards."""

import json

import pytest

NQN = "nqn.2024-04.io.aiinfra.lab:te1.mp"
RESULT = "/root/aiinfra-mp-failover.json"


@pytest.fixture(scope="module")
def result(te2):
    return json.loads(te2.check_output("cat %s", RESULT))


def path(subsystem, nsid, controller):
    head = [h for h in subsystem["heads"] if h["nsid"] == nsid][0]
    return [p for p in head["paths"] if p["controller"] == controller][0]


def other_paths(subsystem, nsid, controller):
    head = [h for h in subsystem["heads"] if h["nsid"] == nsid][0]
    return [p for p in head["paths"] if p["controller"] != controller]


def test_head_devices_are_multipath_heads_with_two_live_paths(te2):
    subsys = te2.check_output("grep -l '^%s$' /sys/class/nvme-subsystem/*/subsysnqn", NQN).split("/")[4]
    assert te2.check_output("cat /sys/module/nvme_core/parameters/multipath") == "Y"
    assert te2.check_output("cat /sys/class/nvme-subsystem/%s/iopolicy", subsys) == "round-robin"
    ctrls = te2.check_output("ls /sys/class/nvme-subsystem/%s | grep -E '^nvme[0-9]+$'", subsys).split()
    assert len(ctrls) == 2
    for ctrl in ctrls:
        assert te2.check_output("cat /sys/class/nvme/%s/state", ctrl) == "live"
    heads = te2.check_output("ls /sys/class/nvme-subsystem/%s | grep -E '^nvme[0-9]+n[0-9]+$'", subsys).split()
    assert len(heads) == 2


def test_ana_states_per_group_and_port(te2, result):
    state = result["events"][0]["back_state"]
    by_nsid = dict((h["nsid"], sorted((p["traddr"], p["trsvcid"], p["ana_state"]) for p in h["paths"]))
                   for h in state["heads"])
    # Group 1 optimized on both ports, group 2 optimized on port 1 only.
    assert [s for _a, _p, s in by_nsid[1]] == ["optimized", "optimized"]
    assert sorted(s for _a, _p, s in by_nsid[2]) == ["non-optimized", "optimized"]


def test_fio_verified_every_block_without_error(result):
    fio = result["fio"]
    assert int(fio["rc"]) == 0 and fio["errors"] == [] and fio["verify_messages"] == [], fio
    assert float(fio["write_iops"]) > 0


@pytest.mark.parametrize("index, name", [(0, "link_down"), (1, "ana_inaccessible")])
def test_io_went_on_over_the_other_path_and_the_path_came_back(result, index, name):
    event = result["events"][index]
    assert event["name"] == name
    ctrl = result["path_b_controller"]
    lost = path(event["lost_state"], 1, ctrl)
    still = path(event["still_down"], 1, ctrl)
    if name == "link_down":
        assert lost["state"] != "live" and still["state"] != "live"
    else:
        assert lost["ana_state"] == still["ana_state"] == "inaccessible"
    # No I/O completed on the lost path while it was away; the other path carried it.
    assert still["ios"] == lost["ios"]
    others_before = sum(p["ios"] for p in other_paths(event["lost_state"], 1, ctrl))
    others_after = sum(p["ios"] for p in other_paths(event["still_down"], 1, ctrl))
    assert others_after > others_before
    back = path(event["back_state"], 1, ctrl)
    assert back["state"] == "live" and back["ana_state"] == "optimized"
    assert int(event["back_ms"]) > int(event["end_ms"]) > int(event["start_ms"])


def test_io_never_stopped_for_good(result):
    timeline = result["fio"]["timeline"]
    assert timeline["points"], "fio logged no IOPS"
    assert all(p["end_ms"] is not None for p in timeline["pauses"]), timeline["pauses"]
    first = int(result["events"][0]["start_ms"])
    last = int(result["events"][1]["back_ms"])
    after = [p for p in timeline["points"] if p["t_ms"] > last]
    assert after and after[-1]["total_iops"] > 0
    during = [p for p in timeline["points"] if first <= p["t_ms"] <= last and p["total_iops"] > 0]
    assert during
