# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one error family of the ``sweep`` package: every exception it raises for bad input
or an unusable host derives from :class:`SweepError` (SweepRunError, RankError, SweepPlanError, HostlistError, BisectionError, MeasureError), so a caller catches
the package with one ``except SweepError``. The messages are the subclasses' own.
"""

from __future__ import annotations


class SweepError(ValueError):
    """Base of every error of the sweep package: fabric sweeps (plan, measure, execute, rank, bisect, hostlists)."""
