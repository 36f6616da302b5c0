# -*- coding: utf-8 -*-
"""Unit tests for hostconfig.observation: one document of what a host has, filled in by the
host reader (HostReader, what the host_config module plans with) or read from the shell
probe's lines (files/host_state.sh, through quickcheck.parse), and one planner for both.

The agreement tests run both readers for real on this machine: the tree is a temporary
folder (its paths absolute, the host reader's root "/", as the module's), the kernel
modules are this machine's /sys/module and /etc/modules-load.d, which both read, and the
units come from a FAKE systemctl (a shell script in the temporary folder) that both ask:
the probe finds it first on PATH, apply.SystemProbe runs it by its path."""

from __future__ import annotations

import copy
import grp
import os
import pwd
import subprocess

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import observation, quickcheck
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.apply import SystemProbe
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.observation import (
    HOST_ONLY, HostReader, Observation)
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.state import plan_observed, validate

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "files", "host_state.sh")
ME = pwd.getpwuid(os.getuid()).pw_name
MY_GROUP = grp.getgrgid(os.getgid()).gr_name
OTHER = next(p.pw_name for p in pwd.getpwall() if p.pw_uid != os.getuid())
# A module this machine has loaded (or none), and one no machine has.
LOADED = sorted(os.listdir("/sys/module"))[:1] if os.path.isdir("/sys/module") else []
NOT_LOADED = "aiinfra_no_such_module"

# FAKE systemctl: is-enabled and is-active answers per unit, silence for any other unit.
FAKE_SYSTEMCTL = """#!/bin/sh
case "$1 $2" in
  "is-enabled on.service") echo enabled ;;
  "is-active on.service") echo active ;;
  "is-enabled off.service") echo disabled ;;
  "is-active off.service") echo inactive ;;
  "is-enabled fixed.service") echo static ;;
  "is-active fixed.service") echo inactive ;;
esac
"""


@pytest.fixture
def host(tmp_path):
    """A tree, and the FAKE systemctl under bin/ beside it."""
    tree = tmp_path / "tree"
    (tree / "etc").mkdir(parents=True)
    os.chmod(str(tree / "etc"), 0o755)
    for name, text, mode in (("app.conf", "key = 1\n", 0o644), ("with blank.conf", "b\n", 0o600),
                             ("old.conf", "old\n", 0o644)):
        (tree / "etc" / name).write_text(text)
        os.chmod(str(tree / "etc" / name), mode)
    os.symlink("app.conf", str(tree / "etc" / "link.conf"))
    (tmp_path / "bin").mkdir()
    systemctl = tmp_path / "bin" / "systemctl"
    systemctl.write_text(FAKE_SYSTEMCTL)
    os.chmod(str(systemctl), 0o755)
    return tree


def run(argv):
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    return out.returncode, out.stdout, out.stderr


def probe_lines(host, params):
    """files/host_state.sh, run for real with the FAKE systemctl first on PATH."""
    env = dict(os.environ, PATH="%s:%s" % (host.parent / "bin", os.environ.get("PATH", "")))
    out = subprocess.run(["sh", SCRIPT] + quickcheck.probe_args(params), check=True, capture_output=True,
                         text=True, env=env).stdout
    return out.splitlines()


def host_observation(host, params):
    """The host reader, asked what the probe is asked (quickcheck.probe_args), as it answers the module."""
    seen = Observation(reader=HostReader("/", SystemProbe(run, str(host.parent / "bin" / "systemctl"))))
    for arg in quickcheck.probe_args(params):
        kind, name = arg.split(":", 1)
        if kind in "dfa":
            seen.path(name, content=kind == "f")
        elif kind == "m":
            seen.loaded(name)
            seen.listed(name)
        elif kind == "u":
            seen.enabled(name)
            seen.active(name)
        elif kind == "r":
            seen.read(name)
    return seen


def shared(doc):
    """The document less what only the host reader gives (HOST_ONLY: ids, content)."""
    doc = copy.deepcopy(doc)
    for have in doc.get("paths", {}).values():
        for key in HOST_ONLY:
            if have is not None:
                have.pop(key, None)
    return doc


def params_for(tree, **change):
    etc = str(tree / "etc")
    params = dict(
        directories=[dict(path=etc, mode="0755", owner=ME)],
        files=[dict(path=etc + "/app.conf", content="key = 1\n", mode="0644", owner=ME, group=MY_GROUP),
               dict(path=etc + "/with blank.conf", content="b\n", mode="0600")],
        absent=[etc + "/gone.conf"],
        kernel_modules=LOADED, persist_modules=False,
        units=[dict(name="on.service", enabled=True, started=True),
               dict(name="fixed.service", enabled=False, started=False)],
        read=[etc + "/app.conf", etc + "/missing"])
    for key, value in change.items():
        params[key] = value(params[key]) if callable(value) else value
    return params


