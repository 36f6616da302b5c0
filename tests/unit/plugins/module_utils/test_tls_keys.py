"""TLS PSK validation, identities, the key store plan, /proc/keys parsing, which derivation the
installed nvme-cli inserts with (nvme-cli help captures) and the loader with recorded commands
and a FAKE kernel keyring (the real keyring is proven in the lab: molecule/nvmeof_tls)."""

import base64
import json
import struct
import zlib

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.runner import CommandRunner
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.derive import COMPAT, RFC8446, tls_psk
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.kernel_keys import KernelKeyError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.keyring import (
    insert_derivation, keyring_id, keyring_serial, loaded_identities, parse_proc_keys, parse_rlist,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyLoader, KeyringError, load_store
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import PskError, identity, parse_psk
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.store import (
    dump_store, normalize_keys, parse_store, plan_keys, public, read_store, settle,
)
from test_nvme_cli import fixture  # the nvme-cli captures under tests/fixtures/nvme_cli

HOST = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"
SUB = "nqn.2026-12.io.aiinfra:tls1"


def made_key(fill, hmac="01"):
    """A key built here (not by nvme-cli) in the interchange format: key bytes + CRC-32 LE."""
    raw = bytes([fill]) * (32 if hmac == "01" else 48)
    return "NVMeTLSkey-1:%s:%s:" % (hmac, base64.b64encode(raw + struct.pack("<I", zlib.crc32(raw))).decode())


def test_parse_psk_accepts_both_hashes():
    assert parse_psk(made_key(1)) == "01"
    assert parse_psk(made_key(2, "02")) == "02"


@pytest.mark.parametrize("text, words", [
    ("DHHC-1:01:abc:", "interchange format"),
    ("NVMeTLSkey-1:00:" + made_key(1).split(":")[2] + ":", "hash 00 is not accepted"),
    (made_key(1).replace(":01:", ":02:"), "needs a 48-byte key"),
    ("NVMeTLSkey-1:01:%s:" % base64.b64encode(b"\x01" * 32 + b"\0\0\0\0").decode(), "CRC-32"),
    ("NVMeTLSkey-1:01:!!!!:", "interchange format"),
])
def test_parse_psk_refuses_bad_keys_without_echoing_them(text, words):
    with pytest.raises(PskError) as info:
        parse_psk(text, "keys[0].psk")
    assert words in str(info.value)
    assert "keys[0].psk" in str(info.value)
    assert text not in str(info.value)


def test_identity_version_0():
    assert identity("01", HOST, SUB) == "NVMe0R01 %s %s" % (HOST, SUB)


def test_normalize_keys_refuses_duplicates_and_bad_nqns():
    key = {"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}
    with pytest.raises(PskError, match=r"keys\[1\]: a second key"):
        normalize_keys([key, dict(key, psk=made_key(2))])
    with pytest.raises(PskError, match=r"keys\[0\].subsysnqn: 'tls1' is not an NVMe qualified name"):
        normalize_keys([dict(key, subsysnqn="tls1")])


def test_store_round_trip_and_public_view_has_no_psk():
    keys = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}])
    text = dump_store(".nvme", keys)
    assert json.loads(text)["keys"][0]["psk"] == made_key(1)
    keyring, again = parse_store(text, "/x")
    assert keyring == ".nvme" and again == keys
    view = public(keys, {keys[0]["identity"]: 5})
    assert view == [{"hostnqn": HOST, "subsysnqn": SUB, "identity": keys[0]["identity"], "loaded": True}]
    assert made_key(1) not in json.dumps(view)
    assert parse_store(None) == (None, [])
    with pytest.raises(PskError, match="not written by aiinfra.fabric"):
        parse_store('{"a": 1}', "/x")


def store_of(keys, revoked=(), exists=True):
    """A read_store result: the store holding these keys and revoked identities."""
    return {"exists": exists, "keyring": ".nvme" if exists else None, "keys": list(keys),
            "revoked": [{"hostnqn": HOST, "subsysnqn": i.split(" ")[2], "identity": i} for i in revoked]}


