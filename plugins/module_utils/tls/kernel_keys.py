# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Putting a key into a kernel keyring from this process, through libkeyutils (the library
keyctl and libnvme use), so the key travels in a system call and never in a command line.

:meth:`KernelKeys.replace` makes the same calls as libnvme's nvme_update_key after
nvme_set_keyring: link the keyring into this process's session keyring (a key of type
``psk`` grants search and setattr to its possessor only), search the keyring for a key of
that type and description, revoke it, then add_key(2) the new payload.
"""

from __future__ import annotations

import ctypes
import errno
import os

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.errors import TlsError

KEY_SPEC_SESSION_KEYRING = -3
LIBRARY = "libkeyutils.so.1"


class KernelKeyError(TlsError):
    """A keyring call failed; the message names the call, the key description and the errno."""


class KernelKeys(object):
    """The kernel keyring, through libkeyutils loaded with ctypes on first use (``lib``: an
    object with libkeyutils' functions, for tests)."""

    def __init__(self, lib=None):
        self._lib = lib

    def lib(self):
        if self._lib is None:
            # By its soname, not ctypes.util.find_library, which starts ldconfig or a compiler.
            try:
                lib = ctypes.CDLL(LIBRARY, use_errno=True)
            except OSError as exc:
                raise KernelKeyError("cannot load %s (%s): install keyutils (libkeyutils1)" % (LIBRARY, exc))
            serial = ctypes.c_int32
            for func, args in (("add_key", [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t, serial]),
                               ("keyctl_search", [serial, ctypes.c_char_p, ctypes.c_char_p, serial]),
                               ("keyctl_revoke", [serial]),
                               ("keyctl_link", [serial, serial])):
                getattr(lib, func).argtypes = args
            lib.add_key.restype = serial
            for func in ("keyctl_search", "keyctl_revoke", "keyctl_link"):
                getattr(lib, func).restype = ctypes.c_long
            self._lib = lib
        return self._lib

    @staticmethod
    def _failed(call, description):
        code = ctypes.get_errno()
        name = errno.errorcode.get(code, code)
        return KernelKeyError("%s failed for %r: %s (%s)" % (call, description, os.strerror(code), name))

    def replace(self, ring, key_type, description, payload):
        """Add ``payload`` (bytes) as a key ``key_type``/``description`` to keyring ``ring``
        (a serial), revoking the key of that description it held; returns the new serial."""
        lib = self.lib()
        kind, desc = key_type.encode("utf-8"), description.encode("utf-8")
        if lib.keyctl_link(ring, KEY_SPEC_SESSION_KEYRING) < 0:
            raise self._failed("keyctl_link of keyring %d to the session keyring" % ring, description)
        old = lib.keyctl_search(ring, kind, desc, 0)
        if old > 0 and lib.keyctl_revoke(old) < 0:
            raise self._failed("keyctl_revoke of key %d" % old, description)
        data = ctypes.create_string_buffer(bytes(payload), len(payload))
        serial = lib.add_key(kind, desc, data, len(payload), ring)
        ctypes.memset(data, 0, len(payload))
        if serial < 0:
            raise self._failed("add_key to keyring %d" % ring, description)
        return serial
