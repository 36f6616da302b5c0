# -*- coding: utf-8 -*-
"""nvme_tls_key glue on a FAKE kernel keyring (FakeKeyring below: a /proc/keys file it
rewrites after every change, and the nvme-cli insert, keyctl rlist and keyctl unlink
commands it answers): a run after any partial failure converges, a key no longer wanted
leaves the keyring even when its unlink failed once, and the keyring's own contents, not
the key store, say what is loaded. The real keyring and nvme-cli are the lab's
(molecule/nvmeof_tls)."""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls import load
from ansible_collections.aiinfra.fabric.plugins.modules import nvme_tls_key
from module_harness import fake_bin_path, run_main  # tests/unit/plugins/modules/module_harness.py

HOST = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"
SUB = "nqn.2026-12.io.aiinfra:tls1"
SUB2 = "nqn.2026-12.io.aiinfra:tls2"
RING = 0x3a000001


def made_key(fill):
    """A hash-01 key built here (not by nvme-cli): 32 key bytes + CRC-32 LE, base64."""
    raw = bytes([fill]) * 32
    return "NVMeTLSkey-1:01:%s:" % base64.b64encode(raw + struct.pack("<I", zlib.crc32(raw))).decode()


def ident(subsysnqn):
    return "NVMe0R01 %s %s" % (HOST, subsysnqn)


def option(argv, name):
    for arg in argv:
        if arg.startswith("--%s=" % name):
            return arg.split("=", 1)[1]
    return None


class FakeKeyring(object):
    """FAKE kernel keyring .nvme: ``keys`` maps serial -> [identity, linked to .nvme]; a key
    that is not linked stays in /proc/keys only while ``held`` (a live TLS session holds it).
    ``fail`` names commands ("insert", "unlink") that fail the next time they run."""

    def __init__(self, path):
        self.path = path
        self.keys = {}
        self.next_serial = 0x1000
        self.fail = set()
        self.held = set()
        self.inserted = []
        self.unlinked = []
        self.write()

    def add(self, identity, linked=True):
        self.next_serial += 1
        self.keys[self.next_serial] = [identity, linked]
        self.write()
        return self.next_serial

    def linked(self):
        return sorted(i for i, on in self.keys.values() if on)

    def write(self):
        lines = ["%08x I--Q---     1 perm 3f3f0000     0     0 keyring   .nvme: %d" % (RING, len(self.linked()))]
        for serial, (identity, on) in sorted(self.keys.items()):
            if on or serial in self.held:
                lines.append("%08x I--Q---     1 perm 3f010000     0     0 psk       %s: 32" % (serial, identity))
        with open(self.path, "w") as handle:
            handle.write("\n".join(lines) + "\n")

    def run(self, argv):
        tool = os.path.basename(argv[0])
        if tool == "nvme" and argv[-1] == "--help":
            if argv[1] == "check-tls-key":
                return 0, "  [  --insert, -i ] --- insert the TLS key into the keyring\n", ""
            return 1, "", "Invalid command"
        if tool == "modprobe":
            return 0, "", ""
        if tool == "nvme" and ("--insert" in argv or "insert-tls-psk" in argv):
            if "insert" in self.fail:
                self.fail.discard("insert")
                return 1, "", "failed to insert key"
            identity = "NVMe0R01 %s %s" % (option(argv, "hostnqn"), option(argv, "subsysnqn"))
            self.inserted.append(identity)
            if identity not in self.linked():
                self.add(identity)
            return 0, "Inserted TLS key %08x\n" % self.next_serial, ""
        if tool == "keyctl" and argv[1] == "rlist":
            assert argv[2] == str(RING), argv
            return 0, " ".join(str(s) for s, (i, on) in sorted(self.keys.items()) if on) + "\n", ""
        if tool == "keyctl" and argv[1] == "unlink":
            serial, ring = int(argv[2]), int(argv[3])
            if "unlink" in self.fail:
                self.fail.discard("unlink")
                return 1, "", "keyctl_unlink: Permission denied"
            if ring != RING or serial not in self.keys or not self.keys[serial][1]:
                return 1, "", "keyctl_unlink: No such file or directory"
            self.keys[serial][1] = False
            self.unlinked.append(self.keys[serial][0])
            self.write()
            return 0, "1 links removed\n", ""
        raise AssertionError("unexpected command %r" % (argv,))


