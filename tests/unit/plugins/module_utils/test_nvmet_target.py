"""Unit tests of the whole-target plan (nvmet/target.py) and document validation (nvmet/document.py).

The configfs tree is the FAKE of nvmet_fake.py (a plain directory laid out like Debian
6.12's nvmet tree, ``EmulatedTree`` showing and refusing like the kernel). The real
kernel is the lab's job (tests/lab/nvmet_target.yml).
"""

import hashlib
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import bootrestore
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan, simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import MASK, NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.document import DocumentError, validate_document
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.target import (
    check_document,
    load_document,
    plan_target,
    secrets_of,
    target_view,
)

from nvmet_fake import HOST, HOST2, SUB, EmulatedTree, fake_host, fake_namespace, fake_port, fake_subsystem, link, make_key, write

SUB2 = "nqn.2024-04.io.aiinfra.lab:te1.second"
SUB3 = "nqn.2024-04.io.aiinfra.lab:te1.third"
TCP = {"trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "adrfam": "ipv4"}
NO_CONNECTIONS = "  sl  local_address rem_address   st\n"
# One established connection to 10.99.0.1:4420 (from 10.99.0.2).
ONE_CONNECTION = NO_CONNECTIONS + ("   2: 0100630A:1144 0200630A:8D66 01 00000000:00000000 00:00000000 00000000"
                                   "     0        0 4197 1 0 21 4 25 75 40\n")


def quiet(root, text=NO_CONNECTIONS):
    write(os.path.join(root, "proc", "net", "tcp"), text.rstrip("\n"))


def sub(nqn, paths, hosts=(), allow_any="0", **attr):
    attr["allow_any_host"] = allow_any
    return {"nqn": nqn, "attr": attr, "allowed_hosts": list(hosts),
            "namespaces": [{"nsid": i + 1, "enable": 1, "device": {"path": p}} for i, p in enumerate(paths)]}


def port(pid, subsystems, addr=None, **extra):
    out = {"portid": pid, "addr": dict(addr or TCP), "subsystems": list(subsystems)}
    out.update(extra)
    return out


def converge(root, doc, purge="none", force=False, allow_reconfigure=False, check=False):
    tree = EmulatedTree(root)
    state = tree.read()
    check_document(doc, state, purge, tree.sysfs_root)
    ops = plan_target(tree, state, doc, purge, force, allow_reconfigure)
    if ops and not check:
        apply_plan(tree, ops)
    return tree, ops


def snapshot(root):
    """Every path under nvmet/ with its content or link target: byte-identical comparison."""
    out = {}
    base = os.path.join(root, "nvmet")
    for dirpath, dirnames, filenames in os.walk(base):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, base)
            if os.path.islink(path):
                out[rel] = "-> " + os.readlink(path)
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    out[rel] = hashlib.sha256(f.read()).hexdigest()
            else:
                out[rel] = "dir"
    return out


# --------------------------------------------------------------------------- converge


def test_converge_then_noop_and_same_plan_as_the_restorer(root, files):
    quiet(root)
    key = make_key()
    doc = {"hosts": [{"nqn": HOST, "dhchap": {"key": key}}],
           "subsystems": [sub(SUB, files[:2], hosts=[HOST], serial="abc"), sub(SUB2, files[2:3], allow_any="1")],
           "ports": [port(1, [SUB, SUB2], ana_groups=[{"grpid": 1, "ana": {"state": "optimized"}},
                                                      {"grpid": 2, "ana": {"state": "non-optimized"}}])]}
    tree = EmulatedTree(root)
    # One planner: from empty, the whole-target plan is the boot restorer's plan (check mode).
    restorer_plan = bootrestore.restore_best_effort(doc, tree, check=True)["applied"]
    tree, ops = converge(root, doc)
    assert [op.text() for op in ops] == restorer_plan
    view = target_view(tree.read())
    assert view["hosts"] == [{"nqn": HOST, "dhchap": {"key": MASK, "hash": "hmac(sha256)", "dhgroup": "null"}}]
    assert [s["nqn"] for s in view["subsystems"]] == [SUB, SUB2]
    assert view["subsystems"][0]["attr"]["serial"].strip() == "abc"
    assert view["subsystems"][0]["allowed_hosts"] == [HOST]
    assert [n["device"]["path"] for n in view["subsystems"][0]["namespaces"]] == files[:2]
    assert view["ports"][0]["subsystems"] == [SUB, SUB2]
    assert view["ports"][0]["ana_groups"][1] == {"grpid": 2, "ana": {"state": "non-optimized"}}
    assert key not in repr(view) and all(key not in op.text() for op in ops)
    # A second run with the same document plans nothing.
    before = snapshot(root)
    assert converge(root, doc)[1] == []
    assert snapshot(root) == before