def test_plan_insert_missing_rotate_and_unlink():
    k1 = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}])
    k1b = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(7)}])
    other = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB + "x", "psk": made_key(3)}])
    ident = k1[0]["identity"]
    none = store_of([], exists=False)
    # Nothing yet: write the store and insert.
    assert plan_keys(none, k1, {}, "present") == {"insert": [ident], "unlink": [], "store": "write"}
    # Stored and loaded: nothing to do (idempotent).
    assert plan_keys(store_of(k1), k1, {ident: 1}, "present") == {"insert": [], "unlink": [], "store": None}
    # After a reboot the keyring is empty: insert again, the store stays.
    assert plan_keys(store_of(k1), k1, {}, "present") == {"insert": [ident], "unlink": [], "store": None}
    # A rotation: same identity, new PSK.
    assert plan_keys(store_of(k1), k1b, {ident: 1}, "present") == {"insert": [ident], "unlink": [], "store": "write"}
    # A pair no longer wanted is unlinked.
    plan = plan_keys(store_of(k1 + other), k1, {ident: 1, other[0]["identity"]: 2}, "present")
    assert plan == {"insert": [], "unlink": [other[0]["identity"]], "store": "write"}
    assert plan_keys(store_of(k1), [], {ident: 1}, "absent") == {"insert": [], "unlink": [ident], "store": "remove"}
    assert plan_keys(none, [], {}, "absent") == {"insert": [], "unlink": [], "store": None}
    # A store left empty is removed by absent; present keeps it as it is.
    assert plan_keys(store_of([]), [], {}, "absent")["store"] == "remove"
    assert plan_keys(store_of([]), [], {}, "present")["store"] is None
    # Another keyring: the store says which one the boot loader fills.
    assert plan_keys(store_of(k1), k1, {ident: 1}, "present", keyring=".other")["store"] == "write"


def test_plan_unlinks_revoked_identities_the_keyring_still_holds():
    k1 = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}])
    ident, gone = k1[0]["identity"], "NVMe0R01 %s %sx" % (HOST, SUB)
    plan = plan_keys(store_of(k1, [gone]), k1, {ident: 1, gone: 2}, "present")
    assert plan == {"insert": [], "unlink": [gone], "store": "write"}
    # Not in the keyring any more (unlinked by hand, a reboot): only the store changes.
    assert plan_keys(store_of(k1, [gone]), k1, {ident: 1}, "present") == {"insert": [], "unlink": [], "store": "write"}
    assert plan_keys(store_of([], [gone]), [], {gone: 2}, "absent") == {"insert": [], "unlink": [gone], "store": "remove"}
    # A key this store never held is not touched, even when it is not wanted.
    assert plan_keys(store_of(k1), k1, {ident: 1, gone: 2}, "present")["unlink"] == []


def test_settle_records_what_the_keyring_holds_after_failures():
    k1 = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}])
    k1b = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(7)}])
    other = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB + "x", "psk": made_key(3)}])
    ident, oid = k1[0]["identity"], other[0]["identity"]
    store = store_of(k1 + other)
    # The rotation's insert and the unlink failed: the old PSK stays recorded, the other is revoked.
    keys, revoked = settle(store, k1b, {ident: 1, oid: 2}, inserted=[], unlinked=[])
    assert keys == k1 and [r["identity"] for r in revoked] == [oid]
    assert made_key(3) not in dump_store(".nvme", keys, revoked)
    # Both succeeded: the new PSK, nothing revoked.
    assert settle(store, k1b, {ident: 1, oid: 2}, inserted=[ident], unlinked=[oid]) == (k1b, [])
    # A new key whose insert failed is not recorded (the next run inserts it).
    assert settle(store_of([]), k1, {}, inserted=[], unlinked=[]) == ([], [])
    # A revoked identity wanted again whose insert failed stays revoked while the keyring holds it.
    keys, revoked = settle(store_of([], [ident]), k1, {ident: 5}, inserted=[], unlinked=[])
    assert keys == [] and [r["identity"] for r in revoked] == [ident]


def test_store_round_trip_with_revoked_identities():
    k1 = normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}])
    gone = "NVMe0R02 %s %sx" % (HOST, SUB)
    text = dump_store(".nvme", k1, [{"identity": gone}])
    revoked = [{"hostnqn": HOST, "subsysnqn": SUB + "x", "identity": gone}]
    assert read_store(text, "/x") == dict(store_of(k1), revoked=revoked)
    # The boot loader's view: the keys only.
    assert parse_store(text, "/x") == (".nvme", k1)
    # Without revoked identities the text is the one earlier releases wrote.
    assert "revoked" not in dump_store(".nvme", k1)
    with pytest.raises(PskError, match=r"revoked\[0\] is not a TLS PSK identity"):
        read_store('{"keys": [], "revoked": ["x"]}', "/x")


PROC_KEYS = (
    "0b1c2d3e I--Q---     1 perm 3f010000     0     0 keyring   .nvme: 1\n"
    "1a2b3c4d I--Q---     1 perm 3f010000     0     0 psk       NVMe0R01 %s %s: 32\n"
    "2a2b3c4d I--Q---     2 perm 3f030000     0     0 user      other: 4\n" % (HOST, SUB)
)
# The same, plus a revoked key of another identity and a key of a third that no keyring links.
PROC_KEYS_MORE = PROC_KEYS + (
    "3a2b3c4d IR-Q---     1 perm 3f010000     0     0 psk       NVMe0R01 %s %s2: 32\n"
    "4a2b3c4d I--Q---     1 perm 3f010000     0     0 psk       NVMe0R01 %s %s3: 32\n" % (HOST, SUB, HOST, SUB)
)


