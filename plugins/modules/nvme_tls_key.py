#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvme_tls_key
short_description: Keep NVMe/TCP TLS pre-shared keys in a 0600 key store and in the kernel keyring
description:
  - Declares the complete set of configured TLS PSKs of a host (an NVMe-oF target or initiator),
    one per host NQN and subsystem NQN pair. Each key is checked (interchange format, key length,
    CRC-32) before anything changes.
  - Writes them to a key store (O(store), mode 0600 in a 0700 directory) that
    C(aiinfra-nvme-tls-keys.service) (installed by the aiinfra.fabric.nvme_tls role) reads at boot, and
    inserts the TLS PSK of each into the kernel keyring (O(keyring)) under the version 0 identity
    C(NVMe0R<hash> <hostnqn> <subsysnqn>) that the kernel and tlshd look up.
  - No key is ever put on a command line or in an environment (other local users read
    C(/proc/PID/cmdline)). The module computes the TLS PSK that the installed nvme-cli's
    C(check-tls-key --insert) would insert (the retained PSK and the TLS PSK, HKDF with the key's
    hash) and adds it with the add_key(2) system call through libkeyutils, making the calls libnvme
    makes (the keyring linked into the session keyring, a key of the same identity revoked, the new
    one added). The boot-time loader does the same.
  - Two derivations exist, and both ends of a connection must use the same one. nvme-cli 2.16 and
    later (libnvme 1.16) derive as RFC 8446 defines HKDF-Expand-Label and offer C(--compat) for the
    older form; nvme-cli up to 2.15 (Debian 13's 2.13) know only that older form. The module uses the
    one the host's own nvme-cli would, read from C(nvme check-tls-key --help) (C(--insert), and
    C(--compat) or not) or, in 3.x, C(nvme keys insert-tls-psk --help); nvme-cli 2.3 (Debian 12) can
    insert no key, and the module says so.
  - The plan is made against what the keyring links now (C(keyctl rlist) of O(keyring), with the key
    identities from C(/proc/keys); a revoked key, or one that only a live session still holds, is not
    loaded), not against the store. A key missing from the keyring (after a reboot, or removed by hand)
    is inserted again; a changed PSK for a pair is inserted over the old one (a rotation; the old key is
    revoked, as nvme-cli does; connections already up keep their session, new connections use the new
    key; the target is not touched). Keys the store listed and O(keys) no longer does are unlinked from
    the keyring.
  - The keyring changes first (unlinks, then inserts), every planned unlink and insert is tried even when
    one fails, and the store is written afterwards as the keyring then is. After a failed insert it keeps
    the PSK it had for that pair, so the next run inserts the new one again. After a failed unlink it lists
    the identity as revoked, without its PSK, so the next run, or O(state=absent), unlinks it, and the boot
    loader does not load it. A run after any partial failure converges.
  - PSKs are never returned, logged or shown in a diff; results name keys by their identity.
