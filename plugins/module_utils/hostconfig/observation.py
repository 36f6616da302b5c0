# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a host has, as host_config's planner sees it: one document, two ways to fill it.

The observation document, plain data::

    paths    {path: None (nothing there) | {type: file|directory|other, mode: int,
              owner: name, group: name (the number when the host has no name for it),
              sha256: hex for a regular file whose content is planned (a file entry),
              else None: a path to remove is never read, however large}}
    listings {path: [entry names]}            a directory's entries (remove_empty_dirs)
    modules  {name as /sys/module lists it: loaded}
    listed   [kernel module names given a line of their own in /etc/modules-load.d/*.conf]
    units    {name: {enablement: systemctl is-enabled's word, activity: is-active's word
              ("-" when it says nothing), known: systemd has the unit loaded}}
    read     {path: text | None}

On the host, :class:`HostReader` fills it in as the planner asks (host_config and rdma_link
plan with it), and adds to each path the fields in :data:`HOST_ONLY`: the numeric ids (owners
are compared by id where the wanted names resolve as on the host) and the content (the
--diff view). On the controller, files/host_state.sh's lines are read into the same
document by hostconfig/quickcheck.py's ``parse``; the shell probe has no ids, contents,
listings or loaded units. :class:`Observation` is how the planner reads the document
either way: a question it cannot answer is noted in ``unseen`` and gets the answer
that plans the most work (but for the parents of a missing path), so a plan from an
incomplete document errs towards running the module.
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import stat

MODULES_LOAD_DIR = "etc/modules-load.d"
# systemctl is-enabled's words that count as enabled, and those of a unit that can be disabled
# (static, indirect and generated units count as enabled but have nothing to disable).
ENABLED = ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated")
DISABLEABLE = ("enabled", "enabled-runtime", "alias")
# The fields of a path that only the host reader gives.
HOST_ONLY = ("uid", "gid", "content")
_MODULE_LINE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def under(root, path):
    return os.path.join(root, path.lstrip("/"))


def sysfs_module(name):
    """A kernel module's name as /sys/module lists it (nvmet-rdma -> nvmet_rdma)."""
    return name.replace("-", "_")


def read_path(root, path):
    """What is at path: None when nothing, else type, mode, uid and gid (never the content:
    HostReader.path reads that, for the files whose content is planned)."""
    full = under(root, path)
    try:
        st = os.lstat(full)
    except FileNotFoundError:
        return None
    kind = "directory" if stat.S_ISDIR(st.st_mode) else "file" if stat.S_ISREG(st.st_mode) else "other"
    return dict(type=kind, mode=stat.S_IMODE(st.st_mode), uid=st.st_uid, gid=st.st_gid)


def _name(lookup, number):
    try:
        return lookup(number)[0]
    except KeyError:
        return str(number)


class HostReader(object):
    """Reads the answers on the host: files below ``root``; kernel modules and units from
    ``system`` (apply.SystemProbe, or a test's fake answering loaded/known_unit/enabled/
    can_disable/active with yes or no)."""

    def __init__(self, root, system):
        self.root = root
        self.system = system

    def path(self, path, content=False):
        """What is at path; with content, a regular file's bytes and sha256 too (only for
        the files whose content is planned: a backing file to remove may be terabytes)."""
        have = read_path(self.root, path)
        if have is not None:
            have.update(owner=_name(pwd.getpwuid, have["uid"]), group=_name(grp.getgrgid, have["gid"]), sha256=None)
            if have["type"] == "file" and content:
                try:
                    with open(under(self.root, path), "rb") as fh:
                        have["content"] = fh.read()
                except OSError:  # unreadable: no hash, as from the probe (its content differs)
                    have["content"] = None
                else:
                    have["sha256"] = hashlib.sha256(have["content"]).hexdigest()
        return have

    def listing(self, path):
        return sorted(os.listdir(under(self.root, path)))

    def loaded(self, name):
        return self.system.loaded(name)

    def listed(self):
        """community.general.modprobe's test: a line that is the module's name, in any .conf file."""
        directory = under(self.root, MODULES_LOAD_DIR)
        names = set()
        try:
            entries = sorted(os.listdir(directory))
        except FileNotFoundError:
            return []
        for entry in entries:
            if not entry.endswith(".conf"):
                continue
            try:
                with open(os.path.join(directory, entry), errors="replace") as fh:
                    names.update(line.strip() for line in fh)
            except OSError:
                continue
        return sorted(n for n in names if n and _MODULE_LINE.issuperset(n))

    def enablement(self, name):
        if hasattr(self.system, "enablement"):
            return self.system.enablement(name)
        if not self.system.enabled(name):
            return "disabled"
        return "enabled" if self.system.can_disable(name) else "static"

    def activity(self, name):
        if hasattr(self.system, "activity"):
            return self.system.activity(name)
        return "active" if self.system.active(name) else "inactive"

    def known(self, name):
        return self.system.known_unit(name)

    def read(self, path):
        full = under(self.root, path)
        if not os.path.isfile(full):
            return None
        with open(full, "rb") as fh:
            return fh.read().decode("utf-8", "replace")


class Observation(object):
    """The planner's view of one document, filled in by ``reader`` where there is one."""

    def __init__(self, doc=None, reader=None):
        self.doc = {} if doc is None else doc
        self.reader = reader
        self.unseen = []  # (section, key[, field]) of each question the document could not answer

    def _answer(self, where, ask, guess):
        """doc[section][key] (or [field] of it): read when missing and there is a reader, else unseen."""
        table = self.doc
        for key in where[:-1]:
            table = table.get(key) or {}
        if where[-1] in table:
            return table[where[-1]]
        if self.reader is None:
            self.unseen.append(where)
            return guess
        table = self.doc
        for key in where[:-1]:
            table = table.setdefault(key, {})
        table[where[-1]] = answer = ask()
        return answer

    def path(self, path, content=False):
        """What is at path (None: nothing); content=True for a file whose content is planned:
        its sha256 (and, read on the host, its bytes)."""
        have = self._answer(("paths", path), lambda: self.reader.path(path, content), None)
        if (content and self.reader is not None and have is not None and have["type"] == "file"
                and "content" not in have):
            # Read before without its content (as another entry's parent, say): read it again.
            have = self.doc["paths"][path] = self.reader.path(path, True)
        return have

    def exists(self, path):
        """Whether something is at path, for a parent of a path that is missing: where the
        document cannot say, it is taken to be there (the missing path is work enough)."""
        return self._answer(("paths", path), lambda: self.reader.path(path), True) is not None

    def listing(self, path):
        return self._answer(("listings", path), lambda: self.reader.listing(path), [])

    def loaded(self, name):
        return self._answer(("modules", sysfs_module(name)), lambda: self.reader.loaded(name), False)

    def listed(self, name):
        if "listed" not in self.doc:
            if self.reader is None:
                self.unseen.append(("listed", name))
                return False
            self.doc["listed"] = self.reader.listed()
        return name in self.doc["listed"]

    def enabled(self, name):
        return self._enablement(name) in ENABLED

    def can_disable(self, name):
        return self._enablement(name) in DISABLEABLE

    def _enablement(self, name):
        return self._answer(("units", name, "enablement"), lambda: self.reader.enablement(name), "-")

    def active(self, name):
        return self._answer(("units", name, "activity"), lambda: self.reader.activity(name), "-") == "active"

    def known_unit(self, name):
        return self._answer(("units", name, "known"), lambda: self.reader.known(name), True)

    def read(self, path):
        return self._answer(("read", path), lambda: self.reader.read(path), None)
