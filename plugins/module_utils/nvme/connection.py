# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVMe-oF host (initiator) connection model: the validated desired connection,
matching against sysfs controllers, drift, and the plan.

Everything here is pure (plain dicts in, plain dicts out), so the decisions are
unit-tested without a kernel.
"""

from __future__ import annotations

import ipaddress
import re
import uuid

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import DISCOVERY_NQN
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.psk import PskError, parse_psk
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError

TRANSPORTS = transports.NAMES
# NVMe base spec 4.5: "nqn.yyyy-mm.<reverse domain>[:<string>]", at most 223 bytes;
# or the UUID form.
_NQN = re.compile(r"^nqn\.\d{4}-(0[1-9]|1[0-2])\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?"
                  r"(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*(:.+)?$")
_UUID_NQN = re.compile(r"^nqn\.2014-08\.org\.nvmexpress:uuid:[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$")
_FC_ADDR = re.compile(r"^nn-0x[0-9a-fA-F]{16}:pn-0x[0-9a-fA-F]{16}$")
_IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
# TP 8006: DHHC-1:<hash id 00-03>:<base64 of key + CRC-32>:
_DHCHAP = re.compile(r"^DHHC-1:0[0-3]:[A-Za-z0-9+/]+={0,2}:$")
NQN_MAX_BYTES = 223
SECRET_KEYS = ("dhchap_secret", "dhchap_ctrl_secret")
TUNABLES = ("ctrl_loss_tmo", "reconnect_delay", "keep_alive_tmo", "fast_io_fail_tmo", "nr_io_queues", "queue_size")
# Kernel default reconnect_delay (NVMF_DEF_RECONNECT_DELAY): used to predict ctrl_loss_tmo.
DEFAULT_RECONNECT_DELAY = 10


def address_spec():
    """The argument_spec entries of where a host reaches a target from and as whom (transport,
    target address and port, host address or interface, host NQN and ID): nvme_connect and
    nvme_discover take them at the top level, nvme_connections per path."""
    return dict(
        transport=dict(type="str", required=True, choices=list(TRANSPORTS)),
        traddr=dict(type="str"),
        trsvcid=dict(type="str", default=transports.DEFAULT_SERVICE_ID),
        host_traddr=dict(type="str"),
        host_iface=dict(type="str"),
        hostnqn=dict(type="str"),
        hostid=dict(type="str"),
    )


class ValidationError(NvmeError, ValueError):
    pass


def validate_nqn(value, param):
    if not isinstance(value, str) or not value:
        raise ValidationError("%s is required and must be an NQN string" % param)
    if len(value.encode("utf-8")) > NQN_MAX_BYTES:
        raise ValidationError("%s=%r is %d bytes; an NQN has at most %d" % (param, value, len(value.encode("utf-8")), NQN_MAX_BYTES))
    if value.startswith("nqn.2014-08.org.nvmexpress:uuid:"):
        if not _UUID_NQN.match(value):
            raise ValidationError("%s=%r is not a valid UUID NQN (nqn.2014-08.org.nvmexpress:uuid:<uuid>)" % (param, value))
        return value
    if not _NQN.match(value):
        raise ValidationError("%s=%r is not a valid NQN: expected nqn.<yyyy-mm>.<reverse domain>[:<name>], "
                              "for example nqn.2024-01.io.example:disk1" % (param, value))
    return value


def _ip(value, param):
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise ValidationError("%s=%r is not an IPv4 or IPv6 address" % (param, value))


def validate_port(value, param):
    text = str(value)
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValidationError("%s=%r is not a port number (1-65535)" % (param, value))
    return str(int(text))


def validate_secret(value, param):
    if value is None:
        return None
    if not _DHCHAP.match(value):
        # Never echo the value: it is a secret even when malformed.
        raise ValidationError("%s is not a DH-HMAC-CHAP secret in the DHHC-1:<hh>:<base64>: "
                              "format (generate one with 'nvme gen-dhchap-key')" % param)
    return value


def normalize_traddr(transport, value):
    """Canonical text for comparing transport addresses (IPv6 compressions, FC case)."""
    if value is None:
        return None
    address = getattr(transports.get(transport), "address", None)
    if address == "ip":
        try:
            return str(ipaddress.ip_address(value))
        except ValueError:
            return value
    if address == "fc":
        return value.lower()
    return value


def desired_from_params(params):
    """Validate module parameters into the desired connection (a plain dict).

    Raises ValidationError naming the parameter and value; nothing on the host has
    been touched at this point.
    """
    transport = params["transport"]
    if transport not in TRANSPORTS:
        raise ValidationError("transport=%r is not one of %s" % (transport, ", ".join(TRANSPORTS)))
    row = transports.get(transport)
    desired = {"transport": transport, "nqn": validate_nqn(params.get("nqn"), "nqn")}
    if desired["nqn"] == DISCOVERY_NQN:
        raise ValidationError("nqn=%s is the discovery subsystem; use aiinfra.fabric.nvme_discover" % DISCOVERY_NQN)
    traddr = params.get("traddr")
    trsvcid = params.get("trsvcid")
    if row.address == "ip":
        if not traddr:
            raise ValidationError("traddr is required for transport=%s" % transport)
        desired["traddr"] = str(_ip(traddr, "traddr"))
        desired["trsvcid"] = validate_port(trsvcid if trsvcid not in (None, "") else row.service_id, "trsvcid")
    elif row.address == "fc":
        if not traddr or not _FC_ADDR.match(traddr):
            raise ValidationError("traddr=%r is not an FC address (nn-0x<16 hex>:pn-0x<16 hex>)" % (traddr,))
        desired["traddr"] = traddr.lower()
        desired["trsvcid"] = None
    else:
        if traddr:
            raise ValidationError("traddr=%r makes no sense with transport=%s" % (traddr, transport))
        desired["traddr"] = None
        desired["trsvcid"] = None
    host_traddr = params.get("host_traddr")
    if host_traddr:
        if row.address == "ip":
            host_traddr = str(_ip(host_traddr, "host_traddr"))
        elif row.address == "fc":
            if not _FC_ADDR.match(host_traddr):
                raise ValidationError("host_traddr=%r is not an FC address (nn-0x<16 hex>:pn-0x<16 hex>)" % (host_traddr,))
            host_traddr = host_traddr.lower()
        else:
            raise ValidationError("host_traddr makes no sense with transport=%s" % transport)
    desired["host_traddr"] = host_traddr or None
    host_iface = params.get("host_iface")
    if host_iface:
        if not row.host_iface:
            raise ValidationError("host_iface=%r is only supported with transport=%s"
                                  % (host_iface, transports.spelled(transports.names(host_iface=True))))
        if not _IFNAME.match(host_iface):
            raise ValidationError("host_iface=%r is not a network interface name" % (host_iface,))
    desired["host_iface"] = host_iface or None
    if params.get("hostnqn"):
        desired["hostnqn"] = validate_nqn(params["hostnqn"], "hostnqn")
    else:
        desired["hostnqn"] = None
    # A given host NQN names one host identity: its controllers are its own (see controller_matches).
    desired["hostnqn_given"] = bool(desired["hostnqn"])
    if params.get("hostid"):
        try:
            desired["hostid"] = str(uuid.UUID(params["hostid"]))
        except ValueError:
            raise ValidationError("hostid=%r is not a UUID" % (params["hostid"],))
    else:
        desired["hostid"] = None
    for key in TUNABLES:
        value = params.get(key)
        if value is None:
            desired[key] = None
            continue
        lowest = -1 if key in ("ctrl_loss_tmo", "fast_io_fail_tmo") else (0 if key == "keep_alive_tmo" else 1)
        if value < lowest:
            raise ValidationError("%s=%r must be >= %d" % (key, value, lowest))
        desired[key] = value
    if desired["queue_size"] is not None and not 16 <= desired["queue_size"] <= 1024:
        raise ValidationError("queue_size=%r is outside the kernel's 16-1024" % desired["queue_size"])
    for key in SECRET_KEYS:
        desired[key] = validate_secret(params.get(key), key)
    if desired["dhchap_ctrl_secret"] and not desired["dhchap_secret"]:
        raise ValidationError("dhchap_ctrl_secret (bidirectional authentication) needs dhchap_secret too")
    desired["tls"] = bool(params.get("tls"))
    desired["tls_key"] = params.get("tls_key") or None
    desired["keyring"] = params.get("keyring") or None
    if (desired["tls_key"] or desired["keyring"]) and not desired["tls"]:
        raise ValidationError("tls_key/keyring are only used with tls=true")
    if desired["tls_key"] and not re.match(r"^(0[xX][0-9a-fA-F]+|[0-9]+)$", desired["tls_key"].strip()):
        # Not a key serial: then a PSK, which is put into the keyring before the connect.
        try:
            parse_psk(desired["tls_key"], "tls_key")
        except PskError as exc:
            raise ValidationError("%s; or a key serial (decimal or 0x-hex)" % exc)
    if desired["tls"] and not row.tls:
        raise ValidationError("tls=true needs transport=%s (NVMe/TCP TLS); got transport=%s"
                              % (transports.spelled(transports.names(tls=True)), transport))
    desired["concat"] = bool(params.get("concat"))
    if desired["concat"] and not (desired["tls"] and desired["dhchap_secret"]):
        raise ValidationError("concat=true (secure concatenation: TLS keyed by DH-HMAC-CHAP) needs tls=true "
                              "and dhchap_secret")
    return desired


def controller_matches(ctrl, desired):
    """Whether a sysfs controller is this connection: same transport, subsystem NQN and
    address fields (compared as parsed values). host_traddr/host_iface only narrow the
    match when the user gave them, and so does hostnqn: the kernel keeps one controller
    per host NQN to the same subsystem and address, so one machine can connect as many
    hosts, and each given identity's connection is its own (not drift of another's)."""
    if ctrl.get("state") == "deleting":
        return False
    if desired.get("hostnqn_given") and ctrl.get("hostnqn") != desired["hostnqn"]:
        return False
    if ctrl.get("transport") != desired["transport"] or ctrl.get("subsysnqn") != desired["nqn"]:
        return False
    transport = desired["transport"]
    if desired.get("traddr") is not None:
        if normalize_traddr(transport, ctrl.get("traddr")) != desired["traddr"]:
            return False
    if desired.get("trsvcid") is not None and ctrl.get("trsvcid") != desired["trsvcid"]:
        return False
    if desired.get("host_traddr"):
        if normalize_traddr(transport, ctrl.get("host_traddr")) != desired["host_traddr"]:
            return False
    if desired.get("host_iface") and ctrl.get("host_iface") != desired["host_iface"]:
        return False
    return True


def matching_controllers(controllers, desired):
    return [c for c in controllers if controller_matches(c, desired)]


def other_identities_at_address(controllers, desired):
    """Live controllers of another host NQN to this subsystem and address.

    nvme-cli before 2.6 takes any of them for this connection ("already connected"),
    whatever --hostnqn/--hostid/--duplicate-connect say (see fabrics_dev.py), so the
    module connects through /dev/nvme-fabrics itself when this list is not empty."""
    if not desired.get("hostnqn"):
        return []
    anyone = dict(desired, hostnqn_given=False)
    return [c for c in controllers if controller_matches(c, anyone) and c.get("hostnqn") != desired["hostnqn"]]


def expected_ctrl_loss_tmo(ctrl_loss_tmo, reconnect_delay):
    """What sysfs will show: the kernel keeps ceil(tmo / delay) reconnects of delay s each."""
    if ctrl_loss_tmo is None:
        return None
    if ctrl_loss_tmo < 0:
        return -1
    delay = reconnect_delay or DEFAULT_RECONNECT_DELAY
    return -(-ctrl_loss_tmo // delay) * delay


def _fast_io_fail_tmo(value):
    """sysfs shows fast_io_fail_tmo as "off" (-1, the kernel default) or seconds."""
    if value is None or isinstance(value, int):
        return value
    if value == "off":
        return -1
    try:
        return int(value)
    except ValueError:
        return None


def controller_drift(ctrl, secrets, desired, online_cpus=None):
    """Settings of a live controller that differ from the desired ones.

    Only settings the user gave are compared. Secrets are compared, never shown:
    their entry says which side has one.
    """
    drift = {}
    if desired.get("hostnqn") and ctrl.get("hostnqn") != desired["hostnqn"]:
        drift["hostnqn"] = {"current": ctrl.get("hostnqn"), "desired": desired["hostnqn"]}
    if desired.get("hostid") and ctrl.get("hostid") and ctrl["hostid"] != desired["hostid"]:
        drift["hostid"] = {"current": ctrl.get("hostid"), "desired": desired["hostid"]}
    wanted = {
        "ctrl_loss_tmo": expected_ctrl_loss_tmo(desired.get("ctrl_loss_tmo"),
                                                desired.get("reconnect_delay") or ctrl.get("reconnect_delay")),
        "reconnect_delay": desired.get("reconnect_delay"),
        "keep_alive_tmo": desired.get("keep_alive_tmo"),
        "fast_io_fail_tmo": desired.get("fast_io_fail_tmo"),
        "queue_size": desired.get("queue_size"),
        "nr_io_queues": desired.get("nr_io_queues"),
    }
    if wanted["nr_io_queues"] is not None and online_cpus:
        # The kernel never creates more I/O queues than online CPUs.
        wanted["nr_io_queues"] = min(wanted["nr_io_queues"], online_cpus)
    for key in ("ctrl_loss_tmo", "reconnect_delay", "keep_alive_tmo", "fast_io_fail_tmo", "queue_size", "nr_io_queues"):
        current = _fast_io_fail_tmo(ctrl.get(key)) if key == "fast_io_fail_tmo" else ctrl.get(key)
        if wanted[key] is None or current is None:
            continue
        if current != wanted[key]:
            drift[key] = {"current": current, "desired": wanted[key]}
    # A plain connection is not a TLS one (and the other way round), whatever else matches.
    if "tls" in desired and ctrl.get("tls") is not None and bool(desired["tls"]) != ctrl["tls"]:
        drift["tls"] = {"current": ctrl["tls"], "desired": bool(desired["tls"])}
    for key in SECRET_KEYS:
        have, want = (secrets or {}).get(key), desired.get(key)
        if have == want:
            continue
        if have and want:
            state = {"current": "set", "desired": "set, different"}
        else:
            state = {"current": "set" if have else "unset", "desired": "set" if want else "unset"}
        drift[key] = state
    return drift


def plan_connection(controllers, drifts, desired, state, reconnect, force, usage):
    """Ordered operations for the controllers of this connection.

    ``drifts`` maps controller name → drift dict, ``usage`` lists who uses their block
    devices. Returns (operations, refusal message or None). Operations are
    ("disconnect", name) and ("connect", None).
    """
    names = [c["name"] for c in controllers]
    if state == "disconnected":
        if not names:
            return [], None
        if usage and not force:
            return [], ("refusing to disconnect %s from %s: %s; unmount first or set force=true"
                        % (", ".join(names), desired["nqn"], "; ".join(usage)))
        return [("disconnect", n) for n in names], None
    if not names:
        return [("connect", None)], None
    drifted = [n for n in names if drifts.get(n)]
    if not drifted or not reconnect:
        return [], None
    if usage and not force:
        return [], ("%s has settings that differ from the requested ones (%s) and reconnect=true, but %s; "
                    "unmount first or set force=true" % (", ".join(drifted), ", ".join(sorted(set(
                        k for n in drifted for k in drifts[n]))), "; ".join(usage)))
    return [("disconnect", n) for n in names] + [("connect", None)], None


def public_controller(ctrl):
    """The controller as returned to the user: no internal fields."""
    return dict((k, v) for k, v in ctrl.items() if k not in ("address",))
