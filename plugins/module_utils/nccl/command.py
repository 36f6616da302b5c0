# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""nccl-tests command lines: the binary's name and its arguments, validated (pure)."""

from __future__ import annotations

import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.errors import NcclError

TESTS = (
    "all_reduce", "all_gather", "broadcast", "reduce", "reduce_scatter",
    "alltoall", "gather", "scatter", "sendrecv", "hypercube",
)
OPS = ("sum", "prod", "min", "max", "avg", "mulsum", "all")


class NcclTestsError(NcclError):
    """Bad input; the message names the parameter and the value."""


def binary_name(test, suffix=""):
    """``all_reduce`` -> ``all_reduce_perf`` (plus the build's NAME_SUFFIX, e.g. ``_mpi``)."""
    if test not in TESTS:
        raise NcclTestsError("test must be one of %s, got %r" % (", ".join(TESTS), test))
    return "%s_perf%s" % (test, suffix or "")


# --------------------------------------------------------------------------- arguments

# nccl-tests reads sizes with an optional K/M/G suffix (powers of 1024).
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGkmg]?)\s*$")
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def size_to_bytes(value, parameter="size"):
    """``'1G'`` -> 1073741824; ints pass through. Raises NcclTestsError naming ``parameter``."""
    if isinstance(value, bool):
        raise NcclTestsError("%s must be a byte count such as 8, 128M or 1G, got %r" % (parameter, value))
    if isinstance(value, int):
        if value < 0:
            raise NcclTestsError("%s must not be negative, got %r" % (parameter, value))
        return value
    m = _SIZE.match(str(value))
    if not m:
        raise NcclTestsError("%s must be a byte count such as 8, 128M or 1G, got %r" % (parameter, value))
    return int(m.group(1)) * _SIZE_UNITS[m.group(2).upper()]


def build_test_args(minbytes="8", maxbytes="128M", stepfactor=2, stepbytes=None, ngpus=1,
                    threads=1, iters=None, warmup_iters=None, check=None, op=None, datatype=None,
                    root=None, blocking=None, cudagraph=None, json_file=None, extra_args=None):
    """The nccl-tests argv (without the binary), validated. ``None`` leaves a default alone.

    Exactly one of ``stepfactor`` (-f) and ``stepbytes`` (-i) is used; ``stepbytes``
    wins when both are given, because nccl-tests itself prefers it when -f is 1.
    """
    low = size_to_bytes(minbytes, "minbytes")
    high = size_to_bytes(maxbytes, "maxbytes")
    if low > high:
        raise NcclTestsError("minbytes (%s = %d bytes) is larger than maxbytes (%s = %d bytes)"
                             % (minbytes, low, maxbytes, high))
    args = ["-b", str(minbytes).strip(), "-e", str(maxbytes).strip()]
    if stepbytes is not None:
        if size_to_bytes(stepbytes, "stepbytes") < 1:
            raise NcclTestsError("stepbytes must be at least 1 byte, got %r" % (stepbytes,))
        args += ["-i", str(stepbytes).strip()]
    elif stepfactor is not None:
        _positive("stepfactor", stepfactor, minimum=2)
        args += ["-f", str(stepfactor)]
    _positive("ngpus", ngpus)
    _positive("threads", threads)
    args += ["-g", str(ngpus), "-t", str(threads)]
    for flag, name, value, minimum in (("-n", "iters", iters, 1), ("-w", "warmup_iters", warmup_iters, 0),
                                       ("-c", "check", check, 0), ("-G", "cudagraph", cudagraph, 0)):
        if value is not None:
            _positive(name, value, minimum=minimum)
            args += [flag, str(value)]
    if op is not None:
        if op not in OPS:
            raise NcclTestsError("op must be one of %s, got %r" % (", ".join(OPS), op))
        args += ["-o", op]
    if datatype is not None:
        if not re.match(r"^[a-z0-9_]+$", str(datatype)):
            raise NcclTestsError("datatype must be an NCCL type name (float, half, bfloat16, int8, ..., or all), got %r"
                                 % (datatype,))
        args += ["-d", str(datatype)]
    if root is not None:
        _positive("root", root, minimum=0)
        args += ["-r", str(root)]
    if blocking is not None:
        if isinstance(blocking, bool):
            blocking = int(blocking)
        if blocking not in (0, 1, 2, 3):
            raise NcclTestsError("blocking must be 0, 1, 2 or 3 (nccl-tests -z), got %r" % (blocking,))
        args += ["-z", str(blocking)]
    if json_file:
        args += ["-J", json_file]
    args += [str(a) for a in (extra_args or [])]
    return args


def _positive(name, value, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise NcclTestsError("%s must be an integer >= %d, got %r" % (name, minimum, value))


def supports_json(help_text):
    """Does this binary's usage (``<binary> -h``) offer ``-J`` (JSON output)?"""
    return bool(re.search(r"-J,\s*--output_file", help_text or ""))
