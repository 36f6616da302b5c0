# -*- coding: utf-8 -*-
"""No secret in the argv or the environment of any process the collection starts (issue 35,
item 1): other local users read /proc/PID/cmdline (and root's tools read /proc/PID/environ).

nvme_connect (DH-HMAC-CHAP both ways; TLS with a PSK as tls_key), nvme_discover with a
DH-HMAC-CHAP secret, the nvme_tls_key loader and the boot-time loader (tls/load.py main) run
here with every command they start recorded - argv, environment and standard input - and none
may carry a secret. FAKES: AnsibleModule.run_command and subprocess.run record and answer;
sysfs, the kernel's /dev/nvme-fabrics and the kernel keyring are fakes. The real proof is the
lab sampler (tests/lab/secret_sampler.py, tests/lab/secrets_off_argv.sh), which reads every
process's cmdline and environ on both VMs while the playbooks run."""

from __future__ import annotations

import os
import subprocess

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import runner
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.runner import CommandRunner
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import connect_run, fabrics_dev
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.host import host_identity
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls import load
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.store import dump_store, normalize_keys
from ansible_collections.aiinfra.fabric.plugins.modules import nvme_connect, nvme_discover
from module_harness import run_main  # tests/unit/plugins/modules/module_harness.py

NQN = "nqn.2026-12.io.aiinfra.lab:te1.tls"
HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:00000000-0000-0000-0000-000000000001"
HOSTID = "00000000-0000-0000-0000-000000000001"
# Made-up keys of the real formats (the DH-HMAC-CHAP ones as in test_nvme_cli.py); the PSK is
# molecule/nvmeof_tls's lab test key.
HOST_KEY = "DHHC-1:00:ZmFrZS1ob3N0LWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"
CTRL_KEY = "DHHC-1:00:ZmFrZS1jdHJsLWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"
PSK = "NVMeTLSkey-1:01:1ewEOHQK4GLOGuwpsC2DLwTSKOq0PO455eNCK660GqG1IqjC:"
# What nvme-cli 2.13 / libnvme 1.13 (Debian 13, the trixie lab's packages) hands to add_key(2)
# for PSK, HOSTNQN and NQN: `nvme check-tls-key --insert` run on the build host from the lab's
# .deb files with a stand-in libkeyutils that printed add_key's arguments (see
# tests/fixtures/nvme_cli/README.md, tls-psk-insert-nvme-cli-2.13.txt).
IDENTITY = "NVMe0R01 %s %s" % (HOSTNQN, NQN)
PAYLOAD = bytes.fromhex("2c3a784b18b1ac704f3aad70ff89fec5df3091c09ac3c7159eee0649d1d645bc")
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvme_cli")
KEYRING_SERIAL = 0x0B1C2D3E
PROC_KEYS = "%08x I--Q---     1 perm 3f010000     0     0 keyring   .nvme: 1\n" % KEYRING_SERIAL


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def secrets_seen(calls, secrets):
    """The recorded commands (argv, environment, standard input) that carry one of ``secrets``."""
    found = []
    for argv, env, data in calls:
        text = "\0".join([str(a) for a in argv] + ["%s=%s" % kv for kv in sorted((env or {}).items())])
        if any(s in text for s in secrets):
            found.append(argv)
    return found


class FakeKeys(object):
    """FAKE kernel keyring (stands in for tls.kernel_keys.KernelKeys): records add_key's arguments."""

    added = []

    def __init__(self, *a, **kw):
        pass

    def replace(self, ring, key_type, description, payload):
        FakeKeys.added.append((ring, key_type, description, bytes(payload)))
        return 0x1234


class FakeSysfs(object):
    """FAKE FabricsSysfs: the controllers in ``live``."""

    live = []

    def __init__(self, *a, **kw):
        pass

    def controllers(self, match=None):
        return [c for c in FakeSysfs.live if match is None or match(c)]

    def read_secrets(self, name):
        return {}

    def online_cpus(self):
        return 1

    def devices_of(self, controllers):
        return []

    def usage(self, names):
        return []

    def fabrics_device_present(self):
        return True

    def transport_module_loaded(self, transport):
        return True

    def release(self):
        pass

    def hold(self):
        pass


