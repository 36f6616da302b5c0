# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a file system may be made on a block device, from every signature on it.

``wipefs --json`` lists everything libblkid recognizes on a device: file systems,
partition tables (gpt, PMBR, dos), LVM and RAID members, crypto headers. Asking blkid
for a file-system TYPE alone misses partition tables (a GPT disk has no TYPE), which is
how community.general.filesystem comes to run ``mkfs -F`` over one. The functions here
are pure: :func:`parse_wipefs` reads wipefs' JSON, :func:`plan_filesystem` decides.
"""

from __future__ import annotations

import json

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError

# wipefs --output columns; USAGE says what a signature is (filesystem, raid,
# partition-table, crypto, other).
WIPEFS_COLUMNS = "DEVICE,OFFSET,TYPE,USAGE,UUID,LABEL"


class SignatureError(NvmeError):
    pass


def parse_wipefs(text):
    """wipefs --json output -> [{type, usage, offset, uuid, label}] in wipefs' order.
    An empty output (util-linux prints nothing for a blank device in some versions)
    is no signature."""
    if not text or not text.strip():
        return []
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise SignatureError("cannot parse wipefs --json output (%s): %r" % (exc, text[:200]))
    if not isinstance(doc, dict) or not isinstance(doc.get("signatures", []), list):
        raise SignatureError("wipefs --json printed no signature list: %r" % text[:200])
    found = []
    for entry in doc.get("signatures") or []:
        found.append({
            "type": entry.get("type") or "unknown",
            "usage": entry.get("usage") or "unknown",
            "offset": entry.get("offset"),
            "uuid": entry.get("uuid"),
            "label": entry.get("label"),
        })
    return found


def describe(signatures):
    """'gpt (partition-table) at 0x200, PMBR (partition-table) at 0x1fe'."""
    return ", ".join("%s (%s) at %s" % (s["type"], s["usage"], s["offset"]) for s in signatures)


def plan_filesystem(device, signatures, fstype, force):
    """Decide what to do with ``device``. Returns a dict:
    action: "keep" (the wanted file system is there and nothing else), "mkfs", or "refuse";
    wipe: whether the existing signatures are wiped first (only with force);
    msg: the refusal, naming every signature found.
    The wanted file system alone is kept even with force, so a forced run is idempotent."""
    if not signatures:
        return {"action": "mkfs", "wipe": False, "msg": None}
    if all(s["usage"] == "filesystem" and s["type"] == fstype for s in signatures):
        return {"action": "keep", "wipe": False, "msg": None}
    if force:
        return {"action": "mkfs", "wipe": True, "msg": None}
    kinds = sorted(set(s["usage"] for s in signatures))
    return {"action": "refuse", "wipe": False, "msg": (
        "%s is not blank: it carries %s signature(s): %s. Making a %s file system on it would destroy "
        "what is there, so nothing was changed. Check that this is the device you mean; to wipe it and "
        "format anyway, set force (the role's nvmeof_initiator_force_mkfs)."
        % (device, "/".join(kinds), describe(signatures), fstype))}


def filesystem_uuid(signatures, fstype):
    for sig in signatures:
        if sig["usage"] == "filesystem" and sig["type"] == fstype and sig.get("uuid"):
            return sig["uuid"]
    return None


# How each mkfs takes the new file system's UUID. Giving it one saves probing the device
# again afterwards (blkid -p reads it back over the fabric: over a second on the lab).
_UUID_FLAGS = {"ext2": ["-U"], "ext3": ["-U"], "ext4": ["-U"], "btrfs": ["-U"], "xfs": ["-m", "uuid="]}


def mkfs_uuid_args(fstype, opts, new_uuid):
    """The mkfs arguments that set the file system's UUID to new_uuid, or None when this
    mkfs has no such option here or opts already choose a UUID (then the device is probed)."""
    flags = _UUID_FLAGS.get(fstype)
    if flags is None or any(o == "-U" or o.startswith("-U") or "uuid=" in o for o in opts):
        return None
    if flags[-1].endswith("="):
        return flags[:-1] + [flags[-1] + new_uuid]
    return flags + [new_uuid]
