# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a host_config task would change anything, from one shell probe's lines.

A module task starts Python on the host (about 2 s on the lab's emulated guests); a
plain shell command over the open connection costs a tenth of that. A role that runs
host_config on every converge can ask the host first with the collection's
files/host_state.sh (arguments from :func:`probe_args`) and skip the module when
:func:`pending` finds nothing to do. It errs on the side of running the module: any
entry it cannot judge from the probe (a secret file, whose hash it does not ask for;
folders to remove; an owner given by number) counts as pending, and host_config itself
then decides. Runs on the controller (a filter), so it reads nothing but the lines.
"""

from __future__ import annotations

import base64
import hashlib

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.state import HostConfigError, sysfs_module, validate

# systemctl is-enabled answers host_config's probe counts as enabled, and those it can disable.
ENABLED = ("enabled", "enabled-runtime", "static", "alias", "indirect", "generated")
DISABLEABLE = ("enabled", "enabled-runtime", "alias")


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


# find's %y letters -> the types pending() compares.
_TYPES = {"f": "file", "d": "directory"}


def parse(lines):
    """host_state.sh output -> {paths: {path: {type, mode, owner, group, sha256}|None},
    modules: {sysfs name: loaded}, listed: set of module names in /etc/modules-load.d,
    units: {name: (enablement, activity)}, read: {path: text|None}}. A path with neither
    an "s" nor a "p -" line is left out (not probed); a file without an "h" line has
    sha256 None (its content is then taken to differ)."""
    out = dict(paths={}, modules={}, listed=set(), units={}, read={})
    sums = {}
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
            out["listed"].add(rest.strip())
        elif kind == "u":
            fields = rest.split(" ", 2)
            if len(fields) == 3:
                out["units"][fields[2]] = (fields[0], fields[1])
        elif kind == "r":
            data, path = split_line(rest)
            out["read"][path] = None if data == "-" else base64.b64decode(data).decode("utf-8", "replace")
    for path, st in out["paths"].items():
        if st is not None and st["type"] == "file":
            st["sha256"] = sums.get(path)
    return out


def _attrs_differ(have, mode, owner, group):
    if have["mode"] != mode:
        return "mode %04o, wants %04o" % (have["mode"], mode)
    for name, want, got in (("owner", owner, have["owner"]), ("group", group, have["group"])):
        if want is not None and str(want) != got:
            return "%s %s, wants %s" % (name, got, want)
    return None


def pending(params, lines):
    """What host_config(params) would change, as short reasons (empty: nothing), and the
    files it would read. Anything this cannot judge from the lines is a reason."""
    desired = _desired(params)
    if desired is None:
        return dict(pending=["the arguments are refused (host_config says why)"], read={})
    seen = parse(lines)
    reasons = []

    def have(path):
        if path not in seen["paths"]:
            reasons.append("%s: not probed" % path)
            return False, None
        return True, seen["paths"][path]

    def compare(entry, kind, sha256=None):
        probed, st = have(entry["path"])
        if not probed:
            return
        if st is None or st["type"] != kind:
            reasons.append("%s: no %s" % (entry["path"], kind))
        elif sha256 is not None and st["sha256"] != sha256:
            reasons.append("%s: content differs" % entry["path"])
        else:
            diff = _attrs_differ(st, entry["mode"], entry["owner"], entry["group"])
            if diff:
                reasons.append("%s: %s" % (entry["path"], diff))

    for d in desired["directories"]:
        compare(d, "directory")
    for f in desired["files"]:
        if f["secret"]:
            reasons.append("%s: secret content is not compared here" % f["path"])
        else:
            compare(f, "file", hashlib.sha256(f["content"].encode("utf-8")).hexdigest())
    for path in desired["absent"]:
        probed, st = have(path)
        if probed and st is not None:
            reasons.append("%s: present" % path)
    if desired.get("remove_empty_dirs"):
        reasons.append("remove_empty_dirs is not judged here")
    for name in desired["kernel_modules"]:
        if not seen["modules"].get(sysfs_module(name), False):
            reasons.append("module %s: not loaded" % name)
        if desired["persist_modules"] and name not in seen["listed"]:
            reasons.append("module %s: not in /etc/modules-load.d" % name)
    for u in desired["units"]:
        if u["name"] not in seen["units"]:
            reasons.append("unit %s: not probed" % u["name"])
            continue
        enablement, activity = seen["units"][u["name"]]
        if u["enabled"] is not None:
            if u["enabled"] and enablement not in ENABLED:
                reasons.append("unit %s: %s, wants enabled" % (u["name"], enablement))
            if not u["enabled"] and enablement in DISABLEABLE:
                reasons.append("unit %s: %s, wants disabled" % (u["name"], enablement))
        if u["started"] is not None and (activity == "active") != bool(u["started"]):
            reasons.append("unit %s: %s, wants %s" % (u["name"], activity, "active" if u["started"] else "stopped"))
    read = {}
    for path in desired["read"]:
        if path not in seen["read"]:
            reasons.append("%s: not read" % path)
        read[path] = seen["read"].get(path)
    return dict(pending=reasons, read=read)
