# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one way to persist a file: :func:`write_atomically`, and the mode checks
of the files that hold secrets (:func:`file_mode`, :func:`mode_text`). A folder written whole
(:func:`publish_folder`) and a symbolic link moved to a new target (:func:`replace_symlink`)
go through here too, with the same rule: the old state or the new one, never half, and on disk.

Every module and host-side tool that writes a file goes through it: the initiator's saved
connections (/etc/nvme/config.json, the nvme-fabrics.conf.d drop-in, which hold DH-HMAC-CHAP
secrets), the TLS key store, the target's save file (keys in clear), host_config's files,
the saved results and fabric_report's results folders and their ``latest`` link. Standard
library only, Python 3.9: the target's boot restorer carries it.

Why not AnsibleModule.atomic_move: it gives a new file the umask's mode (0644) after the
rename, and copies an existing file's mode onto the new content before it, so a secret is
readable by every local user for a moment, or for good if the process dies there.
"""

from __future__ import annotations

import os
import shutil
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
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        try:
            os.fchmod(fd, mode)
            if uid is not None or gid is not None:
                os.fchown(fd, -1 if uid is None else uid, -1 if gid is None else gid)
            _write_fd(fd, data)
        finally:
            os.close(fd)
    except BaseException:
        _discard(tmp)
        raise
    _rename_over(tmp, path, directory)


def _discard(path):
    """Remove a temporary file or link of ours, if it is still there."""
    try:
        os.unlink(path)
    except OSError:
        pass


def _rename_over(tmp, path, directory):
    """Rename tmp over path (tmp is removed when that fails), then fsync the folder holding
    both, so that the rename itself is on disk."""
    try:
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise
    fsync_dir(directory)


def _write_fd(fd, data):
    """Write all of data (bytes, or text as UTF-8) to the open file fd, and fsync it."""
    if not isinstance(data, bytes):
        data = data.encode("utf-8")
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def _write_new(path, data):
    """Create path (it must not exist) as open(path, "w") would - mode 0666 less the umask -
    write data (bytes, or text as UTF-8) and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        _write_fd(fd, data)
    finally:
        os.close(fd)


def publish_folder(path, files, mode=0o755):
    """Create the folder path holding ``files`` ({name: bytes or text}) so that it appears whole
    or not at all.

    The files are written and fsynced in a private temporary folder beside path, which is
    fsynced, given ``mode`` and renamed to path; then the parent folder is fsynced so that the
    rename is on disk. path must not exist (or be an empty folder, which the rename replaces);
    on any failure the temporary folder is removed and the error raised.
    """
    parent = os.path.dirname(os.path.abspath(path))
    tmp = tempfile.mkdtemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=parent)
    try:
        for name, data in files.items():
            _write_new(os.path.join(tmp, name), data)
        fsync_dir(tmp)
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    fsync_dir(parent)


def replace_symlink(link, target):
    """Point the symbolic link ``link`` at ``target`` (a path as os.symlink takes it, often
    relative), replacing what is there in one rename: a reader finds the old target or the
    new one, never no link. A new link is made beside it under a unique name, renamed over
    link, and the folder fsynced. Whether link may be replaced (is it a link?) is the
    caller's to decide: a folder at link makes the rename fail.
    """
    parent = os.path.dirname(os.path.abspath(link))
    for _attempt in range(100):
        tmp = "%s.%d-%s.tmp" % (link, os.getpid(), os.urandom(4).hex())
        try:
            os.symlink(target, tmp)
            break
        except FileExistsError:
            continue
    else:  # pragma: no cover - 100 random names taken
        raise FileExistsError("no free temporary name beside %s" % link)
    _rename_over(tmp, link, parent)
