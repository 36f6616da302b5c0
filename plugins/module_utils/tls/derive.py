# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The TLS PSK a configured PSK becomes in the kernel keyring, computed here so that no
process ever carries the configured PSK on its command line (``nvme check-tls-key --insert
--keydata=<PSK>`` did).

What nvme-cli inserts (libnvme, src/nvme/linux.c: derive_retained_key, derive_tls_key,
gen_tls_identity), for identity version 0 - the one nvme-cli inserts by default and the
6.12 kernel looks up:

1. retained PSK = HKDF-Expand-Label(HKDF-Extract(0, configured PSK), "HostNQN", host NQN, L)
2. identity = ``NVMe0R<hh> <host NQN> <subsystem NQN>``
3. TLS PSK = HKDF-Expand-Label(HKDF-Extract(0, retained PSK), "nvme-tls-psk", identity, L)

with the hash and L (32 or 48 bytes) of the key's ``hh`` (01 SHA-256, 02 SHA-384). The key
goes into the keyring as type ``psk``, described by the identity.

libnvme builds the HkdfLabel two ways, and which one a host uses depends on its nvme-cli:

- ``compat``: libnvme 1.15 and older (nvme-cli 2.15 and older, Debian 13's 2.13 among them)
  write the length little-endian and label and context without their length bytes:
  ``le16(L) "tls13 " label context``. nvme-cli 2.16 and later keep it behind ``--compat``.
- ``rfc8446``: libnvme 1.16 and later by default (libnvme commit fde6b1f5, "TLS PSK derivation
  fixes"): RFC 8446's HkdfLabel, ``be16(L) len "tls13 "+label len context``.

Both ends of a connection must hold the same bytes, so the loader picks the one the host's
own nvme-cli would use (tls/keyring.py: insert_derivation).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import struct

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import identity, parse_psk

COMPAT = "compat"
RFC8446 = "rfc8446"
DERIVATIONS = (COMPAT, RFC8446)
_HASHES = {"01": hashlib.sha256, "02": hashlib.sha384}


def configured_key(text, where="psk"):
    """(hash id, key bytes) of a configured PSK in interchange format (checked as psk.parse_psk does)."""
    hmac_id = parse_psk(text, where)
    raw = base64.b64decode(text.strip().split(":")[2])
    return hmac_id, raw[:-4]


def _hkdf_extract(digest, ikm):
    # RFC 5869: no salt is a salt of HashLen zero bytes.
    return hmac.new(b"\0" * digest().digest_size, ikm, digest).digest()


def _hkdf_expand(digest, prk, info, length):
    out, block, counter = b"", b"", 1
    while len(out) < length:
        block = hmac.new(prk, block + info + bytes([counter]), digest).digest()
        out += block
        counter += 1
    return out[:length]


def hkdf_label(length, label, context, derivation):
    """The HkdfLabel (HKDF-Expand's info) libnvme builds for ``label`` and ``context`` (bytes)."""
    if derivation == COMPAT:
        return struct.pack("<H", length) + b"tls13 " + label + context
    if derivation == RFC8446:
        full = b"tls13 " + label
        return struct.pack(">H", length) + bytes([len(full)]) + full + bytes([len(context)]) + context
    raise ValueError("unknown TLS PSK derivation %r (one of %s)" % (derivation, ", ".join(DERIVATIONS)))


def expand_label(hmac_id, secret, label, context, derivation):
    """HKDF-Expand-Label(HKDF-Extract(0, secret), label, context, len(secret)) as libnvme builds it."""
    digest = _HASHES[hmac_id]
    info = hkdf_label(len(secret), label, context, derivation)
    return _hkdf_expand(digest, _hkdf_extract(digest, secret), info, len(secret))


def retained_psk(hmac_id, key, hostnqn, derivation):
    """The retained PSK of configured key bytes ``key`` (hash ``hmac_id``) for ``hostnqn``."""
    return expand_label(hmac_id, key, b"HostNQN", hostnqn.encode("utf-8"), derivation)


def tls_psk(text, hostnqn, subsysnqn, derivation, where="psk"):
    """(identity, TLS PSK bytes) that nvme-cli would insert for the configured PSK ``text``
    (interchange format) with identity version 0; ``derivation`` is COMPAT or RFC8446."""
    hmac_id, key = configured_key(text, where)
    ident = identity(hmac_id, hostnqn, subsysnqn)
    retained = retained_psk(hmac_id, key, hostnqn, derivation)
    return ident, expand_label(hmac_id, retained, b"nvme-tls-psk", ident.encode("utf-8"), derivation)
