# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: nvme_transports
short_description: The NVMe-oF transports the collection knows, one row each
version_added: 0.1.0
description:
  - Returns the collection's table of NVMe-oF transports (C(tcp), C(rdma), C(fc), C(loop)), the one the modules
    validate against - each transport's name, kernel modules, address rules and abilities - so roles and playbooks
    derive kernel module names, firewall rules and the like from it instead of spelling them again.
  - Without terms, every transport in the table's order; with terms, the rows of the named transports in the order
    named (an unknown name is an error).
  - Use C(query) (or C(lookup) with C(wantlist=true)) to get a list.
options:
  _terms:
    description: Names of transports (optional).
    type: list
    elements: str
    required: false
author:
  - aiinfra.fabric developers (@aiinfra)
"""

EXAMPLES = r"""
- name: Load the target kernel module of each transport the ports use
  community.general.modprobe:
    name: "{{ item }}"
  loop: "{{ query('aiinfra.fabric.nvme_transports', 'rdma', 'tcp') | map(attribute='target_module') | list }}"

- name: Show the transports that can run TLS
  ansible.builtin.debug:
    msg: "{{ query('aiinfra.fabric.nvme_transports') | selectattr('tls') | map(attribute='name') | list }}"
"""

RETURN = r"""
_list:
  description: One dict per transport.
  type: list
  elements: dict
  contains:
    name:
      description: The name as nvmet's C(addr_trtype) and nvme-cli's C(--transport) spell it.
      type: str
      sample: rdma
    target_module:
      description: The kernel module that serves the transport on a target (C(nvmet_rdma)).
      type: str
    host_module:
      description: The host (initiator) driver (C(nvme_rdma)).
      type: str
    address:
      description: What the transport address is - C(ip), C(fc), or null (no address, loop).
      type: str
    adrfams:
      description: The address families an nvmet port of the transport can have.
      type: list
      elements: str
    service_id:
      description: The default service id (C(4420)); null when the transport has none.
      type: str
    tls:
      description: Whether the transport can run TLS (NVMe/TCP).
      type: bool
    host_iface:
      description: Whether a host can bind a connection to an interface (C(host_iface)).
      type: bool
    inline_data_pages:
      description: The inline data size, in pages, of a port that leaves it to the transport.
      type: int
    inline_data_max:
      description: The largest inline data size the transport takes; null for no cap.
      type: int
    peers:
      description: Where live connections to a target port are seen without debugfs (C(sockets), C(cm_ids),
        C(host_controllers)), null when they cannot be.
      type: str
    firewall:
      description: The firewall rule a target port needs, C([protocol, port]) (port null - the port's service id);
        null for none.
      type: list
      elements: str
    target_packages:
      description: Packages a target needs for the transport besides nvme-cli.
      type: list
      elements: str
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if kwargs:
            raise AnsibleLookupError("aiinfra.fabric.nvme_transports takes no options, got %s" % ", ".join(sorted(kwargs)))
        if not terms:
            return [transports.as_dict(t) for t in transports.TRANSPORTS]
        unknown = [name for name in terms if transports.get(name) is None]
        if unknown:
            raise AnsibleLookupError("aiinfra.fabric.nvme_transports: %s is not one of %s"
                                     % (", ".join(repr(n) for n in unknown), ", ".join(transports.NAMES)))
        return [transports.as_dict(transports.get(name)) for name in terms]
