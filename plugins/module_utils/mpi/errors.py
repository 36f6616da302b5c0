# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one error family of the ``mpi`` package: every exception it raises for bad input
or an unusable host derives from :class:`MpiError` (LauncherError, BatchError, MpiJobError, ExpectError), so a caller catches
the package with one ``except MpiError``. The messages are the subclasses' own.
"""

from __future__ import annotations


class MpiError(ValueError):
    """Base of every error of the mpi package: launching MPI jobs (launcher, job planning, expectations, sbatch)."""
