# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvme-cli for the modules: argv building, output parsing, errors, on the collection's one
command runner (nvme/runner.py, which the TLS key loader uses too).

Every command is an argv list run with LC_ALL=C. No secret is ever on it: nvme-cli takes
DH-HMAC-CHAP secrets and TLS keys only as command-line options, which any local user reads in
/proc/PID/cmdline, so connects and discoveries that carry one go through the kernel's
/dev/nvme-fabrics instead (fabrics_dev.py), and :func:`refuse_secrets` stops values that hold
one. The runner's one redaction (runner.redact_argv) stays as a second line of defence.
"""

from __future__ import annotations

import errno
import json
import os
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.capabilities import (
    ConnectCapabilities, parse_long_options, saved_connections_format,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.runner import CommandError, CommandRunner
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyLoader
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError


# nvme connect long options, by the module parameter that feeds them.
CONNECT_OPTIONS = (
    ("transport", "--transport"),
    ("traddr", "--traddr"),
    ("trsvcid", "--trsvcid"),
    ("nqn", "--nqn"),
    ("host_traddr", "--host-traddr"),
    ("host_iface", "--host-iface"),
    ("hostnqn", "--hostnqn"),
    ("hostid", "--hostid"),
    ("ctrl_loss_tmo", "--ctrl-loss-tmo"),
    ("reconnect_delay", "--reconnect-delay"),
    ("keep_alive_tmo", "--keep-alive-tmo"),
    ("fast_io_fail_tmo", "--fast_io_fail_tmo"),
    ("nr_io_queues", "--nr-io-queues"),
    ("queue_size", "--queue-size"),
    ("keyring", "--keyring"),
)
DISCOVER_OPTIONS = (
    ("transport", "--transport"),
    ("traddr", "--traddr"),
    ("trsvcid", "--trsvcid"),
    ("host_traddr", "--host-traddr"),
    ("host_iface", "--host-iface"),
    ("hostnqn", "--hostnqn"),
    ("hostid", "--hostid"),
)
# The values that never go to nvme-cli (fabrics_dev.SECRET_PARAMS, spelt here too: that
# file imports this one).
SECRET_VALUES = ("dhchap_secret", "dhchap_ctrl_secret", "tls_key")


class NvmeCliError(NvmeError, CommandError):
    """A failed nvme-cli command (or connect through /dev/nvme-fabrics), classified; ``kind``
    is a short word for the cause, ``kernel`` what the kernel logged meanwhile."""

    def __init__(self, msg, kind="command", rc=None, stdout="", stderr="", cmd=None, kernel=None):
        CommandError.__init__(self, msg, rc=rc, stdout=stdout, stderr=stderr, cmd=cmd)
        self.kind = kind
        self.kernel = kernel or []

    def details(self):
        return dict(CommandError.details(self), error_kind=self.kind, kernel_messages=self.kernel)


def _options(spec, values):
    argv = []
    for key, flag in spec:
        value = values.get(key)
        if value is None or value == "":
            continue
        argv.append("%s=%s" % (flag, value))
    return argv


def refuse_secrets(values, action):
    """NvmeCliError when ``values`` hold a secret: such a connect or discovery goes through
    /dev/nvme-fabrics (fabrics_dev.py), never through nvme-cli's command line."""
    held = [key for key in SECRET_VALUES if values.get(key)]
    if held:
        raise NvmeCliError("internal error: nvme %s was asked to run with %s on its command line, where every local "
                           "user can read it; such a %s goes through /dev/nvme-fabrics" % (action, "/".join(held), action),
                           kind="internal")


def build_connect_argv(nvme, values):
    """argv for ``nvme connect``; ``values`` holds the validated module parameters, which
    carry no secret (:func:`refuse_secrets`): the secret options are not in CONNECT_OPTIONS."""
    argv = [nvme, "connect"] + _options(CONNECT_OPTIONS, values)
    if values.get("tls"):
        argv.append("--tls")
    if values.get("concat"):
        argv.append("--concat")
    return argv


def build_disconnect_argv(nvme, name):
    """argv that disconnects exactly one controller, by its device name (nvme1)."""
    return [nvme, "disconnect", "--device=%s" % name]