def test_check_mode_changes_nothing_and_predicts_the_result(root, files):
    quiet(root)
    doc = {"subsystems": [sub(SUB, files[:2], allow_any="1")], "ports": [port(1, [SUB])]}
    before = snapshot(root)
    tree, ops = converge(root, doc, check=True)
    assert ops and snapshot(root) == before
    predicted = target_view(simulate(tree.read(), ops))
    applied = converge(root, doc)[0]
    actual = target_view(applied.read())

    # Check mode predicts what was declared; defaults the kernel fills in for a new object
    # (attr_model, param_max_queue_size, ...) only show after the run.
    def declared(view):
        return ([(s["nqn"], s["attr"]["allow_any_host"], s["allowed_hosts"],
                  [(n["nsid"], n["enable"], n["device"]["path"], n["ana_grpid"]) for n in s["namespaces"]])
                 for s in view["subsystems"]],
                [(p["portid"], dict((k, p["addr"][k]) for k in TCP), p["subsystems"], p["ana_groups"])
                 for p in view["ports"]])
    assert declared(predicted) == declared(actual)
    assert declared(actual)[0][0][3][1] == (2, 1, files[1], 1)


# --------------------------------------------------------------------------- purge


def existing(root, files):
    """configfs before the run: SUB (ns 1 and 2, allows HOST and HOST2), SUB3, port 1 -> SUB, port 2 -> SUB3, HOST2 unused."""
    fake_subsystem(root, SUB)
    fake_namespace(root, SUB, 1, path=files[0], enable="1")
    fake_namespace(root, SUB, 2, path=files[1], enable="1")
    fake_subsystem(root, SUB3)
    fake_host(root, HOST)
    fake_host(root, HOST2)
    fake_host(root, "nqn.2014-08.org.nvmexpress:uuid:99999999-1111-2222-3333-444444444444")
    link(root, "hosts/" + HOST, "subsystems/%s/allowed_hosts/%s" % (SUB, HOST))
    link(root, "hosts/" + HOST2, "subsystems/%s/allowed_hosts/%s" % (SUB, HOST2))
    fake_port(root, 1, **TCP)
    fake_port(root, 2, trtype="tcp", traddr="10.99.0.1", trsvcid="4421", adrfam="ipv4")
    link(root, "subsystems/" + SUB, "ports/1/subsystems/" + SUB)
    link(root, "subsystems/" + SUB3, "ports/2/subsystems/" + SUB3)
    os.makedirs(os.path.join(root, "nvmet", "ports", "1", "ana_groups", "3"))
    write(os.path.join(root, "nvmet", "ports", "1", "ana_groups", "3", "ana_state"), "optimized")


# The document names SUB with namespace 1 only and HOST only, port 1 with SUB and SUB2 (new).
def purge_doc(files):
    return {"hosts": [{"nqn": HOST}],
            "subsystems": [sub(SUB, files[:1], hosts=[HOST]), sub(SUB2, files[2:3], allow_any="1")],
            "ports": [port(1, [SUB, SUB2])]}


def test_purge_none_removes_nothing_undeclared(root, files):
    quiet(root)
    existing(root, files)
    tree, ops = converge(root, purge_doc(files))
    assert [o.kind for o in ops if o.kind in ("rmdir", "unlink")] == []
    st = tree.read()
    assert sorted(st["subsystems"][SUB]["namespaces"]) == [1, 2]
    assert st["subsystems"][SUB]["allowed_hosts"] == sorted([HOST, HOST2])
    assert st["ports"][1]["subsystems"] == sorted([SUB, SUB2])
    assert SUB3 in st["subsystems"] and 2 in st["ports"] and 3 in st["ports"][1]["ana_groups"]
    assert converge(root, purge_doc(files))[1] == []


