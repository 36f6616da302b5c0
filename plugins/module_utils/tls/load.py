# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Loading TLS keys into the kernel keyring, for the nvme_tls_key module and at boot
(``python3 nvme-tls-keys load STORE``, run by aiinfra-nvme-tls-keys.service before the
NVMe-oF target and the autoconnect units start).

The kernel keyring lives in memory: after a reboot it is empty until this runs.

No key is ever on a command line or in an environment: the TLS PSK nvme-cli would insert is
computed here (tls/derive.py, with the derivation the installed nvme-cli uses) and added to
the keyring with add_key(2) (tls/kernel_keys.py). nvme-cli is only asked for its help, keyctl
lists and unlinks keys by serial; both run through the collection's one command runner
(nvme/runner.py): the module's on AnsibleModule.run_command, at boot on subprocess.
"""

from __future__ import annotations

import sys

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.runner import (
    CommandError, CommandRunner, subprocess_run_command,
)

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.derive import tls_psk
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.kernel_keys import KernelKeyError, KernelKeys
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.keyring import (
    PROC_KEYS, insert_derivation, keyring_id, loaded_identities, parse_rlist, rlist_argv,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import PskError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.store import DEFAULT_STORE, parse_store
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.errors import TlsError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls import tlshd


class KeyringError(TlsError, CommandError):
    """The keyring cannot be read or changed as asked; when a command failed, its ``rc``,
    ``stdout``, ``stderr`` and ``cmd`` (runner.CommandError)."""


class KeyLoader(object):
    """Inserts and unlinks TLS PSKs; ``runner`` (a runner.CommandRunner: on
    AnsibleModule.run_command in the module, on subprocess at boot) runs the commands - none of
    them with a key; ``keys`` puts keys into the kernel keyring (tls/kernel_keys.py)."""

    def __init__(self, runner, nvme="nvme", keyctl="keyctl", proc_keys=None, keys=None):
        self.runner = runner
        self.nvme = nvme
        self.keyctl = keyctl
        self.proc_keys = proc_keys or PROC_KEYS
        self.keys = keys or KernelKeys()
        self._derivation = None

    def read_proc_keys(self):
        try:
            with open(self.proc_keys) as handle:
                return handle.read()
        except (IOError, OSError):
            return ""

    def loaded(self, keyring):
        """{identity: serial} of the TLS PSKs the keyring links now (empty while the keyring
        does not exist); KeyringError when its list cannot be read."""
        return self._linked(keyring)[1]

    def _linked(self, keyring):
        # Read only: no modprobe here, so check mode and state=absent load no kernel module.
        text = self.read_proc_keys()
        ring = keyring_id(text, keyring)
        if ring is None:
            return None, {}
        result = self.runner.run(rlist_argv(self.keyctl, ring))
        if result.rc != 0:
            raise KeyringError("cannot list the keys of keyring %s (%s failed, rc=%s): %s" % (
                keyring, " ".join(result.cmd), result.rc, result.said()), **result.details())
        return ring, loaded_identities(text, parse_rlist(result.stdout))

    def derivation(self):
        """How the installed nvme-cli derives the TLS PSK it inserts (tls/derive.py), read
        from its help once; KeyringError when it cannot insert keys at all."""
        if self._derivation is None:
            check_help = self.runner.run([self.nvme, "check-tls-key", "--help"]).output
            keys = self.runner.run([self.nvme, "keys", "insert-tls-psk", "--help"])
            self._derivation = insert_derivation(check_help, keys.output if keys.rc == 0 else None)
            if self._derivation is None:
                raise KeyringError("this nvme-cli cannot insert TLS PSKs: 'nvme check-tls-key --help' lists no "
                                   "--insert and 'nvme keys insert-tls-psk' does not exist (nvme-cli 2.3, as "
                                   "Debian 12 ships it, has neither: NVMe/TCP TLS needs a newer nvme-cli)")
        return self._derivation

    def keyring_serial(self, keyring):
        """The serial of ``keyring`` (a name or a number). The kernel creates .nvme when
        nvme-keyring loads (nvme-tcp and nvmet-tcp pull it in too): load it, so keys can go
        in before either."""
        self.runner.run(["modprobe", "nvme-keyring"])
        ring = keyring_id(self.read_proc_keys(), keyring)
        if ring is None:
            raise KeyringError("keyring %s is not in %s: the kernel has no NVMe keyring (nvme-keyring did not load; "
                               "a kernel without CONFIG_NVME_KEYRING cannot do NVMe/TCP TLS)" % (keyring, self.proc_keys))
        return ring

    def insert(self, keyring, key):
        """Put ``key`` (a store entry: hostnqn, subsysnqn, psk, identity) into ``keyring`` as the
        installed nvme-cli's ``check-tls-key --insert`` would; returns the key's serial."""
        derivation = self.derivation()
        ring = self.keyring_serial(keyring)
        try:
            ident, payload = tls_psk(key["psk"], key["hostnqn"], key["subsysnqn"], derivation)
        except PskError as exc:
            raise KeyringError(str(exc))
        if ident != key.get("identity", ident):
            raise KeyringError("identity %r derived for %r: the store's entry is inconsistent" % (ident, key["identity"]))
        try:
            return self.keys.replace(ring, "psk", ident, payload)
        except KernelKeyError as exc:
            raise KeyringError("inserting the TLS PSK of identity %r into keyring %s: %s" % (ident, keyring, exc))

    def unlink(self, keyring, ident):
        """Unlink the key of this identity from the keyring, if the keyring links one."""
        ring, linked = self._linked(keyring)
        serial = linked.get(ident)
        if serial is None:
            return
        result = self.runner.run([self.keyctl, "unlink", str(serial), str(ring)])
        if result.rc != 0:
            raise KeyringError("keyctl unlink of %r failed (rc=%s): %s" % (ident, result.rc, result.said()),
                               **result.details())


def boot_key_loader():
    """The key loader of the programs that run outside Ansible (this loader at boot, the
    nvmeof_initiator role's path healer): commands through subprocess."""
    return KeyLoader(CommandRunner(subprocess_run_command, error=KeyringError))


def load_store(path, loader):
    """Insert every key of the store; returns (inserted count, error messages)."""
    try:
        with open(path) as handle:
            text = handle.read()
    except (IOError, OSError):
        return 0, []
    keyring, keys = parse_store(text, path)
    errors = []
    count = 0
    for key in keys:
        try:
            loader.insert(keyring, key)
            count += 1
        except KeyringError as exc:
            errors.append(str(exc))
    return count, errors


USAGE = ("usage: nvme-tls-keys load [STORE]   (default %s)\n"
         "       nvme-tls-keys wait-tlshd PID [SECONDS]   (default %d: tlshd's ExecStartPost)\n")
WAIT_TLSHD_SECONDS = 30


def wait_tlshd(args, wait=tlshd.wait):
    """``wait-tlshd PID [SECONDS]``: 0 once tlshd listens, 1 (with the reason) when it does not
    in time; the unit runs it with '-' so that tlshd keeps running either way."""
    try:
        pid = int(args[0])
        seconds = float(args[1]) if len(args) > 1 else WAIT_TLSHD_SECONDS
    except ValueError:
        sys.stderr.write(USAGE % (DEFAULT_STORE, WAIT_TLSHD_SECONDS))
        return 2
    ready, waited, why = wait(pid, seconds)
    if not ready:
        sys.stderr.write("nvme-tls-keys: %s\n" % why)
        return 1
    sys.stdout.write("tlshd (pid %d) is listening for handshakes (waited %.2f s)\n" % (pid, waited))
    return 0


def main(argv=None):
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["wait-tlshd"] and 2 <= len(args) <= 3:
        return wait_tlshd(args[1:])
    if not args or args[0] != "load" or len(args) > 2:
        sys.stderr.write(USAGE % (DEFAULT_STORE, WAIT_TLSHD_SECONDS))
        return 2
    path = args[1] if len(args) > 1 else DEFAULT_STORE
    try:
        count, errors = load_store(path, boot_key_loader())
    except (PskError, KeyringError) as exc:
        sys.stderr.write("nvme-tls-keys: %s\n" % exc)
        return 1
    for message in errors:
        sys.stderr.write("nvme-tls-keys: %s\n" % message)
    sys.stdout.write("loaded %d TLS key(s) from %s\n" % (count, path))
    return 1 if errors else 0
