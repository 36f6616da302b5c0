# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Carrying out a plan of store.plan_keys on the kernel keyring, for the nvme_tls_key module.

Every operation is tried, whatever failed before it: a failed insert does not keep a revoked
key in the keyring. The caller then writes the store as the keyring has become
(:func:`store.settle`), so a later run plans against the truth and converges.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyringError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.store import settle


def apply_keys(loader, keyring, plan, store, desired, loaded):
    """Unlink, then insert, as planned. Returns (keys, revoked, done, errors): what the store
    must record now, the operations that succeeded, and a message per one that failed."""
    done, errors, inserted, unlinked = [], [], [], []
    for ident in plan["unlink"]:
        try:
            loader.unlink(keyring, ident)
        except KeyringError as exc:
            errors.append(str(exc))
            continue
        unlinked.append(ident)
        done.append("unlink %s" % ident)
    by_id = dict((k["identity"], k) for k in desired)
    for ident in plan["insert"]:
        try:
            loader.insert(keyring, by_id[ident])
        except KeyringError as exc:
            errors.append(str(exc))
            continue
        inserted.append(ident)
        done.append("insert %s" % ident)
    keys, revoked = settle(store, desired, loaded, inserted, unlinked)
    return keys, revoked, done, errors
