"""Unit tests for the boot restorer and the save file: best-effort restore with every
skipped object reported, masked keys refused, kernel modules loaded per transport, the
atomic and durable save, the teardown's "save without", and nvmetcli's schema both ways.

The configfs tree is the FAKE of test_nvmet.py (a plain directory laid out like
Debian 6.12's nvmet tree, with ``EmulatedTree`` populating what mkdir would). Kernel
refusals are injected by hand where a test says so; the real kernel is the lab's job
(molecule/nvmeof_reboot).
"""

import json
import os
import stat

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import bootrestore, restore, savefile
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import to_savefile

from test_nvmet import HOST, HOST2, SUB, EmulatedTree, apply_document, fake_host, fake_namespace, fake_port, fake_subsystem, link, make_key

SUB2 = "nqn.2024-04.io.aiinfra.lab:te1.second"
TCP_ADDR = {"trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "adrfam": "ipv4", "treq": "not specified",
            "tsas": "none"}


@pytest.fixture
def root(tmp_path):
    for d in ("subsystems", "ports", "hosts"):
        os.makedirs(str(tmp_path / "nvmet" / d))
    for mod in ("nvmet", "nvmet_tcp"):
        os.makedirs(str(tmp_path / "sys" / "module" / mod))
    return str(tmp_path)


@pytest.fixture
def files(tmp_path):
    out = []
    for name in ("disk1.img", "disk2.img", "disk3.img"):
        p = tmp_path / name
        p.write_bytes(b"")
        out.append(str(p))
    return out


class Modprobe(object):
    """FAKE modprobe: 'loads' a module by creating <sysfs>/module/<name>, except those in ``fail``."""

    def __init__(self, root, fail=()):
        self.root, self.fail, self.calls = root, set(fail), []

    def __call__(self, name):
        self.calls.append(name)
        if name in self.fail:
            return "modprobe: FATAL: Module %s not found in directory /lib/modules/6.12.0" % name
        os.makedirs(os.path.join(self.root, "sys", "module", name), exist_ok=True)
        return None


def port(pid, subsystems, addr=None, **extra):
    out = {"portid": pid, "addr": dict(addr or TCP_ADDR), "param": {}, "subsystems": list(subsystems),
           "referrals": [], "ana_groups": [{"grpid": 1, "ana": {"state": "optimized"}}]}
    out.update(extra)
    return out


def subsystem(nqn, namespaces, hosts=(), allow_any="0"):
    return {"nqn": nqn, "attr": {"allow_any_host": allow_any}, "allowed_hosts": list(hosts),
            "namespaces": [{"nsid": i + 1, "enable": 1, "device": {"path": p}} if isinstance(p, str) else p
                           for i, p in enumerate(namespaces)]}


def run(root, doc, **kw):
    tree = EmulatedTree(root)
    kw.setdefault("load_module", Modprobe(root))
    return tree, bootrestore.restore_best_effort(doc, tree, **kw)


def skipped(result):
    return dict((s["object"], s["reason"]) for s in result["skipped"])


# --------------------------------------------------------------------------- best effort, never silent


def test_missing_backing_file_skips_that_namespace_only(root, files):
    os.unlink(files[1])
    doc = {"subsystems": [subsystem(SUB, [files[0], files[1]], allow_any="1"), subsystem(SUB2, [files[2]], allow_any="1")],
           "ports": [port(1, [SUB, SUB2])]}
    tree, result = run(root, doc)
    state = tree.read()
    assert result["status"] == "partial"
    assert list(skipped(result)) == ["subsystems/%s/namespaces/2" % SUB]
    assert files[1] in skipped(result)["subsystems/%s/namespaces/2" % SUB]
    assert sorted(state["subsystems"][SUB]["namespaces"]) == [1]
    assert state["subsystems"][SUB]["namespaces"][1]["enabled"]
    assert state["subsystems"][SUB2]["namespaces"][1]["device_path"] == files[2]
    assert state["ports"][1]["subsystems"] == [SUB, SUB2]