def test_purge_listed_makes_listed_objects_exact_and_leaves_the_others(root, files):
    quiet(root)
    existing(root, files)
    tree, ops = converge(root, purge_doc(files), purge="listed")
    st = tree.read()
    assert sorted(st["subsystems"][SUB]["namespaces"]) == [1]
    assert st["subsystems"][SUB]["allowed_hosts"] == [HOST]
    assert sorted(st["ports"][1]["ana_groups"]) == [1]  # group 3 was not declared on port 1
    assert SUB3 in st["subsystems"] and st["ports"][2]["subsystems"] == [SUB3] and HOST2 in st["hosts"]
    assert converge(root, purge_doc(files), purge="listed")[1] == []


def test_purge_listed_with_keep_port_links_keeps_other_subsystems_on_a_shared_port(root, files):
    """The nvmeof_target role's case: its port is shared with a subsystem it does not declare."""
    quiet(root)
    existing(root, files)
    link(root, "subsystems/" + SUB3, "ports/1/subsystems/" + SUB3)
    doc = {"subsystems": [sub(SUB2, files[2:3], allow_any="1")], "ports": [port(1, [SUB2])]}
    tree = EmulatedTree(root)
    check_document(doc, tree.read(), "listed", tree.sysfs_root)
    ops = plan_target(tree, tree.read(), doc, "listed", keep_port_links=True)
    apply_plan(tree, ops)
    st = tree.read()
    assert st["ports"][1]["subsystems"] == sorted([SUB, SUB2, SUB3])
    assert sorted(st["ports"][1]["ana_groups"]) == [1]  # the rest of the port is still made exact
    assert plan_target(tree, st, doc, "listed", keep_port_links=True) == []
    # without it, listed makes the links exact
    assert sorted(op.text() for op in plan_target(tree, st, doc, "listed") if op.kind == "unlink") == [
        "unlink ports/1/subsystems/" + SUB, "unlink ports/1/subsystems/" + SUB3]


def test_purge_all_removes_unlisted_subsystems_ports_and_hosts(root, files):
    quiet(root)
    existing(root, files)
    tree, ops = converge(root, purge_doc(files), purge="all")
    st = tree.read()
    assert sorted(st["subsystems"]) == sorted([SUB, SUB2])
    assert sorted(st["ports"]) == [1]
    assert sorted(st["hosts"]) == [HOST]
    texts = [o.text() for o in ops]
    # Ports go first, hosts last.
    assert texts.index("rmdir ports/2") < texts.index("rmdir subsystems/" + SUB3) < texts.index("rmdir hosts/" + HOST2)
    assert converge(root, purge_doc(files), purge="all")[1] == []


def test_purge_all_with_a_connected_host_needs_force(root, files):
    existing(root, files)
    quiet(root, ONE_CONNECTION)
    doc = {"subsystems": [sub(SUB2, files[2:3], allow_any="1")], "ports": [port(3, [SUB2], dict(TCP, trsvcid="4422"))]}
    before = snapshot(root)
    with pytest.raises(NvmetError, match="live connection.*force"):
        converge(root, doc, purge="all")
    assert snapshot(root) == before
    tree, ops = converge(root, doc, purge="all", force=True)
    assert sorted(tree.read()["subsystems"]) == [SUB2]


# --------------------------------------------------------------------------- guards


def test_port_address_change_needs_allow_reconfigure(root, files):
    quiet(root)
    doc = {"subsystems": [sub(SUB, files[:1], allow_any="1")], "ports": [port(1, [SUB])]}
    converge(root, doc)
    moved = dict(doc, ports=[port(1, [SUB], dict(TCP, trsvcid="4430"))])
    before = snapshot(root)
    with pytest.raises(NvmetError, match="allow_reconfigure"):
        converge(root, moved)
    assert snapshot(root) == before
    tree, ops = converge(root, moved, allow_reconfigure=True)
    assert tree.read()["ports"][1]["trsvcid"] == "4430" and tree.read()["ports"][1]["subsystems"] == [SUB]


def test_removing_a_namespace_under_a_live_connection_needs_force(root, files):
    quiet(root)
    doc = {"subsystems": [sub(SUB, files[:2], allow_any="1")], "ports": [port(1, [SUB])]}
    converge(root, doc)
    quiet(root, ONE_CONNECTION)
    smaller = dict(doc, subsystems=[sub(SUB, files[:1], allow_any="1")])
    with pytest.raises(NvmetError, match="1 live connection"):
        converge(root, smaller, purge="listed")
    assert converge(root, smaller, purge="none")[1] == []  # none removes nothing, so nothing to guard