def run(monkeypatch, tmp_path, ring, keys, state="present", check=False, diff=True):
    store = tmp_path / "etc" / "tls-keys.json"
    fake_bin_path(monkeypatch, nvme_tls_key)
    monkeypatch.setattr(nvme_tls_key.AnsibleModule, "run_command", lambda self, argv, **kw: ring.run(argv))
    monkeypatch.setattr(nvme_tls_key, "KeyLoader",
                        lambda run, **kw: load.KeyLoader(run, proc_keys=ring.path, **kw))
    args = dict(keys=[dict(hostnqn=HOST, subsysnqn=s, psk=p) for s, p in keys], state=state, store=str(store),
                _ansible_check_mode=check, _ansible_diff=diff)
    return run_main(monkeypatch, nvme_tls_key, args)


def stored(tmp_path):
    path = tmp_path / "etc" / "tls-keys.json"
    return json.loads(path.read_text()) if path.exists() else None


def test_a_rotation_whose_insert_failed_is_inserted_on_the_next_run(monkeypatch, tmp_path):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    ring.fail.add("insert")
    failed = run(monkeypatch, tmp_path, ring, [(SUB, made_key(2))])
    assert failed.get("failed") is True
    # The keyring still holds the old key: the next run must insert the new one.
    again = run(monkeypatch, tmp_path, ring, [(SUB, made_key(2))])
    assert "failed" not in again, again
    assert again["changed"] is True and ring.inserted[-1] == ident(SUB)
    assert ring.inserted.count(ident(SUB)) == 2
    assert stored(tmp_path)["keys"][0]["psk"] == made_key(2)
    last = run(monkeypatch, tmp_path, ring, [(SUB, made_key(2))])
    assert last["changed"] is False and ring.inserted.count(ident(SUB)) == 2


def test_a_key_whose_unlink_failed_is_unlinked_by_the_next_run(monkeypatch, tmp_path):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(1)), (SUB2, made_key(3))])
    ring.fail.add("unlink")
    failed = run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    assert failed.get("failed") is True and ident(SUB2) in ring.linked()
    # The revoked key is never loaded at boot again: its PSK left the store.
    assert made_key(3) not in json.dumps(stored(tmp_path))
    again = run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    assert "failed" not in again, again
    assert again["changed"] is True and ring.linked() == [ident(SUB)]
    last = run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    assert last["changed"] is False and last["operations"] == []


def test_absent_unlinks_a_key_whose_unlink_failed_before(monkeypatch, tmp_path):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(1)), (SUB2, made_key(3))])
    ring.fail.add("unlink")
    assert run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))]).get("failed") is True
    gone = run(monkeypatch, tmp_path, ring, [], state="absent")
    assert "failed" not in gone, gone
    assert ring.linked() == [] and stored(tmp_path) is None
    assert run(monkeypatch, tmp_path, ring, [], state="absent")["changed"] is False


def test_a_failed_unlink_under_absent_keeps_what_it_needs_to_finish(monkeypatch, tmp_path):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(1)), (SUB2, made_key(3))])
    ring.fail.add("unlink")
    failed = run(monkeypatch, tmp_path, ring, [], state="absent")
    assert failed.get("failed") is True and len(ring.linked()) == 1
    # No PSK is kept, and the boot loader loads nothing; the identity left is still to unlink.
    assert stored(tmp_path)["keys"] == [] and len(stored(tmp_path)["revoked"]) == 1
    again = run(monkeypatch, tmp_path, ring, [], state="absent")
    assert "failed" not in again and again["changed"] is True
    assert ring.linked() == [] and stored(tmp_path) is None


def test_a_key_in_proc_keys_but_not_in_the_keyring_is_inserted(monkeypatch, tmp_path):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    # Unlinked by hand while a TLS session still holds it: /proc/keys lists it, the keyring does not.
    serial = [s for s, (i, on) in ring.keys.items() if i == ident(SUB)][0]
    ring.held.add(serial)
    ring.keys[serial][1] = False
    ring.write()
    again = run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    assert "failed" not in again, again
    assert again["changed"] is True and again["operations"] == ["insert %s" % ident(SUB)]
    assert again["diff"]["before"]["keys"][0]["loaded"] is False
    assert ring.linked() == [ident(SUB)]


def test_check_mode_plans_against_the_keyring_and_changes_nothing(monkeypatch, tmp_path):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(1)), (SUB2, made_key(3))])
    ring.fail.add("unlink")
    assert run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))]).get("failed") is True
    before = (tmp_path / "etc" / "tls-keys.json").read_text()
    checked = run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))], check=True)
    assert checked["changed"] is True
    assert checked["operations"] == ["unlink %s" % ident(SUB2), "write store %s" % (tmp_path / "etc" / "tls-keys.json")]
    assert [k["identity"] for k in checked["diff"]["before"]["keys"] if k["loaded"]] == [ident(SUB), ident(SUB2)]
    assert [k["identity"] for k in checked["diff"]["after"]["keys"]] == [ident(SUB)]
    assert (tmp_path / "etc" / "tls-keys.json").read_text() == before and ident(SUB2) in ring.linked()
