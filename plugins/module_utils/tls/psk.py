# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVMe TLS PSK interchange format and the PSK identity the kernel looks keys up by.

A configured PSK reads ``NVMeTLSkey-1:<hh>:<base64>:``: ``hh`` names the hash of the
retained-PSK derivation (01 SHA-256 with a 32-byte key, 02 SHA-384 with 48 bytes), and the
base64 text holds the key followed by its CRC-32 (4 bytes, least significant first), so a
mistyped key is caught here, before anything on a host changes.

nvme-cli derives a retained PSK from it and the host NQN and stores the TLS PSK in the
keyring under an identity; identity version 0 (NVMe/TCP 1.0) is
``NVMe0R<hh> <hostnqn> <subsysnqn>``, which the 6.12 kernel's host side searches for.
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import zlib

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.errors import TlsError

PSK_PREFIX = "NVMeTLSkey-1"
_PSK_RE = re.compile(r"^NVMeTLSkey-1:(0[12]):([A-Za-z0-9+/]+={0,2}):$")
KEY_LENGTHS = {"01": 32, "02": 48}
NQN_RE = re.compile(r"^nqn\.[0-9]{4}-[0-9]{2}\.[^ ]{1,216}$")


class PskError(TlsError, ValueError):
    """Bad key input; the message never contains the key."""


def parse_psk(text, where="psk"):
    """The hash id ("01"/"02") of a valid configured PSK; PskError otherwise.

    Messages name ``where`` (for example ``keys[2].psk``) and what is wrong, never the key.
    """
    if not isinstance(text, str):
        raise PskError("%s: must be a string in the interchange format %s:<01|02>:<base64>:" % (where, PSK_PREFIX))
    match = _PSK_RE.match(text.strip())
    if not match:
        raise PskError("%s: not a TLS PSK in the interchange format %s:<01|02>:<base64>: (as 'nvme gen-tls-key' "
                       "prints it; hash 00 is not accepted: the kernel looks up keys of hash 01 and 02 only)"
                       % (where, PSK_PREFIX))
    hmac, data = match.group(1), match.group(2)
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise PskError("%s: the base64 part does not decode" % where)
    want = KEY_LENGTHS[hmac]
    if len(raw) != want + 4:
        raise PskError("%s: hash %s needs a %d-byte key (+4 bytes CRC), this one has %d bytes"
                       % (where, hmac, want, len(raw) - 4))
    key, crc = raw[:-4], struct.unpack("<I", raw[-4:])[0]
    if zlib.crc32(key) & 0xFFFFFFFF != crc:
        raise PskError("%s: the CRC-32 in the key does not match its key bytes (a mistyped or truncated key)" % where)
    return hmac


def check_nqn(nqn, where):
    if not isinstance(nqn, str) or not NQN_RE.match(nqn):
        raise PskError("%s: %r is not an NVMe qualified name (nqn.yyyy-mm.<reverse domain>...)" % (where, nqn))
    return nqn


def identity(hmac, hostnqn, subsysnqn):
    """The version 0 TLS PSK identity of a key derived for this host and subsystem."""
    return "NVMe0R%s %s %s" % (hmac, hostnqn, subsysnqn)