CASES = {
    "a host that matches": {},
    "content, mode, owner and a missing file": dict(files=lambda fs: [
        dict(fs[0], content="key = 2\n"), dict(fs[1], mode="0640", owner=OTHER),
        dict(path=fs[0]["path"].replace("app", "new"), content="n\n")]),
    "a folder's mode, a file present that should not be": dict(
        directories=lambda ds: [dict(ds[0], mode="0700")], absent=lambda a: a + [a[0].replace("gone", "old")]),
    "a link where a file should be (refused), a file where a folder should be (refused)": dict(
        files=lambda fs: fs + [dict(path=fs[0]["path"].replace("app", "link"), content="x\n")],
        directories=lambda ds: ds + [dict(path=ds[0]["path"] + "/old.conf")]),
    "a module to load and to list for boot": dict(kernel_modules=LOADED + [NOT_LOADED], persist_modules=True),
    "a module not loaded, units to change": dict(
        kernel_modules=LOADED + [NOT_LOADED],
        units=[dict(name="off.service", enabled=True, started=True),
               dict(name="on.service", enabled=False, started=False),
               dict(name="silent.service", enabled=True, started=False)]),
}


@pytest.mark.parametrize("change", list(CASES.values()), ids=list(CASES))
def test_both_readers_observe_the_same_and_plan_the_same(host, change):
    if change.get("persist_modules") and not os.path.isdir("/etc/modules-load.d"):
        pytest.skip("the plan makes /etc/modules-load.d, a parent the probe does not look at")
    params = params_for(host, **change)
    desired = validate(params)
    lines = probe_lines(host, params)
    on_host = host_observation(host, params)
    from_probe = quickcheck.parse(lines)
    assert shared(on_host.doc) == from_probe
    assert all(have is None or set(HOST_ONLY[:2]) <= set(have) for have in on_host.doc["paths"].values())
    host_plan = plan_observed(desired, on_host)
    probe_seen = Observation(copy.deepcopy(from_probe))
    probe_plan = plan_observed(desired, probe_seen)
    assert host_plan[0] == probe_plan[0]  # the operations
    assert host_plan[3] == probe_plan[3]  # the paths refused
    # The probe misses only what a missing path's parents are (taken to be there).
    assert all(where[0] == "paths" for where in probe_seen.unseen)
    reasons = quickcheck.pending(params, lines)["pending"]
    assert bool(reasons) == bool(host_plan[0] or host_plan[3]), reasons


def test_a_rewrite_keeps_ids_only_the_host_reader_has(host):
    """The one difference between the plans: a file rewritten without an owner or group
    keeps the old file's, whose ids only the host reader gives (the module applies them)."""
    params = dict(files=[dict(path=str(host / "etc" / "app.conf"), content="key = 2\n")])
    desired = validate(params)
    on_host = plan_observed(desired, host_observation(host, params))[0]
    from_probe = plan_observed(desired, Observation(quickcheck.parse(probe_lines(host, params))))[0]
    st = os.lstat(str(host / "etc" / "app.conf"))
    assert (on_host[0]["uid"], on_host[0]["gid"]) == (st.st_uid, st.st_gid)
    assert (from_probe[0]["uid"], from_probe[0]["gid"]) == (None, None)
    assert [dict(op, uid=None, gid=None) for op in on_host] == from_probe


def test_a_matching_host_has_nothing_to_plan(host):
    params = params_for(host)
    assert plan_observed(validate(params), host_observation(host, params))[0] == []
    assert quickcheck.pending(params, probe_lines(host, params)) == dict(
        pending=[], read={str(host / "etc" / "app.conf"): "key = 1\n", str(host / "etc" / "missing"): None})


def test_what_the_probe_cannot_see_is_pending_even_with_nothing_to_plan(host):
    """A path the probe was not asked about: the plan from its document is empty (nothing
    is taken to be there, so nothing to remove), but the question is unseen."""
    params = dict(absent=[str(host / "etc" / "old.conf")])
    seen = Observation(quickcheck.parse([]))
    assert plan_observed(validate(params), seen)[0] == []
    assert seen.unseen == [("paths", str(host / "etc" / "old.conf"))]
    assert quickcheck.pending(params, [])["pending"] == ["%s: not probed" % (host / "etc" / "old.conf")]


