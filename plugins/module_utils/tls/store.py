# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's TLS key store: one JSON file (mode 0600, directory 0700) that lists the
configured PSKs of this host, read at boot to fill the kernel keyring again.

    {"keyring": ".nvme", "keys": [{"hostnqn": ..., "subsysnqn": ..., "psk": ...}, ...]}
"""

from __future__ import annotations

import json

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import (
    PskError, check_nqn, identity, parse_psk,
)

DEFAULT_STORE = "/etc/nvme/aiinfra-fabric/tls-keys.json"
DEFAULT_KEYRING = ".nvme"


def normalize_keys(keys, where="keys"):
    """Validated key entries, each with its hash id and identity, in a stable order; a
    duplicate host/subsystem pair is an error (two keys for one identity cannot both hold)."""
    result = []
    seen = set()
    for index, entry in enumerate(keys or []):
        at = "%s[%d]" % (where, index)
        if not isinstance(entry, dict):
            raise PskError("%s: must be a dict with hostnqn, subsysnqn and psk" % at)
        hostnqn = check_nqn(entry.get("hostnqn"), at + ".hostnqn")
        subsysnqn = check_nqn(entry.get("subsysnqn"), at + ".subsysnqn")
        psk = (entry.get("psk") or "").strip()
        hmac = parse_psk(psk, at + ".psk")
        pair = (hostnqn, subsysnqn)
        if pair in seen:
            raise PskError("%s: a second key for host %s and subsystem %s" % (at, hostnqn, subsysnqn))
        seen.add(pair)
        result.append({"hostnqn": hostnqn, "subsysnqn": subsysnqn, "psk": psk,
                       "identity": identity(hmac, hostnqn, subsysnqn)})
    return sorted(result, key=lambda k: (k["hostnqn"], k["subsysnqn"]))


def parse_store(text, path=DEFAULT_STORE):
    """(keyring, keys) from the store's text; (None, []) for a missing file."""
    if text is None:
        return None, []
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PskError("%s is not JSON (%s): fix or remove it" % (path, exc))
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list):
        raise PskError("%s has no 'keys' list: it was not written by aiinfra.fabric; move it away" % path)
    return doc.get("keyring") or DEFAULT_KEYRING, normalize_keys(doc["keys"], path + ": keys")


def dump_store(keyring, keys):
    doc = {"keyring": keyring,
           "keys": [{"hostnqn": k["hostnqn"], "subsysnqn": k["subsysnqn"], "psk": k["psk"]} for k in keys]}
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def public(keys, loaded):
    """Key entries safe to return: no PSK, and whether each identity is in the keyring."""
    return [{"hostnqn": k["hostnqn"], "subsysnqn": k["subsysnqn"], "identity": k["identity"],
             "loaded": k["identity"] in loaded} for k in keys]


def plan_keys(stored, desired, loaded, state):
    """What to do, as data: ``insert`` (identities to (re)load: missing from the keyring, or
    whose PSK changed - a rotation), ``unlink`` (identities this store put there that are no
    longer wanted), and whether the store file changes."""
    stored_by_id = dict((k["identity"], k) for k in stored)
    if state == "absent":
        return {"insert": [], "unlink": sorted(i for i in stored_by_id if i in loaded),
                "store": "remove" if stored else None}
    desired_ids = set(k["identity"] for k in desired)
    insert = [k["identity"] for k in desired
              if k["identity"] not in loaded or stored_by_id.get(k["identity"], {}).get("psk") != k["psk"]]
    unlink = sorted(i for i in stored_by_id if i not in desired_ids and i in loaded)
    same = ([(k["identity"], k["psk"]) for k in stored] == [(k["identity"], k["psk"]) for k in desired])
    return {"insert": insert, "unlink": unlink, "store": None if same else "write"}
