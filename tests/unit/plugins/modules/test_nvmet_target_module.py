# -*- coding: utf-8 -*-
"""nvmet_target module glue on the FAKE configfs tree (nvmet_fake.py): converge, no-op,
check mode, diff, src files, keys kept out of the result, every error at once."""

from __future__ import annotations

import copy
import hashlib
import json
import os
import sys

import pytest

from ansible_collections.aiinfra.fabric.plugins.modules import nvmet_target
from module_harness import patch_module_args, run_main  # tests/unit/plugins/modules/module_harness.py

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "module_utils"))
from nvmet_fake import HOST, SUB, EmulatedTree, empty_target, make_key  # noqa: E402  (the fake lives with the module_utils tests)


@pytest.fixture
def root(tmp_path):
    empty_target(str(tmp_path))
    (tmp_path / "disk.img").write_bytes(b"")
    return str(tmp_path)


def run(monkeypatch, root, args, check=False, diff=False):
    monkeypatch.setattr(nvmet_target, "make_tree", lambda params: EmulatedTree(root))
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    return run_main(monkeypatch, nvmet_target, args)


def tree_digest(root):
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in sorted(os.walk(os.path.join(root, "nvmet"))):
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            h.update(path.encode())
            if os.path.islink(path):
                h.update(os.readlink(path).encode())
            elif os.path.isfile(path):
                with open(path, "rb") as f:
                    h.update(f.read())
    return h.hexdigest()


def document(root, key):
    return {"hosts": [{"nqn": HOST, "dhchap": {"key": key}}],
            "subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "0"}, "allowed_hosts": [HOST],
                            "namespaces": [{"nsid": 1, "enable": 1, "device": {"path": os.path.join(root, "disk.img")}}]}],
            "ports": [{"portid": 1, "addr": {"trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420"},
                       "subsystems": [SUB]}]}


def test_check_then_converge_then_noop_with_diff_and_no_key_in_output(monkeypatch, root):
    key = make_key()
    args = {"document": document(root, key)}
    before = tree_digest(root)
    checked = run(monkeypatch, root, args, check=True, diff=True)
    assert checked["changed"] is True and tree_digest(root) == before
    assert checked["diff"]["before"] == {"hosts": [], "ports": [], "subsystems": []}
    assert checked["diff"]["after"]["subsystems"][0]["nqn"] == SUB
    first = run(monkeypatch, root, args, diff=True)
    assert first["changed"] is True and first["operations"] == checked["operations"]
    assert first["changed_keys"] == ["hosts/%s/dhchap_key" % HOST]
    assert first["target"]["hosts"][0]["dhchap"]["key"] == "********"
    assert first["target"]["ports"][0]["subsystems"] == [SUB]
    assert key not in json.dumps(first) and key not in json.dumps(checked)
    second = run(monkeypatch, root, args)
    assert second["changed"] is False and second["operations"] == [] and second["changed_keys"] == []


def test_src_file_and_its_keys_kept_out_of_the_result(monkeypatch, root):
    key = make_key()
    src = os.path.join(root, "target.json")
    with open(src, "w") as f:
        json.dump(document(root, key), f)
    result = run(monkeypatch, root, {"src": src})
    assert result["changed"] is True and key not in json.dumps(result)
    assert run(monkeypatch, root, {"src": src})["changed"] is False


def test_refused_document_lists_every_error_and_changes_nothing(monkeypatch, root):
    doc = document(root, "DHHC-1:01:bm90IGEga2V5:")
    doc["subsystems"][0]["namespaces"].append({"nsid": 1, "device": {"path": "/nonexistent.img"}})
    doc["ports"][0]["addr"]["trtype"] = "carrier-pigeon"
    before = tree_digest(root)
    result = run(monkeypatch, root, {"document": doc})
    assert result["failed"] and result["changed"] is False and result["operations"] == []
    assert [e.split(":", 1)[0] for e in result["errors"]] == [
        "hosts[0].dhchap.key", "subsystems[0].namespaces[1].nsid", "subsystems[0].namespaces[1].device.path",
        "ports[0].addr.trtype"]
    assert tree_digest(root) == before


