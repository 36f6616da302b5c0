# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which file a namespace exports: its identity, recorded in the save file (standard library only).

An enabled namespace's file stays open in the kernel: deleted, or replaced by another
file at the same path, the old inode is still what the initiators read, until the
target stops. configfs still shows only the path. The next boot would open whatever
file is at that path then: a blank one, if a tool (or this role, before it refused to)
made one there. So the save file records, per enabled file namespace, the identity of
the file the kernel opened, as ``file_identity`` (inode and size) beside ``device``;
the boot restorer exports a file only when it is still that one, and nvmet_target
neither exports nor saves another one without force.

Inode and size, not the device number: ``st_dev`` of the same file system can differ
from one boot to the next (device-mapper minors, btrfs), while the inode number of a
file on a persistent file system does not. nvmetcli restores only the attribute groups
it knows, so it ignores the key.
"""

from __future__ import annotations

import os
import stat

# The namespace key of the save file that holds the identity.
IDENTITY_KEY = "file_identity"


def file_identity(path):
    """{"inode", "size"} of the regular file at path (links followed, as the kernel opens
    it); None when there is none (missing, unreadable, a block device)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return {"inode": st.st_ino, "size": st.st_size}


def _enabled_paths(state):
    """(nqn, nsid, path) of each enabled namespace with a device path."""
    for nqn in sorted(state["subsystems"]):
        namespaces = state["subsystems"][nqn]["namespaces"]
        for nsid in sorted(namespaces):
            ns = namespaces[nsid]
            if ns["enabled"] and ns["device_path"]:
                yield nqn, nsid, ns["device_path"]


def saved_identities(doc):
    """{(nqn, nsid, path): identity} as a save-file document records them."""
    out = {}
    subsystems = doc.get("subsystems") if isinstance(doc, dict) else None
    for sub in subsystems if isinstance(subsystems, list) else []:
        for ns in (sub.get("namespaces") or []) if isinstance(sub, dict) else []:
            ident = ns.get(IDENTITY_KEY) if isinstance(ns, dict) else None
            if not isinstance(ident, dict):
                continue
            try:
                key = (sub.get("nqn"), int(ns.get("nsid")), (ns.get("device") or {}).get("path"))
                out[key] = {"inode": int(ident["inode"]), "size": int(ident["size"])}
            except (AttributeError, KeyError, TypeError, ValueError):
                continue
    return out


def saved_for(saved, nqn, nsid, path):
    """The identity ``saved`` (:func:`saved_identities`) has for this namespace and path, or None."""
    try:
        return saved.get((nqn, int(nsid), path))
    except (TypeError, ValueError):
        return None


def reopened_by(ops):
    """(nqn, nsid) of the namespaces these operations enable: the kernel opens their file then."""
    out = set()
    for op in ops or []:
        parts = op.path.split("/")
        if (op.kind == "write" and str(op.value) == "1" and len(parts) == 5 and parts[0] == "subsystems"
                and parts[2] == "namespaces" and parts[4] == "enable" and parts[3].isdigit()):
            out.add((parts[1], int(parts[3])))
    return out


def identities_to_record(state, previous=None, reopened=(), read=file_identity):
    """{(nqn, nsid, path): identity} of the files the enabled namespaces of ``state`` export.

    A namespace ``previous`` (the save file as it was) recorded on the same path keeps
    that identity: the kernel still serves the file it opened then, whatever is at the
    path now. The others, and those in ``reopened`` (enabled in this run, so the kernel
    has just opened the file there), are read now.
    """
    saved = saved_identities(previous)
    out = {}
    for key in _enabled_paths(state):
        if key in saved and key[:2] not in reopened:
            out[key] = saved[key]
        else:
            ident = read(key[2])
            if ident is not None:
                out[key] = ident
    return out


def mismatch(saved, now):
    """How the file there now differs from the saved identity; None when it is that file."""
    if now is None:
        return "there is no regular file there now"
    if now["inode"] != saved["inode"] or now["size"] != saved["size"]:
        return "saved: inode %d, %d bytes; there now: inode %d, %d bytes" % (
            saved["inode"], saved["size"], now["inode"], now["size"])
    return None


def replaced_files(state, previous, read=file_identity):
    """[(object, path, how)] for each enabled file namespace of ``state`` whose file is not
    the one ``previous`` (a save-file document) recorded for it."""
    saved = saved_identities(previous)
    out = []
    for key in _enabled_paths(state):
        if key in saved:
            how = mismatch(saved[key], read(key[2]))
            if how:
                out.append(("subsystems/%s/namespaces/%d" % key[:2], key[2], how))
    return out


def refusal(problems, save_file):
    """The message that refuses to export or save files that are not the saved ones."""
    return ("%s. Each of these files is not the one %s recorded: it was deleted, replaced or resized after the "
            "save. While a namespace stays enabled the kernel still serves the file it opened, so its data is "
            "readable from the initiators until the target is stopped: copy it off there first. Nothing was "
            "changed. Set force: true (the nvmeof_target role: nvmeof_target_force) only to export and save the "
            "file that is there now" % ("; ".join("%s: %s (%s)" % p for p in problems), save_file))
