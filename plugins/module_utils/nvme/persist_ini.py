# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Saved connections in the INI format of nvme-cli releases that replaced config.json.

Newer nvme-cli reads ``/etc/nvme/nvme-fabrics.conf`` plus drop-ins in
``/etc/nvme/nvme-fabrics.conf.d/*.conf`` (systemd style: ``[Host]``, one ``[Subsystem]``
per subsystem with its ``nqn``, one ``controller = transport=..;traddr=..`` line per path,
keys spelt like the ``nvme connect`` options) and converts an old config.json once
(``nvme config-convert``). This module writes only its own drop-in, so the administrator's
main file and other drop-ins are never rewritten, and a teardown removes exactly what it
wrote: the path's ``controller`` line, the section when no path is left, the file when no
section is left. The drop-in for the system's own host NQN has no ``[Host]`` section (it
adds connections to the default identity); another host NQN gets its own file with
``[Host]``, since the format allows each host NQN in one file only.

The functions are pure: they take and return documents and text, and never write.
"""

from __future__ import annotations

import hashlib

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.persist import same_path

DROPIN_DIR = "/etc/nvme/nvme-fabrics.conf.d"
# Path keys of a ``controller =`` line, then the tunables it may carry per path.
ADDRESS_KEYS = (("transport", "transport"), ("traddr", "traddr"), ("trsvcid", "trsvcid"),
                ("host_traddr", "host-traddr"), ("host_iface", "host-iface"))
TUNABLE_KEYS = (("ctrl_loss_tmo", "ctrl-loss-tmo"), ("reconnect_delay", "reconnect-delay"),
                ("keep_alive_tmo", "keep-alive-tmo"), ("nr_io_queues", "nr-io-queues"),
                ("queue_size", "queue-size"))
# Security settings live on the section (the format refuses them per path). The TLS PSK
# stays in the kernel keyring (the nvme_tls role loads it at boot): never written here.
HEADER = "# Managed by aiinfra.fabric.nvme_connect (persistent=true); holds secrets: mode 0600.\n"


def dropin_path(hostnqn, default_hostnqn):
    """This module's drop-in for ``hostnqn``: one file for the system's own identity, one per other host NQN."""
    if not default_hostnqn or hostnqn == default_hostnqn:
        return DROPIN_DIR + "/aiinfra-fabric.conf"
    return DROPIN_DIR + "/aiinfra-fabric-%s.conf" % hashlib.sha1(hostnqn.encode("utf-8")).hexdigest()[:12]


def _controller(desired):
    items = []
    for key, name in ADDRESS_KEYS + TUNABLE_KEYS:
        if desired.get(key) not in (None, ""):
            items.append((name, str(desired[key])))
    return items


def _section_keys(desired):
    keys = []
    if desired.get("dhchap_secret"):
        keys.append(("dhchap-secret", desired["dhchap_secret"]))
    if desired.get("dhchap_ctrl_secret"):
        keys.append(("dhchap-ctrl-secret", desired["dhchap_ctrl_secret"]))
    if desired.get("tls"):
        keys.append(("tls", "true"))
        if desired.get("keyring"):
            keys.append(("keyring", desired["keyring"]))
    if desired.get("concat"):
        keys.append(("concat", "true"))
    return keys


def _same_path(items, desired):
    return same_path(dict(items), desired, sep="-")


def parse_dropin(text, path):
    """This module's drop-in as {"host": [(key, value)], "subsystems": [{"nqn", "keys", "controllers"}]}."""
    doc = {"host": [], "subsystems": []}
    section = None
    for number, raw in enumerate((text or "").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
            if section == "Subsystem":
                doc["subsystems"].append({"nqn": None, "keys": [], "controllers": []})
            elif section != "Host":
                raise ValidationError("%s:%d: section [%s] is not one this module writes ([Host], [Subsystem]); "
                                      "this file is managed by aiinfra.fabric: fix or remove it" % (path, number, section))
            continue
        key, sep, value = line.partition("=")
        if not sep or section is None:
            raise ValidationError("%s:%d: expected 'key = value' inside a section; this file is managed by "
                                  "aiinfra.fabric: fix or remove it" % (path, number))
        key, value = key.strip(), value.strip()
        if section == "Host":
            doc["host"].append((key, value))
        elif key == "nqn":
            doc["subsystems"][-1]["nqn"] = value
        elif key == "controller":
            items = []
            for part in value.split(";"):
                name, dummy, val = part.partition("=")
                if name.strip():
                    items.append((name.strip(), val.strip()))
            doc["subsystems"][-1]["controllers"].append(items)
        else:
            doc["subsystems"][-1]["keys"].append((key, value))
    return doc


def render_dropin(doc):
    out = [HEADER]
    if doc["host"]:
        out.append("\n[Host]\n")
        out.extend("%s = %s\n" % kv for kv in doc["host"])
    for sub in doc["subsystems"]:
        out.append("\n[Subsystem]\nnqn = %s\n" % sub["nqn"])
        out.extend("%s = %s\n" % kv for kv in sub["keys"])
        for items in sub["controllers"]:
            out.append("controller = %s\n" % ";".join("%s=%s" % kv for kv in items))
    return "".join(out)


def dropin_is_empty(doc):
    return not doc["subsystems"]


def dropin_has_port(doc, desired):
    return any(sub["nqn"] == desired["nqn"] and any(_same_path(c, desired) for c in sub["controllers"])
               for sub in doc["subsystems"])


def dropin_with_port(doc, desired, hostnqn, hostid, default_hostnqn):
    """A copy with exactly this path's controller line (added or updated) and the section's security keys."""
    host = list(doc["host"])
    if default_hostnqn and hostnqn != default_hostnqn and not host:
        host = [("hostnqn", hostnqn)] + ([("hostid", hostid)] if hostid else [])
    subsystems = [dict(s, controllers=list(s["controllers"]), keys=list(s["keys"])) for s in doc["subsystems"]]
    sub = next((s for s in subsystems if s["nqn"] == desired["nqn"]), None)
    if sub is None:
        sub = {"nqn": desired["nqn"], "keys": [], "controllers": []}
        subsystems.append(sub)
    sub["keys"] = _section_keys(desired)
    wanted = _controller(desired)
    for index, items in enumerate(sub["controllers"]):
        if _same_path(items, desired):
            sub["controllers"][index] = wanted
            break
    else:
        sub["controllers"].append(wanted)
    return {"host": host, "subsystems": subsystems}


def dropin_without_port(doc, desired):
    """A copy without this path's controller line; a section left with no path goes too."""
    subsystems = []
    for sub in doc["subsystems"]:
        if sub["nqn"] == desired["nqn"]:
            sub = dict(sub, controllers=[c for c in sub["controllers"] if not _same_path(c, desired)])
            if not sub["controllers"]:
                continue
        subsystems.append(sub)
    return {"host": list(doc["host"]), "subsystems": subsystems}
