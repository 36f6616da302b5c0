# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The error family of the ``mpi`` package: every exception it raises for bad input or an
unusable host derives from :class:`MpiError` (launcher.LauncherError, sbatch.BatchError and
its UnsafeOutput, job.MpiJobError, expect.ExpectError), so a caller catches the whole
package with one ``except MpiError``. Each keeps its own message; the family is a
ValueError, as each of them was before.

runner's and sbatch's private stop signals (``_Cancelled``, ``_Stopped``) are not errors
and stay outside it, so ``except MpiError`` never swallows a cancel.
"""

from __future__ import annotations


class MpiError(ValueError):
    """Base of every error of the mpi package."""