def test_remove_empty_dirs_is_pending_as_the_probe_lists_no_folder(host):
    params = dict(remove_empty_dirs=[str(host / "etc")], directories=[dict(path=str(host / "etc"))])
    lines = probe_lines(host, params)
    seen = Observation(quickcheck.parse(lines))
    plan_observed(validate(params), seen)
    assert seen.unseen == [("listings", str(host / "etc"))]
    assert quickcheck.pending(params, lines)["pending"] == ["remove_empty_dirs is not judged here"]
    # The host reader lists it: not empty, nothing to remove.
    assert plan_observed(validate(params), Observation(reader=HostReader("/", None)))[0] == []


def test_unseen_parents_are_taken_to_exist_and_add_no_reason():
    """A file to create under a folder the probe was not asked about: the plan writes it,
    without a mkdir for a parent the document cannot show."""
    params = dict(files=[dict(path="/srv/app/new.conf", content="x\n")])
    seen = Observation(quickcheck.parse(["p - /srv/app/new.conf"]))
    ops = plan_observed(validate(params), seen)[0]
    assert [op["op"] for op in ops] == ["write"]
    assert seen.unseen == [("paths", "/srv/app")]
    assert quickcheck.pending(params, ["p - /srv/app/new.conf"])["pending"] == ["/srv/app/new.conf: no file"]


def test_owners_compare_by_id_on_the_host_and_by_name_from_the_probe():
    """The host reader's ids are compared with the wanted names resolved here, as the module
    always has; the probe prints names only (find's %u %g), compared as names."""
    want = dict(path="/x", type="directory", mode=0o755)
    name_only = dict(want, owner="root", group="root")
    desired = validate(dict(directories=[dict(path="/x", mode="0755", owner="root", group="root")]))
    assert plan_observed(desired, Observation(dict(paths={"/x": name_only})))[0] == []
    renamed = dict(name_only, owner="toor")  # another name for uid 0 would still be a change by name
    assert [op["op"] for op in plan_observed(desired, Observation(dict(paths={"/x": renamed})))[0]] == ["chown"]
    by_id = dict(renamed, uid=0, gid=0)  # the host reader's: the ids decide
    assert plan_observed(desired, Observation(dict(paths={"/x": by_id})))[0] == []


def test_a_file_to_remove_is_never_read_nor_hashed(host, monkeypatch):
    # A teardown removes backing files of any size: reading one to hash it cost 32 s for
    # 1 GiB on the lab's emulated target (and would not fit in memory on a real one).
    old = str(host / "etc" / "old.conf")
    params = params_for(host, absent=lambda a: a + [old])
    lines = probe_lines(host, params)
    assert "s 644 %s %s f %s" % (ME, MY_GROUP, old) in lines
    assert not [line for line in lines if line.startswith("h ") and line.endswith(old)], lines
    opened = []
    real_open = open

    def spy(path, *args, **kwargs):
        opened.append(path)
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(observation, "open", spy, raising=False)
    on_host = host_observation(host, params)
    assert on_host.doc["paths"][old]["sha256"] is None and "content" not in on_host.doc["paths"][old]
    assert old not in opened and str(host / "etc" / "app.conf") in opened
    assert shared(on_host.doc) == quickcheck.parse(lines)
    ops = plan_observed(validate(params), on_host)[0]
    assert dict(op="remove", path=old) in ops


def test_a_file_read_without_its_content_is_read_again_when_its_content_is_planned(host):
    app = str(host / "etc" / "app.conf")
    seen = Observation(reader=HostReader("/", None))
    assert seen.path(app)["sha256"] is None
    assert seen.path(app, content=True)["content"] == b"key = 1\n"
    assert seen.doc["paths"][app]["sha256"] is not None


def test_the_first_refused_path_is_the_modules_error_and_the_rest_still_planned(tmp_path):
    (tmp_path / "file").write_text("x")
    (tmp_path / "dir").mkdir()
    params = dict(directories=[dict(path=str(tmp_path / "file"))],
                  files=[dict(path=str(tmp_path / "dir"), content="x")],
                  absent=[str(tmp_path / "other")])
    (tmp_path / "other").write_text("y")
    seen = Observation(reader=HostReader("/", None))
    ops, _before, _after, refused = plan_observed(validate(params), seen)
    assert [path for path, _msg in refused] == [str(tmp_path / "file"), str(tmp_path / "dir")]
    assert refused[0][1].endswith("exists and is not a directory (file); nothing was changed")
    assert ops == [dict(op="remove", path=str(tmp_path / "other"))]


def test_system_probe_reports_systemctls_words_as_the_probe_does():
    answers = {"is-enabled": "static\n", "is-active": ""}
    probe = SystemProbe(lambda argv: (0, answers[argv[1]], ""), "/bin/systemctl")
    assert (probe.enablement("x.service"), probe.activity("x.service")) == ("static", "-")
    assert (probe.enabled("x.service"), probe.can_disable("x.service"), probe.active("x.service")) == (
        True, False, False)
