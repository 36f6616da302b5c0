# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the kernel shows for a value written to an nvmet attribute (Linux 6.12).

The planner compares desired and current values in these forms, so a value the kernel
rewrites (serial padded to 20 characters, version 2.0.0 shown as 2.0, ieee_oui in lower
case, inline_data_size -1 replaced by the transport's default once the port is
enabled) is not planned again on every run. The same rules reject, before anything
changes, what the kernel would refuse. Facts from drivers/nvme/target/configfs.c,
core.c, tcp.c and rdma.c of Linux 6.12.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError

SERIAL_MAX = 20  # NVMET_SN_MAX_SIZE: stored space-padded to 20 bytes, shown with the padding
MODEL_MAX = 40  # NVMET_MN_MAX_SIZE
FIRMWARE_MAX = 8  # NVMET_FR_MAX_SIZE
QID_MAX = 128  # NVMET_NR_QUEUES
CNTLID_MAX = 0xFFEF  # NVME_CNTLID_MAX, the kernel's default attr_cntlid_max
ANA_STATES = ("optimized", "non-optimized", "inaccessible", "persistent-loss", "change")
ANA_ACCESSIBLE = ("optimized", "non-optimized")

try:
    PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
except (ValueError, OSError, AttributeError):  # pragma: no cover - every Linux has it
    PAGE_SIZE = 4096

_KSTRTOBOOL = {"1": "1", "y": "1", "t": "1", "0": "0", "n": "0", "f": "0"}


class KernelRejects(NvmetError, ValueError):
    """The kernel would refuse this value; ``str()`` says why (still a ValueError, as it was)."""


def _printable(value, limit, what):
    text = str(value)
    if not 1 <= len(text) <= limit:
        raise KernelRejects("%r must be 1-%d characters, not %d" % (text, limit, len(text)))
    if not re.match(r"^[\x20-\x7e]+$", text):
        raise KernelRejects("%r must be printable ASCII (0x20-0x7e)" % text)
    return text


def kstrtou(value, bits, what):
    """Parse like the kernel's kstrtou*(s, 0): decimal, 0x hex or 0 octal; no sign, no spaces."""
    text = str(value).strip("\n")
    if isinstance(value, bool) or not re.match(r"^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$", text):
        raise KernelRejects("%r is not an unsigned integer (decimal, 0x hex or 0-prefixed octal)" % (value,))
    if text[:2].lower() == "0x":
        number = int(text[2:], 16)
    elif text.startswith("0") and len(text) > 1:
        number = int(text[1:], 8)
    else:
        number = int(text, 10)
    if number >= 1 << bits:
        raise KernelRejects("%r does not fit in %d bits" % (value, bits))
    return number


def kstrtoint(value, what):
    text = str(value).strip("\n")
    sign = -1 if text.startswith("-") else 1
    number = sign * kstrtou(text.lstrip("+-") if text[:1] in "+-" else text, 32, what)
    if not -(1 << 31) <= number < (1 << 31):
        raise KernelRejects("%r is out of the int range" % (value,))
    return number


def kstrtobool(value, what):
    if isinstance(value, bool):
        return "1" if value else "0"
    text = str(value).strip().lower()
    if text in ("on", "off"):
        return "1" if text == "on" else "0"
    if text[:1] in _KSTRTOBOOL and text in ("1", "0", "y", "n", "yes", "no", "t", "f", "true", "false"):
        return _KSTRTOBOOL[text[:1]]
    raise KernelRejects("%r is not a boolean (1/0, y/n, yes/no, true/false, on/off)" % (value,))


def version(value):
    """attr_version: 'major.minor[.tertiary]'; shown without a zero tertiary (2.0.0 -> 2.0)."""
    m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?$", str(value).strip())
    if not m:
        raise KernelRejects("%r is not an NVMe version like 1.3 or 2.0.0" % (value,))
    major, minor, tertiary = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
    # NVME_VS packs major:16, minor:8, tertiary:8 bits; larger values would corrupt the others.
    if major > 0xFFFF or minor > 0xFF or tertiary > 0xFF:
        raise KernelRejects("%r is out of range (major <= 65535, minor and tertiary <= 255)" % (value,))
    if tertiary:
        return "%d.%d.%d" % (major, minor, tertiary)
    return "%d.%d" % (major, minor)


def subsystem_attr(name, value, strict=True):
    """The form attr_<name> shows after ``value`` is written.

    With strict, raise KernelRejects for a value the kernel refuses; without it (reading
    what the kernel shows), fall back to the text as read.
    """
    try:
        if name == "serial":
            # Shown space-padded to 20; nvmetcli's save file strips the padding.
            return _printable(value, SERIAL_MAX, "serial").rstrip(" ")
        if name == "model":
            return _printable(value, MODEL_MAX, "model").rstrip(" ")
        if name == "firmware":
            return _printable(value, FIRMWARE_MAX, "firmware").rstrip(" ")
        if name == "version":
            return version(value)
        if name == "ieee_oui":
            number = kstrtou(value, 32, "ieee_oui")
            if number >= 0x1000000:
                raise KernelRejects("%r is more than 24 bits (at most 0xffffff)" % (value,))
            return "0x%06x" % number
        if name in ("cntlid_min", "cntlid_max"):
            number = kstrtou(value, 16, name)
            if number == 0:
                raise KernelRejects("0 is not a controller id (1..65535)")
            return str(number)
        if name == "qid_max":
            number = kstrtou(value, 16, name)
            if not 1 <= number <= QID_MAX:
                raise KernelRejects("%r is out of range 1..%d" % (value, QID_MAX))
            return str(number)
        if name in ("pi_enable", "allow_any_host"):
            return kstrtobool(value, name)
        return str(value).strip("\n")
    except KernelRejects:
        if strict:
            raise
        return str(value)


def port_param(name, value, strict=True):
    """The form param_<name> shows after ``value`` is written (before the port is enabled)."""
    try:
        if name in ("inline_data_size", "max_queue_size", "mdts"):
            number = kstrtoint(value, name)
            return str(-1 if number < 0 else number)
        if name == "pi_enable":
            return kstrtobool(value, name)
        return str(value).strip("\n")
    except KernelRejects:
        if strict:
            raise
        return str(value)


def effective_inline_data_size(value, trtype):
    """inline_data_size as an enabled port shows it (nvmet_enable_port and add_port).

    Below 0 means "the transport chooses" (transports.py: tcp takes 4 pages, rdma one page
    and caps larger values at max(16 KiB, a page), every other transport 0).
    """
    if value is None:
        return None
    value = int(value)
    row = transports.get(trtype)
    if value < 0:
        return row.inline_data_pages * PAGE_SIZE if row else 0
    if row and row.inline_data_max is not None:
        return min(value, max(row.inline_data_max, PAGE_SIZE))
    return value
