# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The error family of the ``nvme`` package (the NVMe-oF initiator): every exception it raises derives
from :class:`NvmeError` (cli.NvmeCliError, connection.ValidationError,
connect_run.ConnectFailure, multipath.MultipathError, multipath_run.MultipathFailure, heal.HealError, health.HealthError,
signatures.SignatureError, rdma_link.RdmaLinkError, fio.FioError), so a caller catches the whole package
with one ``except NvmeError``. Each keeps its own message, and those that were ValueErrors still are.
A failed command is also a runner.CommandError (NvmeCliError, as tls.load.KeyringError is), with the
same ``rc``/``stdout``/``stderr``/``cmd`` whichever package ran it.
"""

from __future__ import annotations


class NvmeError(Exception):
    """Base of every error of the nvme package."""