def test_guard_refusal_changes_nothing(monkeypatch, root):
    args = {"document": document(root, make_key())}
    run(monkeypatch, root, args)
    moved = document(root, make_key())
    moved["ports"][0]["addr"]["trsvcid"] = "4430"
    before = tree_digest(root)
    result = run(monkeypatch, root, {"document": moved})
    assert result["failed"] and "allow_reconfigure" in result["msg"]
    assert tree_digest(root) == before
    done = run(monkeypatch, root, {"document": moved, "allow_reconfigure": True})
    assert done["changed"] is True and done["target"]["ports"][0]["addr"]["trsvcid"] == "4430"


@pytest.mark.parametrize("from_file", [False, True])
def test_real_exit_keeps_keys_out_of_the_whole_output(monkeypatch, capsys, root, from_file):
    """Through Ansible's own exit_json (invocation included): the key appears nowhere."""
    key = make_key()
    args = {"document": document(root, key)}
    if from_file:
        src = os.path.join(root, "target.json")
        with open(src, "w") as f:
            json.dump(args.pop("document"), f)
        args = {"src": src}
    monkeypatch.setattr(nvmet_target, "make_tree", lambda params: EmulatedTree(root))
    with patch_module_args(dict(args, _ansible_diff=True)):
        with pytest.raises(SystemExit):
            nvmet_target.main()
    out = capsys.readouterr().out
    result = json.loads(out)
    assert "invocation" in result, sorted(result)
    assert result["changed"] is True and result["target"]["subsystems"][0]["nqn"] == SUB
    assert key not in out, out


def test_after_a_converge_only_touched_objects_are_read_again_and_the_result_matches_configfs(monkeypatch, root):
    # A target of many objects: re-reading all of it after applying a plan cost about a
    # third of the module's pass (benchmarks/nvmet_target_scale.sh --profile); only the
    # objects the plan touched are read again, and the returned target is still what
    # configfs holds.
    from nvmet_fake import fake_namespace, fake_subsystem
    other = "nqn.2024-04.io.aiinfra.lab:te1.untouched"
    fake_subsystem(root, other, allow_any="1")
    for name in ("other.img", "second.img"):
        open(os.path.join(root, name), "wb").close()
    fake_namespace(root, other, "1", path=os.path.join(root, "other.img"), enable="1")
    reads = []
    real = EmulatedTree.read_subsystem
    monkeypatch.setattr(EmulatedTree, "read_subsystem", lambda self, nqn: reads.append(nqn) or real(self, nqn))
    args = {"document": document(root, make_key())}
    first = run(monkeypatch, root, args)
    assert first["changed"] is True
    assert reads.count(other) == 1  # the read before planning, not again after applying
    assert reads.count(SUB) == 1  # the new subsystem, after applying
    assert first["target"] == nvmet_target.target_view(EmulatedTree(root).read())
    # A change to one object of an existing target: the result is configfs, again.
    grown = copy.deepcopy(args)
    grown["document"]["subsystems"][0]["namespaces"].append({"nsid": 2, "enable": 0, "device": {"path": os.path.join(root, "second.img")}})
    second = run(monkeypatch, root, grown)
    assert second["changed"] is True
    assert second["target"] == nvmet_target.target_view(EmulatedTree(root).read())
    assert [ns["nsid"] for ns in [s for s in second["target"]["subsystems"] if s["nqn"] == SUB][0]["namespaces"]] == [1, 2]
    # Removing objects (purge all): each one read again is gone, and so is it from the result.
    emptied = run(monkeypatch, root, {"document": {"subsystems": [], "ports": [], "hosts": []}, "purge": "all", "force": True})
    assert emptied["changed"] is True
    assert emptied["target"] == nvmet_target.target_view(EmulatedTree(root).read())
    assert emptied["target"] == {"hosts": [], "ports": [], "subsystems": []}


