# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvme-cli's persistent configuration on an initiator: /etc/nvme/config.json (libnvme
JSON) and the nvmf-autoconnect drop-in.

nvmf-autoconnect.service runs `nvme connect-all` at boot; for each port listed in
config.json nvme-cli 2.x connects to that address's discovery controller and connects
the subsystems it offers, applying the port's settings and DH-HMAC-CHAP keys. The
functions here are pure: they return new documents and never write.
"""

from __future__ import annotations

import copy
import json
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError, normalize_traddr,
)

NVME_ETC = "/etc/nvme"
CONFIG_JSON = NVME_ETC + "/config.json"
DROPIN_DIR = "/etc/systemd/system/nvmf-autoconnect.service.d"
DROPIN = DROPIN_DIR + "/50-aiinfra-fabric.conf"
UNIT_PATHS = ("/lib/systemd/system/nvmf-autoconnect.service", "/usr/lib/systemd/system/nvmf-autoconnect.service")
CONFIG_PORT_TUNABLES = ("ctrl_loss_tmo", "reconnect_delay", "keep_alive_tmo", "nr_io_queues", "queue_size")


def config_port(desired):
    port = {"transport": desired["transport"]}
    for key in ("traddr", "trsvcid", "host_traddr", "host_iface"):
        if desired.get(key):
            port[key] = desired[key]
    for key in CONFIG_PORT_TUNABLES:
        if desired.get(key) is not None:
            port[key] = desired[key]
    # libnvme's key names: dhchap_key is the host's secret, dhchap_ctrl_key the controller's.
    if desired.get("dhchap_secret"):
        port["dhchap_key"] = desired["dhchap_secret"]
    if desired.get("dhchap_ctrl_secret"):
        port["dhchap_ctrl_key"] = desired["dhchap_ctrl_secret"]
    # libnvme's port fields for NVMe/TCP TLS; the PSK itself stays in the keyring (the
    # nvme_tls role loads it at boot), so no key is written here.
    if desired.get("tls"):
        port["tls"] = True
        if desired.get("keyring"):
            port["keyring"] = desired["keyring"]
    return port


def same_path(fields, desired, sep="_"):
    """Whether a saved path (config.json's port, or an INI controller line's keys with
    sep "-") is the desired connection's: transport, addresses, service id, interface."""
    transport = desired["transport"]
    return (fields.get("transport") == transport
            and normalize_traddr(transport, fields.get("traddr")) == desired.get("traddr")
            and (fields.get("trsvcid") or None) == desired.get("trsvcid")
            and normalize_traddr(transport, fields.get("host%straddr" % sep)) == desired.get("host_traddr")
            and (fields.get("host%siface" % sep) or None) == desired.get("host_iface"))


def _same_port(port, desired):
    return same_path(port, desired)


def config_has_port(config, desired, hostnqn):
    for host in config or []:
        if host.get("hostnqn") != hostnqn:
            continue
        for subsys in host.get("subsystems") or []:
            if subsys.get("nqn") == desired["nqn"] and any(_same_port(p, desired) for p in subsys.get("ports") or []):
                return True
    return False


# nvme connect-all reaches each saved address's discovery controller first; libnvme applies
# the settings of a saved entry for (discovery NQN, address) to that connection. Without
# one, the discovery connection to a port that requires TLS goes out as plain TCP, the
# target resets it, and connect-all ends silently with nothing connected (seen on the
# trixie lab, nvme-cli 2.13). So a TLS connection also saves its address's discovery entry.
DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"


def _discovery_desired(desired):
    return {"transport": desired["transport"], "traddr": desired.get("traddr"), "trsvcid": desired.get("trsvcid"),
            "host_traddr": desired.get("host_traddr"), "host_iface": desired.get("host_iface"),
            "nqn": DISCOVERY_NQN, "tls": True, "keyring": desired.get("keyring")}


def config_with_port(config, desired, hostnqn, hostid, application=None):
    """A copy of the config with exactly this connection's port entry (added or updated);
    a TLS connection also gets its address's discovery entry (see DISCOVERY_NQN).

    ``application``: the context nvmf-autoconnect.service runs ``nvme connect-all`` with
    (:func:`unit_context`), set on the subsystem entries written. libnvme 1.13 (nvme-cli
    2.13) matches saved entries only to subsystems of the same application when a context
    is given: an entry without one is not applied at boot (lab: the discovery connection
    then went out without TLS and was reset)."""
    config = _config_with_one_port(config, desired, hostnqn, hostid, application)
    if desired.get("tls") and desired["nqn"] != DISCOVERY_NQN:
        config = _config_with_one_port(config, _discovery_desired(desired), hostnqn, hostid, application)
    return config


