"""The collection's one atomic writer (module_utils/atomic_write.py): the mode is set before the
first byte, the old file survives a failed write whole, the file and its folder are fsynced,
and nothing is left behind."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils import atomic_write
from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import (
    file_mode, mode_text, write_atomically,
)


def test_the_mode_is_set_before_the_first_byte(monkeypatch, tmp_path):
    real_write = os.write
    seen = []

    def write(fd, data):
        st = os.fstat(fd)
        seen.append((stat.S_IMODE(st.st_mode), st.st_size))
        return real_write(fd, data)
    monkeypatch.setattr(atomic_write.os, "write", write)
    old = os.umask(0)  # the umask does not widen it either
    try:
        write_atomically(str(tmp_path / "new" / "secret.json"), "key\n")
    finally:
        os.umask(old)
    assert seen and seen[0] == (0o600, 0)
    assert file_mode(str(tmp_path / "new" / "secret.json")) == 0o600
    assert file_mode(str(tmp_path / "new")) == 0o700


def test_an_existing_wider_file_is_replaced_not_reused(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("old\n")
    os.chmod(str(path), 0o644)
    inode = os.stat(str(path)).st_ino
    write_atomically(str(path), b"new\n")
    assert path.read_text() == "new\n" and file_mode(str(path)) == 0o600
    assert os.stat(str(path)).st_ino != inode
    write_atomically(str(path), "public\n", 0o644)
    assert file_mode(str(path)) == 0o644
    assert sorted(os.listdir(str(tmp_path))) == ["config.json"]


def test_a_failed_write_keeps_the_old_file_whole(monkeypatch, tmp_path):
    path = tmp_path / "config.json"
    path.write_text("old\n")

    def full(fd, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomic_write.os, "write", full)
    with pytest.raises(OSError):
        write_atomically(str(path), "new\n")
    assert path.read_text() == "old\n" and os.listdir(str(tmp_path)) == ["config.json"]


def test_the_file_and_its_folder_are_fsynced(monkeypatch, tmp_path):
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(stat.S_ISDIR(os.fstat(fd).st_mode))
        real(fd)
    monkeypatch.setattr(atomic_write.os, "fsync", fsync)
    write_atomically(str(tmp_path / "f"), "x")
    assert synced == [False, True]


def test_modes_as_results_show_them(tmp_path):
    assert mode_text(0o600) == "0600" and mode_text(0o4755) == "4755" and mode_text(None) is None
    assert file_mode(str(tmp_path / "missing")) is None