def build_discover_argv(nvme, values, device=None):
    """argv for ``nvme discover``; with ``device`` (nvme5), the log of that existing discovery
    controller (nvme-cli 2.3 and 2.13 then leave the controller in place)."""
    return ([nvme, "discover"] + (["--device=%s" % device] if device else []) + _options(DISCOVER_OPTIONS, values)
            + ["--output-format=json"])


def parse_version(text):
    """(major, minor) from ``nvme version`` output ("nvme version 2.3 (git 2.3)")."""
    match = re.search(r"nvme version (\d+)\.(\d+)", text or "")
    if not match:
        return None
    return (int(match.group(1)), int(match.group(2)))


# The discovery log entry keys the module returns, and the spellings nvme-cli
# has used for them over the 1.x/2.x releases.
_ENTRY_ALIASES = {
    "portid": ("portid", "Port ID"),
}
_ENTRY_INT_KEYS = ("portid", "rdma_pkey", "cntlid", "asqsz")


def normalize_discovery_entry(raw):
    entry = {}
    for key, value in raw.items():
        canonical = key
        for name, aliases in _ENTRY_ALIASES.items():
            if key in aliases:
                canonical = name
        if isinstance(value, str):
            value = value.strip()
        entry[canonical] = value
    for key in _ENTRY_INT_KEYS:
        if key in entry and isinstance(entry[key], str) and entry[key].isdigit():
            entry[key] = int(entry[key])
    if "trsvcid" in entry and entry["trsvcid"] is not None:
        entry["trsvcid"] = str(entry["trsvcid"])
    return entry


def parse_discovery_json(text):
    """Discovery log entries from ``nvme discover -o json`` output.

    Handles the layouts nvme-cli has printed: 2.x ``{"genctr": N, "records": [...]}``
    with ``portid`` (2.0-2.6, 2.8 and later) or ``"Port ID"`` (2.7); 1.x, which adds
    ``"device"`` at the top; and several documents printed back to back, which is what
    nvme-cli does when it queries more than one discovery controller (no address given,
    /etc/nvme/discovery.conf used). Returns (entries, generation counters).
    """
    documents = []
    decoder = json.JSONDecoder()
    text = (text or "").strip()
    index = 0
    while index < len(text):
        try:
            doc, end = decoder.raw_decode(text, index)
        except ValueError as exc:
            raise ValueError("nvme discover printed output that is not JSON at offset %d: %s" % (index, exc))
        documents.append(doc)
        index = end
        while index < len(text) and text[index].isspace():
            index += 1
    entries = []
    genctrs = []
    for doc in documents:
        for log in (doc if isinstance(doc, list) else [doc]):
            if not isinstance(log, dict):
                raise ValueError("nvme discover JSON has an unexpected shape: %r" % (log,))
            records = log.get("records")
            if records is None:
                raise ValueError("nvme discover JSON has no 'records' list (keys: %s)" % ", ".join(sorted(log)))
            if "genctr" in log:
                genctrs.append(log["genctr"])
            entries.extend(normalize_discovery_entry(r) for r in records)
    return entries, genctrs


