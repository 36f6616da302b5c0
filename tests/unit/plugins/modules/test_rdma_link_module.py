# -*- coding: utf-8 -*-
"""rdma_link module glue: check mode runs no change, changed comes from the plan, diff; with
persistent=true the boot unit under a temporary root (the module's _host_root seam) and a
FAKE host that answers rdma and systemctl from its own state."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.aiinfra.fabric.plugins.modules import rdma_link
from module_harness import fake_bin_path, run_main, tree_listing  # tests/unit/plugins/modules/module_harness.py

RXE0 = '[{"ifindex":0,"ifname":"rxe0","port":1,"state":"ACTIVE","physical_state":"LINK_UP","netdev":"eth1","netdev_index":3}]'


def run(monkeypatch, args, replies, hardware=None):
    calls = []

    def run_command(self, argv, **kwargs):
        calls.append(argv)
        return replies.pop(0)

    monkeypatch.setattr(rdma_link.AnsibleModule, "run_command", run_command)
    fake_bin_path(monkeypatch, rdma_link)
    monkeypatch.setattr(rdma_link, "read_devices", lambda: hardware or {})
    result = run_main(monkeypatch, rdma_link, args)
    return result, calls


def test_present_existing_link_is_unchanged(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe0", "netdev": "eth1"}, [(0, RXE0, "")])
    assert result["changed"] is False
    assert calls == [["/usr/bin/rdma", "-j", "link", "show"]]


def test_check_mode_reports_add_without_running_it(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe0", "netdev": "eth1", "_ansible_check_mode": True,
                                      "_ansible_diff": True}, [(0, "[]", "")])
    assert result["changed"] is True
    assert result["operations"] == ["rdma link add rxe0 type rxe netdev eth1"]
    assert calls == [["/usr/bin/rdma", "-j", "link", "show"]]
    assert result["diff"]["before"] == {"link": None}
    assert result["diff"]["after"]["link"]["netdev"] == "eth1"


def test_add_runs_rdma_link_add_and_rereads(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe0", "netdev": "eth1"}, [(0, "[]", ""), (0, "", ""), (0, RXE0, "")])
    assert result["changed"] is True
    assert calls[1] == ["/usr/bin/rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "eth1"]
    assert result["link"]["state"] == "ACTIVE"


def test_hardware_skip_changes_nothing(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe0", "netdev": "eth1", "when_hardware": "skip"}, [(0, "[]", "")],
                        hardware={"mlx5_0": {"hardware": True, "driver": "mlx5_core"}})
    assert result["changed"] is False
    assert result["skipped_for_hardware"] is True
    assert result["hardware_devices"] == ["mlx5_0"]
    assert len(calls) == 1


def test_bad_name_fails_before_any_command(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe 0", "netdev": "eth1"}, [])
    assert result["failed"] is True
    assert "name='rxe 0'" in result["msg"]
    assert calls == []


def test_kernel_error_is_reported_with_output(monkeypatch):
    result, calls = run(monkeypatch, {"name": "rxe1", "netdev": "eth2"},
                        [(0, "[]", ""), (1, "", "error: Operation not supported\n")])
    assert result["failed"] is True
    assert "Operation not supported" in result["msg"]
    assert json.dumps(result["cmd"]).count("rxe1") == 1


UNIT = "aiinfra-soft-roce-rxe0.service"
UNIT_PATH = "/etc/systemd/system/" + UNIT
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "rdma")
# Writing the unit file chowns it to root:root, as on a managed host.
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the unit file is written root:root")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as f:
        return f.read()


class FakeHost(object):
    """FAKE host: answers `rdma` from its list of links and `systemctl` from its unit sets, changes
    them as the commands would, and records every command with what the unit file under root
    looked like when it ran (so a test can tell the order of file and command operations)."""

    def __init__(self, root, links=(), enabled=(), active=(), known=()):
        self.root = str(root)
        self.links = list(links)
        self.enabled = set(enabled)
        self.active = set(active)
        self.known = set(known)
        self.calls = []

    def unit_file(self):
        path = os.path.join(self.root, UNIT_PATH.lstrip("/"))
        return open(path).read() if os.path.isfile(path) else None

    def __call__(self, argv, **kwargs):
        self.calls.append((argv, self.unit_file()))
        tool, args = os.path.basename(argv[0]), argv[1:]
        if tool == "rdma":
            if args == ["-j", "link", "show"]:
                return 0, json.dumps([dict(ifname=n, port=1, state="ACTIVE", physical_state="LINK_UP", netdev=d)
                                      for n, d in self.links]), ""
            if args[:2] == ["link", "add"]:
                self.links.append((args[2], args[6]))
            elif args[:2] == ["link", "delete"]:
                self.links = [link for link in self.links if link[0] != args[2]]
            return 0, "", ""
        assert tool == "systemctl", argv
        if args[0] == "is-enabled":
            return (0, "enabled\n", "") if args[1] in self.enabled else (1, "disabled\n", "")
        if args[0] == "is-active":
            return (0, "active\n", "") if args[1] in self.active else (3, "inactive\n", "")
        if args[0] == "list-units":
            return 0, (args[-1] + " loaded active exited\n") if args[-1] in self.known else "", ""
        if args[:2] == ["--no-reload", "enable"]:
            self.enabled.add(args[2])
        elif args[:2] == ["--no-reload", "disable"]:
            self.enabled.discard(args[2])
        elif args[0] == "stop":
            self.active.discard(args[1])
        return 0, "", ""

    def changes(self):
        """The commands that change something, without the reads."""
        reads = (["-j", "link", "show"], ["is-enabled"], ["is-active"], ["list-units"])
        return [argv for argv, unit in self.calls
                if not any(argv[1:1 + len(r)] == r for r in reads)]


def run_on(monkeypatch, host, args, hardware=None):
    monkeypatch.setattr(rdma_link.AnsibleModule, "run_command", lambda self, argv, **kw: host(argv, **kw))
    fake_bin_path(monkeypatch, rdma_link)
    monkeypatch.setattr(rdma_link, "read_devices", lambda: hardware or {})
    monkeypatch.setattr(rdma_link, "_host_root", lambda: host.root)
    return run_main(monkeypatch, rdma_link, args)


def host_tree(tmp_path):
    (tmp_path / "etc" / "systemd" / "system").mkdir(parents=True)
    return tmp_path


PERSIST = {"name": "rxe0", "netdev": "eth1", "persistent": True}
ADD = ["/usr/bin/rdma", "link", "add", "rxe0", "type", "rxe", "netdev", "eth1"]


@needs_root
def test_persistent_adds_the_link_then_writes_and_enables_the_unit(monkeypatch, tmp_path):
    host = FakeHost(host_tree(tmp_path))
    result = run_on(monkeypatch, host, PERSIST)
    assert "failed" not in result and result["changed"] is True
    assert result["operations"] == [
        "rdma link add rxe0 type rxe netdev eth1",
        "create %s 0644 (%d bytes)" % (UNIT_PATH, len(fixture("boot_unit_rxe0_eth1_rxe.service"))),
        "systemctl enable " + UNIT,
    ]
    assert result["boot_unit"] == UNIT
    unit_file = str(tmp_path / UNIT_PATH.lstrip("/"))
    assert host.unit_file() == fixture("boot_unit_rxe0_eth1_rxe.service")
    assert stat.S_IMODE(os.stat(unit_file).st_mode) == 0o644 and os.stat(unit_file).st_uid == 0
    # The link is added while the unit file does not exist yet; enable runs once it does; nothing starts it.
    assert host.changes() == [ADD, ["/usr/bin/systemctl", "--no-reload", "enable", UNIT]]
    file_at = dict((tuple(argv), unit) for argv, unit in host.calls)
    assert file_at[tuple(ADD)] is None
    assert file_at[("/usr/bin/systemctl", "--no-reload", "enable", UNIT)] == fixture("boot_unit_rxe0_eth1_rxe.service")
    assert result["link"]["netdev"] == "eth1"


@needs_root
def test_persistent_second_run_is_unchanged(monkeypatch, tmp_path):
    host = FakeHost(host_tree(tmp_path))
    run_on(monkeypatch, host, PERSIST)
    before = tree_listing(tmp_path)
    host.calls = []
    result = run_on(monkeypatch, host, dict(PERSIST, _ansible_diff=True))
    assert result["changed"] is False and result["operations"] == []
    assert host.changes() == []
    assert tree_listing(tmp_path) == before
    assert result["diff"]["before"] == result["diff"]["after"]
    assert result["boot_unit"] == UNIT


@needs_root
def test_persistent_rewrites_the_roles_unit_and_reloads_systemd_once(monkeypatch, tmp_path):
    # A host the soft_roce role set up before: link, enabled unit, the template's "# Ansible managed" line.
    old = "# Ansible managed\n" + fixture("boot_unit_rxe0_eth1_rxe.service").split("\n", 1)[1]
    unit_file = host_tree(tmp_path) / UNIT_PATH.lstrip("/")
    unit_file.write_text(old)
    host = FakeHost(tmp_path, links=[("rxe0", "eth1")], enabled=[UNIT], active=[UNIT], known=[UNIT])
    result = run_on(monkeypatch, host, PERSIST)
    assert result["changed"] is True
    assert result["operations"] == ["update %s 0644 (%d bytes)" % (UNIT_PATH, len(unit_file.read_text())),
                                    "systemctl daemon-reload"]
    assert unit_file.read_text() == fixture("boot_unit_rxe0_eth1_rxe.service")
    assert host.changes() == [["/usr/bin/systemctl", "daemon-reload"]]


def test_persistent_check_mode_changes_nothing(monkeypatch, tmp_path):
    host = FakeHost(host_tree(tmp_path))
    before = tree_listing(tmp_path)
    result = run_on(monkeypatch, host, dict(PERSIST, _ansible_check_mode=True, _ansible_diff=True))
    assert result["changed"] is True
    assert result["operations"] == [
        "rdma link add rxe0 type rxe netdev eth1",
        "create %s 0644 (%d bytes)" % (UNIT_PATH, len(fixture("boot_unit_rxe0_eth1_rxe.service"))),
        "systemctl enable " + UNIT,
    ]
    assert tree_listing(tmp_path) == before
    assert host.changes() == [] and host.links == [] and host.enabled == set()
    assert result["diff"]["before"] == {"link": None, UNIT_PATH: None, "unit " + UNIT: {"enabled": False}}
    assert result["diff"]["after"]["unit " + UNIT] == {"enabled": True}
    assert result["diff"]["after"][UNIT_PATH]["content"] == fixture("boot_unit_rxe0_eth1_rxe.service")
    assert result["diff"]["after"]["link"]["netdev"] == "eth1"


def test_absent_persistent_removes_the_unit_before_deleting_the_link(monkeypatch, tmp_path):
    unit_file = host_tree(tmp_path) / UNIT_PATH.lstrip("/")
    unit_file.write_text(fixture("boot_unit_rxe0_eth1_rxe.service"))
    host = FakeHost(tmp_path, links=[("rxe0", "eth1")], enabled=[UNIT], active=[UNIT], known=[UNIT])
    result = run_on(monkeypatch, host, {"name": "rxe0", "state": "absent", "persistent": True})
    assert "failed" not in result and result["changed"] is True
    assert result["operations"] == ["systemctl stop " + UNIT, "systemctl disable " + UNIT, "remove " + UNIT_PATH,
                                    "systemctl daemon-reload", "rdma link delete rxe0"]
    assert host.changes() == [["/usr/bin/systemctl", "stop", UNIT], ["/usr/bin/systemctl", "--no-reload", "disable", UNIT],
                              ["/usr/bin/systemctl", "daemon-reload"], ["/usr/bin/rdma", "link", "delete", "rxe0"]]
    file_at = dict((tuple(argv), unit) for argv, unit in host.calls)
    assert file_at[("/usr/bin/rdma", "link", "delete", "rxe0")] is None
    assert not unit_file.exists() and host.links == [] and host.enabled == set() and host.active == set()
    assert result["link"] is None and result["boot_unit"] == UNIT


def test_absent_persistent_check_mode_plans_the_same_order_and_changes_nothing(monkeypatch, tmp_path):
    unit_file = host_tree(tmp_path) / UNIT_PATH.lstrip("/")
    unit_file.write_text(fixture("boot_unit_rxe0_eth1_rxe.service"))
    host = FakeHost(tmp_path, links=[("rxe0", "eth1")], enabled=[UNIT], active=[UNIT])
    result = run_on(monkeypatch, host, {"name": "rxe0", "state": "absent", "persistent": True,
                                        "_ansible_check_mode": True})
    assert result["changed"] is True
    assert result["operations"] == ["systemctl stop " + UNIT, "systemctl disable " + UNIT, "remove " + UNIT_PATH,
                                    "rdma link delete rxe0"]
    assert host.changes() == [] and unit_file.exists() and host.links == [("rxe0", "eth1")]


def test_absent_persistent_with_nothing_left_is_unchanged(monkeypatch, tmp_path):
    host = FakeHost(host_tree(tmp_path))
    result = run_on(monkeypatch, host, {"name": "rxe0", "state": "absent", "persistent": True})
    assert result["changed"] is False and result["operations"] == []
    assert host.changes() == []


def test_absent_without_persistent_leaves_the_unit_alone(monkeypatch, tmp_path):
    unit_file = host_tree(tmp_path) / UNIT_PATH.lstrip("/")
    unit_file.write_text("x\n")
    host = FakeHost(tmp_path, links=[("rxe0", "eth1")], enabled=[UNIT])
    result = run_on(monkeypatch, host, {"name": "rxe0", "state": "absent"})
    assert result["operations"] == ["rdma link delete rxe0"] and result["boot_unit"] == ""
    assert [argv for argv, unit in host.calls if "systemctl" in argv[0]] == []
    assert unit_file.exists() and host.enabled == {UNIT}


@pytest.mark.parametrize("state", ["present", "absent"])
def test_hardware_skip_does_nothing_even_when_persistent(monkeypatch, tmp_path, state):
    unit_file = host_tree(tmp_path) / UNIT_PATH.lstrip("/")
    if state == "absent":
        unit_file.write_text(fixture("boot_unit_rxe0_eth1_rxe.service"))
    host = FakeHost(tmp_path, links=[("rxe0", "eth1")] if state == "absent" else [], enabled=[UNIT], active=[UNIT])
    before = tree_listing(tmp_path)
    result = run_on(monkeypatch, host, dict(PERSIST, state=state, when_hardware="skip"),
                    hardware={"mlx5_0": {"hardware": True, "driver": "mlx5_core"}})
    assert result["changed"] is False and result["skipped_for_hardware"] is True
    assert result["operations"] == [] and result["boot_unit"] == ""
    assert [argv for argv, unit in host.calls] == [["/usr/bin/rdma", "-j", "link", "show"]]
    assert tree_listing(tmp_path) == before


@needs_root
def test_unit_name_names_the_unit_file(monkeypatch, tmp_path):
    host = FakeHost(host_tree(tmp_path))
    result = run_on(monkeypatch, host, dict(PERSIST, unit_name="rdma-rxe0.service", type="siw"))
    assert result["boot_unit"] == "rdma-rxe0.service"
    assert (tmp_path / "etc" / "systemd" / "system" / "rdma-rxe0.service").read_text() == \
        fixture("boot_unit_rxe0_eth1_siw.service")
    assert ["/usr/bin/systemctl", "--no-reload", "enable", "rdma-rxe0.service"] in host.changes()


def test_bad_unit_name_fails_before_any_command(monkeypatch, tmp_path):
    host = FakeHost(host_tree(tmp_path))
    result = run_on(monkeypatch, host, dict(PERSIST, unit_name="soft-roce.conf"))
    assert result["failed"] is True and "unit_name='soft-roce.conf'" in result["msg"]
    assert host.calls == [] and result["changed"] is False


def test_a_unit_plan_problem_stops_the_link_change_too(monkeypatch, tmp_path):
    (host_tree(tmp_path) / UNIT_PATH.lstrip("/")).mkdir()
    host = FakeHost(tmp_path)
    result = run_on(monkeypatch, host, PERSIST)
    assert result["failed"] is True and result["changed"] is False
    assert "boot unit %s: %s exists and is not a regular file" % (UNIT, UNIT_PATH) in result["msg"]
    assert host.changes() == [] and host.links == []


@needs_root
def test_a_failed_enable_reports_what_was_done(monkeypatch, tmp_path):
    host = FakeHost(host_tree(tmp_path))
    real = host.__call__

    def failing(argv, **kw):
        if "enable" in argv:
            host.calls.append((argv, host.unit_file()))
            return 1, "", "Failed to enable unit: Access denied\n"
        return real(argv, **kw)

    monkeypatch.setattr(rdma_link.AnsibleModule, "run_command", lambda self, argv, **kw: failing(argv, **kw))
    monkeypatch.setattr(rdma_link, "_host_root", lambda: host.root)
    fake_bin_path(monkeypatch, rdma_link)
    monkeypatch.setattr(rdma_link, "read_devices", lambda: {})
    result = run_main(monkeypatch, rdma_link, PERSIST)
    assert result["failed"] is True and result["changed"] is True
    assert result["msg"].startswith("boot unit %s: '/usr/bin/systemctl --no-reload enable %s' failed (rc 1)"
                                    % (UNIT, UNIT))
    assert "Access denied" in result["msg"]
    assert result["operations"] == ["rdma link add rxe0 type rxe netdev eth1",
                                    "create %s 0644 (%d bytes)" % (UNIT_PATH, len(host.unit_file()))]