def add_controller(values):
    name = "nvme%d" % len(FakeSysfs.live)
    FakeSysfs.live.append(dict(name=name, state="live", transport=values["transport"], subsysnqn=values["nqn"],
                               traddr=values["traddr"], trsvcid=values["trsvcid"], host_traddr=None, host_iface=None,
                               src_addr="10.99.0.2", hostnqn=values["hostnqn"], hostid=values["hostid"],
                               ctrl_loss_tmo=600, reconnect_delay=10, keep_alive_tmo=5, nr_io_queues=1,
                               queue_size=128, namespaces=[], tls=bool(values.get("tls"))))
    return name


def record_commands(monkeypatch, module, answers=()):
    """Record every AnsibleModule.run_command of ``module``; answer by the argv's words."""
    calls = []

    def run_command(self, argv, environ_update=None, data=None, **kw):
        calls.append((list(argv), environ_update, data))
        words = [a for a in argv[1:] if not a.startswith("-")]
        if argv[0].endswith("nvme") and words[:1] == ["connect"] and "--help" not in argv:
            values = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
            add_controller(dict(transport=values["transport"], traddr=values["traddr"], trsvcid=values["trsvcid"],
                                nqn=values["nqn"], hostnqn=values.get("hostnqn"), hostid=values.get("hostid"),
                                tls="--tls" in argv))
        for prefix, answer in answers:
            if argv[1:1 + len(prefix)] == prefix:
                return answer
        return 0, "", ""

    monkeypatch.setattr(module.AnsibleModule, "run_command", run_command)
    monkeypatch.setattr(module.AnsibleModule, "get_bin_path", lambda self, name, required=False: "/usr/sbin/" + name)
    return calls


def connect(monkeypatch, tmp_path, keep=False, **args):
    """Run nvme_connect with ``args``; the fake host starts empty unless ``keep``."""
    if not keep:
        FakeSysfs.live = []
    FakeKeys.added = []
    kernel = []

    def kernel_connect(values, *a, **kw):
        kernel.append(dict(values))
        return add_controller(values)

    (tmp_path / "hostnqn").write_text(HOSTNQN + "\n")
    (tmp_path / "hostid").write_text(HOSTID + "\n")
    (tmp_path / "keys").write_text(PROC_KEYS)
    calls = record_commands(monkeypatch, nvme_connect, answers=[
        (["connect", "--help"], (0, fixture("connect-help-nvme-cli-2.13.txt"), "")),
        (["check-tls-key", "--help"], (0, fixture("check-tls-key-help-nvme-cli-2.13.txt"), "")),
        (["keys"], (1, "", "Invalid sub-command\n")),
        (["config-convert"], (1, "", "Invalid sub-command\n")),
    ])
    monkeypatch.setattr(nvme_connect, "FabricsSysfs", FakeSysfs)
    monkeypatch.setattr(connect_run, "connect_through_kernel", kernel_connect)
    monkeypatch.setattr(connect_run, "CONFIG_JSON", str(tmp_path / "config.json"))
    monkeypatch.setattr(connect_run, "host_identity", lambda *a: host_identity(*a, etc=str(tmp_path)))
    monkeypatch.setattr(connect_run, "wait_for_connection",
                        lambda sysfs, desired, timeout: (list(FakeSysfs.live), [], None))
    monkeypatch.setattr(load, "KernelKeys", FakeKeys, raising=False)
    monkeypatch.setattr(load, "PROC_KEYS", str(tmp_path / "keys"))
    base = dict(transport="tcp", traddr="10.99.0.1", trsvcid="4420", nqn=NQN)
    return run_main(monkeypatch, nvme_connect, dict(base, **args)), calls, kernel


def test_connect_with_dh_hmac_chap_both_ways_keeps_both_secrets_off_every_argv(monkeypatch, tmp_path):
    result, calls, kernel = connect(monkeypatch, tmp_path, dhchap_secret=HOST_KEY, dhchap_ctrl_secret=CTRL_KEY)
    assert secrets_seen(calls, [HOST_KEY, CTRL_KEY]) == [], "a secret on a command line"
    assert "failed" not in result, result
    assert result["changed"] is True
    # The secrets reach the kernel through /dev/nvme-fabrics, with this host's identity.
    assert [(k["dhchap_secret"], k["dhchap_ctrl_secret"], k["hostnqn"], k["hostid"]) for k in kernel] == [
        (HOST_KEY, CTRL_KEY, HOSTNQN, HOSTID)]


