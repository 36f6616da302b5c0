"""Every role option that carries a secret (a DH-HMAC-CHAP secret, a TLS PSK or key, a
password or token) is declared no_log in its role's meta/argument_specs.yml, so that the
argument validation never shows its value; nested options (list elements) included."""

from __future__ import annotations

import glob
import os
import re

import yaml

TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))
# Leaf names that hold a secret value (not a path to one, a keyring name or a switch).
SECRET_NAME = re.compile(r"(secret|psk|password|passphrase|token|tls_key)$")


def options(spec, where):
    for name, option in sorted((spec or {}).items()):
        yield where + name, name, option
        yield from options(option.get("options"), where + name + ".")


def secret_options():
    for path in sorted(glob.glob(os.path.join(TOP, "roles", "*", "meta", "argument_specs.yml"))):
        role = path.split(os.sep)[-3]
        with open(path) as handle:
            doc = yaml.safe_load(handle)
        for entry, spec in sorted(doc["argument_specs"].items()):
            for where, name, option in options(spec.get("options"), "%s %s: " % (role, entry)):
                if option.get("type", "str") == "str" and SECRET_NAME.search(name):
                    yield where, option


def test_every_secret_option_of_every_role_is_no_log():
    found = dict(secret_options())
    # The check looks where the secrets are (a rename would make it vacuous).
    assert {"nvmeof_initiator main: nvmeof_initiator_dhchap_secret", "nvmeof_initiator main: nvmeof_initiator_tls_psk",
            "nvme_tls main: nvme_tls_keys.psk", "nvmeof_target main: nvmeof_target_tls_psks.psk"} <= set(found)
    assert sorted(where for where, option in found.items() if option.get("no_log") is not True) == []
