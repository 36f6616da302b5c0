# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the nvmeof_initiator role reads from a host, read on the controller: the mount
table its first task reads back, and the teardown's probe (the records converge wrote and
the markers of what else it set up). The role's variables take these from the filters in
plugins/filter/nvmeof_initiator.py instead of parsing lines in Jinja."""

from __future__ import annotations

import json
import re

# /proc/self/mounts writes a blank, tab, newline and backslash in a field as an octal
# escape (\040, \011, \012, \134): fs/proc_namespace.c, mangle().
_ESCAPE = re.compile(r"\\([0-7]{3})")


class InitiatorStateError(ValueError):
    """A line of the host's output that cannot be read (a record that is not JSON)."""


def _unescape(field):
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def mounted_on(mounts, mount_point):
    """[source, fstype] of what is mounted on ``mount_point`` (the last entry for it in the
    text of /proc/self/mounts: the one visible there), or [] when nothing is."""
    found = []
    for line in (mounts or "").splitlines():
        fields = line.split()
        if len(fields) > 2 and _unescape(fields[1]) == mount_point:
            found = [_unescape(fields[0]), fields[2]]
    return found


def read_records(lines):
    """The teardown probe's lines (tasks/teardown.yml: each record file's JSON, one line
    each, "marker NAME" lines, and "cache f PATH" / "cache d PATH" for each file and folder
    of the path healer's bytecode cache, deepest first) -> {records: [dict], markers:
    [name], cache: {files: [path], dirs: [path]}}."""
    out = {"records": [], "markers": [], "cache": {"files": [], "dirs": []}}
    for line in lines or []:
        line = line.rstrip("\r")
        if line.startswith("{"):
            try:
                out["records"].append(json.loads(line))
            except ValueError as exc:
                raise InitiatorStateError("a record of this role on the host is not JSON (%s): %s" % (exc, line[:80]))
        elif line.startswith("marker "):
            out["markers"].append(line[7:])
        elif line.startswith(("cache f /", "cache d /")):
            out["cache"]["files" if line[6] == "f" else "dirs"].append(line[8:])
    return out


def read_identity(lines):
    """The identity task's lines (files/identity.sh: "missing PACKAGE" per package not
    installed, then "exists|created|would-create HOSTNQN") -> {hostnqn, made (exists,
    created or would-create), missing_packages}. hostnqn and made are "" when the last line
    is not the identity (the script failed: the task reports its rc and stderr)."""
    lines = [line.rstrip("\r") for line in lines or []]
    made, nqn = (lines[-1] if lines else "").partition(" ")[::2]
    if made not in ("exists", "created", "would-create") or not nqn:
        made = nqn = ""
    missing = [line[8:] for line in lines if line.startswith("missing ") and line[8:]]
    return {"hostnqn": nqn, "made": made, "missing_packages": missing}