version_added: "0.1.0"
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - nvme-cli with TLS key support (Debian 13's 2.13; only its help is read),
    keyutils (C(libkeyutils.so.1) for inserting, C(keyctl) to read the keyring and to unlink), a kernel with
    C(CONFIG_NVME_TCP_TLS) or C(CONFIG_NVME_TARGET_TCP_TLS) (and with them the C(.nvme) keyring of
    C(nvme-keyring)).
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.declarative
options:
  keys:
    description:
      - Every TLS key this host should hold. With O(state=absent) ignored.
    type: list
    elements: dict
    default: []
    suboptions:
      hostnqn:
        description: NQN of the host the key is for.
        type: str
        required: true
      subsysnqn:
        description: NQN of the subsystem the key is for.
        type: str
        required: true
      psk:
        description:
          - The configured PSK in interchange format, C(NVMeTLSkey-1:01:<base64>:) (SHA-256) or
            C(NVMeTLSkey-1:02:...) (SHA-384), as C(nvme gen-tls-key) prints it. The same value goes to the
            target and the host.
        type: str
        required: true
  state:
    description:
      - V(absent) unlinks every key the store lists (its keys and its revoked identities) from the keyring and
        removes the store. When an unlink fails, the store is kept with no key and that identity as revoked.
    type: str
    choices: [present, absent]
    default: present
  keyring:
    description: Kernel keyring the keys go into. The kernel's NVMe code and tlshd use C(.nvme).
    type: str
    default: .nvme
  store:
    description:
      - Path of the key store (JSON). Written atomically, mode 0600 from its first byte, in a 0700 directory; a
        store found with another mode is set back to 0600.
    type: path
    default: /etc/nvme/aiinfra-fabric/tls-keys.json
"""

EXAMPLES = r"""
- name: Give te2 and the target the same key for one subsystem (on both hosts)
  aiinfra.fabric.nvme_tls_key:
    keys:
      - hostnqn: "{{ te2_hostnqn }}"
        subsysnqn: nqn.2026-12.io.aiinfra:tls1
        psk: "{{ vault_tls_psk }}"
  no_log: true
"""

RETURN = r"""
keys:
  description: The keys after the run, without their PSKs.
  returned: always
  type: list
  elements: dict
  contains:
    hostnqn:
      description: Host NQN.
      type: str
    subsysnqn:
      description: Subsystem NQN.
      type: str
    identity:
      description: TLS PSK identity in the keyring.
      type: str
    loaded:
      description: Whether the keyring links it (in check mode, whether it would).
      type: bool
  sample:
    - hostnqn: nqn.2014-08.org.nvmexpress:uuid:819aca5a-f59f-42a3-bc77-d440efb6a6b0
      subsysnqn: nqn.2024-01.io.aiinfra.lab:tls
      identity: "NVMe0R01 nqn.2014-08.org.nvmexpress:uuid:819aca5a-f59f-42a3-bc77-d440efb6a6b0 nqn.2024-01.io.aiinfra.lab:tls"
      loaded: true
store_mode:
  description:
    - The key store's mode after the run (in check mode, as it would be), V(0600); null when there is no store.
    - A store with another mode is a change the run fixes (C(chmod 0600 <store>), with the mode it had, in
      RV(operations)); the diff shows the mode before and after.
  returned: always
  type: str
  sample: "0600"
operations:
  description:
    - What was (or in check mode would be) done, by identity, in order (unlinks, inserts, then the store); never a
      key. When an operation failed, the operations that succeeded.
  returned: always
  type: list
  elements: str
  sample: ["insert NVMe0R01 nqn.2014-08.org.nvmexpress:uuid:819a... nqn.2024-01.io.aiinfra.lab:tls",
           "write store /etc/nvme/aiinfra-fabric/tls-keys.json"]
planned:
  description: Every planned operation, when one of them failed.
  returned: failure
  type: list
  elements: str
  sample: ["unlink NVMe0R01 ...", "insert NVMe0R01 ..."]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import (
    SECRET_MODE, file_mode, mode_text, write_atomically,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.runner import CommandRunner
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.converge import apply_keys
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyLoader, KeyringError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import PskError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.store import (
    DEFAULT_KEYRING, DEFAULT_STORE, dump_store, normalize_keys, plan_keys, public, read_store, store_change,
)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _write_store(path, text):
    # The store's folder is this module's own: 0700 whatever made it.
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    os.chmod(directory, 0o700)
    write_atomically(path, text, SECRET_MODE)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            keys=dict(type="list", elements="dict", default=[], no_log=False, options=dict(
                hostnqn=dict(type="str", required=True),
                subsysnqn=dict(type="str", required=True),
                psk=dict(type="str", required=True, no_log=True),
            )),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            keyring=dict(type="str", default=DEFAULT_KEYRING, no_log=False),
            store=dict(type="path", default=DEFAULT_STORE),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        desired = normalize_keys(p["keys"]) if p["state"] == "present" else []
        store = read_store(_read(p["store"]), p["store"])
    except PskError as exc:
        module.fail_json(msg=str(exc))

    # Nothing wanted and nothing recorded: no keyring to look at (and no keyctl needed).
    involved = bool(desired or store["keys"] or store["revoked"])
    nvme = module.get_bin_path("nvme", required=p["state"] == "present")
    loader = KeyLoader(CommandRunner(module.run_command, error=KeyringError), nvme=nvme or "nvme",
                       keyctl=module.get_bin_path("keyctl", required=involved) or "keyctl")
    try:
        # What the keyring links now, not what the store says: a run after a failed insert or
        # unlink finds it still to do.
        loaded = loader.loaded(p["keyring"]) if involved else {}
        plan = plan_keys(store, desired, loaded, p["state"], p["keyring"])
        if plan["insert"] and not module.check_mode:
            loader.derivation()
    except KeyringError as exc:
        module.fail_json(msg=str(exc))
    # The store holds the PSKs: a wider mode is a change of its own (a rewrite fixes it too).
    mode = file_mode(p["store"]) if store["exists"] else None
    chmod = "chmod 0600 %s (was %s)" % (p["store"], mode_text(mode)) \
        if mode not in (None, SECRET_MODE) and plan["store"] is None else None
    operations = ["unlink %s" % i for i in plan["unlink"]] + ["insert %s" % i for i in plan["insert"]] \
        + (["%s store %s" % (plan["store"], p["store"])] if plan["store"] else []) + ([chmod] if chmod else [])
    before = {"keys": public(store["keys"] + store["revoked"], loaded), "store_mode": mode_text(mode)}
    if module.check_mode:
        after_keys = [dict(k, loaded=True) for k in public(desired, loaded)]
        after_mode = None if plan["store"] == "remove" or not (store["exists"] or plan["store"]) else "0600"
    else:
        keys, revoked, done, errors = apply_keys(loader, p["keyring"], plan, store, desired, loaded)
        change = store_change(store, keys, revoked, p["keyring"], p["state"])
        try:
            if change == "write":
                _write_store(p["store"], dump_store(p["keyring"], keys, revoked))
            elif change == "remove":
                os.unlink(p["store"])
            elif chmod:
                os.chmod(p["store"], SECRET_MODE)
        except OSError as exc:
            errors.append("writing the key store %s failed: %s" % (p["store"], exc))
        else:
            done += ["%s store %s" % (change, p["store"])] if change else [chmod] if chmod else []
        if errors:
            module.fail_json(msg="; ".join(errors), changed=bool(done), operations=done, planned=operations)
        try:
            after_keys = public(keys + revoked, loader.loaded(p["keyring"]) if keys or revoked else {})
        except KeyringError as exc:
            module.fail_json(msg=str(exc), changed=bool(done), operations=done)
        after_mode = mode_text(file_mode(p["store"]))
    result = dict(changed=bool(operations), keys=after_keys, store_mode=after_mode, operations=operations)
    if module._diff:
        result["diff"] = {"before": before, "after": {"keys": after_keys, "store_mode": after_mode}}
    missing = [k["identity"] for k in after_keys if not k["loaded"]]
    if missing and not module.check_mode:
        module.fail_json(msg="the keyring %s does not show these keys after inserting them: %s" % (
            p["keyring"], "; ".join(missing)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
