# -*- coding: utf-8 -*-
"""nvme_mkfs on image files with the build host's real wipefs, blkid and mkfs.ext4:
refuses a GPT image unchanged, formats a blank one, keeps its own file system, and with
force wipes and formats."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import subprocess

import pytest

from ansible_collections.aiinfra.fabric.plugins.modules import nvme_mkfs
from module_harness import run_main  # tests/unit/plugins/modules/module_harness.py

HERE = os.path.dirname(os.path.abspath(__file__))
WRITE_GPT = os.path.join(HERE, "..", "..", "..", "lab", "files", "write_gpt.py")
TOOLS = [shutil.which(t, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin") for t in ("wipefs", "blkid", "mkfs.ext4")]
pytestmark = pytest.mark.skipif(not all(TOOLS), reason="needs util-linux wipefs, blkid and e2fsprogs")


def run(monkeypatch, args):
    return run_main(monkeypatch, nvme_mkfs, args)


def image(tmp_path, gpt=False):
    path = str(tmp_path / "ns.img")
    with open(path, "wb") as handle:
        handle.truncate(32 * 1024 * 1024)
    if gpt:
        spec = importlib.util.spec_from_file_location("write_gpt", WRITE_GPT)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.write_gpt(path, 512)
    return path


def digest(path):
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def blkid(path, tag):
    out = subprocess.run([TOOLS[1], "-p", "-s", tag, "-o", "value", path], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def test_gpt_image_is_refused_and_left_byte_identical(monkeypatch, tmp_path):
    path = image(tmp_path, gpt=True)
    before = digest(path)
    result = run(monkeypatch, {"dev": path, "fstype": "ext4"})
    assert result.get("failed") is True
    assert "gpt (partition-table) at 0x200" in result["msg"]
    assert [s["type"] for s in result["signatures"]] == ["gpt", "gpt", "PMBR"]
    assert digest(path) == before


def test_check_mode_on_a_blank_image_plans_mkfs_and_writes_nothing(monkeypatch, tmp_path):
    path = image(tmp_path)
    before = digest(path)
    result = run(monkeypatch, {"dev": path, "fstype": "ext4", "_ansible_check_mode": True, "_ansible_diff": True})
    assert result["changed"] is True and result["operations"] == ["mkfs.ext4 %s" % path]
    assert result["diff"] == {"before": {"signatures": []}, "after": {"signatures": ["ext4 (filesystem)"]}}
    assert digest(path) == before


def test_blank_image_is_formatted_then_kept(monkeypatch, tmp_path):
    path = image(tmp_path)
    first = run(monkeypatch, {"dev": path, "fstype": "ext4", "opts": ["-q", "-F"]})
    assert first["changed"] is True and blkid(path, "TYPE") == "ext4"
    assert first["uuid"] == blkid(path, "UUID")
    second = run(monkeypatch, {"dev": path, "fstype": "ext4", "force": True})
    assert second["changed"] is False and second["operations"] == []
    assert second["uuid"] == first["uuid"]


def test_force_wipes_the_gpt_and_formats(monkeypatch, tmp_path):
    path = image(tmp_path, gpt=True)
    result = run(monkeypatch, {"dev": path, "fstype": "ext4", "force": True, "opts": ["-q", "-F"]})
    assert result["changed"] is True
    assert result["operations"] == ["wipefs --all %s" % path, "mkfs.ext4 %s" % path]
    assert blkid(path, "TYPE") == "ext4" and blkid(path, "PTTYPE") == ""


def test_the_uuid_is_chosen_by_the_module_unless_the_options_choose_one():
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.signatures import mkfs_uuid_args
    u = "6017cea8-3829-4b66-9839-d2a7a988ea0b"
    assert mkfs_uuid_args("ext4", [], u) == ["-U", u]
    assert mkfs_uuid_args("xfs", ["-f"], u) == ["-m", "uuid=" + u]
    assert mkfs_uuid_args("btrfs", [], u) == ["-U", u]
    assert mkfs_uuid_args("ext4", ["-U", "time"], u) is None
    assert mkfs_uuid_args("xfs", ["-m", "uuid=" + u], u) is None
    assert mkfs_uuid_args("vfat", [], u) is None
