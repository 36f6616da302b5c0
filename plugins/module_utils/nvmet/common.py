# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Constants, the error type and the single-operation value every part of the nvmet package shares.

Standard library only, like the whole package (result.py works on an AnsibleModule it is
given): the target role ships restore.py and what it imports, this file included, to
hosts as the boot-time restorer, with the one table of transports
(module_utils/transports.py) it reads.
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports

MASK = "********"
NQN_MAX_BYTES = 223
NSID_MAX = 0xFFFFFFFE
ANA_GRPID_MAX = 128
DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"

# trtype -> the kernel module that serves it (module_utils/transports.py holds the table).
TRANSPORT_MODULES = dict((t.name, t.target_module) for t in transports.TRANSPORTS)
ADRFAMS = transports.ADRFAMS
TREQ_VALUES = ("not specified", "required", "not required")
# Identity attributes the kernel freezes once a host has identified the subsystem.
IDENTITY_ATTRS = ("serial", "model", "version", "firmware")
NAMESPACE_DISABLED_ONLY = ("device_path", "uuid", "nguid", "buffered_io")
NAMESPACE_FILES = {
    "device_path": "device_path",
    "uuid": "device_uuid",
    "nguid": "device_nguid",
    "ana_grpid": "ana_grpid",
    "buffered_io": "buffered_io",
    "enabled": "enable",
}
PORT_ADDR_FIELDS = ("adrfam", "traddr", "trsvcid", "trtype", "treq", "tsas")
# Written in this order: the kernel derives tsas/treq defaults from trtype.
PORT_WRITE_ORDER = ("trtype", "adrfam", "traddr", "trsvcid", "treq", "tsas")
HOST_KEY_FIELDS = ("dhchap_key", "dhchap_ctrl_key")
# A host entry's files, in the order they are written: keys before the hash, because
# writing a transformed key can set the hash.
HOST_FIELDS = ("dhchap_key", "dhchap_ctrl_key", "dhchap_hash", "dhchap_dhgroup")
# What the kernel shows in a host entry it has just made (mkdir hosts/<nqn>).
HOST_DEFAULTS = dict(zip(HOST_FIELDS, (None, None, "hmac(sha256)", "null")))
# DH-HMAC-CHAP: the HMACs and Diffie-Hellman groups nvmet takes (nvmet_host's choices,
# the checks of validate.py and document.py).
HASHES = ("hmac(sha256)", "hmac(sha384)", "hmac(sha512)")
DHGROUPS = ("null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192")

_UUID_RE = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_NQN_UUID_PREFIX = "nqn.2014-08.org.nvmexpress:uuid:"
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NQN_RE = re.compile(r"^nqn\.(\d{4})-(0[1-9]|1[0-2])\.%s(?:\.%s)*:[^\s/]+$" % (_LABEL, _LABEL))
_DHCHAP_RE = re.compile(r"^DHHC-1:(0[0-3]):([A-Za-z0-9+/]+={0,2}):$")
_DHCHAP_KEY_LENGTHS = {0: (32, 48, 64), 1: (32,), 2: (48,), 3: (64,)}
_ATTR_NAME_RE = re.compile(r"^[a-z][a-z0-9_]*$")


class NvmetError(Exception):
    """An error a user can act on. ``str()`` is the whole message."""

    def __init__(self, msg, applied=None):
        super().__init__(msg)
        self.msg = msg
        self.applied = applied or []


class Op(object):
    """One configfs operation. ``kind`` is mkdir, rmdir, write, link or unlink.

    ``path`` is relative to ``<configfs>/nvmet``; ``target`` (links) too.
    ``secret`` hides the value in every text form. ``undo`` is the operation that puts
    back what this one changes, for plans that must not stop half-way (a port
    reconfigure unlinks its subsystems first): when a later operation fails,
    :func:`apply_plan` runs the undos of what it applied, newest first.
    """

    __slots__ = ("kind", "path", "value", "target", "secret", "undo")

    def __init__(self, kind, path, value=None, target=None, secret=False, undo=None):
        self.kind, self.path, self.value, self.target, self.secret = kind, path, value, target, secret
        self.undo = undo

    def text(self):
        if self.kind == "write":
            return "write %s = %s" % (self.path, MASK if self.secret else self.value)
        if self.kind == "link":
            return "link %s -> %s" % (self.path, self.target)
        return "%s %s" % (self.kind, self.path)

    def __repr__(self):
        return "Op(%s)" % self.text()

    def __eq__(self, other):
        return isinstance(other, Op) and (self.kind, self.path, self.value, self.target) == (
            other.kind, other.path, other.value, other.target)


def _bool_str(value):
    return "1" if value else "0"
