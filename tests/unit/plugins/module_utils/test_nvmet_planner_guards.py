"""Planner guards and ANA groups (issue 14), planned against state dicts and applied to the
FAKE kernel-like tree of nvmet_fake.py."""

import errno
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import model
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan, simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import plan_port, plan_subsystem
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import normalize_port, normalize_subsystem

from nvmet_fake import SUB, EmulatedTree, fake_namespace, fake_port, fake_subsystem, link, write

QUIET = {"by_subsystem": {}, "by_port": {}, "exact": False}
BUSY = {"by_subsystem": {SUB: 2}, "by_port": {1: 2}, "exact": False}


def texts(ops):
    return [op.text() for op in ops]


def exposed(root, backing=None, **port_kw):
    """SUB with namespace 1 (enabled when backing is given), linked to tcp port 1."""
    fake_subsystem(root, SUB)
    if backing:
        fake_namespace(root, SUB, 1, path=backing, enable="1")
    fake_port(root, 1, trtype="tcp", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4", **port_kw)
    link(root, "subsystems/" + SUB, "ports/1/subsystems/" + SUB)
    write(os.path.join(root, "nvmet", "ports", "1", "param_inline_data_size"), "16384")


def spec(**kw):
    s = {"nqn": SUB}
    s.update(kw)
    return normalize_subsystem(s, check_paths=False)


def port(root, **kw):
    s = {"port_id": 1, "trtype": "tcp", "traddr": "10.99.0.1"}
    s.update(kw)
    return normalize_port(s, os.path.join(root, "sys"))


# --------------------------------------------------------------------------- subsystem attributes


def test_qid_max_change_disconnects_every_controller_so_needs_force(root):
    exposed(root)
    state = EmulatedTree(root).read()
    with pytest.raises(NvmetError, match=r"3?2? live connection\(s\); set force: true to change qid_max"):
        plan_subsystem(state, spec(attributes={"qid_max": 8}), BUSY)
    with pytest.raises(NvmetError, match="cannot tell"):
        plan_subsystem(state, spec(attributes={"qid_max": 8}), None)
    assert texts(plan_subsystem(state, spec(attributes={"qid_max": 8}), BUSY, force=True)) == [
        "write subsystems/%s/attr_qid_max = 8" % SUB]
    # Equal value: nothing to write, nothing to guard.
    assert plan_subsystem(state, spec(attributes={"qid_max": 128}), BUSY) == []


@pytest.mark.parametrize("start,want", [((100, 200), (10, 50)), ((10, 50), (100, 200)), ((1, 65519), (5, 6))])
def test_cntlid_range_moves_in_either_direction(root, start, want):
    fake_subsystem(root, SUB)
    base = os.path.join(root, "nvmet", "subsystems", SUB)
    write(os.path.join(base, "attr_cntlid_min"), str(start[0]))
    write(os.path.join(base, "attr_cntlid_max"), str(start[1]))
    tree = EmulatedTree(root)
    s = spec(attributes={"cntlid_min": want[0], "cntlid_max": want[1]})
    apply_plan(tree, plan_subsystem(tree.read(), s, QUIET))
    attrs = tree.read()["subsystems"][SUB]["attributes"]
    assert (attrs["cntlid_min"], attrs["cntlid_max"]) == (str(want[0]), str(want[1]))


# --------------------------------------------------------------------------- port reconfigure


def test_failed_port_reconfigure_puts_back_settings_and_links(root):
    exposed(root)
    tree = EmulatedTree(root, refuse={"ports/1/addr_trsvcid": errno.EINVAL})
    plan = plan_port(tree.read(), port(root, traddr="10.99.0.2", trsvcid="4421"), QUIET, allow_reconfigure=True)
    with pytest.raises(NvmetError) as err:
        apply_plan(tree, plan)
    assert "put back what was changed before it: write ports/1/addr_traddr = 10.99.0.1, link ports/1/subsystems/" \
        in err.value.msg
    after = tree.read()["ports"][1]
    assert (after["traddr"], after["trsvcid"], after["subsystems"]) == ("10.99.0.1", "4420", [SUB])


def test_failed_put_back_says_exactly_what_is_left(root):
    exposed(root)
    tree = EmulatedTree(root, refuse={"ports/1/addr_trsvcid": errno.EINVAL,
                                      "link ports/1/subsystems/" + SUB: errno.EADDRINUSE})
    plan = plan_port(tree.read(), port(root, traddr="10.99.0.2", trsvcid="4421"), QUIET, allow_reconfigure=True)
    with pytest.raises(NvmetError, match=r"putting back what was changed failed at 'link ports/1/subsystems/.*"
                                         r"put back: write ports/1/addr_traddr = 10.99.0.1; still to put back by hand: "
                                         r"link ports/1/subsystems/"):
        apply_plan(tree, plan)


# --------------------------------------------------------------------------- reading


def test_read_error_is_not_taken_for_absent(root, monkeypatch):
    fake_subsystem(root, SUB)
    real = os.listdir

    def failing(path):
        if path.endswith("/subsystems"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(path)

    monkeypatch.setattr(model.os, "listdir", failing)
    with pytest.raises(NvmetError, match=r"cannot read .*/nvmet/subsystems: Input/output error \(EIO\); not treating"):
        EmulatedTree(root).read()


def test_passthru_subsystem_is_read_and_not_changed(root):
    fake_subsystem(root, SUB)
    write(os.path.join(root, "nvmet", "subsystems", SUB, "passthru", "device_path"), "/dev/nvme0")
    write(os.path.join(root, "nvmet", "subsystems", SUB, "passthru", "enable"), "1")
    state = EmulatedTree(root).read()
    assert state["subsystems"][SUB]["passthru"] == {"device_path": "/dev/nvme0", "enabled": True}
    with pytest.raises(NvmetError, match="is a passthru subsystem .*not supported"):
        plan_subsystem(state, spec(namespaces=[{"nsid": 1, "device_path": "/d"}]), QUIET)


# --------------------------------------------------------------------------- ANA groups


def test_ana_groups_created_set_and_kept(root, backing):
    exposed(root, backing[0])
    tree = EmulatedTree(root)
    want = port(root, subsystems=[SUB], ana_groups=[{"grpid": 1, "state": "non-optimized"},
                                                    {"grpid": 2, "state": "optimized"}])
    plan = plan_port(tree.read(), want, QUIET)
    assert texts(plan) == ["write ports/1/ana_groups/1/ana_state = non-optimized", "mkdir ports/1/ana_groups/2",
                           "write ports/1/ana_groups/2/ana_state = optimized"]
    predicted = simulate(tree.read(), plan)["ports"][1]["ana_groups"]
    apply_plan(tree, plan)
    assert tree.read()["ports"][1]["ana_groups"] == predicted == {1: "non-optimized", 2: "optimized"}
    assert plan_port(tree.read(), want, QUIET) == []
    # Now the namespace may move to group 2 without force.
    move = spec(namespaces=[{"nsid": 1, "device_path": backing[0], "ana_grpid": 2}])
    apply_plan(tree, plan_subsystem(tree.read(), move, BUSY))
    assert tree.read()["subsystems"][SUB]["namespaces"][1]["ana_grpid"] == 2


def test_ana_group_in_use_is_removed_only_with_force(root, backing):
    exposed(root, backing[0])
    write(os.path.join(root, "nvmet", "ports", "1", "ana_groups", "2", "ana_state"), "optimized")
    write(os.path.join(root, "nvmet", "subsystems", SUB, "namespaces", "1", "ana_grpid"), "2")
    tree = EmulatedTree(root)
    purge = port(root, purge_ana_groups=True, ana_groups=[{"grpid": 1}])
    with pytest.raises(NvmetError, match="ANA group 2 is used by %s namespace 1" % SUB):
        plan_port(tree.read(), purge, QUIET)
    assert texts(plan_port(tree.read(), purge, QUIET, force=True)) == ["rmdir ports/1/ana_groups/2"]
    # Without purge, unlisted groups stay.
    assert plan_port(tree.read(), port(root, ana_groups=[{"grpid": 1}]), QUIET) == []


@pytest.mark.parametrize("groups,fragment", [
    ([{"grpid": 0}], r"ana_groups\[0\].grpid: 0 is out of range 1..128"),
    ([{"grpid": 129}], "out of range"),
    ([{"grpid": 2, "state": "fast"}], "is not one of optimized"),
    ([{"grpid": 2}, {"grpid": 2}], "listed twice"),
    ([{"state": "optimized"}], "grpid: is required"),
])
def test_ana_group_input_errors(root, groups, fragment):
    with pytest.raises(NvmetError, match=fragment):
        port(root, ana_groups=groups)


def test_simulate_copies_only_what_it_changes_and_never_the_input(root, backing):
    exposed(root, backing[0])
    state = EmulatedTree(root).read()
    before = repr(state)
    ops = plan_port(state, port(root, ana_groups=[{"grpid": 2, "state": "optimized"}]), QUIET)
    after = simulate(state, ops)
    assert repr(state) == before
    assert after["ports"][1]["ana_groups"] == {1: "optimized", 2: "optimized"}
    assert after["subsystems"][SUB] is state["subsystems"][SUB]  # untouched objects are shared, not copied
    assert simulate(state, []) is state


def test_save_file_ana_group_states_are_restored(root, backing):
    """to_savefile writes ana_groups in nvmetcli's schema; restoring must bring them back
    (before, from_savefile dropped them and every non-default group came back missing)."""
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import to_savefile
    from test_nvmet import apply_document

    exposed(root, backing[0])
    write(os.path.join(root, "nvmet", "ports", "1", "ana_groups", "2", "ana_state"), "change")
    write(os.path.join(root, "nvmet", "ports", "1", "ana_groups", "1", "ana_state"), "persistent-loss")
    doc = to_savefile(EmulatedTree(root).read(), mask_keys=False)
    assert doc["ports"][0]["ana_groups"] == [{"grpid": 1, "ana": {"state": "persistent-loss"}},
                                             {"grpid": 2, "ana": {"state": "change"}}]
    empty = os.path.join(root, "empty")
    for sub in ("nvmet/subsystems", "nvmet/ports", "nvmet/hosts", "sys/module/nvmet_tcp"):
        os.makedirs(os.path.join(empty, sub))
    tree = EmulatedTree(empty)
    apply_document(doc, tree)
    assert tree.read()["ports"][1]["ana_groups"] == {1: "persistent-loss", 2: "change"}
    assert apply_document(doc, tree) == []


# --------------------------------------------------------------------------- referrals and discovery_nqn


REF = {"name": "dc2", "trtype": "tcp", "traddr": "10.99.0.2", "portid": 1}


def test_referral_created_then_changed_with_disable_write_enable(root):
    exposed(root)
    tree = EmulatedTree(root)
    want = port(root, referrals=[REF])
    plan = plan_port(tree.read(), want, QUIET)
    r = "ports/1/referrals/dc2"
    assert texts(plan) == ["mkdir " + r, "write %s/addr_trtype = tcp" % r, "write %s/addr_adrfam = ipv4" % r,
                           "write %s/addr_traddr = 10.99.0.2" % r, "write %s/addr_trsvcid = 4420" % r,
                           "write %s/addr_portid = 1" % r, "write %s/enable = 1" % r]
    predicted = simulate(tree.read(), plan)["ports"][1]["referrals"]
    apply_plan(tree, plan)
    assert tree.read()["ports"][1]["referrals"] == predicted
    assert predicted["dc2"]["traddr"] == "10.99.0.2" and predicted["dc2"]["enabled"] is True
    assert plan_port(tree.read(), want, QUIET) == []
    moved = port(root, referrals=[dict(REF, traddr="10.99.0.3")])
    assert texts(plan_port(tree.read(), moved, QUIET)) == [
        "write %s/enable = 0" % r, "write %s/addr_traddr = 10.99.0.3" % r, "write %s/enable = 1" % r]
    # Unlisted referrals stay unless purged.
    assert plan_port(tree.read(), port(root), QUIET) == []
    assert texts(plan_port(tree.read(), port(root, purge_referrals=True), QUIET)) == ["rmdir " + r]


@pytest.mark.parametrize("ref,fragment", [
    (dict(REF, name="a/b"), "referrals\\[0\\].name: 'a/b' is not a directory name"),
    (dict(REF, trtype="ib"), "referrals\\[0\\].trtype: 'ib' is not one of"),
    (dict(REF, traddr="host.example"), "adrfam: None is not one of"),
    (dict(REF, portid=70000), "referrals\\[0\\].portid: 70000 is out of range"),
])
def test_referral_input_errors(root, ref, fragment):
    with pytest.raises(NvmetError, match=fragment):
        port(root, referrals=[ref])


def test_discovery_nqn_is_planned_and_refused_when_a_subsystem_has_it(root):
    exposed(root)
    write(os.path.join(root, "nvmet", "discovery_nqn"), "nqn.2014-08.org.nvmexpress.discovery")
    tree = EmulatedTree(root)
    want = port(root, discovery_nqn="nqn.2024-04.io.aiinfra.lab:discovery")
    plan = plan_port(tree.read(), want, QUIET)
    assert texts(plan) == ["write discovery_nqn = nqn.2024-04.io.aiinfra.lab:discovery"]
    assert simulate(tree.read(), plan)["discovery_nqn"] == "nqn.2024-04.io.aiinfra.lab:discovery"
    apply_plan(tree, plan)
    assert plan_port(tree.read(), want, QUIET) == []
    with pytest.raises(NvmetError, match="is the NQN of a subsystem"):
        plan_port(tree.read(), port(root, discovery_nqn=SUB), QUIET)
    with pytest.raises(NvmetError, match="is not an NQN"):
        port(root, discovery_nqn="discovery")