def test_one_plan_reads_the_live_connections_once(root, files):
    # Each read may run `rdma res show cm_id` (a process start): the whole-target plan
    # reads them once and hands them to every step.
    quiet(root)
    doc = {"hosts": [{"nqn": HOST}], "subsystems": [sub(SUB, files[:2], hosts=[HOST])], "ports": [port(1, [SUB])]}
    tree = EmulatedTree(root)
    reads = []
    real = tree.connections
    tree.connections = lambda state: reads.append(1) or real(state)
    state = tree.read()
    check_document(doc, state, "listed", tree.sysfs_root)
    assert plan_target(tree, state, doc, "listed", keep_port_links=True)
    assert len(reads) == 1


# --------------------------------------------------------------------------- bad input


def test_every_error_at_once_with_its_path_and_configfs_untouched(root, files):
    quiet(root)
    existing(root, files)
    before = snapshot(root)
    bad = {
        "hosts": [{"nqn": HOST, "dhchap": {"key": MASK}}, {"nqn": "not an nqn", "dhchap": {"hash": "md5"}}],
        "subsystems": [
            sub(SUB2, files[:1]),
            sub(SUB2, [files[1]], hosts=[HOST], allow_any="1", serial="x" * 21),
            {"nqn": SUB3, "attr": {"cntlid_min": "10", "cntlid_max": "5"},
             "namespaces": [{"nsid": 1, "device": {"path": files[2]}}, {"nsid": 1, "device": {"path": files[3]}},
                            {"nsid": 0, "device": {"path": "/nonexistent/disk.img"}, "enable": "maybe"},
                            {"nsid": 4, "device": {"path": files[0], "uuid": "nope"}, "ana_grpid": 200}]},
        ],
        "ports": [port(1, [SUB2, "nqn.2024-04.io.aiinfra.lab:missing"], dict(TCP, traddr="10.99.0.300"),
                       referrals=[{"name": "r1"}]),
                  port(1, [], dict(TCP, trtype="fc")),
                  {"portid": 5, "addr": dict(TCP), "param": {"inline_data_size": "x"}, "colour": "blue",
                   "ana_groups": [{"grpid": 1, "ana": {"state": "sleepy"}}]}],
    }
    with pytest.raises(DocumentError) as info:
        check_document(bad, EmulatedTree(root).read(), "none", os.path.join(root, "sys"))
    errors = info.value.errors
    expected_paths = [
        "hosts[0].dhchap.key", "hosts[1].nqn", "hosts[1].dhchap.hash",
        "subsystems[1].nqn", "subsystems[1].attr.serial", "subsystems[1].attr.allow_any_host",
        "subsystems[1].namespaces[0].device.path",  # files[1]... is fine; see below
        "subsystems[2].attr.cntlid_min", "subsystems[2].namespaces[1].nsid",
        "subsystems[2].namespaces[2].nsid", "subsystems[2].namespaces[2].enable",
        "subsystems[2].namespaces[2].device.path", "subsystems[2].namespaces[3].ana_grpid",
        "subsystems[2].namespaces[3].device.path", "subsystems[2].namespaces[3].device.uuid",
        "ports[0].addr.traddr", "ports[0].subsystems[1]", "ports[0].referrals[0].trtype",
        "ports[1].portid", "ports[1].addr.trtype", "ports[2].colour", "ports[2].param.inline_data_size",
        "ports[2].ana_groups[0].ana.state",
    ]
    expected_paths.remove("subsystems[1].namespaces[0].device.path")
    for path in expected_paths:
        assert any(e.startswith(path + ":") for e in errors), (path, errors)
    assert len(errors) == len(expected_paths), errors
    assert "the target document has %d error(s)" % len(errors) in info.value.msg
    assert snapshot(root) == before


def test_device_exported_twice_in_the_document_is_an_error(files):
    doc = {"subsystems": [sub(SUB, files[:1]), sub(SUB2, files[:1])]}
    assert validate_document(doc, sysfs_root=None) == [
        "subsystems[1].namespaces[0].device.path: %r is also exported by subsystems[0].namespaces[0]; two namespaces "
        "on one device are two uncoordinated writers" % files[0]]


