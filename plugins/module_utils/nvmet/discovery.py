# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the target's discovery service tells hosts: referrals on a port and the
discovery subsystem's NQN (``<configfs>/nvmet/discovery_nqn``).

A referral (``ports/<id>/referrals/<name>``) points hosts that ask this port's
discovery controller to another discovery service. Its ``addr_*`` attributes change
only while the referral is disabled (the kernel answers EACCES otherwise), so a
changed referral is disabled, rewritten and enabled again. Facts from
drivers/nvme/target/configfs.c of Linux 6.12.
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import (
    ADRFAMS,
    DISCOVERY_NQN,
    TRANSPORT_MODULES,
    TREQ_VALUES,
    NvmetError,
    Op,
)

# Written in this order: trtype first, like a port.
REFERRAL_FIELDS = ("trtype", "adrfam", "traddr", "trsvcid", "treq", "portid")
DISCOVERY_NQN_MAX = 255  # NVMF_NQN_FIELD_LEN - 1


def normalize_referrals(referrals, check_int, validate_traddr, derive_adrfam):
    """Validate nvmet_port's ``referrals`` (the helpers come from validate.py)."""
    out = []
    for i, ref in enumerate(referrals or []):
        p = "referrals[%d]" % i
        if not isinstance(ref, dict):
            raise NvmetError("%s: must be a dict with name, trtype, traddr, ..." % p)
        r = dict((k, ref.get(k)) for k in ("name",) + REFERRAL_FIELDS)
        name = r["name"]
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise NvmetError("%s.name: %r is not a directory name (non-empty, no '/')" % (p, name))
        if any(o["name"] == name for o in out):
            raise NvmetError("%s.name: %r is listed twice" % (p, name))
        if r["trtype"] not in TRANSPORT_MODULES:
            raise NvmetError("%s.trtype: %r is not one of %s" % (p, r["trtype"], ", ".join(sorted(TRANSPORT_MODULES))))
        row = transports.get(r["trtype"])
        if row.address is not None:
            if not r["traddr"]:
                raise NvmetError("%s.traddr: is required for trtype %s" % (p, r["trtype"]))
            if r["adrfam"] is None:
                r["adrfam"] = derive_adrfam(r["trtype"], r["traddr"])
            if r["adrfam"] not in ADRFAMS:
                raise NvmetError("%s.adrfam: %r is not one of %s (it cannot be derived from traddr %r)"
                                 % (p, r["adrfam"], ", ".join(ADRFAMS), r["traddr"]))
            validate_traddr(r["traddr"], r["adrfam"], p + ".traddr")
        if row.service_id is not None:
            r["trsvcid"] = str(check_int(r["trsvcid"] if r["trsvcid"] is not None else row.service_id, p + ".trsvcid",
                                         1, 65535))
        if r["treq"] is not None and r["treq"] not in TREQ_VALUES:
            raise NvmetError("%s.treq: %r is not one of %s" % (p, r["treq"], ", ".join(TREQ_VALUES)))
        if r["portid"] is not None:
            r["portid"] = str(check_int(r["portid"], p + ".portid", 0, 65535))
        r["enabled"] = True if ref.get("enabled") is None else bool(ref["enabled"])
        out.append(r)
    return out


def validate_discovery_nqn(value):
    if not isinstance(value, str) or not value:
        raise NvmetError("discovery_nqn: an NQN is required, got %r" % (value,))
    if len(value.encode("utf-8")) > DISCOVERY_NQN_MAX or not re.match(r"^[\x21-\x7e]+$", value):
        raise NvmetError("discovery_nqn: %r must be 1-%d printable characters without spaces"
                         % (value, DISCOVERY_NQN_MAX))
    if value != DISCOVERY_NQN and not value.startswith("nqn."):
        raise NvmetError("discovery_nqn: %r is not an NQN (nqn.yyyy-mm.reverse.domain:name, or %s)"
                         % (value, DISCOVERY_NQN))
    return value


def plan_referrals(spec, cur, rel):
    """Create, change (disable, write, enable) and with purge_referrals remove referrals."""
    ops = []
    wanted = dict((r["name"], r) for r in spec.get("referrals") or [])
    if spec.get("purge_referrals"):
        for name in sorted(cur["referrals"], reverse=True):
            if name not in wanted:
                ops.append(Op("rmdir", "%s/referrals/%s" % (rel, name)))
    for name in sorted(wanted):
        want = wanted[name]
        r_rel = "%s/referrals/%s" % (rel, name)
        have = cur["referrals"].get(name)
        if have is None:
            ops.append(Op("mkdir", r_rel))
            have = {"enabled": False}
        writes = [Op("write", "%s/addr_%s" % (r_rel, f), want[f]) for f in REFERRAL_FIELDS
                  if want.get(f) is not None and have.get(f) != want[f]]
        if writes and have["enabled"]:
            ops.append(Op("write", r_rel + "/enable", "0"))
            have = dict(have, enabled=False)
        ops.extend(writes)
        if want["enabled"] != have["enabled"]:
            ops.append(Op("write", r_rel + "/enable", "1" if want["enabled"] else "0"))
    return ops


def plan_discovery_nqn(state, nqn):
    """Write discovery_nqn when it differs; the kernel refuses an NQN a subsystem uses."""
    if nqn is None:
        return []
    current = state.get("discovery_nqn")
    if current is None:
        raise NvmetError("discovery_nqn: this kernel has no <configfs>/nvmet/discovery_nqn (added in Linux 6.6)")
    if nqn in state["subsystems"]:
        raise NvmetError("discovery_nqn: %r is the NQN of a subsystem; the kernel refuses that" % nqn)
    if current == nqn:
        return []
    return [Op("write", "discovery_nqn", nqn)]