def test_proc_keys():
    keys = parse_proc_keys(PROC_KEYS)
    assert keys[("user", "other")] == 0x2a2b3c4d
    assert loaded_identities(PROC_KEYS) == {"NVMe0R01 %s %s" % (HOST, SUB): 0x1a2b3c4d}
    assert keyring_serial(PROC_KEYS, ".nvme") == 0x0b1c2d3e


def test_loaded_are_the_usable_keys_the_keyring_links():
    # A revoked key is never loaded; with the keyring's list (keyctl rlist, decimal), only its members.
    assert sorted(loaded_identities(PROC_KEYS_MORE)) == ["NVMe0R01 %s %s" % (HOST, SUB), "NVMe0R01 %s %s3" % (HOST, SUB)]
    members = parse_rlist("%d %d\n" % (0x1a2b3c4d, 0x3a2b3c4d))
    assert loaded_identities(PROC_KEYS_MORE, members) == {"NVMe0R01 %s %s" % (HOST, SUB): 0x1a2b3c4d}
    assert parse_rlist("\n") == set()


def test_a_revoked_key_beside_its_successor_is_not_the_loaded_one():
    # What /proc/keys showed on the build host's kernel after a replace (revoke + add_key)
    # of a "user" key in a keyring of its own: the revoked key stays listed until collected.
    text = ("05322a73 I--Q---     3 perm 3f010000     0     0 keyring   aiinfra-probe: 1\n"
            "1dbf14d1 IR-Q---     1 expd 3f010000     0     0 user      probe one: 0\n"
            "2d74ae92 I--Q---     1 perm 3f010000     0     0 user      probe one: 2\n")
    assert parse_proc_keys(text)[("user", "probe one")] == 0x2d74ae92
    # /proc/keys lists keys by serial: a successor with a lower serial comes before the revoked one.
    lower = "".join(sorted(text.replace("2d74ae92", "0d74ae92").splitlines(True)))
    assert lower.splitlines()[-1].startswith("1dbf14d1 IR")
    assert parse_proc_keys(lower)[("user", "probe one")] == 0x0d74ae92


def test_keyring_id_takes_a_serial_or_a_name():
    assert keyring_id(PROC_KEYS, ".nvme") == 0x0b1c2d3e
    assert keyring_id(PROC_KEYS, "0x1f") == 0x1f and keyring_id(PROC_KEYS, "31") == 31
    assert keyring_id(PROC_KEYS, ".other") is None


def test_insert_derivation_follows_the_help():
    # nvme-cli 2.3 (captured): check-tls-key has no --insert and there is no 'keys' plugin.
    assert insert_derivation(fixture("check-tls-key-help-nvme-cli-2.3.txt"), None) is None
    assert insert_derivation("  [  --insert, -i ] --- insert\n", None) == COMPAT
    # nvme-cli 2.16 (nvme.c, tag v2.16: check-tls-key gained --compat, RFC 8446 by default).
    assert insert_derivation("  [  --insert, -i ] --- x\n  [  --compat, -C ] --- y\n", None) == RFC8446
    keys_help = "  [  --hostnqn=<STR>, -n <STR> ] --- x\n  [  --subsysnqn=<STR>, -c <STR> ] --- y\n"
    assert insert_derivation("  [  --keydata=<STR> ] --- z\n", keys_help) == COMPAT
    assert insert_derivation("", keys_help + "  [  --compat ] --- c\n") == RFC8446


class Recorder(object):
    def __init__(self, results):
        self.calls = []
        self.results = results

    def __call__(self, argv, environ_update=None, data=None):
        self.calls.append(argv)
        for prefix, result in self.results:
            if argv[:len(prefix)] == prefix:
                return result
        return 0, "", ""


def test_loader_refuses_an_nvme_cli_that_cannot_insert(tmp_path):
    store = tmp_path / "keys.json"
    store.write_text(dump_store(".nvme", normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}])))
    run = Recorder([(["nvme", "check-tls-key"], (0, fixture("check-tls-key-help-nvme-cli-2.3.txt"), "")),
                    (["nvme", "keys"], (1, "", "Invalid command"))])
    count, errors = load_store(str(store), KeyLoader(CommandRunner(run), proc_keys=str(tmp_path / "none")))
    assert count == 0 and len(errors) == 1 and "cannot insert TLS PSKs" in errors[0]


class FakeKeys(object):
    """FAKE kernel keyring: records add_key's arguments, or fails like the kernel."""

    def __init__(self, fail=None):
        self.added, self.fail = [], fail

    def replace(self, ring, key_type, description, payload):
        if self.fail:
            raise KernelKeyError("add_key to keyring %d failed for %r: No such device (ENODEV)" % (ring, description))
        self.added.append((ring, key_type, description, payload))
        return 7


