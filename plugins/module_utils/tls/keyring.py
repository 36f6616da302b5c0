# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel keyring side of TLS keys: what /proc/keys shows, which keys a keyring links
(``keyctl rlist``), and the nvme-cli command that derives and inserts a TLS PSK, as the
installed nvme-cli spells it.

nvme-cli 2.x inserts with ``nvme check-tls-key --insert``; 3.0 moved that to
``nvme keys insert-tls-psk`` (its check-tls-key no longer inserts). Which one is read from
the commands' own help, never from a version number.
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.capabilities import parse_long_options

PROC_KEYS = "/proc/keys"


def proc_key_entries(text):
    """The keys /proc/keys shows the caller, in its order: dicts of serial, flags, type, description.

    A line: ``<serial hex> <flags> <usage> <expiry> <perm> <uid> <gid> <type> <description>: <summary>``.
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


def parse_proc_keys(text):
    """{(type, description): serial} for the keys /proc/keys shows the caller."""
    return dict(((e["type"], e["description"]), e["serial"]) for e in proc_key_entries(text))


def usable(flags):
    """Whether a key with these /proc/keys flags (``I--Q---``) can be found and used: instantiated,
    and not revoked (R), dead (D), negative (N) or invalidated (i)."""
    return flags.startswith("I") and not set("RDNi") & set(flags)


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


def insert_command(check_help, keys_insert_help):
    """The argv prefix that derives and inserts a TLS PSK, from the help of
    ``nvme check-tls-key`` and of ``nvme keys insert-tls-psk`` (None: that command failed).
    Returns None when neither can insert."""
    if check_help and "insert" in parse_long_options(check_help):
        return ["check-tls-key", "--insert"]
    if keys_insert_help and {"hostnqn", "subsysnqn"} <= parse_long_options(keys_insert_help):
        return ["keys", "insert-tls-psk"]
    return None


def insert_argv(nvme, prefix, keyring, key):
    # The identity version is left to nvme-cli's default (0), the one the 6.12 kernel searches.
    return [nvme] + prefix + ["--keyring=%s" % keyring, "--hostnqn=%s" % key["hostnqn"],
                              "--subsysnqn=%s" % key["subsysnqn"], "--keydata=%s" % key["psk"]]


def redact(argv):
    return [re.sub(r"^(--keydata=).*$", r"\1********", a) for a in argv]
