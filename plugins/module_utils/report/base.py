# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every benchmark module of the report shares: the report's error, the direction of
a metric, the lenient readers of result facts and a result's own verdict.

The readers accept the documented shapes of the facts and are lenient about what is
missing: a number that is not one reads as None, never as an exception. Pure functions;
runs on the controller, kept to Python 3.9 syntax like the rest of module_utils. Imports
nothing of the report, so that every other report module may import it.
"""

from __future__ import annotations

import math

HIGHER = "higher"
LOWER = "lower"
EXACT = "exact"


class ReportError(Exception):
    """Bad input to the report: the message names the parameter/fact and the value."""


# --------------------------------------------------------------------------- readers

def number(value, default=None):
    """A finite float from an int/float/numeric string; ``default`` otherwise."""
    if isinstance(value, bool) or value is None:
        return default
    if isinstance(value, (int, float)):
        result = float(value)
    else:
        text = str(value).strip()
        if not text or text.upper() in ("N/A", "NA", "-", "NAN"):
            return default
        try:
            result = float(text)
        except ValueError:
            return default
    return result if math.isfinite(result) else default


def integer(value, default=None):
    result = number(value)
    return int(result) if result is not None else default


def first(mapping, *names, **kw):
    """The first of ``names`` present (not None) in ``mapping``."""
    if not isinstance(mapping, dict):
        return kw.get("default")
    for name in names:
        if mapping.get(name) is not None:
            return mapping[name]
    return kw.get("default")


def host_names(hosts):
    """``["a", {"name": "b", "slots": 2}]`` -> ``["a", "b"]``; a comma string splits."""
    if hosts is None:
        return []
    if isinstance(hosts, str):
        return [h.strip() for h in hosts.replace("+", ",").split(",") if h.strip()]
    out = []
    for h in hosts if isinstance(hosts, (list, tuple)) else [hosts]:
        if isinstance(h, dict):
            name = first(h, "name", "host", "hostname")
            if name:
                out.append(str(name))
        elif h is not None:
            out.append(str(h))
    return out


def runs(fact, list_keys=("runs", "jobs", "results", "tests")):
    """A fact may be one run (a dict with rows), ``{"runs": [...]}`` or a list of runs."""
    if fact is None:
        return []
    if isinstance(fact, list):
        return [r for r in fact if isinstance(r, dict)]
    if isinstance(fact, dict):
        for key in list_keys:
            if isinstance(fact.get(key), list):
                return [r for r in fact[key] if isinstance(r, dict)]
            if isinstance(fact.get(key), dict):
                # {"runs": {"name": run, ...}}
                out = []
                for name, run in sorted(fact[key].items()):
                    if isinstance(run, dict):
                        run = dict(run)
                        run.setdefault("name", name)
                        out.append(run)
                return out
        return [fact]
    return []


def text(value):
    if isinstance(value, (list, tuple)):
        return "; ".join(str(v).strip() for v in value if v not in (None, ""))
    return "" if value is None else str(value).strip()


def verdict(result):
    """``(passed, reason)`` from a result's own verdict: ``failed``, ``passed``, ``msg``, ``rc``.

    A result that says it failed (``failed: true``, ``passed: false``), or carries an error
    message without saying it passed, or a non-zero ``rc``, or ``failed_checks``, did not pass.
    """
    if not isinstance(result, dict):
        return None, ""
    reason = text(first(result, "failure", "failures", "failed_checks")) or text(result.get("msg"))
    if result.get("failed") is True:
        return False, reason or "the result says failed"
    if result.get("passed") is False:
        return False, reason or "the result says passed: false"
    if text(result.get("failed_checks")):
        return False, text(result.get("failed_checks"))
    rc = integer(result.get("rc"))
    if rc not in (None, 0):
        return False, reason or "exit status %d" % rc
    if text(result.get("msg")) and result.get("passed") is not True:
        return False, text(result.get("msg"))
    return True, ""


# --------------------------------------------------------------------------- summary lines

def fmt_number(value, unit=""):
    """A number for a summary line: 3 significant digits, whole numbers from 1000 up; ``?`` for none."""
    value = number(value)
    if value is None:
        return "?"
    shown = ("%.3g" % value) if abs(value) < 1000 else ("%.0f" % value)
    return shown + unit


def fmt_size(n):
    """A message size for a summary line: ``4K``, ``128M``; bytes when not a whole K/M/G."""
    if n is None:
        return "?"
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return "%d%s" % (n // div, unit)
    return "%dB" % n


def failed_line(fact):
    """``FAILED: <why>`` for a fact whose own verdict is a failure, else ``""``."""
    passed, reason = verdict(fact)
    return "FAILED: %s" % " ".join(reason.split()) if passed is False else ""