def test_loader_inserts_what_nvme_cli_would_and_never_runs_a_key(tmp_path):
    store = tmp_path / "keys.json"
    store.write_text(dump_store(".nvme", normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}])))
    proc = tmp_path / "proc-keys"
    proc.write_text(PROC_KEYS)
    run = Recorder([(["nvme", "check-tls-key", "--help"], (0, "  [  --insert, -i ] --- x\n", ""))])
    keys = FakeKeys()
    count, errors = load_store(str(store), KeyLoader(CommandRunner(run), proc_keys=str(proc), keys=keys))
    assert (count, errors) == (1, [])
    assert keys.added == [(0x0b1c2d3e, "psk") + tls_psk(made_key(1), HOST, SUB, COMPAT)]
    assert ["modprobe", "nvme-keyring"] in run.calls
    assert not [argv for argv in run.calls if any(made_key(1)[16:40] in a for a in argv)]
    assert load_store(str(tmp_path / "missing.json"), KeyLoader(CommandRunner(run), keys=keys)) == (0, [])


def test_loader_reports_a_keyring_it_cannot_find_or_write_without_the_key(tmp_path):
    store = tmp_path / "keys.json"
    store.write_text(dump_store(".nvme", normalize_keys([{"hostnqn": HOST, "subsysnqn": SUB, "psk": made_key(1)}])))
    run = Recorder([(["nvme", "check-tls-key", "--help"], (0, "  [  --insert, -i ] --- x\n", ""))])
    count, errors = load_store(str(store), KeyLoader(CommandRunner(run), proc_keys=str(tmp_path / "none"), keys=FakeKeys()))
    assert count == 0 and "keyring .nvme is not in" in errors[0] and "CONFIG_NVME_KEYRING" in errors[0]
    proc = tmp_path / "proc-keys"
    proc.write_text(PROC_KEYS)
    count, errors = load_store(str(store), KeyLoader(CommandRunner(run), proc_keys=str(proc), keys=FakeKeys(fail=True)))
    assert count == 0 and "No such device" in errors[0] and made_key(1) not in errors[0]


def test_unlink_uses_the_keyrings_own_serials(tmp_path):
    proc = tmp_path / "keys"
    proc.write_text(PROC_KEYS_MORE)
    run = Recorder([(["keyctl", "rlist"], (0, "%d\n" % 0x1a2b3c4d, ""))])
    KeyLoader(CommandRunner(run), proc_keys=str(proc)).unlink(".nvme", "NVMe0R01 %s %s" % (HOST, SUB))
    assert run.calls == [["keyctl", "rlist", str(0x0b1c2d3e)], ["keyctl", "unlink", str(0x1a2b3c4d), str(0x0b1c2d3e)]]
    # In /proc/keys but not in the keyring, or no such keyring: nothing to unlink.
    run.calls = []
    KeyLoader(CommandRunner(run), proc_keys=str(proc)).unlink(".nvme", "NVMe0R01 %s %s3" % (HOST, SUB))
    KeyLoader(CommandRunner(run), proc_keys=str(proc)).unlink(".other", "NVMe0R01 %s %s" % (HOST, SUB))
    assert run.calls == [["keyctl", "rlist", str(0x0b1c2d3e)]]


def test_a_keyring_whose_list_cannot_be_read_is_an_error(tmp_path):
    proc = tmp_path / "keys"
    proc.write_text(PROC_KEYS)
    run = Recorder([(["keyctl", "rlist"], (1, "", "keyctl_read_alloc: Permission denied"))])
    with pytest.raises(KeyringError, match="cannot list the keys of keyring .nvme .*Permission denied"):
        KeyLoader(CommandRunner(run), proc_keys=str(proc)).loaded(".nvme")


def test_keys_made_by_nvme_cli_213_pass_and_its_identities_match():
    # gen-tls-key-nvme-cli-2.13.txt: two keys from 'nvme gen-tls-key --hmac=1/2' on the trixie
    # lab, each followed by the identity 'nvme check-tls-key' printed for them, then a key
    # nvme-cli itself refused for its CRC.
    lines = fixture("gen-tls-key-nvme-cli-2.13.txt").splitlines()
    sub = "nqn.2026-12.io.aiinfra:fixture"
    for key_line, ident_line in ((lines[0], lines[1]), (lines[3], lines[4])):
        hmac = parse_psk(key_line.strip())
        assert identity(hmac, HOST, sub) == ident_line.strip()
    assert "CRC mismatch" in lines[6]
    with pytest.raises(PskError, match="CRC-32"):
        parse_psk("NVMeTLSkey-1:01:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA:")


def test_nvme_cli_213_inserts_with_the_compat_derivation():
    assert insert_derivation(fixture("check-tls-key-help-nvme-cli-2.13.txt"), None) == COMPAT
