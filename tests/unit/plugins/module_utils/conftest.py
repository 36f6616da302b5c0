"""Fixtures of the nvmet unit tests (the fake tree itself is nvmet_fake.py)."""

import os

import pytest


@pytest.fixture
def root(tmp_path):
    os.makedirs(str(tmp_path / "nvmet" / "subsystems"))
    os.makedirs(str(tmp_path / "nvmet" / "ports"))
    os.makedirs(str(tmp_path / "nvmet" / "hosts"))
    for mod in ("nvmet", "nvmet_tcp", "nvmet_rdma"):
        os.makedirs(str(tmp_path / "sys" / "module" / mod))
    return str(tmp_path)


@pytest.fixture
def backing(tmp_path):
    path = tmp_path / "disk1.img"
    path.write_bytes(b"")
    path2 = tmp_path / "disk2.img"
    path2.write_bytes(b"")
    return str(path), str(path2)


@pytest.fixture
def files(tmp_path):
    """Six empty backing files, disk0.img to disk5.img (test_nvmet_restore.py has its own three)."""
    out = []
    for i in range(6):
        p = tmp_path / ("disk%d.img" % i)
        p.write_bytes(b"")
        out.append(str(p))
    return out
