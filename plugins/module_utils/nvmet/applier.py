# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Running a plan: against configfs (apply_plan, with kernel errors explained) or
against a copy of the state (simulate, check mode's "after").
"""

from __future__ import annotations

import copy
import errno
import os

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.canonical import effective_inline_data_size
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import (
    HOST_DEFAULTS,
    IDENTITY_ATTRS,
    NAMESPACE_FILES,
    NvmetError,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.discovery import REFERRAL_FIELDS


def explain(op, exc):
    """A sentence for a failed configfs operation: which object, attribute, and why."""
    parts = op.path.split("/")
    code = exc.errno
    name = parts[-1]
    obj = "/".join(parts[:-1]) if op.kind in ("write", "link", "unlink") else op.path
    why = ""
    if op.kind == "write":
        if parts[0] == "subsystems" and "namespaces" in parts:
            if name in ("device_path", "device_uuid", "device_nguid", "buffered_io") and code in (errno.EBUSY, errno.EINVAL):
                why = "this can only change while the namespace is disabled (enable=0)"
                if code == errno.EINVAL and name != "buffered_io":
                    why = "the kernel rejected the value"
            elif name == "enable":
                why = ("the kernel could not open the namespace's device_path (missing, not a block device or regular "
                       "file, or already exported by another namespace)")
            elif name == "ana_grpid":
                why = "the ANA group does not exist on any port (create ports/<id>/ana_groups/<grpid>) or is out of range"
        elif parts[0] == "subsystems" and name.startswith("attr_"):
            if (name[5:] in IDENTITY_ATTRS or name == "attr_ieee_oui") and code == errno.EINVAL:
                why = ("the kernel freezes serial/model/version/firmware/ieee_oui once a host has identified the "
                       "subsystem, or the value is invalid; to change it, remove and recreate the subsystem")
            elif name == "attr_allow_any_host" and code == errno.EINVAL:
                why = "allowed_hosts is not empty; allow_any_host and allowed_hosts exclude each other"
            elif name in ("attr_cntlid_min", "attr_cntlid_max") and code == errno.EINVAL:
                why = "cntlid_min must be <= cntlid_max and both in 1..65519"
        elif parts[0] == "ports":
            if code == errno.EACCES:
                why = "the port is enabled (a subsystem is linked); addr_*/param_* change only on an unlinked port"
            elif code == errno.EINVAL:
                why = "the kernel rejected the value for this transport"
        elif parts[0] == "hosts" and code == errno.EINVAL:
            why = "the kernel rejected the value (malformed key, or hash/DH group not available)"
    elif op.kind == "link":
        if parts[0] == "ports":
            why = ("the kernel could not enable the port: is the transport module loaded, does the address exist on "
                   "this host, and is it free?")
        elif "allowed_hosts" in parts and code == errno.EINVAL:
            why = "allow_any_host is set; allow_any_host and allowed_hosts exclude each other"
    elif op.kind == "rmdir" and code in (errno.EBUSY, errno.ENOTEMPTY):
        why = "it still has children or is the target of a link (allowed_hosts / port subsystems)"
    elif op.kind == "mkdir" and code == errno.EEXIST:
        why = "it already exists (changed by someone else meanwhile?)"
    if op.kind == "write":
        action = "write %s = %s on %s" % (name, "(value hidden)" if op.secret else repr(str(op.value)), obj)
    else:
        action = {"link": "link %s into %s" % (name, obj), "unlink": "unlink %s from %s" % (name, obj),
                  "mkdir": "create %s" % obj, "rmdir": "remove %s" % obj}[op.kind]
    reason = os.strerror(code) if code else str(exc)
    msg = "nvmet: cannot %s: %s (%s)" % (action, reason, errno.errorcode.get(code, code))
    if why:
        msg += ": " + why
    return msg


def apply_plan(tree, ops):
    """Run ops in order. On a kernel error raise NvmetError; ``applied`` lists what was done.

    When operations applied before the failure carry an ``undo`` (a port reconfigure:
    its unlinked subsystems and overwritten settings), those undos run newest first and
    the message says what was put back, or exactly what could not be.
    """
    done = []
    for i, op in enumerate(ops):
        try:
            tree.do(op)
        except OSError as exc:
            msg = explain(op, exc)
            undos = [o.undo for o in reversed(ops[:i]) if o.undo is not None]
            if undos:
                msg += "; " + _roll_back(tree, undos)
            raise NvmetError(msg, applied=done) from exc
        done.append(op.text())
    return done


def _roll_back(tree, undos):
    back = []
    for j, undo in enumerate(undos):
        try:
            tree.do(undo)
        except OSError as exc:
            left = [u.text() for u in undos[j:]]
            return ("putting back what was changed failed at '%s' (%s); put back: %s; still to put back by hand: %s"
                    % (undo.text(), os.strerror(exc.errno) if exc.errno else exc, ", ".join(back) or "nothing",
                       ", ".join(left)))
        back.append(undo.text())
    return "put back what was changed before it: " + ", ".join(back)


def simulate(state, ops):
    """Return a copy of state with ops applied as the kernel would (for check mode).

    Copy on write: the sections are copied shallowly and only the objects the ops
    touch are deep-copied, so simulating a step of a whole-document plan costs the
    size of that step, not of the tree. ``state`` itself is never changed.
    """
    if not ops:
        return state
    st = dict((k, dict(v) if isinstance(v, dict) else v) for k, v in state.items())
    copied = set()
    for op in ops:
        parts = op.path.split("/")
        top = parts[0]
        if top == "discovery_nqn":
            st["discovery_nqn"] = op.value
            continue
        key = int(parts[1]) if top == "ports" else parts[1]
        if (top, key) not in copied and key in st.get(top, {}):
            st[top][key] = copy.deepcopy(st[top][key])
        copied.add((top, key))
        if top == "hosts":
            nqn = parts[1]
            if op.kind == "mkdir":
                st["hosts"][nqn] = dict({"hostnqn": nqn}, **HOST_DEFAULTS)
            elif op.kind == "rmdir":
                st["hosts"].pop(nqn, None)
            elif op.kind == "write":
                st["hosts"][nqn][parts[2]] = op.value
        elif top == "subsystems":
            nqn = parts[1]
            if len(parts) == 2:
                if op.kind == "mkdir":
                    st["subsystems"][nqn] = {"nqn": nqn, "allow_any_host": False, "allowed_hosts": [],
                                             "namespaces": {}, "attributes": {}, "passthru": None}
                else:
                    st["subsystems"].pop(nqn, None)
                continue
            sub = st["subsystems"][nqn]
            if parts[2].startswith("attr_"):
                if parts[2] == "attr_allow_any_host":
                    sub["allow_any_host"] = op.value == "1"
                else:
                    sub["attributes"][parts[2][5:]] = op.value
            elif parts[2] == "allowed_hosts":
                if op.kind == "link":
                    sub["allowed_hosts"] = sorted(sub["allowed_hosts"] + [parts[3]])
                else:
                    sub["allowed_hosts"].remove(parts[3])
            elif parts[2] == "passthru":
                pt = dict(sub.get("passthru") or {"device_path": None, "enabled": False})
                pt["device_path" if parts[3] == "device_path" else "enabled"] = (
                    op.value if parts[3] == "device_path" else op.value == "1")
                sub["passthru"] = pt
            elif parts[2] == "namespaces":
                nsid = int(parts[3])
                if op.kind == "mkdir":
                    sub["namespaces"][nsid] = {"nsid": nsid, "device_path": None, "enabled": False, "uuid": None,
                                               "nguid": None, "ana_grpid": 1, "buffered_io": False}
                elif op.kind == "rmdir":
                    sub["namespaces"].pop(nsid, None)
                else:
                    ns = sub["namespaces"][nsid]
                    field = dict((v, k) for k, v in NAMESPACE_FILES.items())[parts[4]]
                    if field in ("enabled", "buffered_io"):
                        ns[field] = op.value == "1"
                    elif field == "ana_grpid":
                        ns[field] = int(op.value)
                    else:
                        ns[field] = op.value
        elif top == "ports":
            pid = int(parts[1])
            if len(parts) == 2:
                if op.kind == "mkdir":
                    st["ports"][pid] = {"port_id": pid, "adrfam": None, "traddr": None, "trsvcid": None,
                                        "trtype": None, "treq": "not specified", "tsas": None,
                                        "inline_data_size": -1, "params": {}, "subsystems": [], "referrals": {},
                                        "ana_groups": {1: "optimized"}}
                else:
                    st["ports"].pop(pid, None)
                continue
            port = st["ports"][pid]
            if parts[2].startswith("addr_"):
                port[parts[2][5:]] = op.value
                # The kernel gives a TLS-capable port the TLS setting "none" with its trtype.
                if parts[2] == "addr_trtype" and getattr(transports.get(op.value), "tls", False) \
                        and port.get("tsas") is None:
                    port["tsas"] = "none"
            elif parts[2] == "param_inline_data_size":
                port["inline_data_size"] = int(op.value)
            elif parts[2].startswith("param_"):
                port["params"][parts[2][6:]] = op.value
            elif parts[2] == "subsystems":
                if op.kind == "link":
                    if not port["subsystems"] and port.get("inline_data_size") is not None:
                        # The first link enables the port: the transport settles inline_data_size.
                        port["inline_data_size"] = effective_inline_data_size(port["inline_data_size"],
                                                                              port.get("trtype"))
                    port["subsystems"] = sorted(port["subsystems"] + [parts[3]])
                else:
                    port["subsystems"].remove(parts[3])
            elif parts[2] == "referrals":
                if op.kind == "mkdir":
                    # What the kernel shows for a new referral.
                    port["referrals"][parts[3]] = dict((f, None) for f in REFERRAL_FIELDS)
                    port["referrals"][parts[3]].update(treq="not specified", portid="0", enabled=False)
                elif op.kind == "rmdir":
                    port["referrals"].pop(parts[3], None)
                elif parts[4] == "enable":
                    port["referrals"][parts[3]]["enabled"] = op.value == "1"
                else:
                    port["referrals"][parts[3]][parts[4][5:]] = op.value
            elif parts[2] == "ana_groups":
                if op.kind == "mkdir":
                    port["ana_groups"][int(parts[3])] = "inaccessible"
                elif op.kind == "rmdir":
                    port["ana_groups"].pop(int(parts[3]), None)
                else:
                    port["ana_groups"][int(parts[3])] = op.value
    return st
