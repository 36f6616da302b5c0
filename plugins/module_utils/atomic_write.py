# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one way to persist a file: :func:`write_atomically`, and the mode checks
of the files that hold secrets (:func:`file_mode`, :func:`mode_text`).

Every module and host-side tool that writes a file goes through it: the initiator's saved
connections (/etc/nvme/config.json, the nvme-fabrics.conf.d drop-in, which hold DH-HMAC-CHAP
secrets), the TLS key store, the target's save file (keys in clear), host_config's files and
the saved results. Standard library only, Python 3.9: the target's boot restorer carries it.

Why not AnsibleModule.atomic_move: it gives a new file the umask's mode (0644) after the
rename, and copies an existing file's mode onto the new content before it, so a secret is
readable by every local user for a moment, or for good if the process dies there.
"""

from __future__ import annotations

import os
import stat
import tempfile

SECRET_MODE = 0o600


def fsync_dir(directory):
    """fsync a folder, so a rename or unlink in it is on disk."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_mode(path):
    """The permission bits of path (following links), or None when it does not exist."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return None


def mode_text(mode):
    """A mode as results and operations show it ("0600"); None stays None."""
    return None if mode is None else "%04o" % mode


def write_atomically(path, data, mode=SECRET_MODE, dir_mode=0o700, uid=None, gid=None):
    """Replace path with data (bytes, or text written as UTF-8) so that a crash leaves the old
    file or the new one, whole, and the content never exists under another mode than ``mode``.

    A temporary file beside path is created 0600 (mkstemp), set to ``mode`` (and ``uid``/``gid``
    when given) before its first byte, written and fsynced, renamed over path, then the folder
    is fsynced so that the rename itself is on disk. A missing folder is created with
    ``dir_mode`` (an existing one is left as it is).
    """
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        os.makedirs(directory, dir_mode)
    if not isinstance(data, bytes):
        data = data.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        try:
            os.fchmod(fd, mode)
            if uid is not None or gid is not None:
                os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)
