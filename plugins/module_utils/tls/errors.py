# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The error family of the ``tls`` package (TLS PSKs and the kernel keyring): every exception it raises derives
from :class:`TlsError` (psk.PskError, kernel_keys.KernelKeyError, load.KeyringError), so a caller catches the whole package
with one ``except TlsError``. Each keeps its own message, and those that were ValueErrors still are.
KeyringError is also an nvme.runner.CommandError: a failed keyctl or nvme-cli command's ``rc``,
``stdout``, ``stderr`` and ``cmd`` come with it.
"""

from __future__ import annotations


class TlsError(Exception):
    """Base of every error of the tls package."""
