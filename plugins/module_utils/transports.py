# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVMe-oF transports: one row per transport, everything the collection knows about it.

The target side (nvmet package, also shipped to hosts as the boot-time restorer), the host
side (nvme package), the roles (through the aiinfra.fabric.nvme_transports lookup) and the
tests all read this table; nothing else spells a transport's kernel module, address rules or
abilities. Standard library only, Python 3.9.

A new transport is a new row; then the places that must stay static YAML (the module
documentation and the roles' argument specs) list it, and
tests/unit/plugins/module_utils/test_transports.py fails until they do. docs/architecture.md
("Adding a transport") names those files.
"""

from __future__ import annotations

from collections import namedtuple

# The NVMe/TCP and NVMe/RDMA well-known port (IANA "nvme"); also the default of trsvcid.
DEFAULT_SERVICE_ID = "4420"

Transport = namedtuple("Transport", (
    # As nvmet's addr_trtype, nvme-cli's --transport and the kernel's sysfs "transport" spell it.
    "name",
    # The kernel module that serves the transport on a target, and the host (initiator)
    # driver, both as /sys/module lists them (modprobe takes the same name).
    "target_module",
    "host_module",
    # What traddr is: "ip" (an IPv4 or IPv6 address), "fc" (nn-0x<16 hex>:pn-0x<16 hex>) or
    # None (the transport has no address: loop).
    "address",
    # The address families (addr_adrfam) an nvmet port of this transport can have.
    "adrfams",
    # The default service id (trsvcid); None when the transport has none.
    "service_id",
    # NVMe/TCP TLS: a port's addr_tsas (tls1.3), nvme connect --tls/--concat.
    "tls",
    # nvme connect --host-iface (host_iface=): the kernel takes it for this transport only.
    "host_iface",
    # inline_data_size an enabled nvmet port settles on when it is left to the transport
    # (below 0), in pages, and the largest the transport takes (None: no cap; the cap is at
    # least one page). Linux 6.12 tcp.c and rdma.c.
    "inline_data_pages",
    "inline_data_max",
    # Where nvmet_target sees who is connected to a port without debugfs (nvmet/model.py):
    # "sockets" (established sockets in /proc/net/tcp{,6}), "cm_ids" (connected RDMA CM ids,
    # rdma res show cm_id), "host_controllers" (this host's own controllers in
    # /sys/class/nvme), None (cannot tell: the port counts as possibly in use).
    "peers",
    # The firewall rule a target port of this transport needs, (protocol, port): port None
    # means the port's own service id. None: no IP firewall rule.
    "firewall",
    # Packages a target needs besides nvme-cli for this transport (nvmeof_target role).
    "target_packages",
))

# nvme-cli's order (its --transport help, and the modules' choices).
TRANSPORTS = (
    Transport("tcp", target_module="nvmet_tcp", host_module="nvme_tcp", address="ip", adrfams=("ipv4", "ipv6"),
              service_id=DEFAULT_SERVICE_ID, tls=True, host_iface=True, inline_data_pages=4, inline_data_max=None,
              peers="sockets", firewall=("tcp", None), target_packages=()),
    # RoCEv2 carries RDMA in UDP datagrams to port 4791, whatever the service id.
    Transport("rdma", target_module="nvmet_rdma", host_module="nvme_rdma", address="ip",
              adrfams=("ipv4", "ipv6", "ib"), service_id=DEFAULT_SERVICE_ID, tls=False, host_iface=False,
              inline_data_pages=1, inline_data_max=16384, peers="cm_ids", firewall=("udp", "4791"),
              target_packages=("rdma-core",)),
    Transport("fc", target_module="nvmet_fc", host_module="nvme_fc", address="fc", adrfams=("fc",), service_id=None,
              tls=False, host_iface=False, inline_data_pages=0, inline_data_max=None, peers=None, firewall=None,
              target_packages=()),
    # The target and the host driver of loop are one module.
    Transport("loop", target_module="nvme_loop", host_module="nvme_loop", address=None, adrfams=(), service_id=None,
              tls=False, host_iface=False, inline_data_pages=0, inline_data_max=None, peers="host_controllers",
              firewall=None, target_packages=()),
)


def _unique(items):
    out = []
    for item in items:
        if item not in out:
            out.append(item)
    return tuple(out)


BY_NAME = dict((t.name, t) for t in TRANSPORTS)
NAMES = tuple(t.name for t in TRANSPORTS)
# Every address family nvmet knows, in the table's order (ipv4, ipv6, ib, fc).
ADRFAMS = _unique(f for t in TRANSPORTS for f in t.adrfams)


def get(name):
    """The row of ``name``; None when the table has no such transport."""
    return BY_NAME.get(name)


def names(**features):
    """The names of the transports whose fields equal ``features``, in the table's order:
    ``names(tls=True)`` -> ("tcp",), ``names(address="ip")`` -> ("tcp", "rdma")."""
    return tuple(t.name for t in TRANSPORTS if all(getattr(t, k) == v for k, v in features.items()))


# The transports addressed by IP: what the nvmeof_target and nvmeof_initiator roles offer
# (their topologies are IP addresses, service ids and firewall rules).
IP_TRANSPORTS = names(address="ip")


def module_word(module):
    """A kernel module as modprobe and messages spell it (nvme_tcp -> nvme-tcp)."""
    return module.replace("_", "-")


def spelled(transport_names, word="or"):
    """"tcp", "tcp or rdma", "tcp, rdma or fc": names for a message."""
    transport_names = list(transport_names)
    if len(transport_names) < 2:
        return "".join(transport_names)
    return "%s %s %s" % (", ".join(transport_names[:-1]), word, transport_names[-1])


def as_dict(transport):
    """A row as plain data (lists for tuples), as the lookup hands it to Jinja."""
    out = transport._asdict()
    for key, value in out.items():
        if isinstance(value, tuple):
            out[key] = list(value)
    return dict(out)
