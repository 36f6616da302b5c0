# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a host_config task would change anything, from one shell probe's lines.

A module task starts Python on the host (about 2 s on the lab's emulated guests); a
plain shell command over the open connection costs a tenth of that. A role that runs
host_config on every converge can ask the host first with the collection's
files/host_state.sh (arguments from :func:`probe_args`) and skip the module when
:func:`pending` finds nothing to do. :func:`parse` reads the probe's lines into the
observation document (hostconfig/observation.py) and :func:`pending` runs host_config's
own planner (state.py) on it: pending is a plan with operations, a path the module would
refuse, or anything the plan needed that the probe does not show (a secret file, whose
hash it does not ask for; the entries of folders to remove). It errs on the side of
running the module, which then decides. Runs on the controller (a filter).
"""

from __future__ import annotations

import base64

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.observation import Observation, sysfs_module
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.state import (
    MODULES_LOAD_DIR, HostConfigError, plan_observed, validate)


def split_line(text):
    """"KIND REST" -> (KIND, REST), for a probe's output lines."""
    head, tail = text.partition(" ")[::2]
    return head, tail


def _desired(params):
    try:
        return validate(params)
    except HostConfigError:
        return None


def probe_args(params):
    """The host_state.sh arguments that tell whether host_config(params) has work to do."""
    desired = _desired(params)
    if desired is None:
        return []
    args = ["d:" + d["path"] for d in desired["directories"]]
    args += ["f:" + f["path"] for f in desired["files"] if not f["secret"]]
    args += ["a:" + p for p in desired["absent"]]
    args += ["m:" + sysfs_module(n) for n in desired["kernel_modules"]]
    args += ["u:" + u["name"] for u in desired["units"]]
    args += ["r:" + p for p in desired["read"]]
    return args


# find's %y letters -> the observation's types.
_TYPES = {"f": "file", "d": "directory"}


def parse(lines):
    """host_state.sh output -> the observation document (observation.py): paths, modules,
    listed (only when the probe looked at modules), units, read. A path with neither an
    "s" nor a "p -" line is left out (not probed); a file without an "h" line has sha256
    None (its content is then taken to differ). Other lines are skipped."""
    out = dict(paths={}, modules={}, units={}, read={})
    sums, listed = {}, set()
    for line in lines:
        kind, rest = split_line(line.rstrip("\r"))
        if kind == "p" and rest.startswith("- "):
            out["paths"][rest[2:]] = None
        elif kind == "s":
            fields = rest.split(" ", 4)
            if len(fields) == 5 and fields[0].isdigit():
                mode, owner, group, ftype, path = fields
                out["paths"][path] = dict(mode=int(mode, 8), owner=owner, group=group,
                                          type=_TYPES.get(ftype, "other"), sha256=None)
        elif kind == "h":
            # sha256sum's "HEX  PATH" (text mode) or "HEX *PATH"; a name it had to escape
            # starts the line with a backslash and is not matched (content differs).
            digest, path = rest[:64], rest[65:]
            if len(digest) == 64 and rest[64:65] == " " and path[:1] in (" ", "*"):
                sums[path[1:]] = digest
        elif kind == "m":
            state, name = split_line(rest)
            out["modules"][name] = state == "loaded"
        elif kind == "l":
            listed.add(rest.strip())
        elif kind == "u":
            fields = rest.split(" ", 2)
            if len(fields) == 3:
                out["units"][fields[2]] = dict(enablement=fields[0], activity=fields[1])
        elif kind == "r":
            data, path = split_line(rest)
            out["read"][path] = None if data == "-" else base64.b64decode(data).decode("utf-8", "replace")
    for path, st in out["paths"].items():
        if st is not None and st["type"] == "file":
            st["sha256"] = sums.get(path)
    if out["modules"]:  # the probe prints every listed module when it is asked about one
        out["listed"] = sorted(listed)
    return out


def pending(params, lines):
    """What host_config(params) would change, as short reasons (empty: nothing), and the
    files it would read. Anything the plan needs that the lines do not show is a reason."""
    desired = _desired(params)
    if desired is None:
        return dict(pending=["the arguments are refused (host_config says why)"], read={})
    seen = Observation(parse(lines))
    ops, _before, _after, refused = plan_observed(desired, seen)
    reasons = _reasons(desired, seen, ops, dict(refused))
    read = {}
    for path in desired["read"]:
        read[path] = seen.read(path)
        if ("read", path) in seen.unseen:
            reasons.append("%s: not read" % path)
    if not reasons and (ops or seen.unseen):  # never lose a plan for want of words
        reasons = ["host_config has work the probe does not describe"]
    return dict(pending=reasons, read=read)


# The operations that carry out each kind of path entry (a folder may also be removed as empty).
_ENTRY_OPS = dict(directory=("mkdir", "chmod", "chown"), file=("write", "chmod", "chown"), absent=("remove",))


def _reasons(desired, seen, ops, refused):
    """The plan told per entry of desired, in its order: one reason per path, per module
    (loaded, listed for boot), per unit (enabled, started)."""
    by_key = {}
    for op in ops:
        by_key.setdefault(op.get("path") or op.get("name"), []).append(op)
    unseen = set(seen.unseen)
    reasons = []
    entries = ([(d["path"], "directory", d) for d in desired["directories"]]
               + [(f["path"], "file", f) for f in desired["files"]] + [(p, "absent", {}) for p in desired["absent"]])
    for path, kind, entry in entries:
        first = next((op for op in by_key.get(path, []) if op["op"] in _ENTRY_OPS[kind]), None)
        have = seen.doc["paths"].get(path)
        if ("paths", path) in unseen:
            why = "secret content is not compared here" if entry.get("secret") else "not probed"
        elif path in refused or (kind == "absent" and first):
            why = "present" if kind == "absent" else "no %s" % kind
        elif first is None:
            continue
        elif first["op"] in ("mkdir", "write"):
            why = "no %s" % kind if have is None else "content differs"
        elif first["op"] == "chmod":
            why = "mode %04o, wants %04o" % (have["mode"], first["mode"])
        else:  # chown: the first of owner and group that differs
            who = "owner" if entry["owner"] is not None and have["owner"] != str(entry["owner"]) else "group"
            why = "%s %s, wants %s" % (who, have[who], entry[who])
        reasons.append("%s: %s" % (path, why))
    empty_dirs = desired.get("remove_empty_dirs", [])
    if any(op["op"] == "rmdir" for op in ops) or any(w[0] in ("paths", "listings") and w[1] in empty_dirs
                                                     for w in unseen):
        reasons.append("remove_empty_dirs is not judged here")
    for name in desired["kernel_modules"]:
        if ("modules", sysfs_module(name)) in unseen:
            reasons.append("module %s: not probed" % name)
            continue
        if any(op["op"] == "modprobe" for op in by_key.get(name, [])):
            reasons.append("module %s: not loaded" % name)
        if "/%s/%s.conf" % (MODULES_LOAD_DIR, name) in by_key:
            reasons.append("module %s: not in /etc/modules-load.d" % name)
    for u in desired["units"]:
        name = u["name"]
        if ("units", name, "enablement") in unseen or ("units", name, "activity") in unseen:
            reasons.append("unit %s: not probed" % name)
            continue
        words = seen.doc["units"].get(name, {})
        unit_ops = dict((op["op"], op) for op in by_key.get(name, []))
        if "enable" in unit_ops or "disable" in unit_ops:
            reasons.append("unit %s: %s, wants %s" % (name, words["enablement"],
                                                      "enabled" if u["enabled"] else "disabled"))
        if "start" in unit_ops or "stop" in unit_ops:
            reasons.append("unit %s: %s, wants %s" % (name, words["activity"], "active" if u["started"] else "stopped"))
    return reasons