def classify_failure(stderr, kernel_messages=()):
    """A short cause for a failed connect/discover, from nvme-cli's and the kernel's words.

    What nvme-cli 2.3 on kernel 6.12 prints (seen in the lab): "Key was rejected by
    service" (EKEYREJECTED) for a wrong DH-HMAC-CHAP secret, "Required key not
    available" (ENOKEY) when the target wants authentication and no secret was given,
    "Connection refused" for nothing listening, "Input/output error" when the target
    refuses the subsystem NQN (the kernel logs "Connect Invalid Data Parameter").
    """
    text = (stderr or "").lower()
    kernel = " ".join(kernel_messages).lower()
    # NVMe/TCP TLS, as nvme-cli 2.13 and the 6.12 kernel put it (trixie lab, molecule
    # nvmeof_tls): no PSK for this host/subsystem in the keyring; a handshake that failed
    # (a PSK the target does not share); the target resetting a plain connection at the
    # first exchange (what a port that requires TLS does to plain TCP).
    if "pre-shared tls key is missing" in text or "no valid psk found" in kernel:
        return "tls_key_missing"
    if "tls handshake complete, error" in kernel:
        return "tls_handshake"
    if "failed to receive icresp, error -104" in kernel:
        return "connection_reset"
    if "required key not available" in text or ": no key" in kernel:
        return "authentication_required"
    if "key was rejected" in text or "authentication failed" in kernel:
        return "authentication"
    if "already connected" in text:
        return "already_connected"
    if "failed to open nvme-fabrics" in text or ("no such file" in text and "nvme-fabrics" in text):
        return "transport_module"
    if ("connection refused" in text or "no route to host" in text or "timed out" in text
            or "network is unreachable" in text or "failed to connect socket" in kernel
            or "address resolved failed" in kernel or "rdma connection establishment failed" in kernel
            or "rdma_resolve_addr wait failed" in kernel or "route resolve" in kernel):
        return "unreachable"
    if "connect invalid host" in kernel:
        return "host_not_allowed"
    if "connect invalid data parameter" in kernel or "connect invalid parameters" in kernel:
        return "subsystem_not_found"
    if "hostnqn already in use" in text:
        return "hostnqn_in_use"
    if "invalid arguments" in text or "invalid argument" in text:
        return "invalid_arguments"
    return "command"


_KIND_HINTS = {
    "authentication": "DH-HMAC-CHAP authentication failed: check dhchap_secret/dhchap_ctrl_secret "
                      "against the keys the target has for this host",
    "authentication_required": "the target requires DH-HMAC-CHAP authentication for this host: set dhchap_secret",
    "unreachable": "the target did not answer at this address: check traddr/trsvcid, the network "
                   "and that the target port is enabled",
    "transport_module": "the nvme-fabrics device is missing: load the nvme-fabrics and transport modules",
    "invalid_arguments": "the kernel rejected the connect options",
    "hostnqn_in_use": "another connection already uses this hostnqn/hostid with this subsystem",
    "host_not_allowed": "the target does not allow this hostnqn on the subsystem",
    "subsystem_not_found": "the target refused the subsystem NQN: it does not exist on this port or does "
                           "not allow this host",
    "already_connected": "nvme-cli says a matching controller already exists",
    "tls_key_missing": "the keyring holds no TLS PSK for this host and subsystem: load it with "
                       "aiinfra.fabric.nvme_tls_key (the nvme_tls role) on this host",
    "tls_handshake": "the TLS handshake failed: the PSK here differs from the target's for this host and "
                     "subsystem, or tlshd is not running on one side",
    "connection_reset": "the target reset the connection at its first exchange: a port that requires TLS "
                        "does this to plain TCP (set tls=true), or the target refused this host",
    "command": "nvme-cli failed",
}


def failure_hint(kind):
    return _KIND_HINTS.get(kind, _KIND_HINTS["command"])


class KernelLog(object):
    """New kernel log records since ``mark()``: the kernel says why a connect failed
    (authentication, refused socket) where nvme-cli only prints the errno."""

    def __init__(self, path="/dev/kmsg"):
        self.path = path
        self.fd = None

    def mark(self):
        try:
            self.fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)
        except OSError:
            self.close()

    def read_new(self, pattern=r"^nvme[ _-]", limit=20):
        if self.fd is None:
            return []
        lines = []
        while True:
            try:
                record = os.read(self.fd, 8192)
            except OSError as exc:
                if exc.errno == errno.EPIPE:  # overwritten records: keep reading
                    continue
                break
            if not record:
                break
            text = record.decode("utf-8", "replace")
            message = text.split(";", 1)[1].split("\n", 1)[0] if ";" in text else text.strip()
            if re.search(pattern, message):
                lines.append(message)
        self.close()
        return lines[-limit:]

    def close(self):
        if self.fd is not None:
            try:
                os.close(self.fd)
            except OSError:
                pass
            self.fd = None


