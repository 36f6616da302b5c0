# -*- coding: utf-8 -*-
"""Files that hold secrets are 0600 from their first byte, and a wrong mode on one is a change
that the run fixes (check mode reports it, with a diff, and changes nothing): the initiator's
saved connections (/etc/nvme/config.json, the nvme-fabrics.conf.d drop-in), the TLS key store
and the target's save file. On the FAKE hosts of the module tests they import; the real files
are the lab's (molecule nvmeof_tls, nvmeof_rdma)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import persist_ini
from test_nvme_connections_module import OWN, TOPOLOGY, FakeCli, reset, run as run_connections
from test_nvme_tls_key_module import SUB, FakeKeyring, made_key, run as run_tls_key
from test_nvmet_target_module import document, run as run_target
from nvmet_fake import make_key, write  # noqa: E402  (the nvmet module test put its folder on sys.path)


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


class ModeWatch(object):
    """Watches some paths through os.rename, os.replace and os.chmod: the mode a file had when
    it was renamed onto one of them (its content already written), and the mode each has
    after every such call. ``wider`` lists every moment one of them was wider than 0600."""

    def __init__(self, monkeypatch, *paths):
        self.paths = set(os.path.abspath(str(p)) for p in paths)
        self.wider = []
        for name in ("rename", "replace"):
            monkeypatch.setattr(os, name, self._renamer(getattr(os, name), name))
        real_chmod = os.chmod

        def chmod(path, mode, *a, **kw):
            real_chmod(path, mode, *a, **kw)
            self._look("chmod", path)
        monkeypatch.setattr(os, "chmod", chmod)

    def _watched(self, path):
        return not isinstance(path, int) and os.path.abspath(os.fsdecode(path)) in self.paths

    def _look(self, what, path):
        if self._watched(path) and os.path.exists(path) and mode_of(path) & 0o077:
            self.wider.append("%s: %s is %04o" % (what, os.fsdecode(path), mode_of(path)))

    def _renamer(self, real, name):
        def rename(src, dst, *a, **kw):
            if self._watched(dst) and mode_of(src) & 0o077:
                self.wider.append("%s of a %04o file onto %s" % (name, mode_of(src), os.fsdecode(dst)))
            real(src, dst, *a, **kw)
            self._look(name, dst)
        return rename


# The initiator's saved connections ------------------------------------------------------

def test_config_json_is_never_wider_than_0600(monkeypatch, tmp_path):
    reset()
    config = tmp_path / "config.json"
    watch = ModeWatch(monkeypatch, config)
    out = run_connections(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY, persistent=True, dhchap_secret="DHHC-1:00:x:"))
    assert "failed" not in out, out
    assert mode_of(config) == 0o600 and watch.wider == []
    # Rewritten over an old 0644 file, it is not 0644 for a moment either.
    os.chmod(str(config), 0o644)
    watch.wider = []
    out = run_connections(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY[:1], persistent=True, state="disconnected"))
    assert "failed" not in out, out
    assert mode_of(config) == 0o600 and watch.wider == []


def test_config_json_with_a_wider_mode_is_a_change_the_run_fixes(monkeypatch, tmp_path):
    reset()
    args = dict(subsystems=TOPOLOGY, persistent=True)
    config = tmp_path / "config.json"
    assert "failed" not in run_connections(monkeypatch, tmp_path, args)
    text = config.read_text()
    os.chmod(str(config), 0o644)
    fix = "chmod 0600 %s (was 0644)" % config
    checked = run_connections(monkeypatch, tmp_path, dict(args, _ansible_diff=True), check_mode=True)
    assert "failed" not in checked, checked
    assert checked["changed"] is True and "%s tcp 10.99.0.1:4420: %s" % (TOPOLOGY[0]["nqn"], fix) in checked["operations"]
    first = checked["connections"][0]
    assert first["operations"] == [fix] and first["persistent_mode"] == "0600"
    diff = checked["diff"]
    assert diff["before"]["paths"][first["label"]]["persistent_mode"] == "0644"
    assert diff["after"]["paths"][first["label"]]["persistent_mode"] == "0600"
    assert mode_of(config) == 0o644, "check mode changed the mode"
    fixed = run_connections(monkeypatch, tmp_path, args)
    assert "failed" not in fixed, fixed
    assert fixed["changed"] is True and fixed["connections"][0]["operations"] == [fix]
    assert mode_of(config) == 0o600 and config.read_text() == text
    again = run_connections(monkeypatch, tmp_path, args)
    assert again["changed"] is False and again["operations"] == []


def test_the_ini_dropin_is_0600_from_the_start_and_its_mode_is_kept(monkeypatch, tmp_path):
    reset()
    monkeypatch.setattr(FakeCli, "saved_connections_format", lambda self: "ini")
    monkeypatch.setattr(persist_ini, "DROPIN_DIR", str(tmp_path / "nvme-fabrics.conf.d"))
    dropin = tmp_path / "nvme-fabrics.conf.d" / "aiinfra-fabric.conf"
    watch = ModeWatch(monkeypatch, dropin)
    args = dict(subsystems=TOPOLOGY, persistent=True, dhchap_secret="DHHC-1:00:x:")
    assert "failed" not in run_connections(monkeypatch, tmp_path, args)
    assert mode_of(dropin) == 0o600 and watch.wider == [] and OWN not in dropin.read_text()
    os.chmod(str(dropin), 0o640)
    checked = run_connections(monkeypatch, tmp_path, args, check_mode=True)
    assert checked["changed"] is True and "chmod 0600 %s (was 0640)" % dropin in checked["connections"][0]["operations"]
    assert mode_of(dropin) == 0o640
    assert run_connections(monkeypatch, tmp_path, args)["changed"] is True and mode_of(dropin) == 0o600
    assert run_connections(monkeypatch, tmp_path, args)["changed"] is False


# The TLS key store ----------------------------------------------------------------------

def test_the_tls_key_store_is_never_wider_than_0600(monkeypatch, tmp_path):
    store = tmp_path / "etc" / "tls-keys.json"
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    watch = ModeWatch(monkeypatch, store)
    assert "failed" not in run_tls_key(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    assert mode_of(store) == 0o600 and watch.wider == []
    os.chmod(str(store), 0o644)
    watch.wider = []
    assert "failed" not in run_tls_key(monkeypatch, tmp_path, ring, [(SUB, made_key(2))])
    assert mode_of(store) == 0o600 and watch.wider == []


def test_a_tls_key_store_with_a_wider_mode_is_a_change_the_run_fixes(monkeypatch, tmp_path):
    store = tmp_path / "etc" / "tls-keys.json"
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    assert "failed" not in run_tls_key(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    text = store.read_text()
    os.chmod(str(store), 0o644)
    fix = "chmod 0600 %s (was 0644)" % store
    checked = run_tls_key(monkeypatch, tmp_path, ring, [(SUB, made_key(1))], check=True)
    assert checked["changed"] is True and checked["operations"] == [fix]
    assert checked["diff"]["before"]["store_mode"] == "0644" and checked["diff"]["after"]["store_mode"] == "0600"
    assert mode_of(store) == 0o644
    fixed = run_tls_key(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    assert fixed["changed"] is True and fixed["operations"] == [fix] and fixed["store_mode"] == "0600"
    assert mode_of(store) == 0o600 and store.read_text() == text
    assert run_tls_key(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])["changed"] is False


# The target's save file -----------------------------------------------------------------

@pytest.fixture
def root(tmp_path):
    """A FAKE configfs and sysfs for nvmet_target, as test_nvmet_target_module.py lays them out."""
    for d in ("subsystems", "ports", "hosts"):
        os.makedirs(str(tmp_path / "nvmet" / d))
    for mod in ("nvmet", "nvmet_tcp"):
        os.makedirs(str(tmp_path / "sys" / "module" / mod))
    write(str(tmp_path / "proc" / "net" / "tcp"), "  sl  local_address rem_address   st")
    (tmp_path / "disk.img").write_bytes(b"")
    return str(tmp_path)


def test_a_save_file_with_a_wider_mode_is_a_change_the_run_fixes(monkeypatch, root, tmp_path):
    save = tmp_path / "etc-nvmet" / "config.json"
    args = {"document": document(root, make_key()), "save_file": str(save)}
    watch = ModeWatch(monkeypatch, save)
    assert run_target(monkeypatch, root, args)["save_file"] == "written"
    assert mode_of(save) == 0o600 and watch.wider == []
    text = save.read_text()
    os.chmod(str(save), 0o644)
    watch.wider = []
    checked = run_target(monkeypatch, root, args, check=True, diff=True)
    assert checked["changed"] is True and checked["save_file"] == "would write" and mode_of(save) == 0o644
    assert checked["diff"]["before"]["save_file_mode"] == "0644" and checked["diff"]["after"]["save_file_mode"] == "0600"
    fixed = run_target(monkeypatch, root, args)
    assert fixed["changed"] is True and fixed["save_file"] == "written" and fixed["save_file_mode"] == "0600"
    assert mode_of(save) == 0o600 and save.read_text() == text and watch.wider == []
    again = run_target(monkeypatch, root, args)
    assert again["changed"] is False and again["save_file"] == "unchanged"
    assert json.loads(text)["subsystems"]