def test_a_clean_document_has_no_errors_and_a_non_mapping_is_one(files):
    assert validate_document({"subsystems": [sub(SUB, files[:2])], "ports": [port(1, [SUB])]}, sysfs_root=None) == []
    assert validate_document(["x"]) == ["document: must be a mapping, got list"]
    assert validate_document({"hosts": "x"}) == ["hosts: must be a list, got str"]


def test_port_may_link_a_kept_subsystem_unless_purge_all(root, files):
    quiet(root)
    fake_subsystem(root, SUB3)
    doc = {"ports": [port(1, [SUB3])]}
    state = EmulatedTree(root).read()
    check_document(doc, state, "listed", os.path.join(root, "sys"))
    with pytest.raises(DocumentError, match=r"ports\[0\].subsystems\[0\]: subsystem .* neither"):
        check_document(doc, state, "all", os.path.join(root, "sys"))


def test_unknown_purge_value(root):
    with pytest.raises(NvmetError, match="purge: 'some'"):
        check_document({}, EmulatedTree(root).read(), "some")


# --------------------------------------------------------------------------- src files, secrets


def test_load_document_json_and_yaml(tmp_path):
    (tmp_path / "t.json").write_text('{"hosts": [{"nqn": "%s"}]}' % HOST)
    (tmp_path / "t.yml").write_text("hosts:\n  - nqn: %s\n" % HOST)
    (tmp_path / "bad.yml").write_text("hosts: [\n")
    assert load_document(str(tmp_path / "t.json")) == {"hosts": [{"nqn": HOST}]}
    assert load_document(str(tmp_path / "t.yml")) == {"hosts": [{"nqn": HOST}]}
    with pytest.raises(NvmetError, match="neither JSON nor YAML"):
        load_document(str(tmp_path / "bad.yml"))
    with pytest.raises(NvmetError, match="src: cannot read"):
        load_document(str(tmp_path / "absent.json"))


def test_secrets_of_lists_the_keys():
    k1, k2 = make_key(), make_key(48, 2)
    assert secrets_of({"hosts": [{"nqn": HOST, "dhchap": {"key": k1, "ctrl_key": k2, "hash": "hmac(sha256)"}},
                                 {"nqn": HOST2}]}) == [k1, k2]
    assert secrets_of(["x"]) == []


def test_nvmetcli_empty_passthru_with_null_path_is_not_a_passthru(files):
    """`nvmetcli save` copies the kernel's "(null)" for the unset passthru device path of
    every subsystem (CONFIG_NVME_TARGET_PASSTHRU): that is no passthru subsystem."""
    passthru = [{"device": {"path": "(null)"}, "enable": 0, "clear_ids": 1, "admin_timeout": 0, "io_timeout": 0}]
    doc = {"subsystems": [dict(sub(SUB, files[:1]), passthru=passthru)]}
    assert validate_document(doc, sysfs_root=None) == []
    doc["subsystems"][0]["passthru"][0]["device"]["path"] = "/dev/nvme0"
    # A controller set but not enabled may sit beside namespaces; enabled, it may not.
    assert validate_document(doc, sysfs_root=None, check_paths=False) == []
    doc["subsystems"][0]["passthru"][0]["enable"] = 1
    assert validate_document(doc, sysfs_root=None, check_paths=False) == [
        "subsystems[0].passthru[0]: an enabled passthru subsystem cannot have namespaces (the kernel refuses both); "
        "leave namespaces empty"]


# --------------------------------------------------------------------------- referrals, passthru, discovery


