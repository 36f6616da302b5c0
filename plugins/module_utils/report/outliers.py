# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hosts far from their peers in the same run, by a robust spread (median and MAD).

For each metric key (same benchmark, metric and labels) and peer group (same GPU model
and host class), with at least ``min_hosts`` hosts: the median ``m`` of all hosts and
the median absolute deviation ``MAD``. A host is an outlier when it is worse than the
median by more than ``z`` robust standard deviations (``1.4826 * MAD``, the MAD's scale
for normally distributed values; z 3.5 is Iglewicz and Hoaglin's cut-off) *and* by
more than ``min_deviation`` (a fraction of the median), so near-identical hosts (MAD
close to 0) are not flagged for noise. One bad host cannot hide itself by moving the
median or the MAD, as it moved the mean and the fixed +/-30 %% band before.
"""

from __future__ import annotations

from statistics import median

from ansible_collections.aiinfra.fabric.plugins.module_utils.report.checks import (
    FAIL, PASS, WARN, _check, _fmt)
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.model import HIGHER, LOWER

MAD_SCALE = 1.4826


def check_outliers(metrics, z=3.5, min_deviation=0.1, min_hosts=4, gate=False, peer_keys=("gpu_model", "host_class")):
    """Checks for every host of every group with ``min_hosts`` hosts or more."""
    groups = {}
    for m in metrics:
        if m["better"] not in (HIGHER, LOWER) or isinstance(m["value"], bool):
            continue
        if m["labels"].get("scope") == "multi":
            continue  # one run across hosts has no per-host peers
        gk = (m["key"],) + tuple(m.get(k) for k in peer_keys)
        groups.setdefault(gk, []).append(m)
    checks = []
    for gk in sorted(groups, key=lambda k: tuple(str(x) for x in k)):
        members = groups[gk]
        if len(set(m["host"] for m in members)) < min_hosts:
            continue
        values = [m["value"] for m in members]
        med = median(values)
        sigma = MAD_SCALE * median([abs(v - med) for v in values])
        if med == 0:
            continue
        spread = max(z * sigma, abs(med) * min_deviation)
        if m_better(members) == HIGHER:
            lo, hi = med - spread, None
        else:
            lo, hi = None, med + spread
        for m in members:
            dev = m["value"] / med - 1
            worse = (lo is not None and m["value"] < lo) or (hi is not None and m["value"] > hi)
            detail = "median of %d hosts %s, %+.1f%%, robust sigma %s" % (
                len(members), _fmt(med, m["unit"]), dev * 100, _fmt(sigma, m["unit"]))
            status = (FAIL if gate else WARN) if worse else PASS
            checks.append(_check(m, "outlier", status, gate, med, lo, hi,
                                 "%s, %s%s" % (_fmt(m["value"], m["unit"]), detail, " (outlier)" if worse else ""),
                                 detail))
    return checks


def m_better(members):
    return members[0]["better"]


__all__ = ["check_outliers", "median", "MAD_SCALE"]