def _config_with_one_port(config, desired, hostnqn, hostid, application=None):
    config = copy.deepcopy(config or [])
    host = next((h for h in config if h.get("hostnqn") == hostnqn), None)
    if host is None:
        host = {"hostnqn": hostnqn}
        if hostid:
            host["hostid"] = hostid
        config.append(host)
    subsystems = host.setdefault("subsystems", [])
    subsys = next((s for s in subsystems if s.get("nqn") == desired["nqn"]), None)
    if subsys is None:
        subsys = {"nqn": desired["nqn"], "ports": []}
        subsystems.append(subsys)
    if application:
        subsys["application"] = application
    ports = subsys.setdefault("ports", [])
    wanted = config_port(desired)
    for index, port in enumerate(ports):
        if _same_port(port, desired):
            ports[index] = wanted
            break
    else:
        ports.append(wanted)
    return config


def config_without_port(config, desired, hostnqn=None):
    """A copy of the config without this connection's port entry; empty subsystems and
    hosts that only carried them are dropped. The address's TLS discovery entry goes with
    the last TLS subsystem saved on that address."""
    config = _config_without_one_port(config, desired, hostnqn)
    if desired["nqn"] == DISCOVERY_NQN:
        return config
    discovery = _discovery_desired(desired)
    for host in config:
        if hostnqn is not None and host.get("hostnqn") != hostnqn:
            continue
        for subsys in host.get("subsystems") or []:
            if subsys.get("nqn") != DISCOVERY_NQN and any(
                    p.get("tls") and _same_port(p, discovery) for p in subsys.get("ports") or []):
                return config
    return _config_without_one_port(config, discovery, hostnqn)


def _config_without_one_port(config, desired, hostnqn=None):
    result = []
    for host in copy.deepcopy(config or []):
        if hostnqn is None or host.get("hostnqn") == hostnqn:
            subsystems = []
            for subsys in host.get("subsystems") or []:
                if subsys.get("nqn") == desired["nqn"]:
                    subsys["ports"] = [p for p in subsys.get("ports") or [] if not _same_port(p, desired)]
                    if not subsys["ports"]:
                        continue
                subsystems.append(subsys)
            host["subsystems"] = subsystems
            if not subsystems and set(host) <= {"hostnqn", "hostid", "subsystems"}:
                continue
        result.append(host)
    return result


def parse_config(text, path):
    if not text or not text.strip():
        return []
    try:
        config = json.loads(text)
    except ValueError as exc:
        raise ValidationError("%s is not valid JSON (%s); fix or remove it before using persistent" % (path, exc))
    if not isinstance(config, list):
        raise ValidationError("%s must hold a JSON list of hosts (libnvme's format); it holds a %s"
                              % (path, type(config).__name__))
    return config


def dump_config(config):
    return json.dumps(config, indent=2, sort_keys=False) + "\n"


# nvme-cli 2.3 (Debian bookworm) ships nvmf-autoconnect.service with negated
# conditions (|!config.json, |!discovery.conf): it is skipped when both files exist,
# and bookworm's package installs discovery.conf. nvme-cli 2.5 changed them to
# "run when either exists"; this drop-in applies that fix on hosts that need it.
AUTOCONNECT_DROPIN = (
    "# Managed by aiinfra.fabric.nvme_connect (persistent=true).\n"
    "# nvme-cli 2.3 skips autoconnect when both config.json and discovery.conf exist;\n"
    "# run it when either exists, as nvme-cli 2.5 and later do.\n"
    "[Unit]\n"
    "ConditionPathExists=\n"
    "ConditionPathExists=|/etc/nvme/config.json\n"
    "ConditionPathExists=|/etc/nvme/discovery.conf\n"
)


def unit_context(unit_text):
    """The ``--context`` nvmf-autoconnect.service passes to ``nvme connect-all`` (nvme-cli 2.13:
    ``autoconnect``; 2.3: none), or None."""
    for line in (unit_text or "").splitlines():
        line = line.strip()
        if line.startswith("ExecStart=") and "connect-all" in line:
            match = re.search(r"--context[= ](\S+)", line)
            if match:
                return match.group(1)
    return None


def unit_needs_condition_fix(unit_text):
    return bool(unit_text) and "ConditionPathExists=|!" in unit_text