def test_save_file_is_written_with_the_keys_once_and_only_reported(monkeypatch, root, tmp_path):
    """save_file: the whole target, keys in clear, in a 0600 file under a 0700 folder, written by
    the run that changed configfs; a no-op run leaves it; a check run writes nothing; the key
    never appears in the result."""
    key = make_key()
    save = str(tmp_path / "etc-nvmet" / "config.json")
    args = {"document": document(root, key), "save_file": save}
    checked = run(monkeypatch, root, args, check=True)
    assert checked["save_file"] == "would write" and not os.path.exists(save)
    first = run(monkeypatch, root, args)
    assert first["changed"] is True and first["save_file"] == "written"
    assert oct(os.stat(save).st_mode & 0o777) == "0o600"
    assert oct(os.stat(os.path.dirname(save)).st_mode & 0o777) == "0o700"
    with open(save) as f:
        saved = json.load(f)
    assert saved["hosts"][0]["dhchap"]["key"] == key, "the save file must carry the key for the boot restore"
    assert saved["subsystems"][0]["nqn"] == SUB and saved["ports"][0]["subsystems"] == [SUB]
    assert key not in json.dumps(first)
    mtime = os.stat(save).st_mtime_ns
    second = run(monkeypatch, root, args)
    assert second["changed"] is False and second["save_file"] == "unchanged"
    assert os.stat(save).st_mtime_ns == mtime
    checked_again = run(monkeypatch, root, args, check=True)
    assert checked_again["changed"] is False and checked_again["save_file"] == "unchanged"


def test_a_stale_save_file_alone_makes_the_run_changed(monkeypatch, root, tmp_path):
    key = make_key()
    save = str(tmp_path / "config.json")
    args = {"document": document(root, key), "save_file": save}
    run(monkeypatch, root, args)
    with open(save, "w") as f:
        f.write("{}\n")
    checked = run(monkeypatch, root, args, check=True)
    assert checked["changed"] is True and checked["operations"] == [] and checked["save_file"] == "would write"
    with open(save) as f:
        assert f.read() == "{}\n", "check mode rewrote the save file"
    fixed = run(monkeypatch, root, args)
    assert fixed["changed"] is True and fixed["operations"] == [] and fixed["save_file"] == "written"
    with open(save) as f:
        assert json.load(f)["hosts"][0]["dhchap"]["key"] == key


def test_remove_saves_first_then_removes_exactly_the_listed_objects(monkeypatch, root, tmp_path):
    """remove: the teardown's one task. The save file loses the removed subsystem before configfs
    does; the port and the host entry that were not listed stay, in configfs and in the file."""
    key = make_key()
    save = str(tmp_path / "config.json")
    run(monkeypatch, root, {"document": document(root, key), "save_file": save})
    before = tree_digest(root)
    args = {"remove": {"subsystems": [SUB]}, "save_file": save}
    checked = run(monkeypatch, root, args, check=True)
    assert checked["changed"] is True and checked["save_file"] == "would write" and tree_digest(root) == before
    assert "rmdir subsystems/%s" % SUB in checked["operations"]
    removed = run(monkeypatch, root, args)
    assert removed["operations"] == checked["operations"] and removed["save_file"] == "written"
    assert not os.path.exists(os.path.join(root, "nvmet", "subsystems", SUB))
    assert os.path.isdir(os.path.join(root, "nvmet", "ports", "1"))
    assert os.path.isdir(os.path.join(root, "nvmet", "hosts", HOST))
    with open(save) as f:
        saved = json.load(f)
    assert saved["subsystems"] == [] and saved["ports"][0]["subsystems"] == []
    assert saved["hosts"][0]["dhchap"]["key"] == key
    assert key not in json.dumps(removed)
    again = run(monkeypatch, root, args)
    assert again["changed"] is False and again["operations"] == [] and again["save_file"] == "unchanged"


def test_remove_of_everything_removes_the_save_file(monkeypatch, root, tmp_path):
    save = str(tmp_path / "config.json")
    run(monkeypatch, root, {"document": document(root, make_key()), "save_file": save})
    args = {"remove": {"subsystems": [SUB], "ports": [1], "hosts": [HOST]}, "save_file": save}
    removed = run(monkeypatch, root, args)
    assert removed["changed"] is True and removed["save_file"] == "removed" and not os.path.exists(save)
    assert removed["target"] == {"hosts": [], "ports": [], "subsystems": []}
    assert sorted(os.listdir(os.path.join(root, "nvmet", "subsystems"))) == []
    again = run(monkeypatch, root, args)
    assert again["changed"] is False and again["save_file"] == "absent"


def test_remove_of_a_host_a_kept_subsystem_allows_is_refused_and_changes_nothing(monkeypatch, root, tmp_path):
    run(monkeypatch, root, {"document": document(root, make_key())})
    before = tree_digest(root)
    refused = run(monkeypatch, root, {"remove": {"hosts": [HOST]}})
    assert refused.get("failed") and "allowed_hosts of subsystem" in refused["msg"]
    assert tree_digest(root) == before


