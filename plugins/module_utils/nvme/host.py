# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What nvme_connect does on the initiator besides running nvme-cli: the host's NVMe
identity (/etc/nvme/hostnqn, hostid), reading small files, and the waits on sysfs
around a disconnect and a connect."""

from __future__ import annotations

import os
import time
import uuid

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError, controller_matches,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.persist import NVME_ETC

PLANNED_HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:(generated)"
# The namespace of host IDs derived from a host NQN that carries no UUID (fixed: the
# same NQN gets the same ID on every host and run).
HOSTID_NAMESPACE = uuid.UUID("5b2c0d2e-59a4-4d0e-9a57-6c1f3f0f4e19")


def read_text(path):
    try:
        with open(path, "r") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def host_identity(params, state, check_mode, gen_hostnqn, etc=NVME_ETC):
    """(hostnqn, hostid, files to write). Never writes itself; gen_hostnqn() is called
    only when a host NQN must be generated outside check mode."""
    hostnqn = params["hostnqn"]
    hostid = params["hostid"]
    writes = []
    own_nqn = (read_text(os.path.join(etc, "hostnqn")) or "").strip() or None
    if not hostnqn:
        hostnqn = own_nqn
    if not hostid and hostnqn and hostnqn != own_nqn:
        # Another identity than this machine's: the kernel refuses one host ID under two
        # host NQNs ("found same hostid ... but different hostnqn"), so /etc/nvme/hostid
        # is not its ID: a uuid-form NQN carries its own, any other gets one derived from
        # the NQN (UUID version 5), the same at every run.
        hostid = _uuid_of(hostnqn) or str(uuid.uuid5(HOSTID_NAMESPACE, hostnqn))
    if not hostid and hostnqn == own_nqn:
        hostid = (read_text(os.path.join(etc, "hostid")) or "").strip() or None
    if hostnqn or state == "disconnected":
        return hostnqn, hostid, writes
    if not params["generate_host_identity"]:
        raise ValidationError("no host NQN: %s/hostnqn is missing or empty and hostnqn is not set; "
                              "set hostnqn, or generate_host_identity=true to create it with nvme gen-hostnqn" % etc)
    if check_mode:
        return PLANNED_HOSTNQN, hostid, [("hostnqn", None)]
    hostnqn = gen_hostnqn()
    writes.append(("hostnqn", hostnqn))
    if not hostid:
        tail = hostnqn.rsplit(":", 1)[-1]
        try:
            hostid = str(uuid.UUID(tail))
        except ValueError:
            hostid = str(uuid.uuid4())
        writes.append(("hostid", hostid))
    return hostnqn, hostid, writes


def _uuid_of(hostnqn):
    """The UUID of a ``nqn.2014-08.org.nvmexpress:uuid:<uuid>`` host NQN, else None."""
    prefix = "nqn.2014-08.org.nvmexpress:uuid:"
    if not hostnqn.startswith(prefix):
        return None
    try:
        return str(uuid.UUID(hostnqn[len(prefix):]))
    except ValueError:
        return None


def wait_gone(sysfs, desired, timeout):
    """After a disconnect the kernel deletes the controller asynchronously ("deleting"):
    connecting again before it is gone would be refused as a duplicate."""
    deadline = time.time() + max(timeout, 5)
    while time.time() < deadline:
        if not sysfs.controllers(match=lambda c: c.get("transport") == desired["transport"]
                                 and c.get("subsysnqn") == desired["nqn"] and c.get("state") == "deleting"):
            return
        time.sleep(0.2)


def wait_for_connection(sysfs, desired, timeout):
    """Poll sysfs until the controller is live and its namespaces have block devices
    whose /dev nodes exist, and the set stopped growing. Returns (controllers, devices,
    warning or None)."""
    return wait_for_connections(sysfs, [desired], timeout)[0]


def wait_for_connections(sysfs, wanted, timeout):
    """wait_for_connection for several new connections at once: each round reads sysfs
    once for all of them and sleeps once, so n connections made one after the other wait
    about as long as one (each needs two rounds in a row that find the same devices).
    Returns one (controllers, devices, warning or None) per entry of ``wanted``."""
    if not wanted:
        return []
    deadline = time.time() + timeout
    last = [None] * len(wanted)
    seen = [([], [], False)] * len(wanted)
    done = [None] * len(wanted)
    while True:
        pending = [i for i, d in enumerate(done) if d is None]
        found = sysfs.controllers(match=lambda c: any(controller_matches(c, wanted[i]) for i in pending))
        for i in pending:
            controllers = [c for c in found if controller_matches(c, wanted[i])]
            devices = sysfs.devices_of(controllers)
            live = bool(controllers) and all(c.get("state") == "live" for c in controllers)
            ready = [d for d in devices if os.path.exists(d["path"])]
            names = [d["name"] for d in ready]
            if live and ready and len(ready) == len(devices) and names == last[i]:
                done[i] = (controllers, ready, None)
                continue
            last[i] = names if live and ready else None
            seen[i] = (controllers, devices, live)
        if all(d is not None for d in done) or time.time() >= deadline:
            break
        time.sleep(0.5)
    return [d if d is not None else _not_ready(*seen[i], timeout=timeout) for i, d in enumerate(done)]


def _not_ready(controllers, devices, live, timeout):
    if not controllers:
        return controllers, devices, "nvme connect succeeded but no matching controller appeared in sysfs within %ds" % timeout
    if not live:
        return controllers, devices, ("controller %s is not live after %ds (state: %s)"
                                      % (", ".join(c["name"] for c in controllers), timeout,
                                         ", ".join(str(c.get("state")) for c in controllers)))
    return controllers, [d for d in devices if os.path.exists(d["path"])], (
        "controller %s is live but no namespace block device appeared within %ds"
        % (", ".join(c["name"] for c in controllers), timeout))