def test_nvmetcli_discovery_group_is_accepted_and_sets_the_discovery_nqn(root, files):
    """`nvmetcli save` writes {"discovery": {"nqn": ...}} on kernels with discovery_nqn
    (6.12 included): an unedited nvmetcli file is a valid document."""
    quiet(root)
    write(os.path.join(root, "nvmet", "discovery_nqn"), "nqn.2014-08.org.nvmexpress.discovery")
    doc = {"subsystems": [sub(SUB, files[:1], allow_any="1")], "ports": [port(1, [SUB])],
           "discovery": {"nqn": "nqn.2014-08.org.nvmexpress.discovery"}}
    tree, ops = converge(root, doc)
    assert not [op for op in ops if op.path == "discovery_nqn"]  # the default: nothing to write
    doc["discovery"]["nqn"] = "nqn.2024-04.io.aiinfra.lab:discovery"
    tree, ops = converge(root, doc)
    assert [op.text() for op in ops] == ["write discovery_nqn = nqn.2024-04.io.aiinfra.lab:discovery"]
    assert tree.read()["discovery_nqn"] == "nqn.2024-04.io.aiinfra.lab:discovery"
    with pytest.raises(DocumentError) as info:
        check_document({"discovery": {"nqn": "bad nqn", "colour": 1}}, tree.read())
    assert [e.split(":")[0] for e in info.value.errors] == ["discovery.colour", "discovery.nqn"]


REFERRAL = {"name": "te2", "enable": 1, "addr": {"trtype": "tcp", "adrfam": "ipv4", "traddr": "10.99.0.2",
                                                 "trsvcid": "8009", "treq": "not specified", "portid": "1"}}


def test_referrals_are_planned_with_their_port_and_purged_only_where_listed(root, files):
    quiet(root)
    doc = {"subsystems": [sub(SUB, files[:1], allow_any="1")], "ports": [port(1, [SUB], referrals=[REFERRAL])]}
    tree, ops = converge(root, doc)
    assert "mkdir ports/1/referrals/te2" in [op.text() for op in ops]
    ref = tree.read()["ports"][1]["referrals"]["te2"]
    assert (ref["traddr"], ref["trsvcid"], ref["enabled"]) == ("10.99.0.2", "8009", True)
    assert converge(root, doc)[1] == []
    # listed: a port entry without the key keeps its referrals; with "referrals": [] they go.
    no_key = {"subsystems": doc["subsystems"], "ports": [port(1, [SUB])]}
    assert converge(root, no_key, purge="listed")[1] == []
    tree, ops = converge(root, dict(no_key, ports=[port(1, [SUB], referrals=[])]), purge="listed")
    assert [op.text() for op in ops] == ["rmdir ports/1/referrals/te2"]


def test_passthru_subsystem_is_planned_and_a_change_needs_force_when_connected(root, files):
    quiet(root)
    ctrl = os.path.join(root, "nvme3")
    doc = {"subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "1"}, "namespaces": [],
                           "passthru": [{"device": {"path": ctrl}, "enable": 1, "clear_ids": 1}]}],
           "ports": [port(1, [SUB])]}
    tree = EmulatedTree(root)
    state = tree.read()
    ops = plan_target(tree, state, doc)
    texts = [op.text() for op in ops]
    assert texts.index("mkdir subsystems/%s" % SUB) < texts.index("write subsystems/%s/passthru/device_path = %s"
                                                                  % (SUB, ctrl))
    assert texts.index("write subsystems/%s/passthru/enable = 1" % SUB) < texts.index(
        "link ports/1/subsystems/%s -> subsystems/%s" % (SUB, SUB))
    apply_plan(tree, ops)
    assert tree.read()["subsystems"][SUB]["passthru"] == {"device_path": ctrl, "enabled": True}
    assert simulate(state, ops)["subsystems"][SUB]["passthru"] == {"device_path": ctrl, "enabled": True}
    assert plan_target(tree, tree.read(), doc) == []
    # Another controller under a live connection: refused without force, disable first with it.
    doc["subsystems"][0]["passthru"][0]["device"]["path"] = ctrl + "x"
    quiet(root, ONE_CONNECTION)
    with pytest.raises(NvmetError, match="live connection"):
        plan_target(EmulatedTree(root), tree.read(), doc)
    ops = plan_target(EmulatedTree(root), tree.read(), doc, force=True)
    assert [op.text() for op in ops] == ["write subsystems/%s/passthru/enable = 0" % SUB,
                                         "write subsystems/%s/passthru/device_path = %sx" % (SUB, ctrl),
                                         "write subsystems/%s/passthru/enable = 1" % SUB]
    with pytest.raises(DocumentError, match="io_timeout: '5' is not managed"):
        check_document({"subsystems": [dict(doc["subsystems"][0], passthru=[{"io_timeout": "5"}])]}, tree.read(),
                       check_paths=False)
