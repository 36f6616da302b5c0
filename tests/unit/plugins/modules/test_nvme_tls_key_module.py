# -*- coding: utf-8 -*-
"""nvme_tls_key glue on a FAKE kernel keyring (FakeKeyring below: a /proc/keys file it
rewrites after every change, the keyctl rlist and keyctl unlink commands it answers, and the
libkeyutils calls - keyctl_link, keyctl_search, keyctl_revoke, add_key - that
tls/kernel_keys.py makes to insert a key): a run after any partial failure converges, a key
no longer wanted leaves the keyring even when its unlink failed once, the keyring's own
contents, not the key store, say what is loaded, and no PSK is ever in a command's argv or
environment. The real keyring, libkeyutils and nvme-cli are the lab's (molecule/nvmeof_tls,
tests/lab/secrets_off_argv.sh)."""

from __future__ import annotations

import base64
import ctypes
import errno
import json
import os
import struct
import zlib

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls import load
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.derive import COMPAT, tls_psk
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.kernel_keys import KEY_SPEC_SESSION_KEYRING, KernelKeys
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


def payload(subsysnqn, psk):
    """The TLS PSK nvme-cli 2.13 (no --compat in its help: the compat derivation) would insert."""
    return tls_psk(psk, HOST, subsysnqn, COMPAT)[1]


class FakeKeyring(object):
    """FAKE kernel keyring .nvme: ``keys`` maps serial -> dict(identity, payload, linked to .nvme,
    revoked). A key that is not linked stays in /proc/keys only while ``held`` (a live TLS session
    holds it) or, revoked, until the kernel would collect it (never, here). ``fail`` names calls
    that fail the next time they run: "link" (keyctl_link, before anything changed), "add_key"
    (after the old key of the identity was revoked, as libnvme and kernel_keys revoke first) and
    "unlink" (keyctl unlink). ``commands`` records every command's argv and environment;
    ``events`` every change of the keyring, with the text the key store ``store`` had then."""

    def __init__(self, path):
        self.path = path
        self.keys = {}
        self.next_serial = 0x1000
        self.fail = set()
        self.held = set()
        self.inserted = []
        self.unlinked = []
        self.commands = []
        self.events = []
        self.store = None
        self.write()

    def add(self, identity, data=b"", linked=True):
        self.next_serial += 1
        self.keys[self.next_serial] = dict(identity=identity, payload=data, linked=linked, revoked=False)
        self.write()
        return self.next_serial

    def linked(self):
        """The identities of the usable keys the keyring links."""
        return sorted(k["identity"] for k in self.keys.values() if k["linked"] and not k["revoked"])

    def payload_of(self, identity):
        return [k["payload"] for k in self.keys.values()
                if k["identity"] == identity and k["linked"] and not k["revoked"]]

    def write(self):
        members = [k for k in self.keys.values() if k["linked"]]
        lines = ["%08x I--Q---     1 perm 3f3f0000     0     0 keyring   .nvme: %d" % (RING, len(members))]
        for serial, key in sorted(self.keys.items()):
            if key["linked"] or key["revoked"] or serial in self.held:
                flags = "IR-Q---" if key["revoked"] else "I--Q---"
                lines.append("%08x %s     1 perm 3f010000     0     0 psk       %s: 32" % (serial, flags, key["identity"]))
        with open(self.path, "w") as handle:
            handle.write("\n".join(lines) + "\n")

    def _event(self, what, identity):
        text = None
        if self.store and os.path.exists(self.store):
            with open(self.store) as handle:
                text = handle.read()
        self.events.append((what, identity, text))

    def _failing(self, call):
        if call in self.fail:
            self.fail.discard(call)
            return True
        return False

    # The commands (AnsibleModule.run_command) -----------------------------------------------

    def run(self, argv, environ_update=None):
        self.commands.append((list(argv), dict(environ_update or {})))
        tool = os.path.basename(argv[0])
        if tool == "nvme" and argv[-1] == "--help":
            if argv[1] == "check-tls-key":
                return 0, "  [  --insert, -i ] --- insert the TLS key into the keyring\n", ""
            return 1, "", "Invalid command"
        if tool == "modprobe":
            return 0, "", ""
        if tool == "keyctl" and argv[1] == "rlist":
            assert argv[2] == str(RING), argv
            return 0, " ".join(str(s) for s, k in sorted(self.keys.items()) if k["linked"]) + "\n", ""
        if tool == "keyctl" and argv[1] == "unlink":
            serial, ring = int(argv[2]), int(argv[3])
            if self._failing("unlink"):
                return 1, "", "keyctl_unlink: Permission denied"
            if ring != RING or serial not in self.keys or not self.keys[serial]["linked"]:
                return 1, "", "keyctl_unlink: No such file or directory"
            self.keys[serial]["linked"] = False
            self.unlinked.append(self.keys[serial]["identity"])
            self._event("unlink", self.keys[serial]["identity"])
            self.write()
            return 0, "1 links removed\n", ""
        # nvme check-tls-key --insert --keydata=<PSK> (or keys insert-tls-psk) among them: a key
        # goes in through add_key below, never through a command.
        raise AssertionError("unexpected command %r" % (argv,))

    # The FAKE libkeyutils that tls/kernel_keys.py calls -------------------------------------

    def _errno(self, code):
        ctypes.set_errno(code)
        return -1

    def keyctl_link(self, key, ring):
        assert (key, ring) == (RING, KEY_SPEC_SESSION_KEYRING), (key, ring)
        return self._errno(errno.EACCES) if self._failing("link") else 0

    def keyctl_search(self, ring, key_type, description, dest):
        assert (ring, key_type, dest) == (RING, b"psk", 0)
        for serial, key in sorted(self.keys.items()):
            if key["linked"] and key["identity"] == description.decode():
                return self._errno(errno.EKEYREVOKED) if key["revoked"] else serial
        return self._errno(errno.ENOKEY)

    def keyctl_revoke(self, key):
        self.keys[key]["revoked"] = True
        self.write()
        return 0

    def add_key(self, key_type, description, data, length, ring):
        assert (key_type, ring) == (b"psk", RING)
        if self._failing("add_key"):
            return self._errno(errno.EDQUOT)
        identity = description.decode()
        # As the kernel: the new key takes the place of the (revoked) one of the same description.
        for key in self.keys.values():
            if key["linked"] and key["identity"] == identity:
                key["linked"] = False
        self.inserted.append(identity)
        self._event("add_key", identity)
        return self.add(identity, data.raw[:length])


