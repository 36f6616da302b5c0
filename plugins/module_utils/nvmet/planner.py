# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure planners: current state + normalized spec -> ordered list of Op.

They read nothing from the host; live connections come in as ``conns``
(ConfigfsTree.connections). ``plan_host``, ``plan_subsystem`` and ``plan_port`` plan one
object each; every plan of several objects (a whole document, target.py; a removal; the
boot restore's object by object) is made of them, in order, by :func:`plan_in_order`.
"""

from __future__ import annotations

import ipaddress

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.canonical import ANA_ACCESSIBLE, effective_inline_data_size
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import (
    HOST_FIELDS,
    HOST_KEY_FIELDS,
    IDENTITY_ATTRS,
    NAMESPACE_DISABLED_ONLY,
    NAMESPACE_FILES,
    PORT_WRITE_ORDER,
    NvmetError,
    Op,
    _bool_str,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.discovery import plan_discovery_nqn, plan_referrals


def _conn_count(conns, key, value):
    """Live controller count, or None when it cannot be known."""
    if conns is None:
        return None
    return conns[key].get(value, 0)


def _require_quiet(count, force, what, how):
    if force:
        return
    if count is None:
        raise NvmetError(
            "%s may have connected hosts and this host cannot tell (no nvmet debugfs, and no socket/RDMA view "
            "of the port); set force: true to %s anyway" % (what, how))
    if count:
        raise NvmetError("%s has %d live connection(s); set force: true to %s (this disconnects them)" % (what, count, how))


# Writing these makes the kernel delete every controller of the subsystem (hosts reconnect).
RECONNECT_ATTRS = ("qid_max",)


def _attribute_order(wanted, current):
    """Attribute names in write order: sorted, except cntlid_min/cntlid_max by direction.

    The kernel refuses cntlid_min above the current cntlid_max and cntlid_max below the
    current cntlid_min, so raising both writes max first and lowering both min first.
    """
    names = sorted(wanted)
    if "cntlid_min" in wanted and "cntlid_max" in wanted:
        try:
            raising = int(wanted["cntlid_min"]) > int(current.get("cntlid_max", 0xFFEF))
        except ValueError:
            raising = False
        first, second = ("cntlid_max", "cntlid_min") if raising else ("cntlid_min", "cntlid_max")
        names.remove(first)
        names.insert(names.index(second), first)
    return names


def _require_accessible_group(state, ports, nqn, nsid, grpid, force):
    """Moving an enabled, exposed namespace into an ANA group that is not optimized or
    non-optimized on every port exposing it cuts its I/O there: only with force.
    A group a port does not define is inaccessible on that port."""
    if force:
        return
    bad = []
    for pid in ports:
        grp_state = state["ports"][pid]["ana_groups"].get(grpid)
        if grp_state not in ANA_ACCESSIBLE:
            bad.append("port %d (%s)" % (pid, grp_state or "group not defined there, so inaccessible"))
    if bad:
        raise NvmetError(
            "namespace %d of subsystem %s: moving it to ANA group %d cuts its I/O on %s; create the group with "
            "state optimized or non-optimized on those ports first (aiinfra.fabric.nvmet_port ana_groups), or set "
            "force: true" % (nsid, nqn, grpid, ", ".join(bad)))


def _exposing_ports(state, nqn):
    return sorted(pid for pid, p in state["ports"].items() if nqn in p["subsystems"])


def plan_host(state, spec, conns=None, force=False):
    """Plan hosts/<hostnqn>. Keys are compared in memory and written masked."""
    nqn = spec["hostnqn"]
    rel = "hosts/" + nqn
    cur = state["hosts"].get(nqn)
    ops = []
    if spec.get("state", "present") == "absent":
        if cur is None:
            return ops
        users = sorted(n for n, s in state["subsystems"].items() if nqn in s["allowed_hosts"])
        if users and not force:
            raise NvmetError("host %s is in allowed_hosts of subsystem(s) %s; remove it there first or set force: true "
                             "to unlink it from them" % (nqn, ", ".join(users)))
        for sub in users:
            if _exposing_ports(state, sub):
                _require_quiet(_conn_count(conns, "by_subsystem", sub), force, "subsystem %s" % sub,
                               "remove host %s from it" % nqn)
            ops.append(Op("unlink", "subsystems/%s/allowed_hosts/%s" % (sub, nqn)))
        ops.append(Op("rmdir", rel))
        return ops
    if cur is None:
        ops.append(Op("mkdir", rel))
        cur = {}
    # In HOST_FIELDS's order: keys before hash, as writing a transformed key can set the hash.
    for field in HOST_FIELDS:
        want = spec.get(field)
        if want is not None and cur.get(field) != want:
            ops.append(Op("write", "%s/%s" % (rel, field), want, secret=field in HOST_KEY_FIELDS))
    return ops


def _plan_namespace_removal(sub_rel, ns):
    ops = []
    if ns["enabled"]:
        ops.append(Op("write", "%s/namespaces/%d/enable" % (sub_rel, ns["nsid"]), "0"))
    ops.append(Op("rmdir", "%s/namespaces/%d" % (sub_rel, ns["nsid"])))
    return ops


def plan_subsystem(state, spec, conns=None, force=False):
    """Plan subsystems/<nqn> (spec from normalize_subsystem). Pure: reads nothing."""
    nqn = spec["nqn"]
    rel = "subsystems/" + nqn
    cur = state["subsystems"].get(nqn)
    ports = _exposing_ports(state, nqn)
    live = _conn_count(conns, "by_subsystem", nqn) if ports else 0
    ops = []
    if spec.get("state", "present") == "absent":
        if cur is None:
            return ops
        _require_quiet(live, force, "subsystem %s" % nqn, "remove it")
        for pid in ports:
            ops.append(Op("unlink", "ports/%d/subsystems/%s" % (pid, nqn)))
        for nsid in sorted(cur["namespaces"], reverse=True):
            ops.extend(_plan_namespace_removal(rel, cur["namespaces"][nsid]))
        for host in reversed(cur["allowed_hosts"]):
            ops.append(Op("unlink", "%s/allowed_hosts/%s" % (rel, host)))
        ops.append(Op("rmdir", rel))
        return ops

    new = cur is None
    if new:
        ops.append(Op("mkdir", rel))
        cur = {"nqn": nqn, "allow_any_host": False, "allowed_hosts": [], "namespaces": {}, "attributes": {},
               "passthru": None}
    elif cur.get("passthru") and spec.get("namespaces"):
        raise NvmetError("subsystem %s is a passthru subsystem (controller %s): changing it is not supported by this "
                         "module; its namespaces come from the controller" % (nqn, cur["passthru"]["device_path"]))
    # Identity first: the kernel refuses these once a host has identified the
    # subsystem, and failing before anything else keeps the run all-or-nothing.
    for name in IDENTITY_ATTRS:
        want = spec.get(name)
        if want is not None and cur["attributes"].get(name) != str(want):
            ops.append(Op("write", "%s/attr_%s" % (rel, name), str(want)))
    for name in _attribute_order(spec["attributes"], cur["attributes"]):
        want = spec["attributes"][name]
        if not new and name not in cur["attributes"]:
            raise NvmetError("attributes: this kernel has no attr_%s for subsystem %s (it has: %s)"
                             % (name, nqn, ", ".join(sorted(cur["attributes"]))))
        if cur["attributes"].get(name) != want:
            if name in RECONNECT_ATTRS and ports:
                _require_quiet(live, force, "subsystem %s" % nqn,
                               "change %s (the kernel disconnects every controller of the subsystem)" % name)
            ops.append(Op("write", "%s/attr_%s" % (rel, name), want))

    # Hosts. allow_any_host=1 and allowed_hosts links exclude each other in the
    # kernel, so the order depends on the direction of the change.
    want_any = bool(spec.get("allow_any_host"))
    want_hosts = list(spec.get("allowed_hosts") or [])
    removed_hosts = [h for h in cur["allowed_hosts"] if h not in want_hosts and (want_any or spec.get("purge_allowed_hosts"))]
    if removed_hosts and ports:
        _require_quiet(live, force, "subsystem %s" % nqn, "remove allowed host(s) %s" % ", ".join(removed_hosts))
    if cur["allow_any_host"] and not want_any:
        if ports:
            _require_quiet(live, force, "subsystem %s" % nqn, "turn allow_any_host off")
        ops.append(Op("write", "%s/attr_allow_any_host" % rel, "0"))
    for host in removed_hosts:
        ops.append(Op("unlink", "%s/allowed_hosts/%s" % (rel, host)))
    for host in want_hosts:
        if host not in cur["allowed_hosts"]:
            if host not in state["hosts"] and Op("mkdir", "hosts/" + host) not in ops:
                ops.append(Op("mkdir", "hosts/" + host))
            ops.append(Op("link", "%s/allowed_hosts/%s" % (rel, host), target="hosts/" + host))
    if want_any and not cur["allow_any_host"]:
        ops.append(Op("write", "%s/attr_allow_any_host" % rel, "1"))

    # Namespaces: removals, then changes, then new ones.
    wanted = dict((ns["nsid"], ns) for ns in spec.get("namespaces") or [])
    if spec.get("purge_namespaces"):
        extra = sorted((n for n in cur["namespaces"] if n not in wanted), reverse=True)
        if extra and ports:
            _require_quiet(live, force, "subsystem %s" % nqn, "remove namespace(s) %s" % ", ".join(map(str, extra)))
        for nsid in extra:
            ops.extend(_plan_namespace_removal(rel, cur["namespaces"][nsid]))
    for nsid in sorted(wanted):
        want = wanted[nsid]
        ns_rel = "%s/namespaces/%d" % (rel, nsid)
        have = cur["namespaces"].get(nsid)
        if have is None:
            ops.append(Op("mkdir", ns_rel))
            have = {"nsid": nsid, "device_path": None, "enabled": False, "uuid": None, "nguid": None,
                    "ana_grpid": 1, "buffered_io": False}
        offline = []
        for field in NAMESPACE_DISABLED_ONLY:
            value = want.get(field)
            if value is not None and have.get(field) != value:
                offline.append(Op("write", "%s/%s" % (ns_rel, NAMESPACE_FILES[field]),
                                  _bool_str(value) if isinstance(value, bool) else value))
        online = []
        if want.get("ana_grpid") is not None and have["ana_grpid"] != want["ana_grpid"]:
            if have["enabled"] and ports:
                _require_accessible_group(state, ports, nqn, nsid, want["ana_grpid"], force)
            online.append(Op("write", "%s/ana_grpid" % ns_rel, str(want["ana_grpid"])))
        if offline and have["enabled"]:
            if ports:
                _require_quiet(live, force, "subsystem %s" % nqn,
                               "change %s of namespace %d (it is disabled meanwhile)"
                               % (", ".join(o.path.rsplit("/", 1)[1] for o in offline), nsid))
            ops.append(Op("write", "%s/enable" % ns_rel, "0"))
            ops.extend(offline)
            ops.extend(online)
            if want["enabled"]:
                ops.append(Op("write", "%s/enable" % ns_rel, "1"))
            continue
        ops.extend(offline)
        ops.extend(online)
        if want["enabled"] != have["enabled"]:
            if not want["enabled"] and ports:
                _require_quiet(live, force, "subsystem %s" % nqn, "disable namespace %d" % nsid)
            ops.append(Op("write", "%s/enable" % ns_rel, _bool_str(want["enabled"])))
    return ops


def _same_address(a, b):
    """Whether two ports' transport addresses are one: same transport, service id and
    address (IP addresses compared as addresses, 10.0.0.1 and ::ffff:10.0.0.1 apart)."""
    if not a.get("traddr") or not b.get("traddr") or a.get("trtype") != b.get("trtype"):
        return False
    if str(a.get("trsvcid") or "") != str(b.get("trsvcid") or ""):
        return False
    try:
        return ipaddress.ip_address(a["traddr"]) == ipaddress.ip_address(b["traddr"])
    except ValueError:
        return str(a["traddr"]).lower() == str(b["traddr"]).lower()


def _refuse_taken_address(state, pid, addr):
    """Refuse a port whose transport address another port already has: the kernel listens
    once per address, so the second port could never be enabled (its first subsystem link
    fails with EADDRINUSE while the other listens), or would take it from the other."""
    for other in sorted(state["ports"]):
        if other != pid and _same_address(addr, state["ports"][other]):
            raise NvmetError(
                "port %d: %s %s service %s is already the address of port %d; the kernel listens once per "
                "transport address, so port %d could never be enabled beside it. Use another traddr or trsvcid, "
                "or change or remove port %d first"
                % (pid, addr["trtype"], addr["traddr"], addr.get("trsvcid") or "-", other, pid, other))


def plan_port(state, spec, conns=None, force=False, allow_reconfigure=False, missing_ok=False):
    """Plan ports/<port_id> (spec from normalize_port). Pure: reads nothing.

    ``missing_ok`` plans links to subsystems that do not exist yet (check mode,
    where an earlier task would have created them) instead of failing.
    """
    pid = spec["port_id"]
    rel = "ports/%d" % pid
    cur = state["ports"].get(pid)
    ops = []
    if spec.get("state", "present") == "absent":
        if cur is None:
            return ops
        if cur["subsystems"]:
            _require_quiet(_conn_count(conns, "by_port", pid), force, "port %d" % pid, "remove it")
        for nqn in reversed(cur["subsystems"]):
            ops.append(Op("unlink", "%s/subsystems/%s" % (rel, nqn)))
        for name in reversed(cur["referrals"]):
            ops.append(Op("rmdir", "%s/referrals/%s" % (rel, name)))
        for grp in sorted(cur["ana_groups"], reverse=True):
            if grp != 1:
                ops.append(Op("rmdir", "%s/ana_groups/%d" % (rel, grp)))
        ops.append(Op("rmdir", rel))
        return ops

    ops.extend(plan_discovery_nqn(state, spec.get("discovery_nqn")))
    for nqn in spec.get("subsystems") or []:
        if nqn not in state["subsystems"] and not missing_ok:
            raise NvmetError("subsystems: %s does not exist under %s; create it first (aiinfra.fabric.nvmet_subsystem)"
                             % (nqn, "subsystems/"))
    if cur is None:
        ops.append(Op("mkdir", rel))
        cur = {"port_id": pid, "adrfam": None, "traddr": None, "trsvcid": None, "trtype": None,
               "treq": None, "tsas": None, "inline_data_size": None, "params": {}, "subsystems": [],
               "referrals": {}, "ana_groups": {1: "optimized"}}
    settings = []
    for field in PORT_WRITE_ORDER:
        want = spec.get(field)
        if want is not None and cur.get(field) != str(want):
            settings.append(Op("write", "%s/addr_%s" % (rel, field), str(want),
                               undo=_undo_write("%s/addr_%s" % (rel, field), cur.get(field))))
    # Compared as an enabled port shows it: the kernel replaces -1 by the transport's
    # default when the port is enabled, and keeps that value after it is disabled.
    trtype = spec.get("trtype") or cur.get("trtype")
    if spec.get("inline_data_size") is not None and (
            cur.get("inline_data_size") is None
            or effective_inline_data_size(cur["inline_data_size"], trtype)
            != effective_inline_data_size(spec["inline_data_size"], trtype)):
        settings.append(Op("write", "%s/param_inline_data_size" % rel, str(spec["inline_data_size"]),
                           undo=_undo_write(rel + "/param_inline_data_size", cur.get("inline_data_size"))))
    for name, want in sorted((spec.get("params") or {}).items()):
        if pid in state["ports"] and name not in cur["params"]:
            raise NvmetError("params: this kernel has no param_%s for port %d (it has: %s)"
                             % (name, pid, ", ".join(sorted(cur["params"]))))
        if cur["params"].get(name) != want:
            settings.append(Op("write", "%s/param_%s" % (rel, name), want,
                               undo=_undo_write("%s/param_%s" % (rel, name), cur["params"].get(name))))

    linked = list(cur["subsystems"])
    want_links = spec.get("subsystems")
    if want_links is None:
        want_links = linked
    if pid not in state["ports"] or settings or [n for n in want_links if n not in linked]:
        _refuse_taken_address(state, pid, dict((f, spec.get(f) if spec.get(f) is not None else cur.get(f))
                                               for f in ("trtype", "traddr", "trsvcid")))
    if settings and linked:
        changed = ", ".join(o.path.rsplit("/", 1)[1] for o in settings)
        if not allow_reconfigure:
            raise NvmetError(
                "port %d: %s differ, and the kernel only changes addr_*/param_* while no subsystem is linked; "
                "this needs unlinking %s, which disconnects their hosts; set allow_reconfigure: true to do that"
                % (pid, changed, ", ".join(linked)))
        _require_quiet(_conn_count(conns, "by_port", pid), force, "port %d" % pid, "reconfigure it (%s)" % changed)
        for nqn in reversed(linked):
            ops.append(Op("unlink", "%s/subsystems/%s" % (rel, nqn),
                          undo=Op("link", "%s/subsystems/%s" % (rel, nqn), target="subsystems/" + nqn)))
        linked = []
    else:
        gone = [n for n in linked if n not in want_links]
        if gone:
            _require_quiet(_conn_count(conns, "by_port", pid), force, "port %d" % pid,
                           "unlink %s from it" % ", ".join(gone))
        for nqn in gone:
            ops.append(Op("unlink", "%s/subsystems/%s" % (rel, nqn)))
            linked.remove(nqn)
    ops.extend(settings)
    ops.extend(_plan_ana_groups(state, spec, cur, rel, force))
    ops.extend(plan_referrals(spec, cur, rel))
    for nqn in want_links:
        if nqn not in linked:
            ops.append(Op("link", "%s/subsystems/%s" % (rel, nqn), target="subsystems/" + nqn))
    return ops


def _undo_write(path, old):
    """The write that puts back ``old`` (None: the kernel shows nothing to put back)."""
    if old is None or old == "":
        return None
    return Op("write", path, str(old))


def _plan_ana_groups(state, spec, cur, rel, force):
    """ANA groups of a port: create the listed ones, set their states, and with
    purge_ana_groups remove the others (group 1 is the kernel's and stays)."""
    ops = []
    wanted = dict((g["grpid"], g.get("state")) for g in spec.get("ana_groups") or [])
    if spec.get("purge_ana_groups"):
        for grp in sorted(cur["ana_groups"], reverse=True):
            if grp == 1 or grp in wanted:
                continue
            users = ["%s namespace %d" % (nqn, nsid) for nqn in cur["subsystems"] if nqn in state["subsystems"]
                     for nsid, ns in sorted(state["subsystems"][nqn]["namespaces"].items())
                     if ns["enabled"] and ns["ana_grpid"] == grp]
            if users and not force:
                raise NvmetError("port %d: ANA group %d is used by %s; removing it makes them inaccessible on this "
                                 "port; move them to another group first or set force: true"
                                 % (spec["port_id"], grp, ", ".join(users)))
            ops.append(Op("rmdir", "%s/ana_groups/%d" % (rel, grp)))
    for grp in sorted(wanted):
        have = cur["ana_groups"].get(grp)
        if have is None:
            ops.append(Op("mkdir", "%s/ana_groups/%d" % (rel, grp)))
            have = "inaccessible"  # the kernel's state for a group it has not been told about
        if wanted[grp] is not None and wanted[grp] != have:
            ops.append(Op("write", "%s/ana_groups/%d/ana_state" % (rel, grp), wanted[grp]))
    return ops


# --------------------------------------------------------------------------- several objects


def plan_in_order(state, steps):
    """Plan each step (state -> ops) against the state the steps before it leave: a later
    object's plan sees what an earlier one creates or removes."""
    ops = []
    for step in steps:
        part = step(state)
        ops.extend(part)
        state = simulate(state, part)
    return ops


def plan_removal(state, conns, subsystems=(), ports=(), hosts=(), force=False, ports_first=False):
    """Plan removing exactly these objects, with the per-object guards (live connections
    need force; a host that a kept subsystem still allows is refused unless force).
    Objects configfs does not have are skipped.

    Subsystems (their namespaces, allowed-host links and port links), then ports, then
    hosts (nvmet_target's ``remove``); ``ports_first``: ports, then subsystems, then hosts
    (the boot unit's stop, ``nvmet-restore clear``).
    """
    subs = [lambda st, nqn=nqn: plan_subsystem(st, {"nqn": nqn, "state": "absent"}, conns, force)
            for nqn in subsystems or []]
    prts = [lambda st, pid=pid: plan_port(st, {"port_id": int(pid), "state": "absent"}, conns, force)
            for pid in ports or []]
    hsts = [lambda st, nqn=nqn: plan_host(st, {"hostnqn": nqn, "state": "absent"}, conns, force)
            for nqn in hosts or []]
    return plan_in_order(state, (prts + subs if ports_first else subs + prts) + hsts)
