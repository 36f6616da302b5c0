"""The nvmeof_target role's record and the teardown planned from it (module_utils/nvmet/record.py)."""

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.record import (
    RecordError,
    load_record,
    record_after_converge,
    teardown_plan,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.topology import (
    build_document,
    normalize,
    resolve_devices,
)

A = "nqn.2024-04.com.example:te1.a"
B = "nqn.2024-04.com.example:te1.b"
TE2 = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
UFW_TCP = {"tool": "ufw", "port": "4420", "proto": "tcp"}


def converge(previous, subs, ports, ops, files_created=(), opened=()):
    topo = resolve_devices(normalize(subs, ports, {}, ["nvmeof_initiators"]), [])
    doc = build_document(topo, {"nvmeof_initiators": ["te2"]}, {"te2": {"hostnqn": TE2}})
    return record_after_converge(previous, topo, doc, ops, list(files_created), {"1": UFW_TCP}, list(opened))


PORTS = [{"id": 1, "transport": "tcp", "address": "10.99.0.1"}]


def test_converge_records_what_it_made_and_a_later_converge_adds_to_it():
    rec = converge({}, [{"nqn": A, "namespaces": [{"file": "/srv/a.img"}], "allowed_hosts": ["nvmeof_initiators"]}],
                   PORTS, ["mkdir hosts/" + TE2, "mkdir subsystems/" + A], ["/srv/a.img"], [UFW_TCP])
    assert rec["subsystems"][A] == {"ports": [1], "hosts_created": [TE2], "files": ["/srv/a.img"],
                                    "files_created": ["/srv/a.img"], "firewall_rules_added": [UFW_TCP]}
    assert rec["ports"] == {"1": {"transport": "tcp", "address": "10.99.0.1", "service_id": "4420"}}
    # A no-op re-run keeps what the first run recorded; B on the same port inherits the
    # rule this role opened for A, nothing made for A is credited to B.
    again = converge(rec, [{"nqn": A, "namespaces": [{"file": "/srv/a.img"}], "allowed_hosts": [TE2]}], PORTS, [])
    assert again["subsystems"][A] == rec["subsystems"][A]
    both = converge(again, [{"nqn": B, "namespaces": [{"file": "/srv/b.img"}], "allowed_hosts": [TE2]}], PORTS, [])
    assert both["subsystems"][B] == {"ports": [1], "hosts_created": [], "files": ["/srv/b.img"], "files_created": [],
                                     "firewall_rules_added": [UFW_TCP]}


def test_version_1_records_are_read():
    old = {A: {"port_id": 1, "hosts_created": [TE2], "backing_file": "/var/lib/nvmet/disk1.img",
               "backing_file_created": True, "firewall_rules_added": []}}
    assert load_record(old)["subsystems"][A] == {"ports": [1], "hosts_created": [TE2],
                                                 "files": ["/var/lib/nvmet/disk1.img"],
                                                 "files_created": ["/var/lib/nvmet/disk1.img"],
                                                 "firewall_rules_added": []}


RECORD = {"version": 2, "ports": {"1": {}, "2": {}},
          "subsystems": {A: {"ports": [1, 2], "hosts_created": [TE2], "files": ["/srv/a.img"],
                             "files_created": ["/srv/a.img"], "firewall_rules_added": [UFW_TCP]},
                         B: {"ports": [1], "hosts_created": [], "files": ["/srv/b.img"], "files_created": [],
                             "firewall_rules_added": [UFW_TCP]}}}
NOW_SUBS = [{"nqn": A, "allowed_hosts": [TE2]}, {"nqn": B, "allowed_hosts": [TE2]},
            {"nqn": "nqn.2024-04.com.example:someone-else", "allowed_hosts": []}]
NOW_PORTS = [{"portid": 1, "subsystems": [A, B]}, {"portid": 2, "subsystems": [A]},
             {"portid": 3, "subsystems": ["nqn.2024-04.com.example:someone-else"]}]


def test_teardown_of_a_named_subsystem_keeps_what_the_others_use():
    plan = teardown_plan(RECORD, [A], NOW_SUBS, NOW_PORTS)
    assert plan["subsystems"] == [A]
    assert plan["ports"] == [2] and plan["ports_kept_for"] == {"1": [B]}
    assert plan["hosts"] == [] and plan["firewall_rules"] == []
    assert plan["files"] == ["/srv/a.img"] and plan["dirs_created"] == ["/srv"]
    # B still allows TE2: the host entry A's converge made is now B's to remove.
    assert plan["record_left"]["subsystems"][B]["hosts_created"] == [TE2]
    assert plan["record_left"]["ports"] == {"1": {}}


def test_teardown_with_the_default_variables_naming_nothing_recorded_undoes_the_whole_record():
    # The short form's default NQN, not given by the user: the role's defaults name nothing.
    plan = teardown_plan(RECORD, ["nqn.2024-04.com.example:te1.target1"], NOW_SUBS, NOW_PORTS, named_by_default=True)
    assert plan["subsystems"] == [A, B] and plan["ports"] == [1, 2]
    assert plan["hosts"] == [TE2] and plan["firewall_rules"] == [UFW_TCP]
    assert plan["record_left"] == {}
    assert 3 not in plan["ports"]


def test_teardown_without_a_record_removes_nothing():
    plan = teardown_plan({}, [A], NOW_SUBS, NOW_PORTS)
    assert plan["subsystems"] == [] and plan["ports"] == [] and plan["hosts"] == [] and plan["record_left"] == {}


def test_teardown_naming_a_subsystem_the_record_does_not_list_is_refused():
    # A one-letter typo of A, or a subsystem another tool made: an error naming what the
    # record lists, never the whole record instead.
    typo = A[:-1] + "x"
    with pytest.raises(RecordError) as exc:
        teardown_plan(RECORD, [typo], NOW_SUBS, NOW_PORTS)
    assert typo in str(exc.value) and A in str(exc.value) and B in str(exc.value)
    with pytest.raises(RecordError, match="nqn.2024-04.com.example:someone-else"):
        teardown_plan(RECORD, [A, "nqn.2024-04.com.example:someone-else"], NOW_SUBS, NOW_PORTS)


def test_teardown_removes_only_the_backing_files_this_role_created():
    # B exports /srv/b.img, which was there before the role (files_created is empty).
    plan = teardown_plan(RECORD, [B], NOW_SUBS, NOW_PORTS)
    assert plan["files"] == [] and plan["files_kept"] == ["/srv/b.img"]
    plan = teardown_plan(RECORD, [], NOW_SUBS, NOW_PORTS, named_by_default=True)
    assert plan["files"] == ["/srv/a.img"] and plan["files_kept"] == ["/srv/b.img"]


def test_a_second_teardown_of_the_same_subsystem_finds_nothing_to_do():
    first = teardown_plan(RECORD, [A], NOW_SUBS, NOW_PORTS)
    again = teardown_plan(first["record_left"], [A], [s for s in NOW_SUBS if s["nqn"] != A],
                          [{"portid": 1, "subsystems": [B]}])
    assert again["subsystems"] == [] and again["ports"] == [] and again["files"] == []
    assert again["record_left"]["subsystems"] == first["record_left"]["subsystems"]
    # Converged again, A is recorded again (no longer counted as removed).
    rec = converge(first["record_left"], [{"nqn": A, "namespaces": [{"file": "/srv/a.img"}], "allowed_hosts": [TE2]}],
                   PORTS, [])
    assert teardown_plan(rec, [A], NOW_SUBS, NOW_PORTS)["subsystems"] == [A]
    assert A not in rec.get("removed", [])


def test_a_teardown_that_removes_nothing_leaves_the_record_as_it_was():
    rec = load_record(RECORD)
    plan = teardown_plan(RECORD, [], NOW_SUBS, NOW_PORTS)
    assert plan["subsystems"] == [] and plan["record_left"] == rec
