# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The NVMe/TCP TLS keys an nvmet target holds, from its nvmet_target document.

The 6.12 kernel's target takes no PSK in configfs: tlshd looks the PSK up in the
``.nvme`` keyring under the identity the host sends (``NVMe0R<hh> <hostnqn>
<subsysnqn>``). So the target needs one key per host and subsystem it serves over a
TLS port, and one for the discovery subsystem, which ``nvme discover`` and the boot
time ``nvme connect-all`` reach over the same TLS port before any I/O subsystem.
The PSKs are the hosts' own (the same value on both sides); this module only pairs
them with NQNs, it never reads or logs one.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import DISCOVERY_NQN, NvmetError


class TlsKeyError(NvmetError):
    """A host allowed on a port that requires TLS has no PSK; ``errors`` lists each."""

    def __init__(self, errors):
        super().__init__("nvmeof_target: %d host(s) cannot connect over TLS, nothing was changed: %s"
                         % (len(errors), "; ".join(errors)))
        self.errors = errors


def tls_ports(document):
    """{port id: 'required' or 'allowed'} for the document's ports with tsas tls1.3."""
    out = {}
    for p in document.get("ports") or []:
        addr = p.get("addr") or {}
        if addr.get("tsas") == "tls1.3":
            out[p["portid"]] = "allowed" if addr.get("treq") == "not required" else "required"
    return out


def target_tls_keys(document, host_psks):
    """The keys [{hostnqn, subsysnqn, psk}] for every subsystem linked to a TLS port.

    ``host_psks``: {hostnqn: configured PSK}. A subsystem with allow_any_host gets a key
    for every host that has a PSK. A listed host without a PSK is an error on a port that
    requires TLS (it could never connect) and is left out on one that allows plain TCP.
    """
    ports = tls_ports(document)
    psks = dict((k, v) for k, v in (host_psks or {}).items() if v)
    keys, errors, pairs = [], [], set()

    def add(hostnqn, subsysnqn):
        if (hostnqn, subsysnqn) not in pairs:
            pairs.add((hostnqn, subsysnqn))
            keys.append({"hostnqn": hostnqn, "subsysnqn": subsysnqn, "psk": psks[hostnqn]})

    for s in document.get("subsystems") or []:
        modes = set(ports[p["portid"]] for p in document.get("ports") or []
                    if p["portid"] in ports and s["nqn"] in (p.get("subsystems") or []))
        if not modes:
            continue
        any_host = str((s.get("attr") or {}).get("allow_any_host", "0")) == "1"
        hosts = sorted(psks) if any_host else list(s.get("allowed_hosts") or [])
        for hostnqn in hosts:
            if hostnqn in psks:
                add(hostnqn, s["nqn"])
                add(hostnqn, DISCOVERY_NQN)
            elif "required" in modes:
                errors.append("host %s is allowed on %s, which a port requiring TLS exports, but has no TLS PSK "
                              "(set nvmeof_initiator_tls_psk in that host's variables, or list it in "
                              "nvmeof_target_tls_psks)" % (hostnqn, s["nqn"]))
    if errors:
        raise TlsKeyError(errors)
    return sorted(keys, key=lambda k: (k["hostnqn"], k["subsysnqn"]))
