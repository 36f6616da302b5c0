# -*- coding: utf-8 -*-
"""The roles' shell probes, run for real with sh on this machine: the target's first probe
(roles/nvmeof_target/files/probe.sh), which also runs host_state.sh for the persist step,
and missing_packages.sh, which asks dpkg-query once for every name."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import quickcheck

ROLES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles")
TARGET_PROBE = os.path.join(ROLES, "nvmeof_target", "files", "probe.sh")
HOST_STATE = os.path.join(ROLES, "..", "files", "host_state.sh")
MISSING = os.path.join(ROLES, "..", "files", "missing_packages.sh")


def read(path):
    with open(path) as fh:
        return fh.read()


def target_probe(tmp_path, state_args, files, pkgscript="for p; do echo \"$p\"; done", pkgs=""):
    record = str(tmp_path / "record.json")
    args = [pkgscript, read(HOST_STATE), record, "-", pkgs, "-", str(len(state_args))] + state_args + files
    out = subprocess.run(["sh", TARGET_PROBE] + args, check=True, capture_output=True, text=True).stdout
    return out.splitlines()


@pytest.fixture
def persisted(tmp_path):
    d = tmp_path / "libexec"
    d.mkdir(mode=0o755)
    os.chmod(str(d), 0o755)
    f = d / "restorer"
    f.write_text("print('restore')\n")
    os.chmod(str(f), 0o644)
    backing = tmp_path / "disk1.img"
    backing.write_bytes(b"\0" * 4096)
    return tmp_path


def test_target_probe_runs_host_state_on_its_arguments_only(persisted):
    restorer = str(persisted / "libexec" / "restorer")
    backing = str(persisted / "disk1.img")
    absent = str(persisted / "missing.img")
    lines = target_probe(persisted, ["d:" + str(persisted / "libexec"), "f:" + restorer], [backing, absent],
                         pkgs="nvme-cli iproute2")
    # host_state.sh's lines for the two paths it was given, and none for the backing files.
    stat_lines = [line for line in lines if line.startswith("s ")]
    assert [line.rsplit(" ", 1)[-1] for line in stat_lines] == [str(persisted / "libexec"), restorer]
    assert [line for line in lines if line.startswith("h ")][0].endswith(restorer)
    assert not any(backing in line for line in lines if not line.startswith("file "))
    # The backing files: the one that exists, with its size; nothing for the missing one.
    assert [line for line in lines if line.startswith("file ")] == ["file exists 4096 %s" % backing]
    # The rest of the probe still answers: configfs, the package script's names, nvmetcli.
    assert ("configfs" in lines) != ("no-configfs" in lines)
    assert [line for line in lines if line.startswith("missing ")] == ["missing nvme-cli", "missing iproute2"]
    assert any(line.startswith("nvmetcli ") for line in lines)


def test_target_probe_lines_judge_the_persist_step(persisted):
    """pending() reads the probe's lines as it reads host_state.sh's own: nothing to do when
    the folder and file match, the content when it differs."""
    restorer = str(persisted / "libexec" / "restorer")
    wanted = dict(directories=[dict(path=str(persisted / "libexec"), mode="0755")],
                  files=[dict(path=restorer, content="print('restore')\n", mode="0644")])
    lines = target_probe(persisted, quickcheck.probe_args(wanted), [str(persisted / "disk1.img")])
    assert quickcheck.pending(wanted, lines)["pending"] == []
    wanted["files"][0]["content"] = "print('other')\n"
    assert quickcheck.pending(wanted, lines)["pending"] == ["%s: content differs" % restorer]


def test_target_probe_without_state_arguments_or_files(tmp_path):
    lines = target_probe(tmp_path, [], [])
    assert not any(line[:2] in ("s ", "h ", "p ") or line.startswith("file ") for line in lines)
    assert any(line.startswith("nvmetcli ") for line in lines)


def test_a_path_missing_from_the_probe_is_pending(persisted):
    """The persist step's probe arguments are listed apart from its wanted state (the
    record's content needs the target built first): a path left out reads as not probed."""
    restorer = str(persisted / "libexec" / "restorer")
    wanted = dict(files=[dict(path=restorer, content="print('restore')\n", mode="0644")])
    lines = target_probe(persisted, [], [])
    assert quickcheck.pending(wanted, lines)["pending"] == ["%s: not probed" % restorer]


@pytest.mark.skipif(shutil.which("dpkg-query") is None, reason="needs dpkg-query (Debian or Ubuntu)")
def test_missing_packages_asks_dpkg_once_for_all_names():
    out = subprocess.run(["sh", MISSING, "coreutils", "aiinfra-no-such-package", "coreutils=0.1", "dpkg"],
                         check=True, capture_output=True, text=True).stdout
    assert out.splitlines() == ["aiinfra-no-such-package", "coreutils=0.1"]


def test_missing_packages_without_names_prints_nothing():
    out = subprocess.run(["sh", MISSING], check=True, capture_output=True, text=True)
    assert out.stdout == "" and out.returncode == 0
