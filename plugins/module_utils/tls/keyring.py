# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel keyring side of TLS keys: what /proc/keys shows, and which TLS PSK derivation
the installed nvme-cli would use to insert a key (tls/derive.py computes it; the key goes in
through tls/kernel_keys.py, never on a command line).

nvme-cli 2.x inserts with ``nvme check-tls-key --insert``; 3.0 moved that to
``nvme keys insert-tls-psk`` (its check-tls-key no longer inserts). Which one exists, and
whether it offers ``--compat``, is read from the commands' own help, never from a version
number.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.capabilities import parse_long_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.derive import COMPAT, RFC8446

PROC_KEYS = "/proc/keys"


def parse_proc_keys(text):
    """{(type, description): serial} for the keys /proc/keys shows the caller.

    A line: ``<serial hex> <flags> <usage> <expiry> <perm> <uid> <gid> <type> <description>: <summary>``.
    A key replaced by nvme-cli or this collection is revoked first and stays listed (flag R)
    until the kernel collects it, beside its successor of the same description: revoked, dead
    and negative keys are skipped.
    """
    result = {}
    for line in (text or "").splitlines():
        fields = line.split(None, 8)
        if len(fields) < 9 or set(fields[1]) & set("RDNi"):
            continue
        rest = fields[8]
        description = rest.rsplit(": ", 1)[0] if ": " in rest else rest
        try:
            serial = int(fields[0], 16)
        except ValueError:
            continue
        result[(fields[7], description)] = serial
    return result


def loaded_identities(proc_keys_text):
    """{identity: serial} of the TLS PSKs (key type psk) in the caller's view."""
    return dict((desc, serial) for (ktype, desc), serial in parse_proc_keys(proc_keys_text).items()
                if ktype == "psk")


def keyring_serial(proc_keys_text, name):
    return parse_proc_keys(proc_keys_text).get(("keyring", name))


def parse_serial(text):
    """A key serial as nvme-cli's --keyring and --tls_key take one (decimal or 0x-hex), or None
    when ``text`` is something else (a keyring name, a PSK)."""
    text = str(text).strip()
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text, 10)
    except ValueError:
        return None


def keyring_id(proc_keys_text, keyring):
    """The serial of ``keyring``: a number as it is, a name looked up in /proc/keys; None when
    not found."""
    serial = parse_serial(keyring)
    return serial if serial is not None else keyring_serial(proc_keys_text, str(keyring).strip())


def insert_derivation(check_help, keys_insert_help):
    """The TLS PSK derivation (tls/derive.py) the installed nvme-cli inserts keys with, from
    the help of ``nvme check-tls-key`` and of ``nvme keys insert-tls-psk`` (None: that command
    failed). An nvme-cli that offers ``--compat`` (2.16 and later, libnvme 1.16) derives as
    RFC 8446 says unless told otherwise; one that inserts without offering it (2.x up to 2.15,
    Debian 13's 2.13) knows only the older, compat form. Returns None when neither command
    can insert (nvme-cli 2.3, Debian 12's, has no TLS)."""
    for text, needed in ((check_help, {"insert"}), (keys_insert_help, {"hostnqn", "subsysnqn"})):
        if text:
            options = parse_long_options(text)
            if needed <= options:
                return RFC8446 if "compat" in options else COMPAT
    return None
