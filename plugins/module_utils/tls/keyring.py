# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel keyring side of TLS keys: what /proc/keys shows, which keys a keyring links
(``keyctl rlist``), and which TLS PSK derivation the installed nvme-cli would use to insert a
key (tls/derive.py computes it; the key goes in through tls/kernel_keys.py, never on a command
line).

nvme-cli 2.x inserts with ``nvme check-tls-key --insert``; 3.0 moved that to
``nvme keys insert-tls-psk`` (its check-tls-key no longer inserts). Which one exists, and
whether it offers ``--compat``, is read from the commands' own help, never from a version
number.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.capabilities import parse_long_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.derive import COMPAT, RFC8446

PROC_KEYS = "/proc/keys"


def proc_key_entries(text):
    """The keys /proc/keys shows the caller, in its order: dicts of serial, flags, type, description.

    A line: ``<serial hex> <flags> <usage> <expiry> <perm> <uid> <gid> <type> <description>: <summary>``.
    Every key is listed, revoked ones too: :func:`usable` tells which count.
    """
    result = []
    for line in (text or "").splitlines():
        fields = line.split(None, 8)
        if len(fields) < 9:
            continue
        rest = fields[8]
        description = rest.rsplit(": ", 1)[0] if ": " in rest else rest
        try:
            serial = int(fields[0], 16)
        except ValueError:
            continue
        result.append({"serial": serial, "flags": fields[1], "type": fields[7], "description": description})
    return result


def usable(flags):
    """Whether a key with these /proc/keys flags (``I--Q---``) can be found and used: instantiated,
    and not revoked (R), dead (D), negative (N) or invalidated (i).

    A key replaced by nvme-cli or this collection is revoked first and stays listed (flag R)
    until the kernel collects it, beside its successor of the same description."""
    return flags.startswith("I") and not set("RDNi") & set(flags)


def parse_proc_keys(text):
    """{(type, description): serial} for the usable keys /proc/keys shows the caller: a revoked,
    dead or negative key listed beside its successor of the same description is skipped."""
    return dict(((e["type"], e["description"]), e["serial"]) for e in proc_key_entries(text)
                if usable(e["flags"]))


def loaded_identities(proc_keys_text, members=None):
    """{identity: serial} of the usable TLS PSKs (key type psk) in the caller's view; with
    ``members`` (the serials a keyring links, :func:`parse_rlist`) only those the keyring holds.

    /proc/keys alone also lists a key that is in no keyring any more but still referenced (a
    live TLS session holds it), which nvme-cli and the kernel's lookup no longer find."""
    return dict((e["description"], e["serial"]) for e in proc_key_entries(proc_keys_text)
                if e["type"] == "psk" and usable(e["flags"]) and (members is None or e["serial"] in members))


def keyring_serial(proc_keys_text, name):
    for entry in proc_key_entries(proc_keys_text):
        if entry["type"] == "keyring" and entry["description"] == name and usable(entry["flags"]):
            return entry["serial"]
    return None


def rlist_argv(keyctl, ring):
    """``keyctl rlist``: the serials a keyring links, in decimal, blank-separated."""
    return [keyctl, "rlist", str(ring)]


def parse_rlist(text):
    return set(int(word) for word in (text or "").split() if word.lstrip("-").isdigit())


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
