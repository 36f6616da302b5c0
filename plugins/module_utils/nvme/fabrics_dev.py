# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connecting through the kernel's fabrics device (/dev/nvme-fabrics) without nvme-cli.

``nvme connect`` itself writes one option string (``nqn=...,transport=...,...``) to
/dev/nvme-fabrics and reads back ``instance=N,cntlid=M``; this file does the same, for
two cases.

Every connect that carries a secret - a DH-HMAC-CHAP secret of the host or the controller,
a TLS key - on every nvme-cli release: nvme-cli takes secrets only on its command line
(``--dhchap-secret=...``), which any local user reads in /proc/PID/cmdline while it runs.
Written here, the secrets go from this process's memory to the kernel in one write(2). The
TLS key goes as the kernel takes it, a key serial (``tls_key=<serial>``; a PSK given in
interchange format is first put into the keyring, tls/load.py), the keyring as a serial too.
A discovery controller that needs the host's secret is made here as well, its log then read
by ``nvme discover --device`` (:func:`discover_through_kernel`). nvme-cli itself, on every
release from 2.3 to 2.16 (libnvme 1.3 to 1.16, build_options), never passes the host's
secret to a discovery controller, though ``nvme discover`` takes ``--dhchap-secret``.

And one machine connecting to the same subsystem and address as a second host identity,
which nvme-cli gets wrong. Before it writes, nvme-cli looks for a controller of
the same subsystem NQN, transport, traddr, trsvcid, host_traddr and host_iface and
stops with "already connected" when it finds one. nvme-cli 2.3 to 2.5 (Debian 12 ships
2.3) search the controllers of every host NQN, so a second identity is refused whatever
its --hostnqn/--hostid, and --duplicate-connect does not lift the check until 2.9
(upstream fixes 9cf31d24f "only look for matching ctrl on same host", in 2.6, and
fd8ecb054 "allow host to create duplicate connections", in 2.9). The kernel compares the
host NQN and host ID as well (nvmf_ctlr_matches_baseopts), so it accepts the second
identity and keeps refusing a real duplicate with EALREADY.
"""

from __future__ import annotations

import errno
import os
import uuid

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import (
    KernelLog,
    NvmeCliError,
    classify_failure,
    failure_hint,
)

FABRICS_DEV = "/dev/nvme-fabrics"
DISCOVERY_NQN = "nqn.2014-08.org.nvmexpress.discovery"

# The kernel's option names (drivers/nvme/host/fabrics.c opt_tokens), by the module
# parameter that feeds them, in the order nvme-cli writes them.
KERNEL_OPTIONS = (
    ("nqn", "nqn"),
    ("transport", "transport"),
    ("traddr", "traddr"),
    ("host_traddr", "host_traddr"),
    ("host_iface", "host_iface"),
    ("trsvcid", "trsvcid"),
    ("hostnqn", "hostnqn"),
    ("hostid", "hostid"),
    ("dhchap_secret", "dhchap_secret"),
    ("dhchap_ctrl_secret", "dhchap_ctrl_secret"),
    ("nr_io_queues", "nr_io_queues"),
    ("queue_size", "queue_size"),
    ("keep_alive_tmo", "keep_alive_tmo"),
    ("reconnect_delay", "reconnect_delay"),
    ("ctrl_loss_tmo", "ctrl_loss_tmo"),
    ("fast_io_fail_tmo", "fast_io_fail_tmo"),
    # Key serials (numbers), not key data: tls/load.py resolves names and PSKs to them.
    ("keyring", "keyring"),
    ("tls_key", "tls_key"),
)
# Options without a value, written as the bare word when true.
KERNEL_FLAGS = ("tls", "concat")
SECRET_KEYS = ("dhchap_secret", "dhchap_ctrl_secret")
# What makes a connect go through the kernel's device (the TLS key is a serial or a PSK).
SECRET_PARAMS = SECRET_KEYS + ("tls_key",)


def carries_secret(values):
    """Whether a connect with ``values`` carries a secret (so never goes through nvme-cli)."""
    return any(values.get(key) for key in SECRET_PARAMS)


# libnvme (build_options) leaves out a number option that is not positive - the kernel's
# default applies then (keep_alive_tmo=0 is its 5 s, fast_io_fail_tmo=-1 its "off") - except
# ctrl_loss_tmo, which it writes from -1 (reconnect for ever) up; so does this file.
POSITIVE_ONLY = ("nr_io_queues", "queue_size", "keep_alive_tmo", "reconnect_delay", "fast_io_fail_tmo")


def kernel_options(values):
    """The option string for /dev/nvme-fabrics. The kernel splits it at commas and
    newlines, so a value holding either is refused here rather than misread there."""
    parts = []
    for key, name in KERNEL_OPTIONS:
        value = values.get(key)
        if value is None or value == "" or (key in POSITIVE_ONLY and isinstance(value, int) and value <= 0):
            continue
        text = str(value)
        if "," in text or "\n" in text:
            raise NvmeCliError("%s holds a comma or newline, which the kernel's option string cannot carry"
                               % (name if key in SECRET_KEYS else "%s=%r" % (name, text)), kind="invalid_arguments")
        parts.append("%s=%s" % (name, text))
    parts.extend(flag for flag in KERNEL_FLAGS if values.get(flag))
    return ",".join(parts)


def with_hostid(values):
    """``values`` with the host ID nvme-cli 2.13 (libnvme 1.13, nvme_host_get_ids) would send
    when none is given: the UUID of a ``...:uuid:<UUID>`` host NQN. Without one the kernel
    uses its own default host ID."""
    if values.get("hostid") or not values.get("hostnqn"):
        return values
    tail = values["hostnqn"].rsplit(":uuid:", 1)
    try:
        return dict(values, hostid=str(uuid.UUID(tail[1]))) if len(tail) == 2 else values
    except ValueError:
        return values


def redact_options(options):
    """The option string with the DH-HMAC-CHAP secrets masked (for results and messages)."""
    out = []
    for part in options.split(","):
        name = part.split("=", 1)[0]
        out.append(name + "=********" if name in SECRET_KEYS else part)
    return ",".join(out)


def parse_instance(reply):
    """The controller name from the kernel's reply (``instance=3,cntlid=1`` -> nvme3)."""
    for field in reply.replace("\n", ",").split(","):
        name, dummy, value = field.partition("=")
        if name.strip() == "instance" and value.strip().isdigit():
            return "nvme%d" % int(value)
    return None


