# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Slurm hostlist expressions for exclude and drain lists (pure).

``compress(names) -> 'gpu[01-03,07],login1'``
    Names that differ only in a trailing number (with the same zero padding) fold into
    one bracketed range, as Slurm's ``scontrol show hostlist`` writes them; others stay
    as they are. Order: sorted by prefix, then number.
``expand(expression) -> [name, ...]``
    The inverse, for checking (``te[1-3,5]`` -> te1, te2, te3, te5).
``exclude_option(names) -> '--exclude=te3'`` (sbatch/srun), ``''`` for no names.
``drain_argv(names, reason, scontrol='scontrol') -> argv``
    ``scontrol update NodeName=<hostlist> State=DRAIN Reason=<reason>``. Built here,
    run only when the user asks for a drain.
"""

from __future__ import annotations

import re

from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep.errors import SweepError

_TRAILING_NUMBER = re.compile(r"^(.*?)(\d+)$")
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


class HostlistError(SweepError):
    """A name or expression Slurm would not take."""


def _check(names):
    names = [str(n) for n in (names or [])]
    for name in names:
        if not _NAME.match(name):
            raise HostlistError("%r is not a node name Slurm takes in a hostlist" % (name,))
    return names


def _ranges(numbers):
    """[1, 2, 3, 5] -> [(1, 3), (5, 5)]"""
    spans = []
    for n in sorted(set(numbers)):
        if spans and n == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], n)
        else:
            spans.append((n, n))
    return spans


def compress(names):
    names = _check(names)
    groups = {}
    plain = []
    for name in sorted(set(names)):
        m = _TRAILING_NUMBER.match(name)
        if not m:
            plain.append(name)
            continue
        prefix, digits = m.group(1), m.group(2)
        # "01" and "1" are different names; keep each padding width in its own group.
        width = len(digits) if digits.startswith("0") and len(digits) > 1 else 0
        groups.setdefault((prefix, width), []).append(int(digits))
    parts = [(name, name) for name in plain]
    for (prefix, width), numbers in groups.items():
        spans = _ranges(numbers)
        if width:
            fmt = "%%0%dd" % width
        else:
            fmt = "%d"
        texts = [(fmt % a) if a == b else "%s-%s" % (fmt % a, fmt % b) for a, b in spans]
        if len(texts) == 1 and "-" not in texts[0]:
            text = prefix + texts[0]
        else:
            text = "%s[%s]" % (prefix, ",".join(texts))
        parts.append(((prefix, width, min(numbers)), text))
    parts.sort(key=lambda item: (item[0] if isinstance(item[0], tuple) else (item[0], -1, -1)))
    return ",".join(part[1] for part in parts)


_BRACKET = re.compile(r"^([^\[\],]*)\[([0-9,\-]+)\]([^\[\],]*)$")


def _split_top(expression):
    parts, depth, current = [], 0, ""
    for ch in expression:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    if depth != 0:
        raise HostlistError("unbalanced brackets in hostlist %r" % (expression,))
    parts.append(current)
    return [p for p in parts if p]


def expand(expression):
    names = []
    for part in _split_top(str(expression or "")):
        m = _BRACKET.match(part)
        if not m:
            if "[" in part or "]" in part:
                raise HostlistError("cannot read hostlist part %r" % (part,))
            names.append(part)
            continue
        prefix, body, suffix = m.groups()
        for item in body.split(","):
            bounds = item.split("-")
            if len(bounds) == 1:
                names.append(prefix + bounds[0] + suffix)
            elif len(bounds) == 2 and bounds[0] and bounds[1]:
                width = len(bounds[0]) if bounds[0].startswith("0") else 0
                low, high = int(bounds[0]), int(bounds[1])
                if low > high:
                    raise HostlistError("range %s in %r runs backwards" % (item, expression))
                names.extend("%s%0*d%s" % (prefix, width, n, suffix) for n in range(low, high + 1))
            else:
                raise HostlistError("cannot read range %r in %r" % (item, expression))
    return names


def exclude_option(names):
    names = _check(names)
    return "--exclude=%s" % compress(names) if names else ""


def drain_argv(names, reason, scontrol="scontrol"):
    names = _check(names)
    if not names:
        raise HostlistError("no node to drain")
    reason = " ".join(str(reason or "").split())
    if not reason:
        raise HostlistError("a drain needs a reason (Slurm shows it in sinfo -R)")
    return [scontrol, "update", "NodeName=%s" % compress(names), "State=DRAIN", "Reason=%s" % reason]
