# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the installed nvme-cli and kernel can do, read from themselves, never from a
version number.

nvme-cli's options changed between releases (2.3 has no TLS options; later releases
added ``--tls``, ``--keyring``, a TLS key option spelt ``--tls_key`` and then also
``--tls-key``, ``--concat``...; the TLS key never goes to nvme-cli, see fabrics_dev.py), and distributions ship back-ported builds whose version
says little ("2.4+really2.3" on Debian 12). So the options a command takes are read from
its own ``--help`` output, and what the kernel's fabrics layer accepts from
``/dev/nvme-fabrics``, which lists the option tokens it parses when read.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "  [  --tls_key=<STR>, -k <STR> ]  --- ..." and "  --tls  ..." (argconfig layouts)
_LONG_OPTION = re.compile(r"(?<![\w-])--([a-z][a-z0-9_-]*)")


def parse_long_options(help_text):
    """The long option names (without dashes) a ``nvme <command> --help`` lists."""
    text = _ANSI.sub("", help_text or "")
    names = set()
    for line in text.splitlines():
        # Only the option column: the description after "---" may name other options.
        column = line.split("---", 1)[0]
        names.update(_LONG_OPTION.findall(column))
    return names


def parse_fabrics_tokens(text):
    """The option tokens the kernel accepts, from reading /dev/nvme-fabrics
    ("instance=-1,cntlid=-1,transport=%s,...,tls,concat,..." on one line)."""
    tokens = set()
    for item in (text or "").strip().split(","):
        item = item.strip()
        if item:
            tokens.add(item.split("=", 1)[0])
    return tokens


class ConnectCapabilities(object):
    """The TLS-related abilities of ``nvme connect`` (from its help) and of the kernel
    (from /dev/nvme-fabrics; ``None`` when it could not be read)."""

    def __init__(self, options, kernel_tokens=None):
        self.options = frozenset(options)
        self.kernel_tokens = None if kernel_tokens is None else frozenset(kernel_tokens)

    @classmethod
    def from_outputs(cls, connect_help, fabrics_text=None):
        return cls(parse_long_options(connect_help),
                   None if fabrics_text is None else parse_fabrics_tokens(fabrics_text))

    @property
    def tls(self):
        return "tls" in self.options

    @property
    def keyring(self):
        return "keyring" in self.options

    @property
    def concat(self):
        return "concat" in self.options

    @property
    def json_config(self):
        """Whether this nvme-cli reads libnvme's JSON configuration (--config FILE)."""
        return "config" in self.options

    def kernel_has(self, token):
        return self.kernel_tokens is None or token in self.kernel_tokens

    def missing(self, desired, through_kernel=False):
        """Why ``desired`` (validated nvme_connect parameters) cannot be met here: a list of
        sentences, each naming what lacks which ability; empty when nothing is missing.

        ``through_kernel``: the connect carries a secret and is written to /dev/nvme-fabrics
        (fabrics_dev.py), so nvme-cli's --keyring and --concat options are not used (its
        --tls still is required: the keys, tlshd and the boot-time connect-all rely on an
        nvme-cli with TLS)."""
        problems = []
        if desired.get("tls"):
            if not self.tls:
                problems.append("this nvme-cli has no --tls option in 'nvme connect --help' (nvme-cli 2.3, "
                                "as Debian 12 ships it, has none): install an nvme-cli with NVMe/TCP TLS "
                                "support (Debian 13 has 2.13)")
            if not self.kernel_has("tls"):
                problems.append("the kernel's /dev/nvme-fabrics does not list the 'tls' option: the kernel "
                                "was built without CONFIG_NVME_TCP_TLS")
            if desired.get("keyring") and not self.keyring and not through_kernel:
                problems.append("this nvme-cli has no --keyring option for keyring")
        if desired.get("concat"):
            if not self.concat and not through_kernel:
                problems.append("secure concatenation (concat=true) needs 'nvme connect --concat', which "
                                "this nvme-cli does not list in its help")
            if not self.kernel_has("concat"):
                problems.append("secure concatenation (concat=true) needs the kernel to accept the "
                                "'concat' connect option, which this kernel's /dev/nvme-fabrics does not list")
        if desired.get("fast_io_fail_tmo") is not None and "fast_io_fail_tmo" not in self.options:
            problems.append("this nvme-cli has no --fast_io_fail_tmo option in 'nvme connect --help' (nvme-cli "
                            "2.3, as Debian 12 ships it, has none): leave fast_io_fail_tmo unset; with native "
                            "multipath, I/O queued on a lost path moves to another live path when the "
                            "controller resets, without it")
        return problems


def saved_connections_format(config_convert_rc, config_convert_text):
    """Where this nvme-cli keeps saved connections, read from what it can do.

    Releases that replaced libnvme's JSON file with the INI ``/etc/nvme/nvme-fabrics.conf``
    (+ ``.conf.d/``) ship ``nvme config-convert`` to convert an old config.json; 2.x has no
    such command ("Invalid sub-command", exit 1, in 2.3 and 2.13). Returns ``"ini"`` or ``"json"``.
    """
    text = _ANSI.sub("", config_convert_text or "")
    if config_convert_rc == 0 and "config-convert" in text and "Invalid sub-command" not in text:
        return "ini"
    return "json"