def connect_through_kernel(values, dev=FABRICS_DEV, kmsg_path="/dev/kmsg"):
    """Create one controller as ``values`` says; return its name (nvme3).

    Raises NvmeCliError with the same kinds as a failed ``nvme connect`` (the errno's
    words and the kernel's log classified by :func:`cli.classify_failure`)."""
    options = kernel_options(with_hostid(values))
    shown = "write %s to %s" % (redact_options(options), dev)
    log = KernelLog(kmsg_path)
    log.mark()
    try:
        fd = os.open(dev, os.O_RDWR)
    except OSError as exc:
        log.close()
        raise NvmeCliError("cannot open %s: %s (is the nvme-fabrics kernel module loaded?)" % (dev, exc.strerror),
                           kind="transport_module", cmd=shown) from None
    try:
        try:
            written = os.write(fd, options.encode("utf-8"))
            if written != len(options.encode("utf-8")):
                raise OSError(errno.EIO, "short write (%d bytes)" % written)
            reply = os.read(fd, 4096).decode("utf-8", "replace")
        except OSError as exc:
            kernel = log.read_new()
            words = exc.strerror or os.strerror(exc.errno)
            kind = "already_connected" if exc.errno == errno.EALREADY else classify_failure(words, kernel)
            raise NvmeCliError("connect through %s failed: %s (the kernel said: %s, %s)"
                               % (dev, failure_hint(kind), words, errno.errorcode.get(exc.errno, exc.errno)),
                               kind=kind, stderr=words, cmd=shown, kernel=kernel) from None
    finally:
        os.close(fd)
        log.close()
    name = parse_instance(reply)
    if name is None:
        raise NvmeCliError("connect through %s: the kernel's reply %r names no controller instance" % (dev, reply),
                           kind="command", stdout=reply, cmd=shown)
    return name


def discover_through_kernel(cli, values, dev=FABRICS_DEV, kmsg_path="/dev/kmsg"):
    """The discovery log of the discovery controller ``values`` names (transport, traddr,
    trsvcid, host_traddr, host_iface, hostnqn, hostid, dhchap_secret), for a controller that
    authenticates the host: the kernel makes the controller with the secret, nvme-cli reads
    its log (``nvme discover --device``, in nvme-cli 2.3 and 2.13 alike, which then leaves the
    controller it did not make), and the controller is removed again, also when reading failed.
    Returns what NvmeCli.discover returns."""
    name = connect_through_kernel(dict(values, nqn=DISCOVERY_NQN), dev, kmsg_path)
    try:
        found = cli.discover_device(name, values)
    except Exception:
        try:
            cli.disconnect(name)
        except NvmeCliError:
            pass  # the discovery error is the one to report
        raise
    cli.disconnect(name)
    return found
