# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether nvmet_target would change anything, judged on the controller from the text
of a shell probe (standard library only).

A re-run of the nvmeof_target role usually finds the target as the document wants it.
The module would tell, but each module start costs a Python start on the host (2.5-4 s
on the lab's emulated guests under the stock strategy). The role's first probe
(roles/nvmeof_target/files/probe.sh) prints the whole nvmet configfs tree; here that
text becomes a read-only :class:`SnapshotTree`, and the module's own steps
(:func:`target.read_and_plan`) plan the document against it. No operation, the kernel
modules loaded, and the save file as the module would write it (its text, mode 0600):
the module has nothing to do and the role skips it. Anything this cannot judge (an unreadable file, a guard
that needs the live connections, a document error, a line it does not expect) counts as
pending: the module then runs and decides, with its own messages.

The probe's lines (between ``nvmet-counts`` and ``nvmet-end`` they come from grep, each
``./PATH:...``):

  nvmet-entry TYPE PATH        every file (f), directory (d) and link (l) under nvmet/
  nvmet-counts                 then ``./PATH:N`` for every readable file: its number of lines
  nvmet-text                   then ``./PATH:LINE`` for every line of those files
  nvmet-end
  nvmet-secret PATH SHA256     a host's non-empty DH-HMAC-CHAP key file, as the sha256 of
                               its text (``unreadable`` when it could not be read); the
                               keys themselves never leave the host
  nvmet-file INODE SIZE PATH   a namespace's device path that is a regular file, and its
                               identity (backing.py: what the save file records)
  nvmet-module NAME            a loaded nvmet kernel module (/sys/module/NAME)
  nvmet-save SHA256 MODE       the sha256 of the save file and its mode (octal, as find's %m
                               prints it), when it exists
  configfs | no-configfs       whether configfs has the nvmet directory

