# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nvmeof_target role's probe (roles/nvmeof_target/files/probe.sh), read on the
controller. Here, not in module_utils/nvmet/: that package ships whole to the target hosts
inside the boot-time restorer (the host_library lookup), which needs none of this.

The role reads its target host in one shell command, for speed (a module start costs
2.5-4 s on the lab's emulated guests, a raw command one round trip). This is the one
reader of what that command prints: the converge's first probe and the teardown's both
run probe.sh, and the role's variables take what they need from :func:`read_probe`'s
dict instead of parsing lines in Jinja. The nvmet configfs part is parsed by
module_utils/nvmet/snapshot.py's :func:`~snapshot.parse_probe` (the copy of configfs the no-change check
plans against), host_state.sh's lines by module_utils/hostconfig/quickcheck.py's ``parse``.

Lines besides the nvmet ones and host_state.sh's (probe.sh says what prints them):

  configfs | no-configfs    whether configfs has the nvmet directory
  missing PACKAGE           a package the role needs that is not installed
  byid NAME TARGET          a /dev/disk/by-id link and where it points
  firewall TOOL             firewalld, ufw, nftables or none
  nvmetcli UNIT MASK        nvmetcli's restore unit: unit|none, masked|unmasked
  record BASE64             the record of what the role created (JSON)
  file exists BYTES PATH    a backing file that exists

The backing tasks print ``created|would-create|exists BYTES PATH`` per file and
``size BYTES PATH`` per block device: :func:`read_backing`.
"""

from __future__ import annotations

import base64
import binascii
import json

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.quickcheck import parse as parse_host_state
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.snapshot import SnapshotTree, parse_probe

# host_state.sh's line kinds (files/host_state.sh): p s h m l u r.
_HOST_STATE_KINDS = frozenset("pshmlur")


class ProbeError(ValueError):
    """A probe line that cannot be read (a record that is not base64 JSON, a nvmet part
    that does not parse)."""


def _record(data):
    try:
        return json.loads(base64.b64decode(data.strip(), validate=True).decode("utf-8"))
    except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
        raise ProbeError("the record the probe read is not base64-encoded JSON: %s" % exc)


def configfs_objects(lines):
    """What configfs holds now, in nvmet_info's shape and only the keys the teardown
    plans with: ``subsystems`` [{nqn, allowed_hosts}] and ``ports`` [{portid, subsystems}],
    sorted by name as configfs lists them, listed through the probe's copy of configfs
    (SnapshotTree), as ConfigfsTree lists the kernel's. Empty lists without configfs."""
    try:
        tree = SnapshotTree(parse_probe(lines))
    except ValueError as exc:
        raise ProbeError("the probe's copy of configfs cannot be read: %s" % exc)
    if not tree.exists():
        return {"subsystems": [], "ports": []}
    subsystems = [{"nqn": n, "allowed_hosts": tree.names("subsystems/%s/allowed_hosts" % n)}
                  for n in tree.names("subsystems")]
    # A port folder is its number; one that is not (none the kernel makes) is left out
    # rather than failing a teardown over it, as ConfigfsTree.read leaves it out.
    ports = [{"portid": int(n), "subsystems": tree.names("ports/%s/subsystems" % n)}
             for n in tree.names("ports") if n.isdigit()]
    ports.sort(key=lambda p: p["portid"])
    return {"subsystems": subsystems, "ports": ports}


def read_probe(lines, markers=None, objects=False):
    """The probe's lines as one dict:

    configfs (bool), missing_packages [name], byid ["NAME TARGET"] (as
    topology.resolve_devices takes them), firewall (tool, "none" when not probed),
    nvmetcli {installed, masked}, record (dict, {} when none), file_lines ["exists BYTES
    PATH"] (the backing tasks' format), files {path: bytes}, markers [name]: the names of
    ``markers`` ({name: path}, probed through host_state.sh) whose path exists, and with
    ``objects`` the configfs ``subsystems`` and ``ports`` (:func:`configfs_objects`; the
    packed nvmet part is only opened then)."""
    lines = [line.rstrip("\r") for line in lines or []]
    out = {
        "configfs": False,
        "missing_packages": [],
        "byid": [],
        "firewall": "none",
        "nvmetcli": {"installed": False, "masked": False},
        "record": {},
        "file_lines": [],
        "files": {},
        "markers": [],
    }
    host_state = []
    for line in lines:
        word, rest = line.partition(" ")[::2]
        if line == "configfs":
            out["configfs"] = True
        elif word == "missing" and rest:
            out["missing_packages"].append(rest)
        elif word == "byid" and rest:
            out["byid"].append(rest)
        elif word == "firewall" and rest:
            out["firewall"] = rest
        elif word == "nvmetcli":
            fields = rest.split(" ")
            out["nvmetcli"] = {"installed": fields[0] == "unit", "masked": fields[1:2] == ["masked"]}
        elif word == "record":
            out["record"] = _record(rest)
        elif word == "file" and rest.startswith("exists "):
            size, path = rest[7:].partition(" ")[::2]
            if size.isdigit() and path:
                out["file_lines"].append(rest)
                out["files"][path] = int(size)
        elif word in _HOST_STATE_KINDS:
            host_state.append(line)
    if markers:
        paths = parse_host_state(host_state)["paths"]
        out["markers"] = sorted(name for name, path in markers.items() if paths.get(path) is not None)
    if objects:
        out.update(configfs_objects(lines))
    return out


def read_backing(lines):
    """The backing tasks' lines (``created|would-create|exists BYTES PATH`` per file,
    ``size BYTES PATH`` per block device) -> {sizes {path: bytes}, created [path],
    would_create [path]}. A later line for the same path wins."""
    out = {"sizes": {}, "created": [], "would_create": []}
    for line in lines or []:
        fields = line.rstrip("\r").split(" ", 2)
        if len(fields) != 3 or not fields[1].isdigit():
            continue
        word, size, path = fields
        if word not in ("created", "would-create", "exists", "size"):
            continue
        out["sizes"][path] = int(size)
        if word == "created":
            out["created"].append(path)
        elif word == "would-create":
            out["would_create"].append(path)
    return out
