# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The one error family of the ``nccl`` package: every exception it raises for bad input
or an unusable host derives from :class:`NcclError` (TransportError, NcclTestsError, CatalogError, NcclJobError), so a caller catches
the package with one ``except NcclError``. The messages are the subclasses' own.
"""

from __future__ import annotations


class NcclError(ValueError):
    """Base of every error of the nccl package: nccl-tests jobs (command, catalog, transport proof, job planning)."""
