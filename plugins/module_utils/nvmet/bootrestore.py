# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The boot restore, and the clear at shutdown: best effort, never half up, never silent
(standard library only).

At boot one bad object must not keep everything else down, and nothing may be dropped
without a word. :func:`restore_best_effort` loads the kernel modules the file needs,
then restores object by object (hosts, subsystems, ports). What it cannot restore is
skipped and reported with the reason: a namespace whose device or file is missing or
that has none, or whose file is not the one the save file recorded (backing.py), a subsystem whose name is not an NQN, a host whose key is masked, a
port whose transport module does not load, an object the kernel refused. A subsystem
that failed part way is not linked to any port, so it is never exported half made.
Content of the file this restorer does not apply at all (passthru, reservations
and unknown keys) is listed as not restored. nvmetcli's top-level attribute group
``discovery`` ({"nqn": ...}, the target's discovery NQN) is restored last.
:func:`clear_document` is the unit's stop: it takes down what the file lists.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import backing
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan, simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import DISCOVERY_NQN, TRANSPORT_MODULES, NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.discovery import plan_discovery_nqn, validate_discovery_nqn
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import plan_host, plan_port, plan_removal, plan_subsystem
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import from_savefile, refuse_masked_host, saved_device_path
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import (
    module_loaded,
    normalize_host,
    normalize_port,
    normalize_subsystem,
    validate_nqn,
)

_KEYS = {
    "top": ("hosts", "ports", "subsystems", "discovery"),
    "discovery": ("nqn",),
    "host": ("nqn", "dhchap"),
    "subsystem": ("nqn", "attr", "allowed_hosts", "namespaces", "passthru"),
    "namespace": ("nsid", "enable", "device", "ana", "ana_grpid", "resv", "buffered_io", backing.IDENTITY_KEY),
    "device": ("path", "uuid", "nguid"),
    "port": ("portid", "addr", "param", "subsystems", "referrals", "ana_groups"),
}


def modprobe(name):
    """Load a kernel module. None on success, else what modprobe said."""
    exe = shutil.which("modprobe") or "/sbin/modprobe"
    try:
        proc = subprocess.run([exe, name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120, check=False,
                              env=dict(os.environ, LC_ALL="C"))
    except (OSError, subprocess.SubprocessError) as exc:
        return "%s %s: %s" % (exe, name, exc)
    if proc.returncode:
        return proc.stderr.decode("utf-8", "replace").strip() or "%s %s exited %d" % (exe, name, proc.returncode)
    return None


def _extra_keys(entry, kind, where, out):
    for key in sorted(set(entry) - set(_KEYS[kind])):
        out.append({"object": "%s%s" % (where, key), "reason": "%r is not part of the save-file schema this restorer "
                    "applies; it is left as it is on the target" % key})


def unsupported_content(doc):
    """What the document holds that this restorer does not apply, as [{object, reason}].

    Defaults nvmetcli writes for every object (a disabled passthru without a device,
    its path empty or "(null)" as the kernel prints it; resv enable 0) lose nothing and
    are not listed.
    """
    out = []
    _extra_keys(doc, "top", "", out)
    if isinstance(doc.get("discovery"), dict):
        _extra_keys(doc["discovery"], "discovery", "discovery/", out)
    for h in doc.get("hosts") or []:
        _extra_keys(h, "host", "hosts/%s/" % h.get("nqn"), out)
    for s in doc.get("subsystems") or []:
        base = "subsystems/%s/" % s.get("nqn")
        _extra_keys(s, "subsystem", base, out)
        for pt in s.get("passthru") or []:
            if str(pt.get("enable", 0)) not in ("0", "") or saved_device_path(pt.get("device")):
                out.append({"object": base + "passthru", "reason": "passthru subsystems (device %s) are not restored by "
                            "this restorer; restore them with nvmetcli" % saved_device_path(pt.get("device"))})
        for ns in s.get("namespaces") or []:
            nbase = "%snamespaces/%s/" % (base, ns.get("nsid"))
            _extra_keys(ns, "namespace", nbase, out)
            _extra_keys(ns.get("device") or {}, "device", nbase + "device_", out)
            if str((ns.get("resv") or {}).get("enable", "0")) != "0":
                out.append({"object": nbase + "resv", "reason": "persistent reservations (resv_enable=1) are not "
                            "restored; the namespace is restored without them"})
    for p in doc.get("ports") or []:
        base = "ports/%s/" % p.get("portid")
        _extra_keys(p, "port", base, out)
    return out


class _Run(object):
    """One restore: the state as it stands, and what was done or skipped."""

    def __init__(self, tree, check, force, allow_reconfigure):
        self.tree, self.check, self.force, self.allow_reconfigure = tree, check, force, allow_reconfigure
        self.state = tree.read()
        self.conns = tree.connections(self.state)
        self.applied, self.skipped = [], []

    def skip(self, obj, reason):
        self.skipped.append({"object": obj, "reason": reason})

    def attempt(self, obj, plan):
        """Plan one object and apply it; on refusal skip it (and re-read what is there)."""
        try:
            ops = plan(self.state)
            if not self.check:
                apply_plan(self.tree, ops)
        except NvmetError as exc:
            self.applied.extend(exc.applied)
            self.skip(obj, exc.msg)
            if exc.applied:
                self.state = self.tree.read()
            return False
        self.applied.extend(op.text() for op in ops)
        self.state = simulate(self.state, ops)
        return True


def _namespaces(run, spec, claimed, saved_files):
    """Keep the namespaces that can be enabled; skip and report the others.

    ``saved_files``: the identities the save file records (backing.py); a file that is
    not the one saved is not exported (a blank one made in place of a deleted image
    would show the initiators an empty disk).
    """
    base = "subsystems/%s/namespaces/" % spec["nqn"]
    kept = []
    for ns in spec["namespaces"]:
        obj = "%s%s" % (base, ns.get("nsid"))
        path = ns.get("device_path")
        if not path:
            run.skip(obj, "it has no device (device_path is empty%s)" % ("" if ns.get("enabled") else ", it is disabled"))
            continue
        if not os.path.exists(path):
            run.skip(obj, "its device or file %s does not exist at restore time" % path)
            continue
        saved = backing.saved_for(saved_files, spec["nqn"], ns.get("nsid"), path) if ns.get("enabled") else None
        how = backing.mismatch(saved, backing.file_identity(path)) if saved else None
        if how:
            run.skip(obj, "%s is not the file that was saved (%s): it was deleted, replaced or resized after the "
                     "save, and exporting it could show the initiators a blank or different disk. Check it; to export "
                     "it anyway, run the nvmeof_target role with nvmeof_target_force (or nvmet_target with force)"
                     % (path, how))
            continue
        other = claimed.get(os.path.realpath(path))
        if other and other != obj:
            run.skip(obj, "%s is already exported by %s; two namespaces on one device are two uncoordinated writers"
                     % (path, other))
            continue
        claimed[os.path.realpath(path)] = obj
        kept.append(ns)
    return kept


def _claimed_paths(state):
    out = {}
    for nqn, sub in state["subsystems"].items():
        for nsid, ns in sub["namespaces"].items():
            if ns["device_path"]:
                out[os.path.realpath(ns["device_path"])] = "subsystems/%s/namespaces/%d" % (nqn, nsid)
    return out


def restore_best_effort(doc, tree, load_module=None, check=False, force=False, allow_reconfigure=False):
    """Restore what can be restored; return {status, applied, skipped, not_restored}.

    ``status`` is "complete" when nothing was skipped or left out, else "partial".
    Raises NvmetError only when nothing can be restored at all (not a document, nvmet
    not loadable), before anything changed.
    """
    if not isinstance(doc, dict):
        raise NvmetError("save file: the top level must be a JSON object with hosts, ports, subsystems")
    load = load_module or modprobe
    not_restored = unsupported_content(doc)
    specs = from_savefile(doc)
    needed = ["nvmet"]
    for port in specs["ports"]:
        module = TRANSPORT_MODULES.get(port.get("trtype"))
        if module and module not in needed:
            needed.append(module)
    module_errors = {}
    for name in needed:
        if check:
            # Nothing is loaded in check mode: a module that is not there is only reported.
            if not module_loaded(name, tree.sysfs_root):
                module_errors[name] = "not loaded (check mode loads nothing)"
            continue
        err = load(name)
        if not module_loaded(name, tree.sysfs_root):
            module_errors[name] = err or "%s did not appear under %s/module" % (name, tree.sysfs_root)
    if not os.path.isdir(tree.nvmet):
        raise NvmetError("%s does not exist: the nvmet kernel module did not load (%s); nothing was restored"
                         % (tree.nvmet, module_errors.get("nvmet", "is configfs mounted?")))
    run = _Run(tree, check, force, allow_reconfigure)

    refused_hosts = set()
    for raw in specs["hosts"]:
        obj = "hosts/%s" % raw.get("hostnqn")
        why = refuse_masked_host(run.state, raw)
        if why:
            run.skip(obj, why)
            refused_hosts.add(raw.get("hostnqn"))
            continue
        if not run.attempt(obj, lambda st, raw=raw: plan_host(st, normalize_host(raw), run.conns, force)):
            refused_hosts.add(raw.get("hostnqn"))

    failed_subs = set()
    claimed = _claimed_paths(run.state)
    saved_files = backing.saved_identities(doc)
    for raw in specs["subsystems"]:
        obj = "subsystems/%s" % raw.get("nqn")
        try:
            validate_nqn(raw.get("nqn"))
        except NvmetError as exc:
            run.skip(obj, exc.msg)
            failed_subs.add(raw.get("nqn"))
            continue
        spec = dict(raw)
        spec["namespaces"] = _namespaces(run, raw, claimed, saved_files)
        if len(spec["namespaces"]) < len(raw["namespaces"]):
            # Leave a live namespace the file lists but that cannot be restored alone.
            spec["purge_namespaces"] = False
        spec["allowed_hosts"] = []
        for host in raw["allowed_hosts"]:
            if host in refused_hosts:
                run.skip("%s/allowed_hosts/%s" % (obj, host), "host %s was not restored (see hosts/%s): the "
                         "subsystem does not allow it" % (host, host))
            else:
                spec["allowed_hosts"].append(host)
        if not run.attempt(obj, lambda st, spec=spec: plan_subsystem(st, normalize_subsystem(spec), run.conns, force)):
            failed_subs.add(raw.get("nqn"))

    for raw in specs["ports"]:
        obj = "ports/%s" % raw.get("port_id")
        module = TRANSPORT_MODULES.get(raw.get("trtype"))
        if module in module_errors:
            run.skip(obj, "trtype %s needs the kernel module %s, which did not load: %s"
                     % (raw.get("trtype"), module, module_errors[module]))
            continue
        spec = dict(raw, subsystems=[])
        for nqn in raw["subsystems"]:
            if nqn in failed_subs:
                run.skip("%s/subsystems/%s" % (obj, nqn), "subsystem %s was not restored whole (see subsystems/%s): "
                         "it is not exported" % (nqn, nqn))
            else:
                spec["subsystems"].append(nqn)
        run.attempt(obj, lambda st, spec=spec: plan_port(st, normalize_port(spec, tree.sysfs_root), run.conns, force,
                                                         allow_reconfigure, missing_ok=check))

    # nvmetcli writes the discovery NQN in every save on kernels that have it; the
    # default on a kernel without the attribute loses nothing.
    disc = (doc.get("discovery") if isinstance(doc.get("discovery"), dict) else {}).get("nqn")
    if disc is not None and not (disc == DISCOVERY_NQN and run.state.get("discovery_nqn") is None):
        run.attempt("discovery/nqn", lambda st: plan_discovery_nqn(st, validate_discovery_nqn(disc)))

    status = "partial" if run.skipped or not_restored else "complete"
    return {"status": status, "applied": run.applied, "skipped": run.skipped, "not_restored": not_restored}


def clear_document(doc, root="/sys/kernel/config", check=False, tree=None):
    """Remove what an nvmetcli save-file document lists: ports, then subsystems, then hosts.

    The boot unit's stop action: it runs at shutdown while the network is still up, so
    no initiator write is acknowledged after the final sync of the backing files'
    file system (an acknowledged write into a sparse file is only durable once the
    file system commits it). Connected hosts do not stop it (they reconnect when the
    target is back). Objects the document does not list are left alone. Returns the
    operation texts; [] when nvmet is not loaded.
    """
    tree = tree or ConfigfsTree(root)
    if not os.path.isdir(tree.nvmet):
        return []
    state = tree.read()
    specs = from_savefile(doc)
    ops = plan_removal(state, tree.connections(state), subsystems=[raw["nqn"] for raw in specs["subsystems"]],
                       ports=[raw["port_id"] for raw in specs["ports"]],
                       hosts=[raw["hostnqn"] for raw in specs["hosts"]], force=True, ports_first=True)
    if check:
        return [op.text() for op in ops]
    return apply_plan(tree, ops)
