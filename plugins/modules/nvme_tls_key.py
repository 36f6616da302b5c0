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
  - A key missing from the keyring (after a reboot, or removed by hand) is inserted again; a changed PSK
    for a pair is inserted over the old one (a rotation; the old key is revoked, as nvme-cli does;
    connections already up keep their session, new connections use the new key; the target is not
    touched). Keys the store listed and O(keys) no longer does are unlinked from the keyring.
  - PSKs are never returned, logged or shown in a diff; results name keys by their identity.
version_added: 0.2.0
author:
  - aiinfra.fabric contributors (!UNKNOWN)
requirements:
  - nvme-cli with TLS key support (Debian 13's 2.13; only its help is read), keyutils (C(libkeyutils.so.1)
    for inserting, C(keyctl) for unlinking), a kernel with C(CONFIG_NVME_TCP_TLS) or
    C(CONFIG_NVME_TARGET_TCP_TLS) (and with them the C(.nvme) keyring of C(nvme-keyring)).
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
    description: V(absent) unlinks every key the store lists from the keyring and removes the store.
    type: str
    choices: [present, absent]
    default: present
  keyring:
    description: Kernel keyring the keys go into. The kernel's NVMe code and tlshd use C(.nvme).
    type: str
    default: .nvme
  store:
    description: Path of the key store (JSON, mode 0600).
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
      description: Whether the keyring holds it (in check mode, whether it would).
      type: bool
operations:
  description: What was (or in check mode would be) done, by identity; never a key.
  returned: always
  type: list
  elements: str
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyLoader, KeyringError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import PskError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.store import (
    DEFAULT_KEYRING, DEFAULT_STORE, dump_store, normalize_keys, parse_store, plan_keys, public,
)


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def _write_private(module, path, text):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    os.chmod(directory, 0o700)
    tmp = path + ".aiinfra-tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    module.atomic_move(tmp, path)
    os.chmod(path, 0o600)


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
        _keyring, stored = parse_store(_read(p["store"]), p["store"])
    except PskError as exc:
        module.fail_json(msg=str(exc))

    def run(argv):
        return module.run_command(argv, environ_update={"LC_ALL": "C", "LANG": "C"})

    nvme = module.get_bin_path("nvme", required=p["state"] == "present")
    loader = KeyLoader(run, nvme=nvme or "nvme", keyctl=module.get_bin_path("keyctl") or "keyctl")
    loaded = loader.loaded()
    plan = plan_keys(stored, desired, loaded, p["state"])
    if plan["insert"] and not module.check_mode:
        try:
            loader.derivation()
        except KeyringError as exc:
            module.fail_json(msg=str(exc))
    operations = (["write store %s" % p["store"]] if plan["store"] == "write" else []) \
        + (["remove store %s" % p["store"]] if plan["store"] == "remove" else []) \
        + ["insert %s" % i for i in plan["insert"]] + ["unlink %s" % i for i in plan["unlink"]]
    before = {"keys": public(stored, loaded)}
    if not module.check_mode:
        try:
            if plan["store"] == "write":
                _write_private(module, p["store"], dump_store(p["keyring"], desired))
            by_id = dict((k["identity"], k) for k in desired)
            for ident in plan["insert"]:
                loader.insert(p["keyring"], by_id[ident])
            for ident in plan["unlink"]:
                loader.unlink(p["keyring"], ident)
            if plan["store"] == "remove":
                os.unlink(p["store"])
        except (KeyringError, OSError) as exc:
            module.fail_json(msg=str(exc), operations=operations)
        loaded = loader.loaded()
        after_keys = public(desired, loaded)
    else:
        wanted = set(k["identity"] for k in desired)
        after_keys = [dict(k, loaded=k["identity"] in wanted) for k in public(desired, loaded)]
    result = dict(changed=bool(operations), keys=after_keys, operations=operations)
    if module._diff:
        result["diff"] = {"before": before, "after": {"keys": after_keys}}
    missing = [k["identity"] for k in after_keys if not k["loaded"]]
    if missing and not module.check_mode:
        module.fail_json(msg="the keyring %s does not show these keys after inserting them: %s" % (
            p["keyring"], "; ".join(missing)), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