def test_load_modules_loads_what_the_ports_need_before_reading_configfs(monkeypatch, root):
    """The fixture's sysfs lists nvmet and nvmet_tcp; an rdma port needs nvmet_rdma."""
    loaded = []

    def run_command(self, argv, **kw):
        loaded.append(argv[1:])
        os.makedirs(os.path.join(root, "sys", "module", argv[1]))
        return 0, "", ""

    monkeypatch.setattr(nvmet_target.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(nvmet_target.AnsibleModule, "get_bin_path", lambda self, name, **kw: "/sbin/" + name)
    doc = document(root, make_key())
    doc["ports"].append({"portid": 2, "addr": {"trtype": "rdma", "traddr": "10.99.0.1", "trsvcid": "4420"},
                         "subsystems": []})
    result = run(monkeypatch, root, {"document": doc, "load_modules": True}, check=True)
    assert loaded == [], "check mode must not load modules"
    assert result.get("failed") and "needs the kernel module nvmet_rdma" in result["msg"] + str(result.get("errors"))
    result = run(monkeypatch, root, {"document": doc, "load_modules": True})
    assert loaded == [["nvmet_rdma"]], loaded
    assert result["changed"] is True


def test_load_modules_loads_nothing_for_a_refused_document(monkeypatch, root):
    """Bad input changes nothing on the host, kernel modules included: the document is checked
    before modprobe runs."""
    loaded = []
    monkeypatch.setattr(nvmet_target.AnsibleModule, "run_command",
                        lambda self, argv, **kw: loaded.append(argv[1:]) or (0, "", ""))
    monkeypatch.setattr(nvmet_target.AnsibleModule, "get_bin_path", lambda self, name, **kw: "/sbin/" + name)
    doc = document(root, make_key())
    doc["ports"].append({"portid": 2, "addr": {"trtype": "rdma", "traddr": "10.99.0.1", "trsvcid": "4420"},
                         "subsystems": ["nqn.2024-04.io.aiinfra.lab:no-such-subsystem"]})
    doc["subsystems"][0]["namespaces"][0]["nsid"] = 0
    before = tree_digest(root)
    refused = run(monkeypatch, root, {"document": doc, "load_modules": True})
    assert refused.get("failed") and loaded == [], loaded
    assert "subsystems[0].namespaces[0].nsid" in str(refused["errors"])
    assert "no-such-subsystem" in str(refused["errors"])
    assert tree_digest(root) == before


def replace_file(path):
    """A blank file of the same size at path, made while the old one still exists (a new
    inode), as a tool leaves it that deletes an image the kernel still has open and
    creates an empty one in its place."""
    size = os.path.getsize(path)
    with open(path + ".new", "wb") as f:
        f.truncate(size)
    os.replace(path + ".new", path)


@pytest.mark.parametrize("namespace_live", [True, False])
def test_a_backing_file_that_is_not_the_one_saved_is_refused_before_any_change(monkeypatch, root, tmp_path,
                                                                               namespace_live):
    """Live: the kernel still serves the old image; saving the new one would have the next
    boot export a blank disk. Not live (the boot restore refused it): creating the
    namespace would export the blank file now. Either way nothing changes without force."""
    disk = os.path.join(root, "disk.img")
    with open(disk, "wb") as f:
        f.write(b"an initiator's data\n" * 100)
    save = tmp_path / "etc-nvmet" / "config.json"
    args = {"document": document(root, make_key()), "save_file": str(save)}
    assert run(monkeypatch, root, args)["save_file"] == "written"
    if not namespace_live:
        ns = os.path.join(root, "nvmet", "subsystems", SUB, "namespaces", "1")
        for name in os.listdir(ns):
            os.unlink(os.path.join(ns, name))
        os.rmdir(ns)
    replace_file(disk)
    before, saved = tree_digest(root), save.read_text()
    refused = run(monkeypatch, root, args)
    assert refused.get("failed") is True, refused
    assert refused["changed"] is False and refused["operations"] == []
    msg = refused["msg"]
    assert "subsystems/%s/namespaces/1" % SUB in msg and disk in msg and "force" in msg, msg
    assert tree_digest(root) == before and save.read_text() == saved
    # force: the file that is there now is the one to export, and the one saved.
    forced = run(monkeypatch, root, dict(args, force=True))
    assert forced.get("failed") is not True, forced
    assert run(monkeypatch, root, args).get("failed") is not True