def test_connect_with_a_tls_psk_as_tls_key_keeps_it_off_every_argv(monkeypatch, tmp_path):
    result, calls, kernel = connect(monkeypatch, tmp_path, tls=True, tls_key=PSK)
    assert secrets_seen(calls, [PSK, PSK.split(":")[2]]) == [], "the PSK on a command line"
    assert "failed" not in result, result
    # The PSK went into the keyring as nvme-cli 2.13's check-tls-key --insert puts it (the
    # identity the target side of this collection holds), and the kernel got its serial.
    assert FakeKeys.added == [(KEYRING_SERIAL, "psk", IDENTITY, PAYLOAD)]
    assert [(k["tls"], k["tls_key"]) for k in kernel] == [(True, 0x1234)]


def test_discover_with_a_dh_hmac_chap_secret_keeps_it_off_every_argv(monkeypatch, tmp_path):
    kernel = []

    def kernel_connect(values, *a, **kw):
        kernel.append(dict(values))
        return "nvme5"

    calls = record_commands(monkeypatch, nvme_discover, answers=[
        (["discover"], (0, fixture("discover-tcp-role-target-nvme-cli-2.13.json"), ""))])
    monkeypatch.setattr(nvme_discover, "FabricsSysfs", FakeSysfs)
    monkeypatch.setattr(fabrics_dev, "connect_through_kernel", kernel_connect)
    result = run_main(monkeypatch, nvme_discover, dict(transport="tcp", traddr="10.99.0.1", trsvcid="4420",
                                                       hostnqn=HOSTNQN, hostid=HOSTID, dhchap_secret=HOST_KEY))
    assert secrets_seen(calls, [HOST_KEY]) == [], "the secret on a command line"
    assert "failed" not in result, result
    assert result["subsystems"]
    # The discovery controller was made by the kernel with the secret, its log read by
    # nvme-cli from that controller, and the controller removed again.
    assert [(k["nqn"], k["dhchap_secret"], k["hostnqn"]) for k in kernel] == [
        ("nqn.2014-08.org.nvmexpress.discovery", HOST_KEY, HOSTNQN)]
    assert [c[0][1:3] for c in calls] == [["discover", "--device=nvme5"], ["disconnect", "--device=nvme5"]]


def store_with_the_lab_key(tmp_path):
    store = tmp_path / "tls-keys.json"
    store.write_text(dump_store(".nvme", normalize_keys([{"hostnqn": HOSTNQN, "subsysnqn": NQN, "psk": PSK}])))
    (tmp_path / "keys").write_text(PROC_KEYS)
    return str(store)


def test_the_key_loader_keeps_the_psk_off_every_argv(monkeypatch, tmp_path):
    FakeKeys.added = []
    calls = []

    def run(argv, environ_update=None, data=None):
        calls.append((list(argv), None, data))
        if argv[1:3] == ["check-tls-key", "--help"]:
            return 0, fixture("check-tls-key-help-nvme-cli-2.13.txt"), ""
        if argv[1:2] == ["keys"]:
            return 1, "", "Invalid sub-command\n"
        return 0, "", ""

    monkeypatch.setattr(load, "KernelKeys", FakeKeys, raising=False)
    count, errors = load.load_store(store_with_the_lab_key(tmp_path), load.KeyLoader(CommandRunner(run), proc_keys=str(tmp_path / "keys")))
    assert secrets_seen(calls, [PSK, PSK.split(":")[2]]) == [], "the PSK on a command line"
    assert (count, errors) == (1, [])
    assert FakeKeys.added == [(KEYRING_SERIAL, "psk", IDENTITY, PAYLOAD)]