def run(monkeypatch, tmp_path, ring, keys, state="present", check=False, diff=True):
    store = tmp_path / "etc" / "tls-keys.json"
    fake_bin_path(monkeypatch, nvme_tls_key)
    monkeypatch.setattr(nvme_tls_key.AnsibleModule, "run_command",
                        lambda self, argv, environ_update=None, **kw: ring.run(argv, environ_update))
    monkeypatch.setattr(nvme_tls_key, "KeyLoader",
                        lambda run, **kw: load.KeyLoader(run, proc_keys=ring.path, keys=KernelKeys(ring), **kw))
    args = dict(keys=[dict(hostnqn=HOST, subsysnqn=s, psk=p) for s, p in keys], state=state, store=str(store),
                _ansible_check_mode=check, _ansible_diff=diff)
    return run_main(monkeypatch, nvme_tls_key, args)


def stored(tmp_path):
    path = tmp_path / "etc" / "tls-keys.json"
    return json.loads(path.read_text()) if path.exists() else None


@pytest.mark.parametrize("failing", ["link", "add_key"])
def test_a_rotation_whose_insert_failed_is_inserted_on_the_next_run(monkeypatch, tmp_path, failing):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(1))])
    assert ring.payload_of(ident(SUB)) == [payload(SUB, made_key(1))]
    ring.fail.add(failing)
    failed = run(monkeypatch, tmp_path, ring, [(SUB, made_key(2))])
    assert failed.get("failed") is True and failing not in ring.fail
    # The store records the PSK the keyring had, not the one that failed to go in.
    assert stored(tmp_path)["keys"][0]["psk"] == made_key(1)
    if failing == "link":
        # Nothing changed: the keyring still holds the old key, and only the store can tell
        # the next run that it is not the wanted one.
        assert ring.payload_of(ident(SUB)) == [payload(SUB, made_key(1))]
    else:
        # The old key was revoked before add_key failed (as libnvme does): none is usable.
        assert ring.linked() == []
    again = run(monkeypatch, tmp_path, ring, [(SUB, made_key(2))])
    assert "failed" not in again, again
    assert again["changed"] is True and again["operations"][0] == "insert %s" % ident(SUB)
    assert ring.inserted.count(ident(SUB)) == 2
    assert ring.payload_of(ident(SUB)) == [payload(SUB, made_key(2))]
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
    serial = [s for s, k in ring.keys.items() if k["identity"] == ident(SUB)][0]
    ring.held.add(serial)
    ring.keys[serial]["linked"] = False
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


def test_no_psk_is_ever_in_a_commands_argv_or_environment(monkeypatch, tmp_path):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    keys = [(SUB, made_key(1)), (SUB2, made_key(3))]
    assert "failed" not in run(monkeypatch, tmp_path, ring, keys)
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(2))])  # a rotation and an unlink
    assert "failed" not in run(monkeypatch, tmp_path, ring, [], state="absent")
    assert ring.inserted == [ident(SUB), ident(SUB2), ident(SUB)] and ring.linked() == []
    secrets = [made_key(n) for n in (1, 2, 3)] + [made_key(n).split(":")[2][:24] for n in (1, 2, 3)]
    seen = [argv for argv, env in ring.commands
            if any(x in "\0".join(argv + ["%s=%s" % kv for kv in sorted(env.items())]) for x in secrets)]
    assert seen == [] and ring.commands, "a PSK on a command line or in an environment"
    # nvme-cli was asked only for its help.
    assert [argv[1:] for argv, env in ring.commands if argv[0].endswith("nvme")] == [
        ["check-tls-key", "--help"], ["keys", "insert-tls-psk", "--help"]] * 2


def test_the_keyring_changes_first_unlinks_before_inserts_and_the_store_is_written_last(monkeypatch, tmp_path):
    ring = FakeKeyring(str(tmp_path / "proc-keys"))
    ring.store = str(tmp_path / "etc" / "tls-keys.json")
    assert "failed" not in run(monkeypatch, tmp_path, ring, [(SUB, made_key(1)), (SUB2, made_key(3))])
    before = (tmp_path / "etc" / "tls-keys.json").read_text()
    ring.events = []
    done = run(monkeypatch, tmp_path, ring, [(SUB, made_key(2))])
    assert "failed" not in done, done
    # Every keyring change saw the store as it was before the run.
    assert ring.events == [("unlink", ident(SUB2), before), ("add_key", ident(SUB), before)]
    assert done["operations"] == ["unlink %s" % ident(SUB2), "insert %s" % ident(SUB),
                                  "write store %s" % (tmp_path / "etc" / "tls-keys.json")]
    assert [k["psk"] for k in stored(tmp_path)["keys"]] == [made_key(2)] and "revoked" not in stored(tmp_path)
