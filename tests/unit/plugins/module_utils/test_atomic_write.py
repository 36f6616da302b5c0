"""The collection's one atomic writer (module_utils/atomic_write.py): the mode is set before the
first byte, the old file survives a failed write whole, the file and its folder are fsynced,
and nothing is left behind. The same for a folder published whole and a link moved."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils import atomic_write
from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import (
    file_mode, mode_text, publish_folder, replace_symlink, write_atomically,
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


def _record_fsyncs(monkeypatch):
    """Every fsync, as the path of what was synced (through /proc/self/fd)."""
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(os.readlink("/proc/self/fd/%d" % fd))
        real(fd)
    monkeypatch.setattr(atomic_write.os, "fsync", fsync)
    return synced


def test_a_folder_is_published_whole_and_on_disk(monkeypatch, tmp_path):
    synced = _record_fsyncs(monkeypatch)
    old = os.umask(0o022)
    try:
        publish_folder(str(tmp_path / "run1"), {"results.json": "{}\n", "report.html": "caf\u00e9", "p.png": b"\x89PNG"})
    finally:
        os.umask(old)
    run = tmp_path / "run1"
    assert sorted(os.listdir(str(tmp_path))) == ["run1"]
    assert (run / "results.json").read_text() == "{}\n" and (run / "report.html").read_bytes() == b"caf\xc3\xa9"
    assert (run / "p.png").read_bytes() == b"\x89PNG"
    assert file_mode(str(run)) == 0o755 and file_mode(str(run / "results.json")) == 0o644  # as open(.., "w") makes it
    # Each file, then the temporary folder (its entries), then the parent (the rename).
    assert len(synced) == 5 and synced[-1] == str(tmp_path)
    assert all(os.path.basename(os.path.dirname(p)).startswith(".run1.") for p in synced[:3])
    assert os.path.basename(synced[3]).startswith(".run1.")


def test_a_folder_that_fails_leaves_nothing(monkeypatch, tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "kept").write_text("old")
    with pytest.raises(OSError):
        publish_folder(str(tmp_path / "run1"), {"a": "x"})  # a folder with content is not replaced
    assert sorted(os.listdir(str(tmp_path))) == ["run1"] and os.listdir(str(tmp_path / "run1")) == ["kept"]

    def full(fd, data):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(atomic_write.os, "write", full)
    with pytest.raises(OSError, match="No space"):
        publish_folder(str(tmp_path / "run2"), {"a": "x"})
    assert sorted(os.listdir(str(tmp_path))) == ["run1"]


def test_a_link_is_moved_in_one_rename_and_on_disk(monkeypatch, tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2").mkdir()
    link = str(tmp_path / "latest")
    replace_symlink(link, "run1")
    assert os.readlink(link) == "run1"
    synced = _record_fsyncs(monkeypatch)
    renames = []
    real_replace = os.replace

    def replace(src, dst):
        renames.append((os.path.basename(src), os.path.basename(dst), os.readlink(src)))
        real_replace(src, dst)
    monkeypatch.setattr(atomic_write.os, "replace", replace)
    replace_symlink(link, "run2")
    assert os.readlink(link) == "run2"
    assert len(renames) == 1 and renames[0][1:] == ("latest", "run2") and renames[0][0].startswith("latest.")
    assert synced == [str(tmp_path)]
    assert sorted(os.listdir(str(tmp_path))) == ["latest", "run1", "run2"]


def test_a_link_that_cannot_replace_leaves_nothing(tmp_path):
    (tmp_path / "latest").mkdir()
    (tmp_path / "latest" / "mine").write_text("x")
    with pytest.raises(OSError):
        replace_symlink(str(tmp_path / "latest"), "run1")
    assert os.listdir(str(tmp_path)) == ["latest"] and os.listdir(str(tmp_path / "latest")) == ["mine"]
