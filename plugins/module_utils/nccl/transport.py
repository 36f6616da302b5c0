# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Which path NCCL really took, from its own NCCL_DEBUG=INFO lines (pure).

A good-looking number over the wrong path is a false pass: NCCL falls back to TCP
sockets without failing when InfiniBand is missing, and runs without GPUDirect RDMA
when the peer-memory module is not loaded. Its INFO lines say what it chose:

    host:pid:tid [dev] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ...
    host:pid:tid [dev] NCCL INFO Using network IB | Socket | IBext_v8 | AWS Libfabric
    host:pid:tid [dev] NCCL INFO Channel 00/0 : 9[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
    host:pid:tid [dev] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read | P2P/IPC | SHM/direct/direct
    host:pid:tid [dev] NCCL INFO 32 coll channels, 32 collnet channels, 16 nvls channels, 32 p2p channels, ...

``parse(text)``                   per-rank facts (network, NICs, transport per channel, GDR, NVLS)
``check(facts, require)``         failure messages for a requirement (``{network: ib, gdr: true}``)
``debug_environment(env)``        the environment that makes NCCL print those lines
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.parse import strip_launcher_prefix
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.errors import NcclError

_LINE = re.compile(r"(?P<host>[^\s:\[\]]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\] NCCL (?P<level>INFO|WARN) "
                   r"(?P<msg>.*?)\s*$")
_COMM = re.compile(r"\bcomm 0x[0-9a-fA-F]+ rank (\d+) n[Rr]anks (\d+)")
_CHANNEL = re.compile(r"^Channel (\d+)(?:/\d+)? : (\d+)\[[0-9a-fA-F]+\] -> (\d+)\[[0-9a-fA-F]+\] "
                      r"(?:\[(send|receive)\] )?via (.+)$")
_USING_NETWORK = re.compile(r"^Using network (.+)$")
_NET_IB_USING = re.compile(r"^NET/IB ?: Using (.*)$")
_NET_SOCKET_USING = re.compile(r"^NET/Socket ?: Using (.*)$")
_DEVICE = re.compile(r"\[\d+\]([^\s\[;]+)")
_GDR = re.compile(r"GPU Direct RDMA (Enabled|Disabled) for (.*)$")
_COUNTS = re.compile(r"^(\d+) coll channels,(?: (\d+) collnet channels,)?(?: (\d+) nvls channels,)? (\d+) p2p channels")
_NVLS_SUPPORT = re.compile(r"^NVLS multicast support is (not )?available")

NETWORKS = ("ib", "socket")
REQUIRE_KEYS = ("network", "gdr", "nvls", "all_ranks", "min_nics")


class TransportError(NcclError):
    """A requirement or environment that cannot work; the message says what to change."""


# --------------------------------------------------------------------------- parse

def _new(host, pid, dev):
    return {"rank": None, "host": host, "pid": int(pid), "device": int(dev), "nranks": None,
            "network": None, "nics": [], "socket_interfaces": [], "channels": {}, "net_channels": 0,
            "gdr_channels": 0, "gdr_enabled": [], "gdr_disabled": [], "nvls_support": None,
            "nvls_channels": None, "nvls_heads": False, "coll_channels": None, "p2p_channels": None,
            "net_names": [], "net_devices": [], "warnings": []}


def parse(text):
    """``{'lines', 'ranks': [...], 'nranks', ...}`` from NCCL's INFO/WARN lines in ``text``.

    Lines are grouped per process and device (``host:pid ... [dev]``), which is one rank;
    the rank number comes from the ``comm ... rank R nranks N`` line or from the channel
    lines it printed. Other lines (the nccl-tests table) are ignored.
    """
    procs = {}
    order = []
    count = 0
    for raw in (text or "").splitlines():
        line = strip_launcher_prefix(raw)[1]
        m = _LINE.search(line)
        if not m:
            continue
        count += 1
        key = (m.group("host"), m.group("pid"), m.group("dev"))
        if key not in procs:
            procs[key] = _new(*key)
            order.append(key)
        _read(procs[key], m.group("level"), m.group("msg"))
    ranks = [_finish(procs[k]) for k in order]
    ranks.sort(key=lambda r: (r["rank"] is None, r["rank"] if r["rank"] is not None else 0, r["host"], r["pid"]))
    nranks = max([r["nranks"] for r in ranks if r["nranks"]] or [0]) or None
    return {
        "lines": count,
        "nranks": nranks,
        "ranks": ranks,
        "networks": sorted(set(r["network"] for r in ranks if r["network"])),
        "transports": sorted(set(t for r in ranks for t in r["transports"])),
        "gdr": _all_or_none([r["gdr"] for r in ranks]),
        "nvls": _all_or_none([r["nvls"] for r in ranks]),
    }


def _read(proc, level, msg):
    if level == "WARN":
        proc["warnings"].append(msg)
        return
    m = _COMM.search(msg)
    if m:
        proc["rank"], proc["nranks"] = int(m.group(1)), int(m.group(2))
        return
    m = _CHANNEL.match(msg)
    if m:
        channel, src, dst, direction, via = m.groups()
        if proc["rank"] is None:
            proc["rank"] = int(dst) if direction == "receive" else int(src)
        _channel(proc, int(channel), via.strip())
        return
    m = _USING_NETWORK.match(msg)
    if m:
        proc["network"] = m.group(1).strip()
        return
    m = _NET_IB_USING.match(msg)
    if m:
        proc["nics"] = _DEVICE.findall(m.group(1))
        return
    m = _NET_SOCKET_USING.match(msg)
    if m:
        proc["socket_interfaces"] = _DEVICE.findall(m.group(1))
        return
    m = _GDR.search(msg)
    if m:
        proc["gdr_enabled" if m.group(1) == "Enabled" else "gdr_disabled"].append(m.group(2).strip())
        return
    m = _COUNTS.match(msg)
    if m:
        proc["coll_channels"] = int(m.group(1))
        proc["nvls_channels"] = int(m.group(3)) if m.group(3) is not None else proc["nvls_channels"]
        proc["p2p_channels"] = int(m.group(4))
        return
    m = _NVLS_SUPPORT.match(msg)
    if m:
        proc["nvls_support"] = m.group(1) is None
        return
    if msg.startswith("NVLS Head") or msg.startswith("Connected NVLS"):
        proc["nvls_heads"] = True


def _channel(proc, channel, via):
    parts = via.split("/")
    kind = parts[0]
    if kind == "NET" and len(parts) > 1:
        label = "NET/" + parts[1]
        proc["net_channels"] += 1
        if "GDRDMA" in parts[2:]:
            proc["gdr_channels"] += 1
        if parts[1] not in proc["net_names"]:
            proc["net_names"].append(parts[1])
        if len(parts) > 2 and parts[2].isdigit() and int(parts[2]) not in proc["net_devices"]:
            proc["net_devices"].append(int(parts[2]))
    else:
        label = "/".join(parts[:2]) if kind == "P2P" and len(parts) > 1 else kind
    proc["channels"].setdefault(label, set()).add(channel)


def _finish(proc):
    channels = proc.pop("channels")
    proc["transports"] = dict((k, len(v)) for k, v in sorted(channels.items()))
    if proc["net_channels"]:
        proc["gdr"] = proc["gdr_channels"] == proc["net_channels"]
    elif proc["gdr_disabled"] and not proc["gdr_enabled"]:
        proc["gdr"] = False
    else:
        proc["gdr"] = None
    if proc["nvls_channels"] is not None:
        proc["nvls"] = proc["nvls_channels"] > 0
    elif proc["nvls_heads"]:
        proc["nvls"] = True
    elif proc["nvls_support"] is False:
        proc["nvls"] = False
    else:
        proc["nvls"] = None
    # The network the rank's channels used; else the one NCCL selected at init.
    # The NICs the rank's network channels went through (NET/IB/<index>), by name when
    # the rank printed its device list.
    proc["nics_used"] = [proc["nics"][i] if i < len(proc["nics"]) else "#%d" % i
                         for i in sorted(proc.pop("net_devices"))]
    used = proc.pop("net_names")
    proc["network_used"] = used[0] if len(used) == 1 else (", ".join(used) if used else None)
    if proc["network_used"]:
        proc["network_source"] = "channels"
    elif proc["network"]:
        proc["network_source"] = "Using network"
    elif proc["nics"] or proc["socket_interfaces"]:
        # Older NCCL prints no "Using network" line: the NET/IB device list means IB was
        # taken; NET/Socket's list alone means it was not.
        proc["network"] = "IB" if proc["nics"] else "Socket"
        proc["network_source"] = "device list"
    else:
        proc["network_source"] = None
    return proc


def _all_or_none(values):
    known = [v for v in values if v is not None]
    if not known:
        return None
    return all(known)


def _family(name):
    """``IB``, ``IBext_v8`` (NVIDIA's RDMA plugin) -> ``ib``; ``Socket`` -> ``socket``; else lower-case."""
    lowered = (name or "").strip().lower()
    if lowered == "ib" or lowered.startswith("ibext"):
        return "ib"
    return lowered


# --------------------------------------------------------------------------- requirement

def normalize_requirement(require):
    """A clean requirement dict, or None when nothing is required. Raises TransportError."""
    if not require:
        return None
    if not isinstance(require, dict):
        raise TransportError("require_transport must be a mapping such as {network: ib, gdr: true}, got %r"
                             % (require,))
    unknown = sorted(set(require) - set(REQUIRE_KEYS))
    if unknown:
        raise TransportError("require_transport has unknown keys %s (known: %s)"
                             % (", ".join(unknown), ", ".join(REQUIRE_KEYS)))
    out = {"network": None, "gdr": None, "nvls": None, "all_ranks": True, "min_nics": None}
    if require.get("network") not in (None, ""):
        out["network"] = _family(str(require["network"]))
    for key in ("gdr", "nvls", "all_ranks"):
        value = require.get(key)
        if value is None:
            continue
        if not isinstance(value, bool):
            raise TransportError("require_transport.%s must be true or false, got %r" % (key, value))
        out[key] = value
    if require.get("min_nics") is not None:
        value = require["min_nics"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TransportError("require_transport.min_nics must be a positive integer, got %r" % (value,))
        out["min_nics"] = value
    if out["network"] is None and not out["gdr"] and out["nvls"] is None and out["min_nics"] is None:
        return None
    return out


def _who(rank):
    return "rank %s (%s pid %s dev %s)" % (rank["rank"] if rank["rank"] is not None else "?", rank["host"],
                                           rank["pid"], rank["device"])


def check(facts, require):
    """Failure messages (empty: the requirement is proven on every rank that must prove it)."""
    require = normalize_requirement(require)
    if require is None:
        return []
    if not facts or not facts["lines"]:
        return ["the transport requirement %s cannot be proven: NCCL printed no INFO lines (NCCL_DEBUG=INFO did not "
                "reach the ranks, or NCCL_DEBUG_FILE sent them elsewhere)" % _describe(require)]
    ranks = facts["ranks"]
    failures = []
    if require["all_ranks"] and facts["nranks"]:
        seen = set(r["rank"] for r in ranks if r["rank"] is not None)
        missing = [i for i in range(facts["nranks"]) if i not in seen]
        if missing:
            failures.append("ranks %s of %d printed no NCCL INFO lines, so their transport is not proven"
                            % (_ranges(missing), facts["nranks"]))
    if require["network"]:
        failures += _check_network(ranks, require)
    if require["gdr"]:
        failures += _check_gdr(ranks, require)
    if require["nvls"] is not None:
        for r in ranks:
            if r["nvls"] is not require["nvls"] and (require["all_ranks"] or r["nvls"] is not None):
                failures.append("%s: NVLS %s, required %s" % (
                    _who(r), {True: "in use", False: "not in use (%s)" % _nvls_why(r), None: "not reported"}[r["nvls"]],
                    "on" if require["nvls"] else "off"))
    if require["min_nics"]:
        for r in ranks:
            if r["nics"] and len(r["nics"]) < require["min_nics"]:
                failures.append("%s: NCCL found %d NIC(s) (%s), required at least %d" % (
                    _who(r), len(r["nics"]), " ".join(r["nics"]), require["min_nics"]))
        if not any(r["nics"] for r in ranks):
            failures.append("no rank printed its NET/IB device list, so min_nics=%d is not proven" % require["min_nics"])
    return failures


def _check_network(ranks, require):
    wanted = require["network"]
    failures = []
    proven = 0
    for r in ranks:
        names = [n.strip() for n in (r["network_used"] or "").split(",") if n.strip()] or (
            [r["network"]] if r["network"] else [])
        if not names:
            if require["all_ranks"]:
                failures.append("%s: no 'Using network' or channel line, so its network is not proven" % _who(r))
            continue
        wrong = [n for n in names if _family(n) != wanted]
        if wrong:
            socket = any(_family(n) == "socket" for n in wrong)
            failures.append("%s used NET/%s%s - %s; required network %s" % (
                _who(r), "/".join(wrong),
                " on %d channel(s)" % r["net_channels"] if r["net_channels"] else "",
                "a silent fallback to TCP sockets" if socket and wanted != "socket" else "not the required network",
                wanted))
        else:
            proven += 1
    if not ranks or (not proven and not failures):
        failures.append("no rank reported a network transport, so network=%s is not proven (a single-node run uses "
                        "none: require a network on multi-node runs)" % wanted)
    return failures


def _check_gdr(ranks, require):
    failures = []
    net_ranks = [r for r in ranks if r["net_channels"]]
    for r in ranks:
        if r["net_channels"] and r["gdr_channels"] < r["net_channels"]:
            failures.append("%s: %d of %d network channel(s) without GPUDirect RDMA (no /GDRDMA): data is staged "
                            "through host memory" % (_who(r), r["net_channels"] - r["gdr_channels"], r["net_channels"]))
        elif r["gdr_disabled"] and not r["net_channels"]:
            failures.append("%s: NCCL says GPU Direct RDMA Disabled for %s" % (_who(r), "; ".join(r["gdr_disabled"])))
    if not net_ranks and not failures:
        failures.append("no rank printed a channel over the network, so gdr=true is not proven (NCCL_DEBUG_SUBSYS "
                        "must include INIT; a single-node run has no network channel)")
    return failures


def _nvls_why(rank):
    if rank["nvls_support"] is False:
        return "NVLS multicast support is not available"
    if rank["nvls_channels"] == 0:
        return "0 nvls channels"
    return "no NVLS line"


def _describe(require):
    return ", ".join("%s=%s" % (k, str(v).lower() if isinstance(v, bool) else v)
                     for k, v in require.items() if v is not None and k != "all_ranks")


def _ranges(numbers):
    """``[1, 2, 3, 7]`` -> ``1-3,7``."""
    spans = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in spans)


def summary(facts):
    """One line: ``IB on 16 ranks (mlx5_0:1/IB, ...), GDR on all, NVLS off`` - for the report."""
    if not facts or not facts["lines"]:
        return "no NCCL INFO lines"
    ranks = facts["ranks"]
    parts = []
    nets = {}
    for r in ranks:
        name = r["network_used"] or r["network"]
        if name:
            nets[name] = nets.get(name, 0) + 1
    parts.append(", ".join("%s on %d rank(s)" % (k, v) for k, v in sorted(nets.items())) or "no network")
    transports = sorted(set(t for r in ranks for t in r["transports"]))
    if transports:
        parts.append("channels via " + ", ".join(transports))
    parts.append("GDR %s" % {True: "on", False: "OFF", None: "not reported"}[facts["gdr"]])
    parts.append("NVLS %s" % {True: "on", False: "off", None: "not reported"}[facts["nvls"]])
    return "; ".join(parts)


# --------------------------------------------------------------------------- environment

def debug_environment(env):
    """``(env, notes)``: ``env`` with NCCL_DEBUG=INFO and the INIT subsystem.

    Raises TransportError when NCCL_DEBUG_FILE would send the lines to a file this module
    does not read.
    """
    env = dict(env or {})
    notes = []
    if env.get("NCCL_DEBUG_FILE"):
        raise TransportError("require_transport needs NCCL's INFO lines on the job's output, but NCCL_DEBUG_FILE=%s "
                             "sends them to files: remove NCCL_DEBUG_FILE from environment" % env["NCCL_DEBUG_FILE"])
    level = str(env.get("NCCL_DEBUG") or "").upper()
    if level not in ("INFO", "TRACE"):
        notes.append("NCCL_DEBUG=%s was raised to INFO to prove the transport" % (env.get("NCCL_DEBUG") or "unset"))
        env["NCCL_DEBUG"] = "INFO"
    # The channel, NET/IB and "Using network" lines are logged under INIT (with NET or P2P);
    # NCCL's default subsystem list (INIT,BOOTSTRAP,ENV; INIT in older releases) has it.
    # Left unset, then: srun --export cannot carry a comma-separated value.
    subsys = env.get("NCCL_DEBUG_SUBSYS")
    if subsys:
        names = [s.strip().upper() for s in str(subsys).split(",") if s.strip()]
        if "ALL" not in names and "INIT" not in names and not any(s.startswith("^") for s in names):
            env["NCCL_DEBUG_SUBSYS"] = ",".join(names + ["INIT"])
            notes.append("NCCL_DEBUG_SUBSYS=%s was extended with INIT to prove the transport" % subsys)
    return env, notes