class NvmeCli(object):
    """Runs nvme-cli through AnsibleModule.run_command (runner.CommandRunner); one instance
    per module run."""

    def __init__(self, module, kmsg_path="/dev/kmsg"):
        self.module = module
        self.runner = CommandRunner(module.run_command, error=NvmeCliError)
        self.nvme = module.get_bin_path("nvme", required=True)
        self.kmsg_path = kmsg_path
        self._version = None
        self._caps = None
        self._help = {}
        self._saved_format = None
        self._key_loader = None

    def run(self, argv, check=True, data=None):
        """The runner's :class:`runner.CommandResult`; NvmeCliError when ``check`` and it failed."""
        return self.runner.run(argv, check=check, data=data)

    def version(self):
        if self._version is None:
            result = self.run([self.nvme, "version"], check=False)
            self._version = parse_version(result.stdout) if result.rc == 0 else None
        return self._version

    def connect_capabilities(self, fabrics_dev="/dev/nvme-fabrics"):
        """What ``nvme connect`` and the kernel offer (TLS, key options, concat), read from
        ``nvme connect --help`` and /dev/nvme-fabrics, once per module run."""
        if self._caps is None:
            result = self.run([self.nvme, "connect", "--help"], check=False)
            try:
                with open(fabrics_dev) as handle:
                    fabrics = handle.read()
            except (IOError, OSError):
                fabrics = None
            self._caps = ConnectCapabilities.from_outputs(result.output, fabrics)
        return self._caps

    def help_options(self, command):
        """The long options ``nvme <command> --help`` lists (empty when it fails); asked
        once per command and module run (each nvme start is 0.1-0.4 s on a slow host, and a
        module that converges many connections asks for every one)."""
        if command not in self._help:
            self._help[command] = parse_long_options(self.run([self.nvme, command, "--help"], check=False).output)
        return self._help[command]

    def saved_connections_format(self):
        """"ini" when this nvme-cli reads /etc/nvme/nvme-fabrics.conf(.d), "json" for
        config.json; asked once per module run."""
        if self._saved_format is None:
            result = self.run([self.nvme, "config-convert", "--help"], check=False)
            self._saved_format = saved_connections_format(result.rc, result.output)
        return self._saved_format

    def key_loader(self):
        """The TLS key loader (tls/load.py) on this runner, made once: it resolves a keyring name
        to its serial and puts a PSK given as tls_key into the keyring, never on a command line."""
        if self._key_loader is None:
            self._key_loader = KeyLoader(self.runner, nvme=self.nvme,
                                         keyctl=self.module.get_bin_path("keyctl") or "keyctl")
        return self._key_loader

    def gen_hostnqn(self):
        return self.run([self.nvme, "gen-hostnqn"]).stdout.strip()

    def _run_classified(self, argv, action):
        log = KernelLog(self.kmsg_path)
        log.mark()
        result = self.run(argv, check=False)
        if result.rc == 0:
            log.close()
            return result.stdout
        kernel = log.read_new()
        kind = classify_failure(result.stderr or result.stdout, kernel)
        message = result.said() or "no message"
        raise NvmeCliError("nvme %s failed: %s (nvme-cli said: %s)" % (action, failure_hint(kind), message),
                           kind=kind, kernel=kernel, **result.details())

    def connect(self, values):
        refuse_secrets(values, "connect")
        return self._run_classified(build_connect_argv(self.nvme, values), "connect")

    def disconnect(self, name):
        result = self.run(build_disconnect_argv(self.nvme, name), check=False)
        if result.rc != 0:
            raise self.runner.failure(result, "nvme disconnect --device=%s failed: %s" % (name, result.said()))
        return result.stdout

    def discover(self, values):
        refuse_secrets(values, "discover")
        out = self._run_classified(build_discover_argv(self.nvme, values), "discover")
        return parse_discovery_json(out)

    def discover_device(self, name, values):
        """The log of the existing discovery controller ``name``; ``values`` (the address and
        host identity it was made with) only make nvme-cli's own checks agree with it."""
        values = dict((k, v) for k, v in values.items() if k not in SECRET_VALUES)
        out = self._run_classified(build_discover_argv(self.nvme, values, name), "discover")
        return parse_discovery_json(out)
