# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Desired host state from module parameters, and the plan that takes a host there.

The plan is made on an observation of the host (observation.py): read on the host by the
module, or parsed on the controller from the shell probe's lines (quickcheck.py), whose
"is anything pending" check is this same plan. Pure apart from what the observation
reads, so unit tests run against a temporary tree as ``root``.
"""

from __future__ import annotations

import grp
import hashlib
import os
import pwd
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.observation import (
    MODULES_LOAD_DIR, HostReader, Observation, read_path, under)

UNIT_DIRS = ("etc/systemd/system/", "usr/lib/systemd/system/", "lib/systemd/system/", "run/systemd/system/")
# Non-secret text files up to this size show their content in --diff.
DIFF_CONTENT_LIMIT = 16384
_MODE = re.compile(r"^0?[0-7]{3,4}$")
_MODULE_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.@-]+\.(service|socket|timer|target|path|mount)$")


class HostConfigError(Exception):
    """msg says what is wrong; errors lists each problem of the arguments; done lists the
    operations carried out before a failure (empty: nothing on the host changed)."""

    def __init__(self, msg, errors=None, done=None):
        super(HostConfigError, self).__init__(msg)
        self.msg = msg
        self.errors = errors or []
        self.done = done or []


def _mode(value, where, errors):
    text = str(value)
    if not _MODE.match(text):
        errors.append("%s: mode %r is not an octal mode such as 0644" % (where, value))
        return None
    return int(text, 8)


def _abs(path, where, errors):
    if not isinstance(path, str) or not path.startswith("/") or "/../" in path + "/" or path.rstrip("/") == "":
        errors.append("%s: path %r must be absolute, without '..', and not /" % (where, path))
        return None
    return os.path.normpath(path)


def validate(params):
    """Check every entry before anything is read or changed; one error lists every problem."""
    errors = []
    seen = {}
    dirs, files = [], []
    for i, d in enumerate(params.get("directories") or []):
        where = "directories[%d]" % i
        path = _abs(d.get("path"), where, errors)
        mode = _mode(d.get("mode") or "0755", where, errors)
        if path and path in seen:
            errors.append("%s: %s is also %s" % (where, path, seen[path]))
        if path:
            dirs.append(dict(path=path, mode=mode, owner=d.get("owner"), group=d.get("group")))
            seen[path] = where
    for i, f in enumerate(params.get("files") or []):
        where = "files[%d]" % i
        path = _abs(f.get("path"), where, errors)
        mode = _mode(f.get("mode") or "0644", where, errors)
        if f.get("content") is None:
            errors.append("%s: content is required" % where)
        if path and path in seen:
            errors.append("%s: %s is also %s" % (where, path, seen[path]))
        if path:
            seen[path] = where
            files.append(dict(path=path, mode=mode, owner=f.get("owner"), group=f.get("group"),
                              content=f.get("content") or "", secret=bool(f.get("secret"))))
    absent = []
    for i, p in enumerate(params.get("absent") or []):
        where = "absent[%d]" % i
        path = _abs(p, where, errors)
        if path and path in seen:
            errors.append("%s: %s is also %s" % (where, path, seen[path]))
        if path:
            seen[path] = where
            absent.append(path)
    empty_dirs = []
    for i, p in enumerate(params.get("remove_empty_dirs") or []):
        path = _abs(p, "remove_empty_dirs[%d]" % i, errors)
        if path:
            empty_dirs.append(path)
    for i, name in enumerate(params.get("kernel_modules") or []):
        if not _MODULE_NAME.match(str(name)):
            errors.append("kernel_modules[%d]: %r is not a kernel module name" % (i, name))
    units = []
    for i, u in enumerate(params.get("units") or []):
        name = u.get("name")
        if not _UNIT_NAME.match(str(name)):
            errors.append("units[%d]: %r is not a systemd unit name such as foo.service" % (i, name))
        units.append(dict(name=name, enabled=u.get("enabled"), started=u.get("started")))
    for i, p in enumerate(params.get("read") or []):
        _abs(p, "read[%d]" % i, errors)
    for where, who, lookup in (("owner", "owner", pwd.getpwnam), ("group", "group", grp.getgrnam)):
        for entry in dirs + files:
            name = entry.get(who)
            if name is None:
                continue
            try:
                lookup(name)
            except KeyError:
                errors.append("%s: %s %r does not exist on this host" % (entry["path"], where, name))
    if errors:
        raise HostConfigError("host_config: %d problem(s) in the arguments, nothing was changed: %s"
                              % (len(errors), "; ".join(errors)), errors)
    return dict(directories=dirs, files=files, absent=absent, remove_empty_dirs=empty_dirs,
                kernel_modules=list(params.get("kernel_modules") or []),
                persist_modules=params.get("persist_modules", True), units=units,
                read=[os.path.normpath(p) for p in params.get("read") or []])


def _uid(name):
    return None if name is None else pwd.getpwnam(name).pw_uid


def _gid(name):
    return None if name is None else grp.getgrnam(name).gr_gid


def _attr_ops(path, have, mode, owner, group):
    ops = []
    if have["mode"] != mode:
        ops.append(dict(op="chmod", path=path, mode=mode))
    uid, gid = _uid(owner), _gid(group)
    if "uid" in have:  # read on this host: its ids, as the module resolves the names
        differs = (uid is not None and have["uid"] != uid) or (gid is not None and have["gid"] != gid)
    else:  # the shell probe's names (find's %u %g)
        differs = any(want is not None and have[who] != str(want) for who, want in (("owner", owner), ("group", group)))
    if differs:
        ops.append(dict(op="chown", path=path, uid=uid, gid=gid, owner=owner, group=group))
    return ops


def _plan_parents(ops, seen, path, planned):
    """mkdir (0755) each missing parent of path that no earlier operation makes, outermost first."""
    missing = []
    parent = os.path.dirname(path)
    while parent != "/" and parent not in planned and not seen.exists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    for parent in reversed(missing):
        ops.append(dict(op="mkdir", path=parent, mode=0o755, uid=None, gid=None))
        planned.add(parent)


def unit_file_of(path):
    """The unit a file configures: its own name, or for a drop-in (NAME.d/x.conf) NAME."""
    for d in UNIT_DIRS:
        if path.startswith("/" + d):
            parent = os.path.basename(os.path.dirname(path))
            if parent.endswith(".d") and path.endswith(".conf"):
                return parent[:-2]
            return os.path.basename(path)
    return None


def plan(desired, root, probe):
    """Ordered operations that take the host below root to the desired state.

    probe: object with loaded(module) -> bool, known_unit(name) -> bool (systemd has the unit
    loaded, so a changed file needs a daemon-reload), enabled(name) -> bool, can_disable(name)
    -> bool (enabled by a symlink of its own, not static/indirect/generated), active(name) -> bool
    (apply.SystemProbe). Returns (ops, before, after): before/after are the diff views of what
    is managed. Raises HostConfigError for the first path of the wrong type.
    """
    ops, before, after, refused = plan_observed(desired, Observation(reader=HostReader(root, probe)))
    if refused:
        raise HostConfigError(refused[0][1])
    return ops, before, after


def plan_observed(desired, seen):
    """plan() on an Observation (observation.py): (ops, before, after, refused), refused
    listing (path, message) for each path host_config will not touch, in the order plan()
    meets them (a file where a folder should be, a folder among the absent paths). What the
    observation could not answer is in seen.unseen."""
    ops, before, after, refused = [], {}, {}, []
    # Units to stop or disable go first, before their files change (a unit's stop may run
    # a file this plan removes); units to enable or start go last, once their files are in place.
    up_ops = []
    for u in desired["units"]:
        state_before = {}
        state_after = {}
        if u["started"] is not None:
            is_active = seen.active(u["name"])
            state_before["active"] = is_active
            state_after["active"] = bool(u["started"])
            if bool(u["started"]) != is_active:
                (up_ops if u["started"] else ops).append(dict(op="start" if u["started"] else "stop", name=u["name"]))
        if u["enabled"] is not None:
            is_enabled = seen.enabled(u["name"])
            state_before["enabled"] = is_enabled
            state_after["enabled"] = bool(u["enabled"])
            # A static, indirect or generated unit counts as enabled but has nothing to disable.
            fixed = not u["enabled"] and is_enabled and not seen.can_disable(u["name"])
            if bool(u["enabled"]) != is_enabled and not fixed:
                op = dict(op="enable" if u["enabled"] else "disable", name=u["name"])
                if u["enabled"]:
                    up_ops.insert(0, op)  # enabled before started
                else:
                    ops.append(op)
        before["unit " + u["name"]] = state_before
        after["unit " + u["name"]] = state_after
    planned_dirs = set()
    # Parents first, whatever order they are listed in: a parent listed after its child
    # would otherwise be planned twice (once as a 0755 missing parent).
    for d in sorted(desired["directories"], key=lambda d: d["path"].count("/")):
        have = seen.path(d["path"])
        before[d["path"]] = _view(have)
        if have is None:
            _plan_parents(ops, seen, d["path"], planned_dirs)
            ops.append(dict(op="mkdir", path=d["path"], mode=d["mode"], uid=_uid(d["owner"]), gid=_gid(d["group"])))
        elif have["type"] != "directory":
            refused.append((d["path"], "host_config: %s exists and is not a directory (%s); nothing was changed"
                            % (d["path"], have["type"])))
            continue
        else:
            ops.extend(_attr_ops(d["path"], have, d["mode"], d["owner"], d["group"]))
        planned_dirs.add(d["path"])
        after[d["path"]] = dict(type="directory", mode="%04o" % d["mode"])
    units_touched = []
    for f in desired["files"]:
        have = seen.path(f["path"], content=True)
        want = f["content"].encode("utf-8")
        before[f["path"]] = _view(have, secret=f["secret"])
        if have is None:
            _plan_parents(ops, seen, f["path"], planned_dirs)
        elif have["type"] != "file":
            refused.append((f["path"], "host_config: %s exists and is not a regular file (%s); nothing was changed"
                            % (f["path"], have["type"])))
            continue
        if have is None or have["sha256"] != hashlib.sha256(want).hexdigest():
            # The new file replaces the old one: an owner or group left null keeps the old file's.
            uid = have.get("uid") if have is not None and f["owner"] is None else _uid(f["owner"])
            gid = have.get("gid") if have is not None and f["group"] is None else _gid(f["group"])
            ops.append(dict(op="write", path=f["path"], content=want, mode=f["mode"], uid=uid, gid=gid,
                            secret=f["secret"], created=have is None))
            if unit_file_of(f["path"]):
                units_touched.append(unit_file_of(f["path"]))
        else:
            ops.extend(_attr_ops(f["path"], have, f["mode"], f["owner"], f["group"]))
        after[f["path"]] = _view(dict(type="file", mode=f["mode"], content=want), secret=f["secret"])
    for path in desired["absent"]:
        have = seen.path(path)
        if have is None:
            continue
        if have["type"] == "directory":
            refused.append((path, "host_config: absent lists %s, which is a directory; only files are removed" % path))
            continue
        before[path] = _view(have, with_content=False)
        after[path] = None
        ops.append(dict(op="remove", path=path))
        if unit_file_of(path):
            units_touched.append(unit_file_of(path))
    removed = set(op["path"] for op in ops if op["op"] == "remove")
    for path in desired.get("remove_empty_dirs", []):
        have = seen.path(path)
        if have is None or have["type"] != "directory":
            continue
        left = [e for e in seen.listing(path) if os.path.join(path, e) not in removed]
        if left:
            continue  # still holds something: not ours to remove
        before[path] = _view(have)
        after[path] = None
        ops.append(dict(op="rmdir", path=path))
        removed.add(path)
    for name in desired["kernel_modules"]:
        loaded = seen.loaded(name)
        before["module " + name] = dict(loaded=loaded)
        after["module " + name] = dict(loaded=True)
        if not loaded:
            ops.append(dict(op="modprobe", name=name))
        if desired["persist_modules"] and not seen.listed(name):
            path = "/%s/%s.conf" % (MODULES_LOAD_DIR, name)
            have = seen.path(path)
            if have is None:
                _plan_parents(ops, seen, path, planned_dirs)
            ops.append(dict(op="write", path=path, content=(name + "\n").encode(), mode=0o644, uid=None,
                            gid=None, secret=False, created=have is None))
    if any(seen.known_unit(u) for u in units_touched):
        ops.append(dict(op="daemon_reload"))
    return ops + up_ops, before, after, refused


def _view(have, secret=False, with_content=True):
    if have is None:
        return None
    out = dict(type=have["type"], mode="%04o" % have["mode"])
    content = have.get("content") if with_content else None
    if content is not None and secret:
        out["content"] = "(secret)"  # no hash either: a digest of a secret is a way to check guesses
    elif content is not None:
        out["sha256"] = hashlib.sha256(content).hexdigest()
        out["size"] = len(content)
        if len(content) <= DIFF_CONTENT_LIMIT:
            try:
                out["content"] = content.decode("utf-8")
            except UnicodeDecodeError:
                pass
    return out


def op_text(op):
    """One line per operation, never with file content."""
    kind = op["op"]
    if kind in ("mkdir", "chmod"):
        return "%s %s %04o" % (kind, op["path"], op["mode"])
    if kind == "write":
        return "%s %s %04o (%d bytes)" % ("create" if op["created"] else "update", op["path"], op["mode"],
                                          len(op["content"]))
    if kind == "chown":
        return "chown %s %s:%s" % (op["path"], op["owner"] or "-", op["group"] or "-")
    if kind in ("remove", "rmdir"):
        return "%s %s" % (kind, op["path"])
    if kind == "modprobe":
        return "modprobe %s" % op["name"]
    if kind == "daemon_reload":
        return "systemctl daemon-reload"
    return "systemctl %s %s" % (kind, op["name"])


# read_path and under stay importable from here, where they were (the unit tests use them).
__all__ = ["HostConfigError", "validate", "plan", "plan_observed", "unit_file_of", "op_text", "read_path", "under",
           "MODULES_LOAD_DIR", "UNIT_DIRS", "DIFF_CONTENT_LIMIT"]
