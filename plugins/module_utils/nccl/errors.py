# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The error family of the ``nccl`` package: every exception it raises for bad input or an
unusable host derives from :class:`NcclError` (command.NcclTestsError, catalog.CatalogError,
transport.TransportError, job.NcclJobError), so a caller catches the whole package with
one ``except NcclError``. Each keeps its own message; the family is a ValueError, as each
of them was before.
"""

from __future__ import annotations


class NcclError(ValueError):
    """Base of every error of the nccl package."""
