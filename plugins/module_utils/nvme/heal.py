# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Paths that come back by themselves: the host-side healer of the nvmeof_initiator role.

The kernel reconnects a lost path itself, every reconnect_delay seconds, until
ctrl_loss_tmo runs out; then, or at once when the target answers a reconnect with a status
that has DNR set (``Connect Invalid Data Parameter`` after the subsystem was unlinked from
the port), it removes the controller, and nothing brings the path back. A path that did not
connect at boot (the target was down while nvme connect-all ran) stays missing too.

``aiinfra-nvme-heal.timer`` runs ``nvme-heal`` every few seconds. It reads the paths the role
configured (``/etc/nvme/aiinfra-fabric/heal/*.json``, 0600: the nvme_connections arguments
the role connected with, secrets included), reads the fabrics controllers from sysfs once,
and connects each configured path that has no controller - with the settings the role used,
through /dev/nvme-fabrics (no secret on a command line), never through nvme-cli. It never
disconnects anything and never touches a controller it did not configure. A path that fails
to connect is tried again after a delay that doubles, from ``FIRST_DELAY`` up to
``MAX_DELAY`` seconds - 30, so a path is back at most about 40 s after its fault clears (30 s plus
the timer's interval) - (kept in /run, so a reboot starts afresh); every attempt is one line
in the journal.
"""

from __future__ import annotations

import json
import os
import sys
import time

from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import write_atomically
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCliError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connect_run import connection_settings_spec, kernel_values
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import controller_matches
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connections import connections_from_params, path_label
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fabrics_dev import connect_through_kernel
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.health import read_json_files
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.host import host_identity
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyringError, boot_key_loader

HEAL_DIR = "/etc/nvme/aiinfra-fabric/heal"
STATE_FILE = "/run/aiinfra-fabric/nvme-heal.json"
FIRST_DELAY = 5
MAX_DELAY = 30
# What the nvme_connections module fills in when a caller leaves it out.
MODULE_DEFAULTS = {"wait_timeout": 60, "require_native_multipath": True}


class HealError(NvmeError):
    pass


def load_entries(heal_dir=HEAL_DIR):
    """[(file, nvme_connections arguments)] of the healer's entries."""
    return read_json_files(os.path.join(heal_dir, "*.json"), "subsystems", "the healer's entry (nvme_connections arguments)",
                           HealError)


def with_defaults(args):
    """The arguments with what the module's argument spec would fill in."""
    params = dict(MODULE_DEFAULTS)
    for key, spec in connection_settings_spec().items():
        params[key] = spec.get("default")
    params.update((k, v) for k, v in args.items() if v is not None)
    params["state"] = "connected"
    return params


def configured_paths(entries, release):
    """[(label, conn params, desired)] of every entry's paths, each once; HealError when an
    entry no longer validates (the role wrote it, so that is damage)."""
    out = []
    seen = set()
    for path, args in entries:
        connections, dummy, errors = connections_from_params(with_defaults(args), release)
        if errors:
            raise HealError("%s: %s" % (path, "; ".join(errors)))
        for dummy_where, conn, desired in connections:
            label = path_label(desired)
            if label not in seen:
                seen.add(label)
                out.append((label, conn, desired))
    return out


def missing(paths, controllers):
    """The configured paths the kernel holds no controller for (one being deleted counts as none)."""
    return [(label, conn, desired) for label, conn, desired in paths
            if not any(controller_matches(c, desired) for c in controllers)]


class Backoff(object):
    """Per path: attempts so far and when the next may be made, in a JSON file under /run."""

    def __init__(self, path=STATE_FILE):
        self.path = path
        try:
            with open(path) as handle:
                self.state = json.load(handle)
        except (IOError, OSError, ValueError):
            self.state = {}

    def due(self, label, now):
        return self.state.get(label, {}).get("next", 0) <= now

    def attempts(self, label):
        return self.state.get(label, {}).get("attempts", 0)

    def failed(self, label, now):
        attempts = self.attempts(label) + 1
        delay = min(MAX_DELAY, FIRST_DELAY * 2 ** (attempts - 1))
        self.state[label] = {"attempts": attempts, "next": now + delay}
        return delay

    def forget(self, label):
        self.state.pop(label, None)

    def keep_only(self, labels):
        for label in [k for k in self.state if k not in labels]:
            del self.state[label]

    def save(self):
        write_atomically(self.path, json.dumps(self.state, sort_keys=True), 0o600, dir_mode=0o700)


class _Keys(object):
    """What kernel_values needs of the module's runner: the TLS key loader."""

    def __init__(self):
        self._loader = None

    def key_loader(self):
        if self._loader is None:
            self._loader = boot_key_loader()
        return self._loader


def _write_line(line):
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def heal_once(paths, sysfs, backoff, now, connect=connect_through_kernel, keys=None, identity=host_identity,
              log=_write_line):
    """One pass: connect each missing, due path. Returns (connected labels, failed labels, waiting labels)."""
    keys = keys or _Keys()
    done, failed, waiting = [], [], []
    lost = missing(paths, sysfs.controllers())
    backoff.keep_only(set(label for label, dummy, dummy2 in lost))
    for label, conn, desired in lost:
        if not backoff.due(label, now):
            waiting.append(label)
            continue
        attempt = backoff.attempts(label) + 1
        try:
            hostnqn, hostid, dummy = identity(conn, "connected", False, None)
            name = connect(kernel_values(dict(desired, hostnqn=hostnqn, hostid=hostid), keys))
        except (NvmeCliError, KeyringError, NvmeError) as exc:
            delay = backoff.failed(label, now)
            log("%s: missing; reconnect attempt %d failed: %s; next attempt in %d s" % (label, attempt, exc, delay))
            failed.append(label)
            continue
        backoff.forget(label)
        log("%s: missing; reconnect attempt %d connected %s" % (label, attempt, name))
        done.append(label)
    return done, failed, waiting


def main(argv=None, heal_dir=HEAL_DIR, state_file=STATE_FILE):
    args = list(sys.argv[1:] if argv is None else argv)
    if args:
        sys.stderr.write("usage: nvme-heal   (reads %s/*.json; run by aiinfra-nvme-heal.timer)\n" % heal_dir)
        return 2
    try:
        paths = configured_paths(load_entries(heal_dir), os.uname()[2])
    except HealError as exc:
        sys.stderr.write("nvme-heal: %s\n" % exc)
        return 1
    backoff = Backoff(state_file)
    done, failed, dummy = heal_once(paths, FabricsSysfs(), backoff, time.time())
    backoff.save()
    return 1 if failed else 0
