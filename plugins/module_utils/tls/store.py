# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's TLS key store: one JSON file (mode 0600, directory 0700) that lists the
configured PSKs of this host, read at boot to fill the kernel keyring again.

    {"keyring": ".nvme", "keys": [{"hostnqn": ..., "subsysnqn": ..., "psk": ...}, ...],
     "revoked": ["NVMe0R01 <hostnqn> <subsysnqn>", ...]}

The store records what the module put into the keyring, and is written after the keyring
changed, as it then is: ``revoked`` (only while not empty) lists identities that are no longer
wanted but whose unlink failed, so that the next run (or state=absent) still unlinks them.
"""

from __future__ import annotations

import json
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import (
    PskError, check_nqn, identity, parse_psk,
)

DEFAULT_STORE = "/etc/nvme/aiinfra-fabric/tls-keys.json"
DEFAULT_KEYRING = ".nvme"
_IDENTITY_RE = re.compile(r"^NVMe[0-9]R0[12] (\S+) (\S+)$")


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


def read_store(text, path=DEFAULT_STORE):
    """The store as the module plans with it: whether it exists, its keyring, its keys and
    the identities it lists as ``revoked`` (no longer wanted, still to unlink: an unlink that
    failed; no PSK is kept for them and the boot loader never loads them)."""
    if text is None:
        return {"exists": False, "keyring": None, "keys": [], "revoked": []}
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise PskError("%s is not JSON (%s): fix or remove it" % (path, exc))
    if not isinstance(doc, dict) or not isinstance(doc.get("keys"), list) \
            or not isinstance(doc.get("revoked", []), list):
        raise PskError("%s has no 'keys' list: it was not written by aiinfra.fabric; move it away" % path)
    revoked = []
    for index, ident in enumerate(doc.get("revoked", [])):
        match = _IDENTITY_RE.match(ident) if isinstance(ident, str) else None
        if not match:
            raise PskError("%s: revoked[%d] is not a TLS PSK identity (NVMe0R01 <hostnqn> <subsysnqn>)"
                           % (path, index))
        revoked.append({"hostnqn": match.group(1), "subsysnqn": match.group(2), "identity": ident})
    return {"exists": True, "keyring": doc.get("keyring") or DEFAULT_KEYRING,
            "keys": normalize_keys(doc["keys"], path + ": keys"), "revoked": revoked}


def parse_store(text, path=DEFAULT_STORE):
    """(keyring, keys) from the store's text, what the boot loader loads; (None, []) for a missing file."""
    store = read_store(text, path)
    return store["keyring"], store["keys"]


def dump_store(keyring, keys, revoked=()):
    doc = {"keyring": keyring,
           "keys": [{"hostnqn": k["hostnqn"], "subsysnqn": k["subsysnqn"], "psk": k["psk"]} for k in keys]}
    if revoked:
        doc["revoked"] = sorted(k["identity"] for k in revoked)
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def public(keys, loaded):
    """Key entries safe to return: no PSK, and whether each identity is in the keyring."""
    return [{"hostnqn": k["hostnqn"], "subsysnqn": k["subsysnqn"], "identity": k["identity"],
             "loaded": k["identity"] in loaded} for k in keys]


def plan_keys(store, desired, loaded, state, keyring=DEFAULT_KEYRING):
    """What to do, as data, planned against ``loaded`` (what the keyring links now, not what
    the store says): ``insert`` (identities to (re)load: missing from the keyring, or whose PSK
    the store does not record as the one loaded - a rotation, or one whose insert failed),
    ``unlink`` (identities this store put into the keyring, or lists as revoked, that are not
    wanted and that the keyring still holds), and what happens to the store file once they
    are done (``store``: "write", "remove" or None)."""
    if state == "absent":
        desired = []
    stored_psk = dict((k["identity"], k["psk"]) for k in store["keys"])
    insert = [k["identity"] for k in desired
              if k["identity"] not in loaded or stored_psk.get(k["identity"]) != k["psk"]]
    wanted = set(k["identity"] for k in desired)
    unlink = sorted(i for i in _ours(store) if i not in wanted and i in loaded)
    keys, revoked = settle(store, desired, loaded, insert, unlink)
    return {"insert": insert, "unlink": unlink, "store": store_change(store, keys, revoked, keyring, state)}


def _ours(store):
    return set(k["identity"] for k in store["keys"] + store["revoked"])


def settle(store, desired, loaded, inserted, unlinked):
    """What the store must say once the keyring operations ran: (keys, revoked), from what the
    keyring held before (``loaded``) and the identities whose insert or unlink succeeded.

    A key whose insert failed keeps its stored entry (the keyring holds that PSK, or none); an
    identity of this store that the keyring still holds and that is not a kept key is revoked:
    the next run unlinks it, and the boot loader does not load it."""
    stored_by_id = dict((k["identity"], k) for k in store["keys"])
    keys = []
    for key in desired:
        ident = key["identity"]
        if ident in inserted or (ident in loaded and ident not in unlinked
                                 and stored_by_id.get(ident, {}).get("psk") == key["psk"]):
            keys.append(key)
        elif ident in stored_by_id:
            keys.append(stored_by_id[ident])
    held = (set(loaded) - set(unlinked)) | set(inserted)
    kept = set(k["identity"] for k in keys)
    by_id = dict((k["identity"], k) for k in store["revoked"] + store["keys"] + desired)
    revoked = [{"hostnqn": by_id[i]["hostnqn"], "subsysnqn": by_id[i]["subsysnqn"], "identity": i}
               for i in sorted(((_ours(store) | set(inserted)) & held) - kept)]
    return keys, revoked


def store_change(store, keys, revoked, keyring, state):
    """"write", "remove" or None: the store file that records ``keys`` and ``revoked``."""
    if not keys and not revoked and (state == "absent" or not store["exists"]):
        return "remove" if state == "absent" and store["exists"] else None
    same = (store["exists"] and store["keyring"] == keyring
            and [(k["identity"], k["psk"]) for k in store["keys"]] == [(k["identity"], k["psk"]) for k in keys]
            and sorted(k["identity"] for k in store["revoked"]) == sorted(k["identity"] for k in revoked))
    return None if same else "write"
