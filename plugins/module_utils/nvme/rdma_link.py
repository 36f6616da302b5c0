# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Software RDMA links (soft-RoCE ``rxe``, soft-iWARP ``siw``) through iproute2's ``rdma``.

The shape follows the collection's convention:

* :func:`parse_links` turns ``rdma -j link show`` JSON into plain dicts;
* :func:`read_devices` tells hardware RDMA devices from software ones by sysfs
  (a hardware device has a ``device`` link to its bus device, rxe/siw have none);
* :func:`plan_link` is pure: current links + desired link -> ordered operations;
* :class:`RdmaLinkRunner` runs ``rdma`` with argv lists and ``LC_ALL=C``;
* :func:`boot_unit_text` and :func:`boot_unit_params` describe the systemd unit that
  re-creates the link at boot, as parameters of the hostconfig domain (which plans,
  writes and enables it).

Runs on managed nodes: Python 3.9+, standard library only.
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError

LINK_TYPES = ("rxe", "siw")
KERNEL_MODULES = {"rxe": "rdma_rxe", "siw": "siw"}
UNIT_DIR = "/etc/systemd/system"
# Kernel IB device names: at most IB_DEVICE_NAME_MAX - 1 = 63 bytes; keep to a
# conservative character set so the name is also safe in a systemd unit name.
_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,63}$")
# Linux interface names: IFNAMSIZ - 1 = 15 bytes, no '/', no whitespace.
_NETDEV_RE = re.compile(r"^[^/\s:]{1,15}$")
# The boot unit puts the netdev into a shell command line, where systemd also expands
# '%' and '$': only plain characters there.
_UNIT_NETDEV_RE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")
_UNIT_NAME_RE = re.compile(r"^[A-Za-z0-9:_.@-]+\.service$")


class RdmaLinkError(NvmeError):
    """A validation or command error, with a message meant for the user."""

    def __init__(self, msg, **details):
        super(RdmaLinkError, self).__init__(msg)
        self.msg = msg
        self.details = details


def default_unit_name(name):
    return "aiinfra-soft-roce-%s.service" % name


def validate(name, netdev, link_type, state, persistent=False, unit_name=None):
    """Check the parameters before anything runs; raise RdmaLinkError naming the bad one."""
    if not name or not _NAME_RE.match(name):
        raise RdmaLinkError(
            "name=%r is not a valid RDMA device name (1-63 characters: letters, digits, '_', '.', '-')" % (name,))
    if link_type not in LINK_TYPES:
        raise RdmaLinkError("type=%r is not supported; use one of %s" % (link_type, ", ".join(LINK_TYPES)))
    if state == "present":
        if not netdev:
            raise RdmaLinkError("netdev is required when state=present (the network interface to put %s on)" % name)
        if not _NETDEV_RE.match(netdev):
            raise RdmaLinkError("netdev=%r is not a valid network interface name" % (netdev,))
    if not persistent:
        return
    if unit_name is not None and not _UNIT_NAME_RE.match(unit_name):
        raise RdmaLinkError("unit_name=%r is not a systemd service name such as %s"
                            % (unit_name, default_unit_name(name)))
    if state == "present" and not _UNIT_NETDEV_RE.match(netdev):
        raise RdmaLinkError(
            "netdev=%r cannot go into the boot unit's command line; with persistent=true the interface name may "
            "hold only letters, digits, '_', '.' and '-' (or set persistent=false)" % (netdev,))


def parse_links(text):
    """Parse ``rdma -j link show`` output into a list of link dicts.

    Each dict: ``name`` (the IB device), ``port``, ``state``, ``physical_state``,
    ``netdev`` (``None`` for links without one, e.g. InfiniBand ports).
    """
    text = (text or "").strip()
    if not text:
        return []
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RdmaLinkError("cannot parse 'rdma -j link show' output as JSON: %s" % exc, stdout=text)
    if not isinstance(data, list):
        raise RdmaLinkError("unexpected 'rdma -j link show' output: expected a JSON list", stdout=text)
    links = []
    for entry in data:
        if not isinstance(entry, dict) or "ifname" not in entry:
            continue
        links.append({
            "name": entry["ifname"],
            "port": entry.get("port"),
            "state": entry.get("state"),
            "physical_state": entry.get("physical_state"),
            "netdev": entry.get("netdev"),
        })
    return links


def read_devices(sysfs_class_root="/sys/class/infiniband"):
    """Return ``{name: {"hardware": bool, "driver": str|None}}`` for every RDMA device.

    rdma_rxe and siw devices are virtual: their sysfs node has no ``device`` link to
    a bus device. A PCI (or other bus) RDMA adapter always has one.
    """
    devices = {}
    try:
        names = sorted(os.listdir(sysfs_class_root))
    except OSError:
        return devices
    for name in names:
        dev_link = os.path.join(sysfs_class_root, name, "device")
        hardware = os.path.exists(dev_link)
        driver = None
        drv_link = os.path.join(dev_link, "driver")
        if hardware and os.path.islink(drv_link):
            driver = os.path.basename(os.readlink(drv_link))
        devices[name] = {"hardware": hardware, "driver": driver}
    return devices


