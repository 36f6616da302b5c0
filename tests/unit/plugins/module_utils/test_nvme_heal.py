"""nvme/heal.py: the healer connects exactly the configured paths the kernel holds no controller
for, with the role's settings and secrets, through /dev/nvme-fabrics (a FAKE connect here that
records the option string), backs off on failure, and never touches another controller. The
lab proves it on the real kernel (molecule nvmeof_multipath)."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import heal
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCliError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fabrics_dev import kernel_options

sys.path.insert(0, os.path.dirname(__file__))
from nvme_multipath_fake import NQN, two_path_tree  # noqa: E402
from test_nvme_health import fabrics  # noqa: E402

HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:3f809b1e-0c44-4054-9cde-ac43a22d9f88"
SECRET = "DHHC-1:00:ZmFrZWZha2VmYWtlZmFrZWZha2VmYWtlZmFrZWZha2U=:"
ARGS = {
    "subsystems": [{"nqn": NQN, "iopolicy": "round-robin", "paths": [
        {"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "hostnqn": HOSTNQN},
        {"transport": "tcp", "traddr": "10.99.1.1", "trsvcid": "4420", "hostnqn": HOSTNQN}]}],
    "ctrl_loss_tmo": 60, "reconnect_delay": 2, "dhchap_secret": SECRET, "persistent": False,
}


def identity(conn, state, check_mode, gen):
    return conn["hostnqn"], None, []


class FakeConnect(object):
    def __init__(self, fail=None):
        self.options = []
        self.fail = fail

    def __call__(self, values):
        self.options.append(kernel_options(values))
        if self.fail:
            raise NvmeCliError("connect through /dev/nvme-fabrics failed: %s" % self.fail, kind="command")
        return "nvme%d" % (10 + len(self.options))


def setup(tmp_path, controllers, args=None):
    two_path_tree(tmp_path)
    sysfs = fabrics(tmp_path, controllers, hostnqn=HOSTNQN)
    heal_dir = tmp_path / "heal"
    heal_dir.mkdir()
    (heal_dir / "nvmeof_initiator-abc.json").write_text(json.dumps(args or ARGS))
    paths = heal.configured_paths(heal.load_entries(str(heal_dir)), "6.12.48+deb13-amd64")
    return sysfs, paths


def test_a_removed_path_is_connected_again_with_the_roles_settings_and_secret(tmp_path):
    sysfs, paths = setup(tmp_path, controllers=(1,))
    connect, lines = FakeConnect(), []
    backoff = heal.Backoff(str(tmp_path / "run" / "state.json"))
    done, failed, waiting = heal.heal_once(paths, sysfs, backoff, 1000.0, connect=connect, identity=identity,
                                           log=lines.append)
    assert done == [NQN + " tcp 10.99.1.1:4420 as " + HOSTNQN] and failed == [] and waiting == []
    (options,) = connect.options
    assert options.startswith("nqn=%s,transport=tcp,traddr=10.99.1.1,trsvcid=4420,hostnqn=%s" % (NQN, HOSTNQN))
    assert "dhchap_secret=" + SECRET in options and "ctrl_loss_tmo=60" in options and "reconnect_delay=2" in options
    assert lines == [NQN + " tcp 10.99.1.1:4420 as " + HOSTNQN + ": missing; reconnect attempt 1 connected nvme11"]
    # The journal line carries no secret.
    assert SECRET not in lines[0]


def test_nothing_is_done_while_every_path_has_a_controller_and_other_controllers_are_left_alone(tmp_path):
    # Both configured paths live; controller 0 (PCIe) and any other stay untouched.
    sysfs, paths = setup(tmp_path, controllers=(1, 2))
    connect = FakeConnect()
    done, failed, waiting = heal.heal_once(paths, sysfs, heal.Backoff(str(tmp_path / "s.json")), 0.0,
                                           connect=connect, identity=identity, log=pytest.fail)
    assert (done, failed, waiting, connect.options) == ([], [], [], [])


def test_a_path_that_is_reconnecting_is_the_kernels_and_not_connected_twice(tmp_path):
    two_path_tree(tmp_path, second_state="connecting")
    sysfs = fabrics(tmp_path, (1, 2), hostnqn=HOSTNQN)
    heal_dir = tmp_path / "heal"
    heal_dir.mkdir()
    (heal_dir / "a.json").write_text(json.dumps(ARGS))
    paths = heal.configured_paths(heal.load_entries(str(heal_dir)), "6.12")
    connect = FakeConnect()
    heal.heal_once(paths, sysfs, heal.Backoff(str(tmp_path / "s.json")), 0.0, connect=connect, identity=identity,
                   log=pytest.fail)
    assert connect.options == []


def test_a_failed_reconnect_backs_off_doubling_up_to_the_maximum_and_says_when(tmp_path):
    sysfs, paths = setup(tmp_path, controllers=(1,))
    connect, lines = FakeConnect(fail="Connection refused"), []
    state = str(tmp_path / "run" / "state.json")
    backoff = heal.Backoff(state)
    heal.heal_once(paths, sysfs, backoff, 100.0, connect=connect, identity=identity, log=lines.append)
    assert lines[-1].endswith("reconnect attempt 1 failed: connect through /dev/nvme-fabrics failed: "
                              "Connection refused; next attempt in 5 s")
    backoff.save()
    assert oct(os.stat(state).st_mode & 0o777) == "0o600"
    # Not due yet: waits, no connect.
    backoff = heal.Backoff(state)
    done, failed, waiting = heal.heal_once(paths, sysfs, backoff, 104.0, connect=connect, identity=identity,
                                           log=lines.append)
    assert waiting and len(connect.options) == 1
    delays = []
    now = 105.0
    for dummy in range(8):
        heal.heal_once(paths, sysfs, backoff, now, connect=connect, identity=identity, log=lines.append)
        delays.append(int(lines[-1].rsplit("next attempt in ", 1)[1].split()[0]))
        now += delays[-1]
    assert delays == [10, 20, 30, 30, 30, 30, 30, 30]


def test_a_path_back_by_itself_forgets_its_backoff(tmp_path):
    sysfs, paths = setup(tmp_path, controllers=(1,))
    backoff = heal.Backoff(str(tmp_path / "s.json"))
    heal.heal_once(paths, sysfs, backoff, 0.0, connect=FakeConnect(fail="x"), identity=identity, log=lambda l: None)
    assert backoff.state
    # The kernel (or an admin) brought it back: the next pass finds nothing missing.
    two = tmp_path / "two"
    two_path_tree(two)
    heal.heal_once(paths, fabrics(two, (1, 2), hostnqn=HOSTNQN), backoff, 1.0, connect=FakeConnect(),
                   identity=identity, log=pytest.fail)
    assert backoff.state == {}


def test_a_damaged_entry_is_named_and_nothing_is_connected(tmp_path):
    heal_dir = tmp_path / "heal"
    heal_dir.mkdir()
    (heal_dir / "bad.json").write_text("{")
    with pytest.raises(heal.HealError, match="cannot read .*bad.json"):
        heal.load_entries(str(heal_dir))
    (heal_dir / "bad.json").write_text(json.dumps({"subsystems": [{"nqn": "not-an-nqn", "paths": [
        {"transport": "tcp", "traddr": "10.99.0.1"}]}]}))
    with pytest.raises(heal.HealError, match="bad.json: subsystems"):
        heal.configured_paths(heal.load_entries(str(heal_dir)), "6.12")


def test_main_reports_usage_and_a_damaged_entry(tmp_path, capsys):
    assert heal.main(["--now"], heal_dir=str(tmp_path)) == 2
    (tmp_path / "x.json").write_text("[]")
    assert heal.main([], heal_dir=str(tmp_path), state_file=str(tmp_path / "s.json")) == 1
    assert "x.json is not the healer's entry (nvme_connections arguments) (no list of subsystems)" in capsys.readouterr().err


class _Sysfs(object):
    def __init__(self, controllers):
        self.list = controllers

    def controllers(self, match=None):
        return [c for c in self.list if match is None or match(c)]

    def transport_module_loaded(self, transport):
        return True


def _plan(tmp_path):
    sysfs, paths = setup(tmp_path, controllers=(1,))
    label, conn, desired = paths[1]
    return {"desired": dict(desired, hostnqn=HOSTNQN), "ops": [("connect", None)], "via_kernel": True,
            "identity_writes": []}


def _raise_already(values):
    raise NvmeCliError("connect through /dev/nvme-fabrics failed: already connected", kind="already_connected")


def test_a_module_connect_that_the_healer_made_first_is_converged(tmp_path, monkeypatch):
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import connect_run

    plan = _plan(tmp_path)
    monkeypatch.setattr(connect_run, "connect_through_kernel", _raise_already)
    monkeypatch.setattr(connect_run, "kernel_values", lambda desired, cli: desired)
    healed = dict(plan["desired"], name="nvme7", state="live", subsysnqn=NQN)
    # The healer's controller exists now: the module's EALREADY means converged.
    connect_run.start_connection(None, {"wait_timeout": 0}, plan, None, _Sysfs([healed]))
    # Without such a controller the same error is still a failure.
    with pytest.raises(connect_run.ConnectFailure, match="already connected"):
        connect_run.start_connection(None, {"wait_timeout": 0}, plan, None, _Sysfs([]))


def test_the_healers_key_loader_runs_commands_through_the_collections_runner():
    # kernel_values asks it for a keyring's serial or to insert a PSK; it used to get a bare
    # function where KeyLoader takes a runner (nvme/runner.CommandRunner), and would have
    # failed on the first entry with a keyring or a TLS key.
    loader = heal._Keys().key_loader()
    result = loader.runner.run(["sh", "-c", "echo ok"])
    assert (result.rc, result.stdout.strip()) == (0, "ok")
