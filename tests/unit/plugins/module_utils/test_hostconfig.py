# -*- coding: utf-8 -*-
"""Unit tests for the host_config module_utils: validate, plan, apply, read_files, op_text.

Everything runs against a temporary tree used as ``root``, a FAKE probe (kernel modules and
systemd units as the test says they are) and a FAKE recording ``run`` for the commands."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig import state
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.apply import apply, read_files
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.state import (
    DIFF_CONTENT_LIMIT,
    HostConfigError,
    op_text,
    plan,
    validate,
)

SYSTEMCTL = "/usr/bin/systemctl"
MODPROBE = "/usr/sbin/modprobe"


class FakeProbe(object):
    """FAKE SystemProbe: kernel modules loaded, units systemd has loaded, enabled and active."""

    def __init__(self, loaded=(), known=(), enabled=(), active=()):
        self._loaded = set(loaded)
        self._known = set(known)
        self._enabled = set(enabled)
        self._active = set(active)
        self.asked = []

    def loaded(self, name):
        self.asked.append(("loaded", name))
        return name in self._loaded

    def known_unit(self, name):
        self.asked.append(("known_unit", name))
        return name in self._known

    def enabled(self, name):
        self.asked.append(("enabled", name))
        return name in self._enabled

    def can_disable(self, name):
        return name in self._enabled

    def active(self, name):
        self.asked.append(("active", name))
        return name in self._active


class FakeRun(object):
    """FAKE command runner: records each argv and answers rc from ``fail`` (argv tuple -> rc)."""

    def __init__(self, fail=None):
        self.calls = []
        self.fail = fail or {}

    def __call__(self, argv):
        self.calls.append(list(argv))
        rc = self.fail.get(tuple(argv), 0)
        return rc, "", "boom" if rc else ""


def desired(**params):
    return validate(params)


def converge(root, params, probe=None, run=None):
    ops, before, after = plan(desired(**params), root, probe or FakeProbe())
    done = apply(ops, root, run or FakeRun(), SYSTEMCTL, MODPROBE)
    return ops, done


def mode_of(root, path):
    return stat.S_IMODE(os.lstat(state.under(root, path)).st_mode)


def put(root, path, content, mode=0o644):
    full = state.under(root, path)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as fh:
        fh.write(content)
    os.chmod(full, mode)


def kinds(ops):
    return [op["op"] for op in ops]


# --- validate -----------------------------------------------------------------------------


def test_validate_collects_every_error_before_reading_anything(monkeypatch):
    def no_reading(*args, **kwargs):
        raise AssertionError("validate must not read the host")

    monkeypatch.setattr(state, "read_path", no_reading)
    monkeypatch.setattr(state.os, "lstat", no_reading)
    monkeypatch.setattr(state.os, "listdir", no_reading)
    params = dict(
        directories=[{"path": "/srv/a", "mode": "0999"},
                     {"path": "/srv/dup"},
                     {"path": "/srv/owned", "owner": "no-such-user-hostconfig"}],
        files=[{"path": "etc/relative.conf", "content": "x"},
               {"path": "/etc/../shadow", "content": "x"},
               {"path": "/srv/dup", "content": "x"},
               {"path": "/etc/nocontent.conf"}],
        kernel_modules=["nvmet", "bad module!"],
        units=[{"name": "nvmet", "enabled": True}],
    )
    with pytest.raises(HostConfigError) as info:
        validate(params)
    errors = info.value.errors
    assert len(errors) == 8, errors
    assert "directories[0]: mode '0999' is not an octal mode such as 0644" in errors
    assert any(e.startswith("files[0]: path 'etc/relative.conf' must be absolute") for e in errors)
    assert any(e.startswith("files[1]: path '/etc/../shadow' must be absolute") for e in errors)
    assert "files[2]: /srv/dup is also directories[1]" in errors
    assert "files[3]: content is required" in errors
    assert "kernel_modules[1]: 'bad module!' is not a kernel module name" in errors
    assert any(e.startswith("units[0]: 'nvmet' is not a systemd unit name") for e in errors)
    assert "/srv/owned: owner 'no-such-user-hostconfig' does not exist on this host" in errors
    assert info.value.msg.startswith("host_config: 8 problem(s) in the arguments, nothing was changed: ")
    assert info.value.done == []


def test_validate_refuses_unknown_group_root_and_dotdot_at_the_end():
    with pytest.raises(HostConfigError) as info:
        validate(dict(files=[{"path": "/etc/x", "content": "", "group": "no-such-group-hostconfig"}],
                      absent=["/", "/etc/.."], read=["relative"]))
    errors = info.value.errors
    assert "/etc/x: group 'no-such-group-hostconfig' does not exist on this host" in errors
    assert any(e.startswith("absent[0]: path '/'") for e in errors)
    assert any(e.startswith("absent[1]: path '/etc/..'") for e in errors)
    assert any(e.startswith("read[0]: path 'relative'") for e in errors)
    assert len(errors) == 4


def test_validate_refuses_the_same_path_twice_anywhere():
    with pytest.raises(HostConfigError) as info:
        validate(dict(directories=[{"path": "/srv/a"}, {"path": "/srv/a/"}],
                      files=[{"path": "/etc/x", "content": "1"}, {"path": "/etc/x", "content": "2"}],
                      absent=["/etc/gone", "/etc/gone", "/etc/x"]))
    errors = info.value.errors
    assert "directories[1]: /srv/a is also directories[0]" in errors
    assert "files[1]: /etc/x is also files[0]" in errors
    assert "absent[1]: /etc/gone is also absent[0]" in errors
    assert "absent[2]: /etc/x is also files[1]" in errors
    assert len(errors) == 4


def test_validate_normalizes_and_defaults():
    d = desired(directories=[{"path": "/srv//a/"}], files=[{"path": "/srv/a/f", "content": "x", "mode": "600"}],
                kernel_modules=["nvmet_tcp", "nvme-rdma"], units=[{"name": "getty@tty1.service", "started": True}])
    assert d["directories"] == [dict(path="/srv/a", mode=0o755, owner=None, group=None)]
    assert d["files"][0]["mode"] == 0o600 and d["files"][0]["secret"] is False
    assert d["persist_modules"] is True
    assert d["units"] == [dict(name="getty@tty1.service", enabled=None, started=True)]


# --- plan and apply of directories and files ------------------------------------------------


def test_empty_root_creates_parents_then_dirs_then_files_with_exact_modes(tmp_path):
    root = str(tmp_path)
    params = dict(directories=[{"path": "/srv/app", "mode": "0700"}, {"path": "/srv/app/cache", "mode": "0750"}],
                  files=[{"path": "/srv/app/conf/app.conf", "content": "a = 1\n", "mode": "0640"},
                         {"path": "/opt/tool/run", "content": "#!/bin/sh\n", "mode": "0755"}])
    ops, before, after = plan(desired(**params), root, FakeProbe())
    assert [op_text(op) for op in ops] == [
        "mkdir /srv 0755",
        "mkdir /srv/app 0700",
        "mkdir /srv/app/cache 0750",
        "mkdir /srv/app/conf 0755",
        "create /srv/app/conf/app.conf 0640 (6 bytes)",
        "mkdir /opt 0755",
        "mkdir /opt/tool 0755",
        "create /opt/tool/run 0755 (10 bytes)",
    ]
    assert before["/srv/app"] is None and before["/srv/app/conf/app.conf"] is None
    assert after["/srv/app"] == {"type": "directory", "mode": "0700"}
    assert after["/srv/app/conf/app.conf"]["content"] == "a = 1\n"
    run = FakeRun()
    old = os.umask(0o077)
    try:
        done = apply(ops, root, run, SYSTEMCTL, MODPROBE)
    finally:
        os.umask(old)
    assert done == [op_text(op) for op in ops]
    assert run.calls == []
    expected = {"/srv": 0o755, "/srv/app": 0o700, "/srv/app/cache": 0o750, "/srv/app/conf": 0o755,
                "/srv/app/conf/app.conf": 0o640, "/opt": 0o755, "/opt/tool": 0o755, "/opt/tool/run": 0o755}
    assert dict((p, mode_of(root, p)) for p in expected) == expected
    assert (tmp_path / "srv/app/conf/app.conf").read_text() == "a = 1\n"
    assert sorted(os.listdir(str(tmp_path / "srv/app/conf"))) == ["app.conf"]  # no temporary file left
    assert plan(desired(**params), root, FakeProbe())[0] == []


def test_child_directory_listed_before_its_parent_is_created_once(tmp_path):
    root = str(tmp_path)
    params = dict(directories=[{"path": "/srv/app/data", "mode": "0750"}, {"path": "/srv/app", "mode": "0700"}])
    ops, done = converge(root, params)
    assert mode_of(root, "/srv/app") == 0o700 and mode_of(root, "/srv/app/data") == 0o750
    assert plan(desired(**params), root, FakeProbe())[0] == []


def test_second_plan_after_apply_is_empty(tmp_path):
    root = str(tmp_path)
    params = dict(directories=[{"path": "/var/lib/x", "mode": "0711"}],
                  files=[{"path": "/etc/x/a.conf", "content": "one\n"},
                         {"path": "/etc/x/key", "content": "s3cr3t", "mode": "0600", "secret": True}],
                  absent=["/etc/x/old.conf"], kernel_modules=["nvmet"])
    put(root, "/etc/x/old.conf", "old")
    probe = FakeProbe(loaded=["nvmet"])
    ops, done = converge(root, params, probe)
    assert kinds(ops).count("remove") == 1
    assert plan(desired(**params), root, probe)[0] == []


def test_content_change_is_one_write_and_mode_change_only_a_chmod(tmp_path):
    root = str(tmp_path)
    put(root, "/etc/a.conf", "old\n", 0o644)
    ops, before, after = plan(desired(files=[{"path": "/etc/a.conf", "content": "new\n"}]), root, FakeProbe())
    assert kinds(ops) == ["write"]
    assert ops[0]["created"] is False and op_text(ops[0]) == "update /etc/a.conf 0644 (4 bytes)"
    assert before["/etc/a.conf"]["content"] == "old\n" and after["/etc/a.conf"]["content"] == "new\n"
    apply(ops, root, FakeRun(), SYSTEMCTL, MODPROBE)
    assert (tmp_path / "etc/a.conf").read_text() == "new\n"

    ops, before, after = plan(desired(files=[{"path": "/etc/a.conf", "content": "new\n", "mode": "0600"}]), root,
                              FakeProbe())
    assert ops == [dict(op="chmod", path="/etc/a.conf", mode=0o600)]
    inode = os.lstat(str(tmp_path / "etc/a.conf")).st_ino
    apply(ops, root, FakeRun(), SYSTEMCTL, MODPROBE)
    assert mode_of(root, "/etc/a.conf") == 0o600
    assert os.lstat(str(tmp_path / "etc/a.conf")).st_ino == inode  # chmod in place, not rewritten


def test_directory_mode_change_is_a_chmod(tmp_path):
    root = str(tmp_path)
    os.makedirs(str(tmp_path / "srv/a"))
    os.chmod(str(tmp_path / "srv/a"), 0o755)
    ops, before, after = plan(desired(directories=[{"path": "/srv/a", "mode": "0700"}]), root, FakeProbe())
    assert ops == [dict(op="chmod", path="/srv/a", mode=0o700)]
    assert before["/srv/a"] == {"type": "directory", "mode": "0755"}


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_content_update_without_owner_keeps_the_files_owner(tmp_path):
    root = str(tmp_path)
    put(root, "/etc/a.conf", "old\n")
    os.chown(str(tmp_path / "etc/a.conf"), 1, 1)
    converge(root, dict(files=[{"path": "/etc/a.conf", "content": "new\n"}]))
    st = os.lstat(str(tmp_path / "etc/a.conf"))
    assert (st.st_uid, st.st_gid) == (1, 1)
    assert (tmp_path / "etc/a.conf").read_text() == "new\n"


def test_owner_change_is_a_chown(tmp_path):
    import grp
    import pwd

    root = str(tmp_path)
    put(root, "/etc/a.conf", "same\n")
    me = pwd.getpwuid(os.geteuid()).pw_name
    group = grp.getgrgid(os.getegid()).gr_name
    ops = plan(desired(files=[{"path": "/etc/a.conf", "content": "same\n", "owner": me, "group": group}]), root,
               FakeProbe())[0]
    assert ops == []  # already ours
    if os.geteuid() == 0:
        os.chown(str(tmp_path / "etc/a.conf"), 1, 1)
        ops = plan(desired(files=[{"path": "/etc/a.conf", "content": "same\n", "owner": me}]), root, FakeProbe())[0]
        assert kinds(ops) == ["chown"] and op_text(ops[0]) == "chown /etc/a.conf %s:-" % me
        apply(ops, root, FakeRun(), SYSTEMCTL, MODPROBE)
        st = os.lstat(str(tmp_path / "etc/a.conf"))
        assert (st.st_uid, st.st_gid) == (0, 1)


def test_file_where_a_directory_is_refused_before_any_change(tmp_path):
    root = str(tmp_path)
    os.makedirs(str(tmp_path / "etc/a.conf"))
    with pytest.raises(HostConfigError, match="is not a regular file"):
        plan(desired(directories=[{"path": "/srv/new"}], files=[{"path": "/etc/a.conf", "content": "x"}]), root,
             FakeProbe())
    put(root, "/srv/file", "x")
    with pytest.raises(HostConfigError, match="is not a directory"):
        plan(desired(directories=[{"path": "/srv/file"}]), root, FakeProbe())


# --- secrets and the diff views --------------------------------------------------------------


def test_secret_content_never_in_op_text_or_views(tmp_path):
    root = str(tmp_path)
    old_secret, new_secret = "DHHC-1:00:OLDSECRETOLDSECRET:", "DHHC-1:00:NEWSECRETNEWSECRET:"
    put(root, "/etc/nvme/key", old_secret, 0o600)
    params = dict(files=[{"path": "/etc/nvme/key", "content": new_secret, "mode": "0600", "secret": True},
                         {"path": "/etc/nvme/new-key", "content": new_secret, "mode": "0600", "secret": True}])
    ops, before, after = plan(desired(**params), root, FakeProbe())
    lines = [op_text(op) for op in ops]
    assert lines == ["update /etc/nvme/key 0600 (%d bytes)" % len(new_secret),
                     "create /etc/nvme/new-key 0600 (%d bytes)" % len(new_secret)]
    views = repr(before) + repr(after)
    for text in (old_secret, new_secret, "OLDSECRET", "NEWSECRET"):
        assert text not in views and not any(text in line for line in lines)
    assert before["/etc/nvme/key"]["content"] == "(secret)"
    assert after["/etc/nvme/key"]["content"] == "(secret)"
    assert "sha256" not in before["/etc/nvme/key"] and "sha256" not in after["/etc/nvme/key"]
    done = apply(ops, root, FakeRun(), SYSTEMCTL, MODPROBE)
    assert not any(new_secret in line for line in done)
    assert (tmp_path / "etc/nvme/key").read_text() == new_secret
    assert mode_of(root, "/etc/nvme/key") == 0o600 and mode_of(root, "/etc/nvme/new-key") == 0o600


def test_large_file_shows_size_and_hash_but_no_content(tmp_path):
    import hashlib

    root = str(tmp_path)
    big = "x" * (DIFF_CONTENT_LIMIT + 1)
    small = "y" * DIFF_CONTENT_LIMIT
    ops, before, after = plan(desired(files=[{"path": "/etc/big", "content": big},
                                             {"path": "/etc/small", "content": small}]), root, FakeProbe())
    view = after["/etc/big"]
    assert "content" not in view
    assert view["size"] == DIFF_CONTENT_LIMIT + 1
    assert view["sha256"] == hashlib.sha256(big.encode()).hexdigest()
    assert after["/etc/small"]["content"] == small


# --- absent and remove_empty_dirs ------------------------------------------------------------


def test_absent_removes_file_ignores_missing_refuses_directory(tmp_path):
    root = str(tmp_path)
    put(root, "/etc/old.conf", "old")
    ops, before, after = plan(desired(absent=["/etc/old.conf", "/etc/never-was.conf"]), root, FakeProbe())
    assert ops == [dict(op="remove", path="/etc/old.conf")]
    assert before == {"/etc/old.conf": {"type": "file", "mode": "0644"}} and after == {"/etc/old.conf": None}
    apply(ops, root, FakeRun(), SYSTEMCTL, MODPROBE)
    assert not (tmp_path / "etc/old.conf").exists()
    assert plan(desired(absent=["/etc/old.conf"]), root, FakeProbe())[0] == []
    with pytest.raises(HostConfigError, match="which is a directory"):
        plan(desired(absent=["/etc"]), root, FakeProbe())
    assert (tmp_path / "etc").is_dir()


def test_remove_empty_dirs_after_absent_and_keeps_non_empty(tmp_path):
    root = str(tmp_path)
    put(root, "/etc/x/sub/only", "1")
    put(root, "/etc/y/keep", "1")
    ops = plan(desired(absent=["/etc/x/sub/only"], remove_empty_dirs=["/etc/x/sub", "/etc/x", "/etc/y"]), root,
               FakeProbe())[0]
    assert ops == [dict(op="remove", path="/etc/x/sub/only"), dict(op="rmdir", path="/etc/x/sub"),
                   dict(op="rmdir", path="/etc/x")]
    apply(ops, root, FakeRun(), SYSTEMCTL, MODPROBE)
    assert not (tmp_path / "etc/x").exists() and (tmp_path / "etc/y/keep").exists()


# --- kernel modules ------------------------------------------------------------------------------


def test_module_not_loaded_is_modprobed_and_persisted(tmp_path):
    root = str(tmp_path)
    probe = FakeProbe()
    ops, before, after = plan(desired(kernel_modules=["nvmet"]), root, probe)
    assert [op_text(op) for op in ops] == ["modprobe nvmet", "mkdir /etc 0755", "mkdir /etc/modules-load.d 0755",
                                           "create /etc/modules-load.d/nvmet.conf 0644 (6 bytes)"]
    assert before["module nvmet"] == {"loaded": False} and after["module nvmet"] == {"loaded": True}
    run = FakeRun()
    apply(ops, root, run, SYSTEMCTL, MODPROBE)
    assert run.calls == [[MODPROBE, "nvmet"]]
    assert (tmp_path / "etc/modules-load.d/nvmet.conf").read_text() == "nvmet\n"
    assert plan(desired(kernel_modules=["nvmet"]), root, FakeProbe(loaded=["nvmet"]))[0] == []


def test_module_listed_in_another_modules_load_file_is_not_written_again(tmp_path):
    root = str(tmp_path)
    put(root, "/etc/modules-load.d/fabric.conf", "# fabric\nnvme_tcp\n  nvmet  \n")
    put(root, "/etc/modules-load.d/nvmet.txt", "")  # not a .conf file: ignored
    ops = plan(desired(kernel_modules=["nvmet"]), root, FakeProbe(loaded=["nvmet"]))[0]
    assert ops == []
    ops = plan(desired(kernel_modules=["nvmet"]), root, FakeProbe())[0]
    assert ops == [dict(op="modprobe", name="nvmet")]
    ops = plan(desired(kernel_modules=["nvmet_rdma"]), root, FakeProbe(loaded=["nvmet_rdma"]))[0]
    assert kinds(ops) == ["write"] and ops[0]["path"] == "/etc/modules-load.d/nvmet_rdma.conf"


def test_persist_modules_false_writes_nothing(tmp_path):
    root = str(tmp_path)
    ops = plan(desired(kernel_modules=["nvmet", "nvmet_tcp"], persist_modules=False), root,
               FakeProbe(loaded=["nvmet"]))[0]
    assert ops == [dict(op="modprobe", name="nvmet_tcp")]


# --- units ----------------------------------------------------------------------------------------

UNIT = "/etc/systemd/system/aiinfra-x.service"


def test_changed_file_of_a_loaded_unit_gets_one_daemon_reload_before_enable_and_start(tmp_path):
    root = str(tmp_path)
    params = dict(files=[{"path": UNIT, "content": "[Service]\n"},
                         {"path": "/etc/systemd/system/aiinfra-x.service.d/override.conf", "content": "x\n"},
                         {"path": "/usr/lib/systemd/system/aiinfra-y.service", "content": "[Service]\n"}],
                  units=[{"name": "aiinfra-x.service", "enabled": True, "started": True}])
    probe = FakeProbe(known=["aiinfra-x.service", "aiinfra-y.service"])
    ops = plan(desired(**params), root, probe)[0]
    assert kinds(ops).count("daemon_reload") == 1
    reload_at = kinds(ops).index("daemon_reload")
    assert kinds(ops)[reload_at + 1:] == ["enable", "start"]
    assert all(k in ("mkdir", "write") for k in kinds(ops)[:reload_at])


def test_new_unit_file_of_an_unknown_unit_needs_no_daemon_reload(tmp_path):
    root = str(tmp_path)
    params = dict(files=[{"path": UNIT, "content": "[Service]\n"}],
                  units=[{"name": "aiinfra-x.service", "enabled": True, "started": True}])
    ops = plan(desired(**params), root, FakeProbe())[0]
    assert "daemon_reload" not in kinds(ops)
    assert kinds(ops)[-2:] == ["enable", "start"]


def test_unchanged_unit_file_needs_no_daemon_reload(tmp_path):
    root = str(tmp_path)
    put(root, UNIT, "[Service]\n")
    probe = FakeProbe(known=["aiinfra-x.service"], enabled=["aiinfra-x.service"], active=["aiinfra-x.service"])
    ops = plan(desired(files=[{"path": UNIT, "content": "[Service]\n"}],
                       units=[{"name": "aiinfra-x.service", "enabled": True, "started": True}]), root, probe)[0]
    assert ops == []


def test_removed_unit_file_of_a_loaded_unit_stops_disables_first_and_reloads_after(tmp_path):
    root = str(tmp_path)
    put(root, UNIT, "[Service]\n")
    probe = FakeProbe(known=["aiinfra-x.service"], enabled=["aiinfra-x.service"], active=["aiinfra-x.service"])
    ops, before, after = plan(desired(absent=[UNIT], units=[{"name": "aiinfra-x.service", "enabled": False,
                                                             "started": False}]), root, probe)
    assert [op_text(op) for op in ops] == ["systemctl stop aiinfra-x.service", "systemctl disable aiinfra-x.service",
                                           "remove " + UNIT, "systemctl daemon-reload"]
    assert before["unit aiinfra-x.service"] == {"active": True, "enabled": True}
    assert after["unit aiinfra-x.service"] == {"active": False, "enabled": False}


def test_units_plan_from_the_probes_answers(tmp_path):
    root = str(tmp_path)
    units = [{"name": "a.service", "enabled": True, "started": True},
             {"name": "b.service", "enabled": False, "started": False},
             {"name": "c.socket", "enabled": True, "started": None},
             {"name": "d.timer", "enabled": None, "started": False}]
    probe = FakeProbe(enabled=["b.service"], active=["b.service", "d.timer"])
    ops = plan(desired(units=units), root, probe)[0]
    assert [op_text(op) for op in ops] == [
        "systemctl stop b.service", "systemctl disable b.service", "systemctl stop d.timer",
        "systemctl enable c.socket", "systemctl enable a.service", "systemctl start a.service"]
    assert ("enabled", "d.timer") not in probe.asked and ("active", "c.socket") not in probe.asked
    probe = FakeProbe(enabled=["a.service", "c.socket"], active=["a.service"])
    assert plan(desired(units=units), root, probe)[0] == []


# --- apply: commands and failures -------------------------------------------------------------


def test_apply_runs_commands_in_order(tmp_path):
    root = str(tmp_path)
    params = dict(files=[{"path": UNIT, "content": "[Service]\n"}], kernel_modules=["nvmet"], persist_modules=False,
                  units=[{"name": "aiinfra-x.service", "enabled": True, "started": True},
                         {"name": "old.service", "enabled": False, "started": False}])
    probe = FakeProbe(known=["aiinfra-x.service"], enabled=["old.service"], active=["old.service"])
    ops = plan(desired(**params), root, probe)[0]
    run = FakeRun()
    done = apply(ops, root, run, SYSTEMCTL, MODPROBE)
    assert run.calls == [
        [SYSTEMCTL, "stop", "old.service"],
        [SYSTEMCTL, "--no-reload", "disable", "old.service"],
        [MODPROBE, "nvmet"],
        [SYSTEMCTL, "daemon-reload"],
        [SYSTEMCTL, "--no-reload", "enable", "aiinfra-x.service"],
        [SYSTEMCTL, "start", "aiinfra-x.service"],
    ]
    assert done == [op_text(op) for op in ops]
    assert (tmp_path / "etc/systemd/system/aiinfra-x.service").read_text() == "[Service]\n"


def test_failed_command_raises_with_what_was_done(tmp_path):
    root = str(tmp_path)
    params = dict(files=[{"path": "/etc/a.conf", "content": "a\n"}], kernel_modules=["nvmet", "nvmet_tcp"],
                  persist_modules=False, units=[{"name": "x.service", "started": True}])
    ops = plan(desired(**params), root, FakeProbe())[0]
    run = FakeRun(fail={(MODPROBE, "nvmet_tcp"): 1})
    with pytest.raises(HostConfigError) as info:
        apply(ops, root, run, SYSTEMCTL, MODPROBE)
    assert info.value.done == ["mkdir /etc 0755", "create /etc/a.conf 0644 (2 bytes)", "modprobe nvmet"]
    assert info.value.msg == "host_config: '%s nvmet_tcp' failed (rc 1): boom" % MODPROBE
    assert run.calls == [[MODPROBE, "nvmet"], [MODPROBE, "nvmet_tcp"]]  # nothing after the failure


def test_failed_file_operation_names_it_and_what_was_done(tmp_path):
    root = str(tmp_path)
    ops = [dict(op="mkdir", path="/srv", mode=0o755, uid=None, gid=None),
           dict(op="remove", path="/srv/never-was")]
    with pytest.raises(HostConfigError) as info:
        apply(ops, root, FakeRun(), SYSTEMCTL, MODPROBE)
    assert info.value.done == ["mkdir /srv 0755"]
    assert info.value.msg.startswith("host_config: remove /srv/never-was failed: ")


# --- read_files -------------------------------------------------------------------------------------


def test_read_files_returns_text_and_none_for_missing(tmp_path):
    root = str(tmp_path)
    put(root, "/run/x/status.json", '{"ok": true}\n')
    assert read_files(root, ["/run/x/status.json", "/run/x/missing.json"]) == {
        "/run/x/status.json": '{"ok": true}\n', "/run/x/missing.json": None}


class FakeStaticProbe(FakeProbe):
    """FAKE probe whose units are static: enabled as far as is-enabled goes, nothing to disable."""

    def can_disable(self, name):
        return False


def test_a_static_unit_is_not_disabled_again_and_again(tmp_path):
    desired = validate(dict(units=[dict(name="x.service", enabled=False, started=None)]))
    ops, _before, _after = plan(desired, str(tmp_path), FakeStaticProbe(enabled=["x.service"]))
    assert ops == []
    ops, _before, _after = plan(desired, str(tmp_path), FakeProbe(enabled=["x.service"]))
    assert [op["op"] for op in ops] == ["disable"]


def test_system_probe_asks_systemctl_once_per_unit_for_its_enablement():
    from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.apply import SystemProbe
    calls = []

    def run(argv):
        calls.append(argv)
        return 0, "static\n", ""

    probe = SystemProbe(run, "/bin/systemctl")
    assert probe.enabled("x.service") is True
    assert probe.can_disable("x.service") is False
    assert calls == [["/bin/systemctl", "is-enabled", "x.service"]]