def find_link(links, name):
    for link in links:
        if link["name"] == name:
            return link
    return None


def plan_link(links, name, netdev, link_type, state, force=False):
    """Plan the operations that bring ``links`` to the desired state.

    Returns a list of ``{"op": "add"|"delete", "name", "type"?, "netdev"?}`` dicts,
    empty when nothing needs to change. Raises RdmaLinkError for conflicts the
    user must resolve (another software link already owns the netdev, or the link
    exists on another netdev and ``force`` is false).
    """
    current = find_link(links, name)
    if state == "absent":
        return [{"op": "delete", "name": name}] if current else []

    ops = []
    if current is not None:
        if current.get("netdev") == netdev:
            return []
        if not force:
            raise RdmaLinkError(
                "RDMA link %s exists on netdev %s, not on netdev=%s; set force=true to delete and re-create it "
                "(this drops every RDMA connection over %s)" % (name, current.get("netdev"), netdev, name))
        ops.append({"op": "delete", "name": name})
    for link in links:
        if link["name"] != name and link.get("netdev") == netdev:
            # The kernel allows one rxe device per netdev; adding a second fails with EEXIST.
            raise RdmaLinkError(
                "netdev %s already carries RDMA link %s; use name=%s, or remove that link first"
                % (netdev, link["name"], link["name"]), existing=link)
    ops.append({"op": "add", "name": name, "type": link_type, "netdev": netdev})
    return ops


def op_argv(rdma_bin, op):
    """The ``rdma`` command line of one planned operation."""
    if op["op"] == "add":
        return [rdma_bin, "link", "add", op["name"], "type", op["type"], "netdev", op["netdev"]]
    if op["op"] == "delete":
        return [rdma_bin, "link", "delete", op["name"]]
    raise ValueError("unknown operation %r" % (op,))


def op_text(op):
    """The operation as one line for the result, as the ``rdma`` command it runs."""
    return " ".join(op_argv("rdma", op))


def boot_unit_text(name, netdev, link_type):
    """The oneshot unit that loads the kernel module and re-creates the link at boot.

    The text the soft_roce role's template rendered, so hosts it set up keep their unit
    (only the first comment line differs) and boot the same way.
    """
    return "\n".join((
        "# Managed by the aiinfra.fabric rdma_link module; local changes are overwritten.",
        "# aiinfra.fabric soft_roce role: re-create the %s RDMA link %s" % (link_type, name),
        "# on %s at boot (rdma links do not survive a reboot)." % netdev,
        "[Unit]",
        "Description=aiinfra.fabric soft-RoCE link %s on %s" % (name, netdev),
        "After=network.target",
        "Before=aiinfra-nvmet.service nvmet.service nvmf-autoconnect.service",
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        "ExecStart=/sbin/modprobe %s" % KERNEL_MODULES[link_type],
        "ExecStart=/bin/sh -c 'rdma link show %s/1 >/dev/null 2>&1 || rdma link add %s type %s netdev %s'"
        % (name, name, link_type, netdev),
        "",
        "[Install]",
        "WantedBy=multi-user.target",
        "",
    ))


def boot_unit_params(unit_name, state, name=None, netdev=None, link_type="rxe"):
    """The boot unit as hostconfig parameters (``hostconfig.state.validate`` takes them).

    present: the unit file (root:root 0644) and the unit enabled, not started (the link
    exists already); absent: the unit stopped and disabled, then its file removed.
    """
    path = "%s/%s" % (UNIT_DIR, unit_name)
    if state == "present":
        return {"files": [{"path": path, "content": boot_unit_text(name, netdev, link_type),
                           "owner": "root", "group": "root", "mode": "0644"}],
                "units": [{"name": unit_name, "enabled": True}]}
    return {"units": [{"name": unit_name, "enabled": False, "started": False}], "absent": [path]}


class RdmaLinkRunner(object):
    """Runs ``rdma`` through an AnsibleModule-like ``run_command``."""

    def __init__(self, run_command, rdma_bin="rdma"):
        self._run = run_command
        self.rdma_bin = rdma_bin

    def _call(self, argv):
        rc, out, err = self._run(argv, environ_update={"LC_ALL": "C"})
        if rc != 0:
            raise RdmaLinkError(
                "'%s' failed (rc=%d): %s" % (" ".join(argv), rc, (err or out).strip()),
                cmd=argv, rc=rc, stdout=out, stderr=err)
        return out

    def links(self):
        return parse_links(self._call([self.rdma_bin, "-j", "link", "show"]))

    def apply(self, ops):
        for op in ops:
            self._call(op_argv(self.rdma_bin, op))
