"""Unit tests of ConfigfsTree's attribute reads (nvmet/model.py): os.open/os.read instead
of text file objects, one read per attribute, and the same absent/error rules as before."""

import errno
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import model
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError

from nvmet_fake import SUB, EmulatedTree, fake_namespace, fake_subsystem, write


def test_namespace_is_read_with_every_field(root):
    fake_subsystem(root, SUB)
    fake_namespace(root, SUB, 3, path="/srv/a b.img", enable="1")
    ns = EmulatedTree(root).read()["subsystems"][SUB]["namespaces"][3]
    assert ns == {"nsid": 3, "device_path": "/srv/a b.img", "enabled": True,
                  "uuid": "c1dcff13-cbcf-44e6-997c-ee94dc0b42e3", "nguid": None, "ana_grpid": 1,
                  "buffered_io": False}


def test_absent_attribute_is_none_and_other_errors_fail(root, monkeypatch):
    fake_subsystem(root, SUB)
    fake_namespace(root, SUB, 1)
    base = os.path.join(root, "nvmet", "subsystems", SUB, "namespaces", "1")
    os.unlink(os.path.join(base, "buffered_io"))  # an older kernel without the attribute
    tree = EmulatedTree(root)
    assert tree.read()["subsystems"][SUB]["namespaces"][1]["buffered_io"] is False
    assert tree._get("subsystems/%s/namespaces/1/buffered_io" % SUB) is None
    real = os.read

    def failing(fd, n):
        if os.readlink("/proc/self/fd/%d" % fd).endswith("/ana_grpid"):
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real(fd, n)

    monkeypatch.setattr(model.os, "read", failing)
    with pytest.raises(NvmetError, match=r"cannot read .*/namespaces/1/ana_grpid: Input/output error \(EIO\)"):
        tree.read()


def test_each_attribute_costs_one_read_and_a_long_one_is_read_whole(root, monkeypatch):
    fake_subsystem(root, SUB)
    fake_namespace(root, SUB, 1)
    long_path = "/srv/" + "x" * (2 * model._READ_SIZE)
    write(os.path.join(root, "nvmet", "subsystems", SUB, "namespaces", "1", "device_path"), long_path)
    calls = []
    real = os.read

    def counted(fd, n):
        calls.append(os.readlink("/proc/self/fd/%d" % fd).rsplit("/", 1)[-1])
        return real(fd, n)

    monkeypatch.setattr(model.os, "read", counted)
    ns = EmulatedTree(root).read()["subsystems"][SUB]["namespaces"][1]
    assert ns["device_path"] == long_path
    # device_path: two full buffers, then the rest, then end of file; every other file: one read.
    assert calls.count("device_path") == 4
    assert all(calls.count(name) == 1 for name in ("device_nguid", "enable", "device_uuid", "ana_grpid"))
