"""The TLS PSK the loader puts into the keyring, against what nvme-cli itself inserts.

Vectors, by source:

- tests/fixtures/nvme_cli/tls-psk-insert-nvme-cli-2.13.txt: the add_key(2) arguments of
  nvme-cli 2.13 / libnvme 1.13 (the trixie lab's packages) for identity versions 0 and 1 -
  the key description and the payload, byte for byte (the compat derivation);
- libnvme's test/psk.c (tag v1.16, ``test_data_identity`` and ``test_data_identity_compat``):
  the version 1 identities of its two configured keys for ``nqn.psk-test-host`` and
  ``nqn.psk-test-subsys``, under both derivations. A version 1 identity ends in
  base64(HMAC(retained PSK, "<hostnqn> <subsysnqn> NVMe-over-Fabrics")), so it pins the
  retained-PSK step of each derivation; no published vector pins the RFC 8446 form of the
  last step (its HkdfLabel is the one the retained step uses, per libnvme 1.16's derive_tls_key).
"""

import base64
import hashlib
import hmac
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.derive import (
    COMPAT, RFC8446, configured_key, expand_label, hkdf_label, retained_psk, tls_psk,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import PskError

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvme_cli",
                       "tls-psk-insert-nvme-cli-2.13.txt")
KEY_01 = "NVMeTLSkey-1:01:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwNf9LrZ:"
KEY_02 = "NVMeTLSkey-1:02:VRLbtnN9AQb2WXW3c9+wEf/DRLz0QuLdbYvEhwtdWwP/w0S89ELi3W2LxIcLXVsDn8kXZQ==:"
# libnvme test/psk.c (v1.16): the configured key bytes of both test keys begin so.
TEST_KEY_START = bytes([0x55, 0x12, 0xDB, 0xB6, 0x73, 0x7D, 0x01, 0x06])
LIBNVME_V1_IDENTITIES = {
    (COMPAT, KEY_01): "NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys 66GuqV08TsAGII39teWUfwQwizjv06Jy8jOcX3NAAzM=",
    (COMPAT, KEY_02): "NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys "
                      "RsKmYJ3nAn1ApjjMloJFbAkLPivONDAX/xW327YBUsn2eGShXSjCZvBaOxscLqmz",
    (RFC8446, KEY_01): "NVMe1R01 nqn.psk-test-host nqn.psk-test-subsys iSbjiStwJ/1TrTvDlt2fjFmzvsytOJelidNnA+X5lEU=",
    (RFC8446, KEY_02): "NVMe1R02 nqn.psk-test-host nqn.psk-test-subsys "
                       "QhW2+Rp6RzHlNtCslyRxMnwJ11tKKhz8JCAQpQ+XUD8f9td1VeH5h53yz2wKJG1a",
}


def captured_inserts():
    rows = []
    with open(FIXTURE) as handle:
        for line in handle:
            if line.strip() and not line.startswith("#"):
                version, key, host, sub, description, payload = line.rstrip("\n").split("\t")
                rows.append((int(version), key, host, sub, description, bytes.fromhex(payload)))
    return rows


def version_1(key, host, sub, derivation):
    """Identity version 1 and its TLS PSK, as libnvme builds them (derive_psk_digest,
    gen_tls_identity, derive_tls_key): a check of the retained PSK, not a path the loader takes."""
    hmac_id, raw = configured_key(key)
    digest = {"01": hashlib.sha256, "02": hashlib.sha384}[hmac_id]
    retained = retained_psk(hmac_id, raw, host, derivation)
    psk_digest = base64.b64encode(hmac.new(retained, ("%s %s NVMe-over-Fabrics" % (host, sub)).encode(),
                                           digest).digest()).decode()
    ident = "NVMe1R%s %s %s %s" % (hmac_id, host, sub, psk_digest)
    return ident, expand_label(hmac_id, retained, b"nvme-tls-psk", ("%s " % hmac_id + psk_digest).encode(), derivation)


@pytest.mark.parametrize("row", captured_inserts(), ids=lambda r: "v%d-%s-%s" % (r[0], r[1][13:15], r[2][-4:]))
def test_the_compat_derivation_inserts_what_nvme_cli_213_inserts(row):
    version, key, host, sub, description, payload = row
    made = tls_psk(key, host, sub, COMPAT) if version == 0 else version_1(key, host, sub, COMPAT)
    assert made == (description, payload)


@pytest.mark.parametrize("derivation, key", sorted(LIBNVME_V1_IDENTITIES))
def test_retained_psk_matches_libnvmes_own_identity_vectors(derivation, key):
    assert configured_key(key)[1][:8] == TEST_KEY_START
    assert version_1(key, "nqn.psk-test-host", "nqn.psk-test-subsys", derivation)[0] == \
        LIBNVME_V1_IDENTITIES[(derivation, key)]


def test_the_two_derivations_differ_and_keep_the_identity():
    host, sub = "nqn.psk-test-host", "nqn.psk-test-subsys"
    compat, rfc = tls_psk(KEY_01, host, sub, COMPAT), tls_psk(KEY_01, host, sub, RFC8446)
    assert compat[0] == rfc[0] == "NVMe0R01 nqn.psk-test-host nqn.psk-test-subsys"
    assert compat[1] != rfc[1] and len(rfc[1]) == 32 and len(tls_psk(KEY_02, host, sub, RFC8446)[1]) == 48


def test_hkdf_labels_as_libnvme_writes_them():
    # libnvme 1.13 (and 1.16's *_compat): le16 length, no length bytes before label and context.
    assert hkdf_label(32, b"HostNQN", b"nqn.h", COMPAT) == b"\x20\x00tls13 HostNQNnqn.h"
    # libnvme 1.16 (RFC 8446 HkdfLabel): be16 length, each vector after its length byte.
    assert hkdf_label(48, b"HostNQN", b"nqn.h", RFC8446) == b"\x00\x30\x0dtls13 HostNQN\x05nqn.h"
    with pytest.raises(ValueError, match="unknown TLS PSK derivation"):
        hkdf_label(32, b"x", b"y", "other")


def test_a_bad_key_is_refused_without_being_echoed():
    bad = KEY_01.replace("VRL", "WRL")
    with pytest.raises(PskError) as info:
        tls_psk(bad, "nqn.psk-test-host", "nqn.psk-test-subsys", COMPAT, "keys[0].psk")
    assert "CRC-32" in str(info.value) and bad not in str(info.value)
