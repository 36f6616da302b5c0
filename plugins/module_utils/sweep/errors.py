# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The error family of the ``sweep`` package: every exception it raises for bad input or an
unusable host derives from :class:`SweepError` (plan.SweepPlanError, measure.MeasureError,
execute.SweepRunError, rank.RankError, bisect.BisectionError, hostlist.HostlistError), so a
caller catches the whole package with one ``except SweepError``. Each keeps its own message;
the family is a ValueError, as each of them was before.
"""

from __future__ import annotations


class SweepError(ValueError):
    """Base of every error of the sweep package."""
