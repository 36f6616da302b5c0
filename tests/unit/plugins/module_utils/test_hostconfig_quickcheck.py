# -*- coding: utf-8 -*-
"""Unit tests for hostconfig.quickcheck: the shell probe (files/
host_state.sh, run for real against a temporary tree) judged by pending(), checked against
what host_config's own plan() would do on the same tree. Kernel modules and units come
from the probe's lines as the test writes them (this machine has no nvme modules or
systemd), and plan() gets the FAKE probe of test_hostconfig.py (no module
loaded, no unit known: the agreement tests use neither)."""

from __future__ import annotations

import base64
import hashlib
import os
import pwd
import subprocess

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import quickcheck
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.state import HostConfigError, plan, validate
from test_hostconfig import FakeProbe  # the FAKE SystemProbe of the host_config module_utils tests, beside this file

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "files", "host_state.sh")
ME = pwd.getpwuid(os.getuid()).pw_name


def probe(params):
    args = quickcheck.probe_args(params)
    out = subprocess.run(["sh", SCRIPT] + args, check=True, capture_output=True, text=True).stdout
    return out.splitlines()


def agree(params):
    """pending() from the real probe, and whether plan() finds operations; both returned."""
    reasons = quickcheck.pending(params, probe(params))["pending"]
    ops = plan(validate(params), "/", FakeProbe())[0]
    return reasons, ops


@pytest.fixture
def tree(tmp_path):
    d = tmp_path / "etc"
    d.mkdir(mode=0o755)
    os.chmod(str(d), 0o755)
    f = d / "app.conf"
    f.write_text("key = 1\n")
    os.chmod(str(f), 0o644)
    return tmp_path


def params_for(tree, content="key = 1\n", mode="0644", owner=None, dir_mode="0755"):
    return dict(directories=[dict(path=str(tree / "etc"), mode=dir_mode, owner=owner)],
                files=[dict(path=str(tree / "etc" / "app.conf"), content=content, mode=mode, owner=owner)])


def test_a_matching_host_has_nothing_pending_and_plan_agrees(tree):
    reasons, ops = agree(params_for(tree, owner=ME))
    assert reasons == [] and ops == []


@pytest.mark.parametrize("change, expect", [
    (dict(content="key = 2\n"), "content differs"),
    (dict(mode="0600"), "mode 0644, wants 0600"),
    (dict(dir_mode="0700"), "mode 0755, wants 0700"),
])
def test_each_difference_is_pending_and_plan_agrees(tree, change, expect):
    reasons, ops = agree(params_for(tree, **change))
    assert ops, "plan() should have work for %r" % (change,)
    assert len(reasons) == 1 and expect in reasons[0]


def test_a_missing_file_and_a_missing_directory_are_pending(tree):
    params = dict(directories=[dict(path=str(tree / "new dir"), mode="0700")],
                  files=[dict(path=str(tree / "new dir" / "f"), content="x")])
    reasons, ops = agree(params)
    assert ops
    assert reasons == ["%s: no directory" % (tree / "new dir"), "%s: no file" % (tree / "new dir" / "f")]


def test_an_absent_path_that_exists_is_pending(tree):
    reasons, ops = agree(dict(absent=[str(tree / "etc" / "app.conf")]))
    assert ops and reasons == ["%s: present" % (tree / "etc" / "app.conf")]
    reasons, ops = agree(dict(absent=[str(tree / "gone")]))
    assert not ops and reasons == []


def test_another_owner_is_pending(tree):
    others = [p.pw_name for p in pwd.getpwall() if p.pw_name != ME]
    reasons = quickcheck.pending(params_for(tree, owner=others[0]), probe(params_for(tree, owner=others[0])))["pending"]
    assert any("owner %s, wants %s" % (ME, others[0]) in r for r in reasons)


def test_a_file_of_the_wrong_type_is_pending(tree):
    reasons = quickcheck.pending(dict(files=[dict(path=str(tree / "etc"), content="x")]),
                                 probe(dict(files=[dict(path=str(tree / "etc"), content="x")])))["pending"]
    assert reasons == ["%s: no file" % (tree / "etc")]


def test_secret_files_are_never_hashed_and_always_pending(tree):
    params = dict(files=[dict(path=str(tree / "etc" / "app.conf"), content="key = 1\n", secret=True)])
    assert quickcheck.probe_args(params) == []
    assert quickcheck.pending(params, [])["pending"] == ["%s: secret content is not compared here" % (tree / "etc" / "app.conf")]


def test_refused_arguments_probe_nothing_and_are_pending():
    params = dict(files=[dict(path="relative/path", content="x")])
    assert quickcheck.probe_args(params) == []
    assert quickcheck.pending(params, [])["pending"] == ["the arguments are refused (host_config says why)"]


def test_read_returns_the_text_and_a_missing_file_as_none(tree):
    params = dict(read=[str(tree / "etc" / "app.conf"), str(tree / "missing")])
    result = quickcheck.pending(params, probe(params))
    assert result["pending"] == []
    assert result["read"] == {str(tree / "etc" / "app.conf"): "key = 1\n", str(tree / "missing"): None}


def test_remove_empty_dirs_is_left_to_the_module(tree):
    assert quickcheck.pending(dict(remove_empty_dirs=[str(tree / "etc")]), [])["pending"] == [
        "remove_empty_dirs is not judged here"]


