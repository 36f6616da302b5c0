"""The keyring calls the loader makes instead of running nvme-cli with a key: the order of
libnvme's nvme_set_keyring + nvme_update_key, on a FAKE libkeyutils (the real library and
keyring are exercised in the lab: molecule/nvmeof_tls, tests/lab/secrets_off_argv.sh)."""

import ctypes
import errno

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.kernel_keys import (
    KEY_SPEC_SESSION_KEYRING, KernelKeyError, KernelKeys,
)


class FakeLibkeyutils(object):
    """FAKE libkeyutils: one keyring of ``held`` {description: serial}; records every call."""

    def __init__(self, held=None, fail=None):
        self.held, self.fail, self.calls = dict(held or {}), fail or {}, []

    def _result(self, name, value):
        if name in self.fail:
            ctypes.set_errno(self.fail[name])
            return -1
        return value

    def keyctl_link(self, key, ring):
        self.calls.append(("link", key, ring))
        return self._result("link", 0)

    def keyctl_search(self, ring, key_type, description, dest):
        self.calls.append(("search", ring, key_type, description))
        if description.decode() not in self.held:
            ctypes.set_errno(errno.ENOKEY)
            return -1
        return self.held[description.decode()]

    def keyctl_revoke(self, key):
        self.calls.append(("revoke", key))
        return self._result("revoke", 0)

    def add_key(self, key_type, description, data, length, ring):
        self.calls.append(("add", key_type, description, data.raw[:length], ring))
        return self._result("add", 99)


def test_a_new_key_is_added_after_linking_the_keyring_for_possession():
    lib = FakeLibkeyutils()
    assert KernelKeys(lib).replace(12, "psk", "NVMe0R01 h s", b"\x01" * 32) == 99
    assert lib.calls == [("link", 12, KEY_SPEC_SESSION_KEYRING), ("search", 12, b"psk", b"NVMe0R01 h s"),
                         ("add", b"psk", b"NVMe0R01 h s", b"\x01" * 32, 12)]


def test_a_key_of_the_same_identity_is_revoked_first_as_libnvme_does():
    lib = FakeLibkeyutils(held={"NVMe0R01 h s": 41})
    KernelKeys(lib).replace(12, "psk", "NVMe0R01 h s", b"\x02" * 48)
    assert [c[0] for c in lib.calls] == ["link", "search", "revoke", "add"] and lib.calls[2] == ("revoke", 41)


@pytest.mark.parametrize("fail, words", [("link", "keyctl_link of keyring 12"), ("add", "add_key to keyring 12")])
def test_failures_name_the_call_and_the_errno_and_never_the_payload(fail, words):
    lib = FakeLibkeyutils(fail={fail: errno.ENODEV})
    with pytest.raises(KernelKeyError) as info:
        KernelKeys(lib).replace(12, "psk", "NVMe0R01 h s", b"secret-bytes")
    assert words in str(info.value) and "ENODEV" in str(info.value) and "secret" not in str(info.value)