def test_the_boot_time_loader_keeps_the_psk_off_every_argv_and_environment(monkeypatch, tmp_path):
    FakeKeys.added = []
    calls = []

    def fake_run(argv, **kw):
        calls.append((list(argv), kw.get("env"), kw.get("input")))
        out, rc = "", 0
        if argv[1:3] == ["check-tls-key", "--help"]:
            out = fixture("check-tls-key-help-nvme-cli-2.13.txt")
        elif argv[1:2] == ["keys"]:
            rc = 1
        return subprocess.CompletedProcess(argv, rc, out, "")

    monkeypatch.setattr(runner.subprocess, "run", fake_run)
    monkeypatch.setattr(load, "KernelKeys", FakeKeys, raising=False)
    monkeypatch.setattr(load, "PROC_KEYS", str(tmp_path / "keys"))
    monkeypatch.setenv("AIINFRA_TEST_ENV", "kept")
    assert load.main(["load", store_with_the_lab_key(tmp_path)]) == 0
    assert secrets_seen(calls, [PSK, PSK.split(":")[2]]) == [], "the PSK on a command line or in an environment"
    assert calls and all(env and env.get("LC_ALL") == "C" for argv, env, data in calls)
    assert FakeKeys.added == [(KEYRING_SERIAL, "psk", IDENTITY, PAYLOAD)]


def test_a_connect_with_secrets_says_how_it_connects_and_check_mode_writes_nothing(monkeypatch, tmp_path):
    result, calls, kernel = connect(monkeypatch, tmp_path, dhchap_secret=HOST_KEY, _ansible_check_mode=True)
    assert result["changed"] is True and result["operations"] == [connect_run.CONNECT_WITH_SECRETS]
    assert kernel == [] and calls == []
    result, calls, kernel = connect(monkeypatch, tmp_path, dhchap_secret=HOST_KEY)
    assert result["operations"] == [connect_run.CONNECT_WITH_SECRETS] and len(kernel) == 1
    again, calls, kernel = connect(monkeypatch, tmp_path, keep=True, dhchap_secret=HOST_KEY)
    assert again["changed"] is False and again["operations"] == [] and kernel == [] and calls == []


def test_tls_without_a_secret_stays_with_nvme_cli_and_a_key_serial_goes_to_the_kernel(monkeypatch, tmp_path):
    result, calls, kernel = connect(monkeypatch, tmp_path, tls=True, keyring=".nvme")
    assert "failed" not in result, result
    assert kernel == [] and [c[0][1:] for c in calls if c[0][1] == "connect" and "--help" not in c[0]] == [
        ["connect", "--transport=tcp", "--traddr=10.99.0.1", "--trsvcid=4420", "--nqn=%s" % NQN,
         "--hostnqn=%s" % HOSTNQN, "--hostid=%s" % HOSTID, "--keyring=.nvme", "--tls"]]
    result, calls, kernel = connect(monkeypatch, tmp_path, tls=True, tls_key="0x2d3f", keyring=".nvme")
    assert "failed" not in result, result
    assert [(k["tls_key"], k["keyring"]) for k in kernel] == [(0x2d3f, KEYRING_SERIAL)] and FakeKeys.added == []


def test_a_malformed_psk_as_tls_key_is_refused_before_anything_runs(monkeypatch, tmp_path):
    bad = PSK.replace("1ew", "2ew")
    result, calls, kernel = connect(monkeypatch, tmp_path, tls=True, tls_key=bad)
    assert result["failed"] and "tls_key" in result["msg"] and "CRC-32" in result["msg"]
    assert bad not in result["msg"] and calls == [] and kernel == []


def test_discover_with_a_secret_needs_a_host_nqn(monkeypatch, tmp_path):
    calls = record_commands(monkeypatch, nvme_discover)
    monkeypatch.setattr(nvme_discover, "FabricsSysfs", FakeSysfs)
    monkeypatch.setattr(nvme_discover, "host_identity", lambda *a: host_identity(*a, etc=str(tmp_path)))
    result = run_main(monkeypatch, nvme_discover, dict(transport="tcp", traddr="10.99.0.1", dhchap_secret=HOST_KEY))
    assert result["failed"] and "set hostnqn" in result["msg"] and HOST_KEY not in result["msg"]
    assert calls == []