def test_an_unprobed_path_is_pending(tree):
    assert quickcheck.pending(params_for(tree), [])["pending"] == [
        "%s: not probed" % (tree / "etc"), "%s: not probed" % (tree / "etc" / "app.conf")]


# Kernel modules and units: the probe's lines as a host would print them.
def test_modules_loaded_and_listed_for_boot_are_not_pending():
    params = dict(kernel_modules=["nvme_tcp", "nvme-rdma"], persist_modules=True)
    # The probe looks under /sys/module, where the kernel names it with an underscore.
    assert quickcheck.probe_args(params) == ["m:nvme_tcp", "m:nvme_rdma"]
    lines = ["m loaded nvme_tcp", "m loaded nvme_rdma", "l nvme_tcp", "l nvme-rdma", "l nvmet"]
    assert quickcheck.pending(params, lines)["pending"] == []


def test_a_module_not_loaded_or_not_listed_is_pending():
    params = dict(kernel_modules=["nvme_tcp"], persist_modules=True)
    assert quickcheck.pending(params, ["m - nvme_tcp", "l nvme_tcp"])["pending"] == ["module nvme_tcp: not loaded"]
    assert quickcheck.pending(params, ["m loaded nvme_tcp"])["pending"] == [
        "module nvme_tcp: not in /etc/modules-load.d"]
    assert quickcheck.pending(dict(params, persist_modules=False), ["m loaded nvme_tcp"])["pending"] == []


@pytest.mark.parametrize("unit, line, expect", [
    (dict(enabled=True, started=True), "u enabled active x.service", []),
    (dict(enabled=True, started=True), "u static active x.service", []),
    (dict(enabled=True, started=True), "u disabled active x.service", ["unit x.service: disabled, wants enabled"]),
    (dict(enabled=True, started=True), "u enabled inactive x.service", ["unit x.service: inactive, wants active"]),
    (dict(enabled=False, started=False), "u enabled active x.service",
     ["unit x.service: enabled, wants disabled", "unit x.service: active, wants stopped"]),
    (dict(enabled=False), "u static - x.service", []),
    (dict(enabled=True), "u - - x.service", ["unit x.service: -, wants enabled"]),
])
def test_units(unit, line, expect):
    params = dict(units=[dict(name="x.service", **unit)])
    assert quickcheck.pending(params, [line])["pending"] == expect


def test_parse_keeps_blanks_in_paths_and_decodes_reads():
    text = base64.b64encode(b"a b\n").decode()
    digest = "ab" * 32
    seen = quickcheck.parse(["s 644 root root f /x/with blank", "h %s  /x/with blank" % digest, "p - /y z",
                             "s 755 0 0 d /d", "s 777 root root l /link", "r %s /r s" % text, "r - /t"])
    assert seen["paths"]["/x/with blank"] == dict(mode=0o644, owner="root", group="root", type="file", sha256=digest)
    assert seen["paths"]["/d"] == dict(mode=0o755, owner="0", group="0", type="directory", sha256=None)
    assert seen["paths"]["/link"]["type"] == "other"
    assert seen["paths"]["/y z"] is None
    assert seen["read"] == {"/r s": "a b\n", "/t": None}


def test_a_file_without_its_hash_line_differs():
    params = dict(files=[dict(path="/etc/x.conf", content="x\n", mode="0644", owner="root", group="root")])
    assert quickcheck.pending(params, ["s 644 root root f /etc/x.conf"])["pending"] == ["/etc/x.conf: content differs"]
    escaped = "\\%s  /etc/x.conf" % hashlib.sha256(b"x\n").hexdigest()  # sha256sum escaping a name
    assert quickcheck.pending(params, ["s 644 root root f /etc/x.conf", "h " + escaped])["pending"] == [
        "/etc/x.conf: content differs"]


def test_the_real_probe_reads_many_paths_with_one_find(tree):
    """Files, a folder, a symbolic link where a file should be, absent paths and a blank in a
    name, all in one run of the script: each judged as host_config's plan() would."""
    (tree / "etc" / "with blank.conf").write_text("b\n")
    os.chmod(str(tree / "etc" / "with blank.conf"), 0o600)
    os.symlink("app.conf", str(tree / "etc" / "link.conf"))
    params = params_for(tree, owner=ME)
    params["files"] += [dict(path=str(tree / "etc" / "with blank.conf"), content="b\n", mode="0600", owner=ME),
                        dict(path=str(tree / "etc" / "link.conf"), content="key = 1\n", mode="0644")]
    params["absent"] = [str(tree / "gone"), str(tree / "etc" / "app.conf.bak")]
    lines = probe(params)
    assert sum(1 for line in lines if line.startswith("s ")) == 4
    assert quickcheck.pending(params, lines)["pending"] == ["%s: no file" % (tree / "etc" / "link.conf")]
    with pytest.raises(HostConfigError, match="link.conf exists and is not a regular file"):
        plan(validate(params), "/", FakeProbe())  # the module refuses it; the check sends it there
    (tree / "etc" / "app.conf.bak").write_text("old\n")
    assert quickcheck.pending(params, probe(params))["pending"] == [
        "%s: no file" % (tree / "etc" / "link.conf"), "%s: present" % (tree / "etc" / "app.conf.bak")]
