# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The kernel keyring side of TLS keys: what /proc/keys shows, and the nvme-cli command
that derives and inserts a TLS PSK, as the installed nvme-cli spells it.

nvme-cli 2.x inserts with ``nvme check-tls-key --insert``; 3.0 moved that to
``nvme keys insert-tls-psk`` (its check-tls-key no longer inserts). Which one is read from
the commands' own help, never from a version number.
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.capabilities import parse_long_options

PROC_KEYS = "/proc/keys"


def parse_proc_keys(text):
    """{(type, description): serial} for the keys /proc/keys shows the caller.

    A line: ``<serial hex> <flags> <usage> <expiry> <perm> <uid> <gid> <type> <description>: <summary>``.
    """
    result = {}
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
        result[(fields[7], description)] = serial
    return result


def loaded_identities(proc_keys_text):
    """{identity: serial} of the TLS PSKs (key type psk) in the caller's view."""
    return dict((desc, serial) for (ktype, desc), serial in parse_proc_keys(proc_keys_text).items()
                if ktype == "psk")


def keyring_serial(proc_keys_text, name):
    return parse_proc_keys(proc_keys_text).get(("keyring", name))


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