def test_cli_restore_is_partial_not_failed_and_writes_the_status(root, files, tmp_path, capsys, monkeypatch):
    """The unit's ExecStart: a skipped object must not fail the start (the unit would
    not be active, so no stop at shutdown); it is reported on stderr (the journal) and
    in the status file the role reads."""
    monkeypatch.setattr(bootrestore, "modprobe", Modprobe(root))
    monkeypatch.setattr(restore, "ConfigfsTree", EmulatedTree)
    os.unlink(files[0])
    doc = {"subsystems": [subsystem(SUB, [files[0]], allow_any="1"), subsystem(SUB2, [files[1]], allow_any="1")],
           "ports": [port(1, [SUB, SUB2])]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    status = tmp_path / "run" / "nvmet-restore.json"
    assert restore.main(["--configfs-root", root, "restore", "--status-file", str(status), str(path)]) == 0
    err = capsys.readouterr().err
    assert "skipped subsystems/%s/namespaces/1: " % SUB in err
    assert "restore partial" in err
    report = json.loads(status.read_text())
    assert report["status"] == "partial"
    assert [s["object"] for s in report["skipped"]] == ["subsystems/%s/namespaces/1" % SUB]
    assert report["file"] == str(path)
    assert os.path.isdir(os.path.join(root, "nvmet", "subsystems", SUB2, "namespaces", "1"))
    # --strict: the same restore, but a partial result is an error (for scripts).
    assert restore.main(["--configfs-root", root, "restore", "--strict", str(path)]) == 2


def test_subsystem_name_that_is_not_an_nqn_is_skipped(root, files):
    doc = {"subsystems": [subsystem("testnqn", [files[0]], allow_any="1"), subsystem(SUB, [files[1]], allow_any="1")],
           "ports": [port(1, ["testnqn", SUB])]}
    tree, result = run(root, doc)
    state = tree.read()
    assert list(state["subsystems"]) == [SUB]
    assert state["ports"][1]["subsystems"] == [SUB]
    assert "not a valid NQN" in skipped(result)["subsystems/testnqn"]
    assert "ports/1/subsystems/testnqn" in skipped(result)


def test_disabled_namespace_without_device_is_skipped(root, files):
    doc = {"subsystems": [subsystem(SUB, [{"nsid": 1, "enable": 0, "device": {"path": ""}}, files[0]],
                                    allow_any="1")]}
    tree, result = run(root, doc)
    state = tree.read()
    assert sorted(state["subsystems"][SUB]["namespaces"]) == [2]
    assert "no device" in skipped(result)["subsystems/%s/namespaces/1" % SUB]


def test_same_backing_file_in_two_namespaces_is_exported_once(root, files):
    doc = {"subsystems": [subsystem(SUB, [files[0]], allow_any="1"),
                          subsystem(SUB2, [files[0], files[1]], allow_any="1")]}
    tree, result = run(root, doc)
    state = tree.read()
    assert sorted(state["subsystems"][SUB2]["namespaces"]) == [2]
    assert "already exported by subsystems/%s/namespaces/1" % SUB in skipped(result)["subsystems/%s/namespaces/1" % SUB2]


def test_port_without_subsystems_is_restored(root, files):
    doc = {"subsystems": [subsystem(SUB, [files[0]], allow_any="1")],
           "ports": [port(1, [SUB]), port(2, [], addr=dict(TCP_ADDR, trsvcid="4421"))]}
    tree, result = run(root, doc)
    state = tree.read()
    assert result["status"] == "complete", result
    assert state["ports"][2]["trsvcid"] == "4421" and state["ports"][2]["subsystems"] == []


def test_loads_the_module_each_transport_needs_and_skips_a_port_whose_module_fails(root, files):
    loop = {"trtype": "loop", "traddr": "", "trsvcid": "", "adrfam": "", "treq": "not specified"}
    fc = {"trtype": "fc", "adrfam": "fc", "traddr": "nn-0x1000000044001123:pn-0x2000000055001123",
          "trsvcid": "", "treq": "not specified"}
    doc = {"subsystems": [subsystem(SUB, [files[0]], allow_any="1")],
           "ports": [port(1, [SUB]), port(2, [SUB], addr=loop), port(3, [SUB], addr=fc)]}
    probe = Modprobe(root, fail=["nvmet_fc"])
    tree, result = run(root, doc, load_module=probe)
    assert probe.calls == ["nvmet", "nvmet_tcp", "nvme_loop", "nvmet_fc"]
    state = tree.read()
    assert sorted(state["ports"]) == [1, 2]
    assert state["ports"][2]["trtype"] == "loop"
    assert "nvmet_fc" in skipped(result)["ports/3"] and "not found" in skipped(result)["ports/3"]


def test_kernel_refusal_skips_that_object_and_restores_the_rest(root, files):
    doc = {"subsystems": [subsystem(SUB, [files[0]], allow_any="1"), subsystem(SUB2, [files[1]], allow_any="1")],
           "ports": [port(1, [SUB, SUB2])]}
    tree = EmulatedTree(root, refuse={"subsystems/%s/namespaces/1/enable" % SUB: 22})
    result = bootrestore.restore_best_effort(doc, tree, load_module=Modprobe(root))
    state = tree.read()
    assert "Invalid argument" in skipped(result)["subsystems/%s" % SUB]
    assert state["subsystems"][SUB2]["namespaces"][1]["enabled"]
    # The half-made subsystem is not exported: never half up.
    assert state["ports"][1]["subsystems"] == [SUB2]
    assert "ports/1/subsystems/%s" % SUB in skipped(result)


def test_masked_key_refuses_the_host_and_its_links(root, files):
    """A file copied from nvmet_info (keys masked) must not bring the host back without
    authentication: the host is not created and no subsystem allows it."""
    doc = {"hosts": [{"nqn": HOST, "dhchap": {"key": "********", "hash": "hmac(sha256)", "dhgroup": "null"}},
                     {"nqn": HOST2}],
           "subsystems": [subsystem(SUB, [files[0]], hosts=[HOST, HOST2])],
           "ports": [port(1, [SUB])]}
    tree, result = run(root, doc)
    state = tree.read()
    assert list(state["hosts"]) == [HOST2]
    assert state["subsystems"][SUB]["allowed_hosts"] == [HOST2]
    assert "masked" in skipped(result)["hosts/" + HOST]
    assert "subsystems/%s/allowed_hosts/%s" % (SUB, HOST) in skipped(result)


def test_masked_key_keeps_a_host_that_already_has_its_key(root, files):
    key = make_key()
    fake_host(root, HOST, key=key)
    doc = {"hosts": [{"nqn": HOST, "dhchap": {"key": "********"}}],
           "subsystems": [subsystem(SUB, [files[0]], hosts=[HOST])]}
    tree, result = run(root, doc)
    state = tree.read()
    assert state["hosts"][HOST]["dhchap_key"] == key
    assert state["subsystems"][SUB]["allowed_hosts"] == [HOST]
    assert result["skipped"] == []


def test_strict_restore_refuses_masked_keys_too(root, files):
    """nvmet_target (all or nothing) refuses a masked key as the boot restorer skips it."""
    doc = {"hosts": [{"nqn": HOST, "dhchap": {"key": "********"}}]}
    with pytest.raises(Exception) as exc:
        apply_document(doc, EmulatedTree(root))
    assert "masked" in str(exc.value)
    assert not os.path.exists(os.path.join(root, "nvmet", "hosts", HOST))


def test_unsupported_content_is_reported_never_dropped(root, files):
    doc = {"discovery_nqn": "nqn.2014-08.org.nvmexpress.discovery.custom",
           "subsystems": [dict(subsystem(SUB, [dict({"nsid": 1, "enable": 1, "device": {"path": files[0]},
                                                     "resv": {"enable": "1"}})], allow_any="1")),
                          dict(subsystem(SUB2, [], allow_any="1"),
                               passthru=[{"device": {"path": "/dev/nvme0"}, "enable": 1, "clear_ids": 1,
                                          "admin_timeout": 0, "io_timeout": 0}])],
           "ports": [port(1, [SUB])]}
    tree, result = run(root, doc)
    objects = dict((s["object"], s["reason"]) for s in result["not_restored"])
    assert "discovery_nqn" in objects
    assert "passthru" in objects["subsystems/%s/passthru" % SUB2]
    assert "reservation" in objects["subsystems/%s/namespaces/1/resv" % SUB]
    assert result["status"] == "partial"
    # Everything else is there.
    state = tree.read()
    assert sorted(state["subsystems"]) == [SUB, SUB2]
    assert state["ports"][1]["subsystems"] == [SUB]


def test_ana_group_states_restore(root, files):
    ns = {"nsid": 1, "enable": 1, "device": {"path": files[0]}, "ana_grpid": 2}
    groups = [{"grpid": 1, "ana": {"state": "optimized"}}, {"grpid": 2, "ana": {"state": "non-optimized"}}]
    doc = {"subsystems": [subsystem(SUB, [ns], allow_any="1")], "ports": [port(1, [SUB], ana_groups=groups)]}
    tree, result = run(root, doc)
    state = tree.read()
    assert result["status"] == "complete", result
    assert state["ports"][1]["ana_groups"] == {1: "optimized", 2: "non-optimized"}
    assert state["subsystems"][SUB]["namespaces"][1]["ana_grpid"] == 2


def test_passthru_subsystem_is_saved_and_reported_not_restored(root, files):
    fake_subsystem(root, SUB2)
    for name, value in (("device_path", "/dev/nvme0"), ("enable", "1")):
        with open(os.path.join(root, "nvmet", "subsystems", SUB2, "passthru", name), "w") as f:
            f.write(value + "\n")
    doc = json.loads(json.dumps(to_savefile(EmulatedTree(root).read(), mask_keys=False)))
    assert doc["subsystems"][0]["passthru"] == [{"device": {"path": "/dev/nvme0"}, "enable": 1}]
    assert bootrestore.unsupported_content(doc) == [
        {"object": "subsystems/%s/passthru" % SUB2,
         "reason": "passthru subsystems (device /dev/nvme0) are not restored by this restorer; restore them with "
                   "nvmetcli"}]


def test_referrals_restore(root, files):
    referral = {"name": "r1", "enable": 1, "addr": {"adrfam": "ipv4", "portid": "2", "traddr": "10.99.0.9",
                                                    "treq": "not specified", "trsvcid": "4420", "trtype": "tcp"}}
    doc = {"subsystems": [subsystem(SUB, [files[0]], allow_any="1")], "ports": [port(1, [SUB], referrals=[referral])]}
    tree, result = run(root, doc)
    assert result["status"] == "complete", result
    assert "r1" in tree.read()["ports"][1]["referrals"]


def test_default_referral_resv_and_passthru_entries_are_not_reported(root, files):
    """nvmetcli writes these keys for every object; their default values lose nothing."""
    device = {"path": files[0], "uuid": "c1dcff13-cbcf-44e6-997c-ee94dc0b42e3",
              "nguid": "00000000-0000-0000-0000-000000000000"}
    ns = {"nsid": 1, "enable": 1, "device": device, "ana": {"grpid": "1"}, "resv": {"enable": "0"}, "ana_grpid": 1}
    doc = {"hosts": [], "subsystems": [subsystem(SUB, [ns], allow_any="1")], "ports": [port(1, [SUB])]}
    result = run(root, doc)[1]
    assert result["not_restored"] == [] and result["skipped"] == [] and result["status"] == "complete"


# --------------------------------------------------------------------------- the save file


def test_save_is_atomic_and_durable(root, tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.readlink("/proc/self/fd/%d" % fd))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    renamed = []
    real_replace = os.replace

    def replace(src, dst):
        renamed.append((os.path.basename(src), os.path.basename(dst), list(synced)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    fake_host(root, HOST, key=make_key())
    out = tmp_path / "etc" / "config.json"
    assert savefile.save_to_file(EmulatedTree(root), str(out)) == "written"
    # The data reached the disk before the rename made it the save file, and the rename
    # itself (the directory entry) after.
    assert len(renamed) == 1 and renamed[0][1] == "config.json"
    tmp_name = renamed[0][0]
    assert tmp_name != "config.json" and renamed[0][2] == [str(out.parent / tmp_name)]
    assert synced == [str(out.parent / tmp_name), str(out.parent)]
    assert stat.S_IMODE(os.stat(str(out)).st_mode) == 0o600
    assert [p.name for p in out.parent.iterdir()] == ["config.json"]


def test_save_failure_leaves_the_old_file_and_no_temp(root, tmp_path, monkeypatch):
    out = tmp_path / "config.json"
    out.write_text("old\n")

    def broken(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", broken)
    fake_host(root, HOST)
    with pytest.raises(OSError):
        savefile.save_to_file(EmulatedTree(root), str(out))
    assert out.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("config")] == ["config.json"]


def shared_tree(root, files):
    fake_host(root, HOST)
    fake_host(root, HOST2)
    for nqn, f, host in ((SUB, files[0], HOST), (SUB2, files[1], HOST2)):
        fake_subsystem(root, nqn)
        fake_namespace(root, nqn, 1, path=f, enable="1")
        link(root, "hosts/" + host, "subsystems/%s/allowed_hosts/%s" % (nqn, host))
    fake_port(root, 1, trtype="tcp", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4", tsas="none")
    fake_port(root, 2, trtype="tcp", traddr="10.99.0.1", trsvcid="4421", adrfam="ipv4", tsas="none")
    link(root, "subsystems/" + SUB, "ports/1/subsystems/" + SUB)
    link(root, "subsystems/" + SUB2, "ports/1/subsystems/" + SUB2)
    link(root, "subsystems/" + SUB, "ports/2/subsystems/" + SUB)


def test_main_save_without_what_the_teardown_removes(root, files, tmp_path, capsys):
    """The teardown writes the file without its subsystem (and the port and hosts it is
    about to remove) before it removes anything live."""
    shared_tree(root, files)
    out = tmp_path / "config.json"
    args = ["--configfs-root", root, "save", "--output", str(out), "--remove-when-empty",
            "--without-subsystem", SUB, "--without-port", "2", "--without-host=" + HOST]
    assert restore.main(args) == 0
    assert capsys.readouterr().out == "written\n"
    doc = json.loads(out.read_text())
    assert [s["nqn"] for s in doc["subsystems"]] == [SUB2]
    assert [(p["portid"], p["subsystems"]) for p in doc["ports"]] == [(1, [SUB2])]
    assert [h["nqn"] for h in doc["hosts"]] == [HOST2]
    # Live configfs untouched.
    assert os.path.isdir(os.path.join(root, "nvmet", "subsystems", SUB))
    # Without everything there is, the file goes.
    args += ["--without-subsystem", SUB2, "--without-port", "1", "--without-host", HOST2]
    assert restore.main(args) == 0
    assert capsys.readouterr().out == "removed\n"
    assert not out.exists()


# --------------------------------------------------------------------------- nvmetcli, both ways


def nvmetcli_restore(root, doc):
    """What `nvmetcli restore` does with a document, per nvmetcli's nvmet/nvme.py:
    Root.restore creates hosts (nqn only: Host has no attribute groups, so dhchap is
    ignored), then subsystems (namespaces: device_/ana_/resv_<key> files, then enable,
    then ana_grpid; allowed_hosts links; passthru; attr_<key>), then ports (addr_/param_
    <key> files, subsystem links, ana_groups/<id>/ana_<key>, referrals). Every file
    write is recorded, so a test can see a value the kernel would refuse."""
    writes = []
    nvmet = os.path.join(root, "nvmet")
    tree = EmulatedTree(root)

    def put(rel, value):
        writes.append((rel, str(value)))
        path = os.path.join(nvmet, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(str(value) + "\n")

    def mkdir(rel):
        from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import Op
        if not os.path.isdir(os.path.join(nvmet, rel)):
            tree.do(Op("mkdir", rel))

    for h in doc.get("hosts", []):
        mkdir("hosts/" + h["nqn"])
    for s in doc.get("subsystems", []):
        base = "subsystems/" + s["nqn"]
        mkdir(base)
        for ns in s.get("namespaces", []):
            nb = "%s/namespaces/%d" % (base, ns["nsid"])
            mkdir(nb)
            for group in ("device", "ana", "resv"):
                for k, v in ns.get(group, {}).items():
                    put("%s/%s_%s" % (nb, group, k), v)
            if ns.get("enable") is not None:
                put(nb + "/enable", ns["enable"])
            if "ana_grpid" in ns:
                put(nb + "/ana_grpid", int(ns["ana_grpid"]))
        for h in s.get("allowed_hosts", []):
            os.symlink(os.path.join(nvmet, "hosts", h), os.path.join(nvmet, base, "allowed_hosts", h))
        for k, v in s.get("attr", {}).items():
            put("%s/attr_%s" % (base, k), v)
    for p in doc.get("ports", []):
        base = "ports/%d" % p["portid"]
        mkdir(base)
        for group in ("addr", "param"):
            for k, v in p.get(group, {}).items():
                put("%s/%s_%s" % (base, group, k), v)
        for s in p.get("subsystems", []):
            os.symlink(os.path.join(nvmet, "subsystems", s), os.path.join(nvmet, base, "subsystems", s))
        for a in p.get("ana_groups", []):
            for k, v in a.get("ana", {}).items():
                put("%s/ana_groups/%d/ana_%s" % (base, a["grpid"], k), v)
    return writes


def test_our_save_file_restores_through_nvmetcli_to_the_same_configfs(root, files, tmp_path):
    """The file the role writes, restored by nvmetcli onto an empty target, gives the same
    tree as ours - except the DH-HMAC-CHAP keys, which nvmetcli ignores (why the role
    masks its unit) - and makes nvmetcli write no empty value (the kernel refuses an
    empty device_uuid, and an empty addr_tsas on a non-TCP port, with EINVAL)."""
    shared_tree(root, files)
    fake_port(root, 3, trtype="rdma", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4")
    link(root, "subsystems/" + SUB2, "ports/3/subsystems/" + SUB2)
    want = EmulatedTree(root).read()
    doc = json.loads(json.dumps(to_savefile(want, mask_keys=False)))
    other = tmp_path / "other"
    for d in ("subsystems", "ports", "hosts"):
        os.makedirs(str(other / "nvmet" / d))
    writes = nvmetcli_restore(str(other), doc)
    assert [w for w in writes if w[1] == ""] == []
    got = EmulatedTree(str(other)).read()
    for h in want["hosts"].values():
        h.update(dhchap_key=None, dhchap_ctrl_key=None)
    assert got == want


def test_nvmetcli_document_restores_through_ours(root, files):
    """A document as `nvmetcli save` writes it (its keys and nesting, from its nvme.py
    dump methods): namespaces with device/ana/resv groups, ports with addr/param,
    ana_groups and referrals, hosts with nqn only."""
    doc = {
        "hosts": [{"nqn": HOST}],
        "ports": [{"addr": {"adrfam": "ipv4", "traddr": "10.99.0.1", "treq": "not specified", "trsvcid": "4420",
                            "trtype": "tcp", "tsas": "none"},
                   "ana_groups": [{"ana": {"state": "optimized"}, "grpid": 1}],
                   "param": {"inline_data_size": "16384", "max_queue_size": "-1", "pi_enable": "0"},
                   "portid": 1, "referrals": [], "subsystems": [SUB]}],
        "subsystems": [{"allowed_hosts": [HOST],
                        "attr": {"allow_any_host": "0", "cntlid_max": "65519", "cntlid_min": "1",
                                 "firmware": "6.12.117", "ieee_oui": "0x000000", "model": "Linux",
                                 "pi_enable": "0", "qid_max": "128", "serial": "7261cd9a61165179a56a",
                                 "version": "1.3"},
                        "namespaces": [{"ana": {"grpid": "1"}, "ana_grpid": 1,
                                        "device": {"nguid": "00000000-0000-0000-0000-000000000000",
                                                   "path": files[0], "uuid": "c1dcff13-cbcf-44e6-997c-ee94dc0b42e3"},
                                        "enable": 1, "nsid": 1, "resv": {"enable": "0"}}],
                        "nqn": SUB}],
    }
    tree, result = run(root, doc)
    assert result["status"] == "complete", result
    state = tree.read()
    assert state["hosts"][HOST]["dhchap_key"] is None
    assert state["subsystems"][SUB]["allowed_hosts"] == [HOST]
    assert state["subsystems"][SUB]["namespaces"][1]["enabled"]
    assert state["ports"][1]["subsystems"] == [SUB]


def test_nvmetcli_discovery_group_is_restored_not_reported(root, files):
    """`nvmetcli save` writes the target's discovery NQN as a top-level attribute group,
    {"discovery": {"nqn": ...}} (Root.dump on a kernel with discovery_nqn, 6.12 included):
    the default loses nothing and a custom one is restored, instead of every nvmetcli
    document reporting "discovery" as not restored."""
    with open(os.path.join(root, "nvmet", "discovery_nqn"), "w") as f:
        f.write("nqn.2014-08.org.nvmexpress.discovery\n")
    base = {"subsystems": [subsystem(SUB, [files[0]], allow_any="1")], "ports": [port(1, [SUB])]}
    tree, result = run(root, dict(base, discovery={"nqn": "nqn.2014-08.org.nvmexpress.discovery"}))
    assert (result["status"], result["not_restored"], result["skipped"]) == ("complete", [], [])
    assert not any("discovery_nqn" in line for line in result["applied"])
    tree, result = run(root, dict(base, discovery={"nqn": "nqn.2024-04.io.aiinfra.lab:discovery"}))
    assert (result["status"], result["not_restored"], result["skipped"]) == ("complete", [], [])
    assert tree.read()["discovery_nqn"] == "nqn.2024-04.io.aiinfra.lab:discovery"
    # A discovery NQN the kernel would refuse (a subsystem's) is skipped and reported, the rest restored.
    tree, result = run(root, dict(base, discovery={"nqn": SUB, "other": "x"}))
    assert "discovery/nqn" in skipped(result)
    assert [s["object"] for s in result["not_restored"]] == ["discovery/other"]
    assert tree.read()["ports"][1]["subsystems"] == [SUB]


def test_nvmetcli_unset_device_paths_are_no_device(root, files):
    """The kernel prints an unset device path as "(null)" (snprintf of a NULL string), and
    `nvmetcli save` copies it: the empty passthru every subsystem has (kernels with
    CONFIG_NVME_TARGET_PASSTHRU) loses nothing, and a namespace saved with "(null)" has no
    device, rather than a file named "(null)" that is missing."""
    passthru = [{"device": {"path": "(null)"}, "enable": 0, "clear_ids": 1, "admin_timeout": 0, "io_timeout": 0}]
    doc = {"subsystems": [dict(subsystem(SUB, [files[0]], allow_any="1"), passthru=passthru)],
           "ports": [port(1, [SUB])]}
    result = run(root, doc)[1]
    assert (result["status"], result["not_restored"], result["skipped"]) == ("complete", [], [])
    ns = {"nsid": 2, "enable": 0, "device": {"path": "(null)", "nguid": "00000000-0000-0000-0000-000000000000"}}
    doc["subsystems"][0]["namespaces"].append(ns)
    result = run(root, doc)[1]
    assert skipped(result)["subsystems/%s/namespaces/2" % SUB].startswith("it has no device")


# --------------------------------------------------------------------------- backing file identity


def replace_file(path, size=None):
    """Another file at path (a new inode: it is made while the old one still exists, as
    when the kernel holds the deleted image open), of the same size unless ``size``: what
    a tool that deletes an image and makes a blank one in its place leaves."""
    size = os.path.getsize(path) if size is None else size
    with open(path + ".new", "wb") as f:
        f.truncate(size)
    os.replace(path + ".new", path)


def saved_and_cleared(root, files, tmp_path):
    """A target of two file namespaces saved the way the role saves it, then cleared as the
    unit's stop does at shutdown: the next boot finds configfs empty."""
    for f in files[:2]:
        with open(f, "wb") as out:
            out.write(b"an initiator's data\n" * 100)
    doc = {"subsystems": [subsystem(SUB, [files[0], files[1]], allow_any="1")], "ports": [port(1, [SUB])]}
    run(root, doc)
    save = str(tmp_path / "etc-nvmet" / "config.json")
    assert savefile.save_to_file(EmulatedTree(root), save) == "written"
    with open(save) as f:
        saved = json.load(f)
    bootrestore.clear_document(saved, tree=EmulatedTree(root))
    assert EmulatedTree(root).read()["subsystems"] == {}
    return saved


@pytest.mark.parametrize("size", [None, 0])
def test_a_backing_file_that_is_not_the_one_saved_is_not_exported_at_boot(root, files, tmp_path, size):
    saved = saved_and_cleared(root, files, tmp_path)
    replace_file(files[1], size)
    tree, result = run(root, saved)
    obj = "subsystems/%s/namespaces/2" % SUB
    assert result["status"] == "partial" and list(skipped(result)) == [obj]
    reason = skipped(result)[obj]
    assert files[1] in reason and "not the file" in reason and "inode" in reason, reason
    state = tree.read()
    assert sorted(state["subsystems"][SUB]["namespaces"]) == [1]
    assert state["ports"][1]["subsystems"] == [SUB]


def test_the_saved_backing_file_itself_is_exported_at_boot(root, files, tmp_path):
    saved = saved_and_cleared(root, files, tmp_path)
    # Written to since the save (an initiator's writes): the same file.
    with open(files[1], "r+b") as f:
        f.write(b"more data")
    tree, result = run(root, saved)
    assert result["status"] == "complete", result["skipped"]
    assert sorted(tree.read()["subsystems"][SUB]["namespaces"]) == [1, 2]


def test_a_save_keeps_the_identity_of_the_file_the_kernel_opened(root, files, tmp_path):
    """A teardown's or the CLI's save while a live namespace's image has been replaced
    records the file the kernel still serves, not the blank one now at the path."""
    doc = {"subsystems": [subsystem(SUB, [files[0], files[1]], allow_any="1"), subsystem(SUB2, [files[2]], allow_any="1")],
           "ports": [port(1, [SUB, SUB2])]}
    run(root, doc)
    save = str(tmp_path / "etc-nvmet" / "config.json")
    savefile.save_to_file(EmulatedTree(root), save)
    with open(save) as f:
        first = json.load(f)
    ident = first["subsystems"][0]["namespaces"][1]["file_identity"]
    assert ident == {"inode": os.stat(files[1]).st_ino, "size": 0}
    replace_file(files[1])
    assert savefile.save_to_file(EmulatedTree(root), save) == "unchanged"
    assert savefile.save_to_file(EmulatedTree(root), save, without={"subsystems": [SUB2]}) == "written"
    with open(save) as f:
        after = json.load(f)
    assert [s["nqn"] for s in after["subsystems"]] == [SUB]
    assert after["subsystems"][0]["namespaces"][1]["file_identity"] == ident