Where the host has gzip and base64 the ``nvmet-`` lines come as one line instead,
``nvmet-dump BASE64`` (their text, gzip'd): the role's later tasks scan the probe's lines
many times, and 20,000 lines (512 namespaces) cost seconds of templating each run.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import hashlib
import zlib

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.backing import identities_to_record
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import HOST_KEY_FIELDS, NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.document import DocumentError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import saved_text, to_savefile
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.target import (
    drop_unset,
    read_and_plan,
    secrets_of,
    transport_modules,
)

# What a key file reads as when its hash matches no key of the document: a text no key
# can equal, so the plan writes the document's key.
UNKNOWN_KEY = "<a key the document does not hold>"


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Snapshot(object):
    """The probe's lines, parsed: entries (path -> f|d|l), children (directory -> names),
    texts (path -> text), secrets (path -> sha256 or None when unreadable), files (a
    namespace's device path -> its identity when a regular file), loaded modules, the save
    file's sha256 and mode ("600") and whether configfs has nvmet at all."""

    def __init__(self):
        self.configfs = False
        self.entries = {}
        self.children = {"": []}
        self.texts = {}
        self.secrets = {}
        self.files = {}
        self.modules = set()
        self.save_sha = None
        self.save_mode = None


def _unpacked(lines):
    """The probe's lines with each ``nvmet-dump BASE64`` line replaced by the lines it holds."""
    for line in lines or []:
        if not line.startswith("nvmet-dump "):
            yield line
            continue
        try:
            text = gzip.decompress(base64.b64decode(line[11:].strip(), validate=True)).decode("utf-8")
        except (binascii.Error, OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
            raise ValueError("the probe's nvmet-dump line does not decode: %s" % exc)
        yield from text.splitlines()


def parse_probe(lines):
    """Parse the probe's lines into a :class:`Snapshot`; ValueError for a line out of place."""
    snap = Snapshot()
    counts, text_lines = {}, {}
    section = None
    for line in _unpacked(lines):
        if section == "counts" and line != "nvmet-text":
            path, n = line.rpartition(":")[::2]
            if not path.startswith("./") or not n.isdigit():
                raise ValueError("unexpected line among the file counts: %r" % line[:80])
            counts[path[2:]] = int(n)
            continue
        if section == "text" and line != "nvmet-end":
            text_lines.setdefault(_split_text_line(line, counts), []).append(line)
            continue
        word, rest = line.partition(" ")[::2]
        if line == "configfs":
            snap.configfs = True
        elif line == "nvmet-counts":
            section = "counts"
        elif line == "nvmet-text":
            section = "text"
        elif line == "nvmet-end":
            section = "done"
        elif word == "nvmet-entry":
            kind, path = rest.partition(" ")[::2]
            snap.entries[path] = kind
            parent, name = path.rpartition("/")[::2]
            snap.children.setdefault(parent, []).append(name)
            if kind == "d":
                snap.children.setdefault(path, [])
        elif word == "nvmet-secret":
            path, digest = rest.rpartition(" ")[::2]
            snap.secrets[path] = None if digest == "unreadable" else digest
        elif word == "nvmet-file":
            inode, size, path = rest.split(" ", 2)
            snap.files[path] = {"inode": int(inode), "size": int(size)}
        elif word == "nvmet-module":
            snap.modules.add(rest)
        elif word == "nvmet-save":
            snap.save_sha, snap.save_mode = rest.partition(" ")[::2]
    if section not in (None, "done"):
        raise ValueError("the probe's configfs listing ends early (no nvmet-end line)")
    for path, n in counts.items():
        got = text_lines.get(path, [])
        if len(got) != n:
            raise ValueError("%s: %d lines counted, %d printed" % (path, n, len(got)))
        # Each printed line is "./PATH:LINE"; the file's text is its lines (without the
        # trailing newlines, as ConfigfsTree reads it).
        cut = len(path) + 3
        snap.texts[path] = "\n".join(x[cut:] for x in got).rstrip("\n")
    for names in snap.children.values():
        names.sort()
    return snap


def _split_text_line(line, counts):
    """The file a grep line "./PATH:LINE" belongs to: the first prefix up to a colon that is
    a counted file (paths hold colons: NQNs do)."""
    if not line.startswith("./"):
        raise ValueError("unexpected line among the file texts: %r" % line[:80])
    pos = line.find(":", 2)
    while pos != -1:
        if line[2:pos] in counts:
            return line[2:pos]
        pos = line.find(":", pos + 1)
    raise ValueError("a file text line of no counted file: %r" % line[:80])


class SnapshotTree(ConfigfsTree):
    """A read-only ConfigfsTree over a :class:`Snapshot`, read the way the kernel's tree
    is: absent is None, a directory lists its entries, and a file that could not be read
    fails the read. Live connections are unknown (None), so a plan that needs them to
    pass a guard fails instead of guessing. A key file reads as the document's key whose
    sha256 it has, else as :data:`UNKNOWN_KEY`."""

    def __init__(self, snap, keys=()):
        ConfigfsTree.__init__(self, sysfs_root=None)
        self.snap = snap
        self.known_keys = dict((_sha256(k), k) for k in keys)

    def exists(self):
        return self.snap.configfs

    def _get(self, rel, is_dir=False):
        kind = self.snap.entries.get(rel)
        if kind is None:
            return None
        if is_dir:
            if kind == "d":
                return list(self.snap.children.get(rel, []))
            if kind == "f":
                return None
        elif kind == "f":
            return self._text(rel)
        raise NvmetError("nvmet: %s is a %s in the probe's listing; not judging it"
                         % (rel, {"d": "directory", "l": "link"}.get(kind, kind)))

    def _text(self, rel):
        if rel in self.snap.texts:
            return self.snap.texts[rel]
        if rel.rpartition("/")[2] in HOST_KEY_FIELDS:
            if rel not in self.snap.secrets:
                return ""
            digest = self.snap.secrets[rel]
            if digest is not None:
                return self.known_keys.get(digest, UNKNOWN_KEY)
        raise NvmetError("nvmet: the probe could not read %s" % rel)

    def _attrs(self, rel, names):
        return [self._get(rel + "/" + name) for name in names]

    def connections(self, state):
        return None

    def do(self, op):
        raise NvmetError("a probe's snapshot of configfs cannot be changed")


def enabled_namespaces_on(lines, paths):
    """[{"object", "path"}] of the namespaces the probe's copy of configfs shows enabled on
    one of ``paths``: the kernel holds those files open, even deleted. ValueError when the
    lines do not parse."""
    wanted = set(paths or [])
    if not wanted:
        return []
    snap = parse_probe(lines)
    out = []
    for rel in sorted(snap.texts):
        parts = rel.split("/")
        if (len(parts) == 5 and parts[0] == "subsystems" and parts[2] == "namespaces" and parts[4] == "device_path"
                and snap.texts[rel] in wanted and snap.texts.get(rel[:-len("device_path")] + "enable") == "1"):
            out.append({"object": "/".join(parts[:4]), "path": snap.texts[rel]})
    return out


def _pending(why):
    return {"pending": True, "why": why}


def target_pending(doc, lines, purge="none", force=False, allow_reconfigure=False, keep_port_links=False,
                   save_file=None):
    """{"pending": bool, "why": text}: whether nvmet_target with these arguments would change
    configfs, load a kernel module or write the save file, judged on the probe's lines.
    Anything it cannot judge is pending (the module then runs and decides)."""
    try:
        doc = drop_unset(doc)
        snap = parse_probe(lines)
        if not snap.configfs:
            return _pending("configfs has no nvmet directory")
        missing = [name for name in transport_modules(doc) if name not in snap.modules]
        if missing:
            return _pending("kernel module(s) not loaded: %s" % ", ".join(missing))
        tree = SnapshotTree(snap, secrets_of(doc))
        state, ops = read_and_plan(tree, doc, purge, force, allow_reconfigure, keep_port_links, check_paths=False)
        if ops:
            return _pending("%d configfs operation(s), the first: %s" % (len(ops), ops[0].text()))
        if save_file:
            if snap.save_sha is None:
                return _pending("%s does not exist" % save_file)
            # The files as the module would record them when none was replaced since the
            # save; one that was makes the text differ, and the module refuses it.
            files = identities_to_record(state, read=snap.files.get)
            if snap.save_sha != _sha256(saved_text(to_savefile(state, mask_keys=False, files=files))):
                return _pending("%s differs from configfs" % save_file)
            if snap.save_mode != "600":
                return _pending("%s has mode %s, not 0600 (it holds the hosts' keys)"
                                % (save_file, "0" + snap.save_mode if snap.save_mode else "unknown"))
        return {"pending": False, "why": "configfs%s as the document wants" % (" and the save file are" if save_file else " is")}
    except DocumentError:
        return _pending("the document has errors (the module lists them)")
    except NvmetError as exc:
        return _pending(exc.msg)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return _pending("the probe could not be judged (%s: %s)" % (type(exc).__name__, exc))
