"""The one command runner of the nvme and tls packages (nvme/runner.py): the same result keys
from every call, one redaction, the error class of whoever runs it, and the nvme-cli help probes
and keyctl calls of the TLS key loader going through it. FAKE run_command callables record the
calls; subprocess_run_command runs real programs (sh, a missing one)."""

import sys

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCli, NvmeCliError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.runner import (
    ENV, MASK, CommandError, CommandResult, CommandRunner, redact_argv, subprocess_run_command,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyringError

KEY = "DHHC-1:00:ZmFrZS1ob3N0LWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"


class Recorder(object):
    """A FAKE run_command: records (argv, environ_update, data) and answers by argv prefix."""

    def __init__(self, answers=()):
        self.answers = list(answers)
        self.calls = []

    def __call__(self, argv, environ_update=None, data=None):
        self.calls.append((list(argv), environ_update, data))
        for prefix, answer in self.answers:
            if argv[:len(prefix)] == prefix:
                return answer
        return 0, "", ""


def test_every_call_returns_the_same_keys_redacted():
    run = Recorder([(["nvme", "connect"], (1, None, "Key was rejected by service\n"))])
    ok = CommandRunner(run).run(["nvme", "version"])
    bad = CommandRunner(run).run(["nvme", "connect", "--dhchap-secret=" + KEY], data="in")
    assert ok == CommandResult(["nvme", "version"], 0, "", "")
    assert bad.details() == {"cmd": ["nvme", "connect", "--dhchap-secret=" + MASK], "rc": 1, "stdout": "",
                             "stderr": "Key was rejected by service\n"}
    assert bad.said() == "Key was rejected by service" and bad.output == "\nKey was rejected by service\n"
    # LC_ALL=C on every call; the unredacted argv and stdin go to the program.
    assert run.calls[1] == (["nvme", "connect", "--dhchap-secret=" + KEY], ENV, "in")
    assert all(env == {"LC_ALL": "C", "LANG": "C"} for argv, env, data in run.calls)


@pytest.mark.parametrize("error", [CommandError, NvmeCliError, KeyringError])
def test_a_checked_failure_raises_the_runners_error_with_the_same_details(error):
    runner = CommandRunner(Recorder([(["keyctl"], (1, "", "keyctl_read_alloc: Permission denied\n"))]), error=error)
    with pytest.raises(error) as caught:
        runner.run(["keyctl", "rlist", "123"], check=True)
    assert isinstance(caught.value, CommandError)
    assert caught.value.msg == "keyctl rlist failed (rc=1): keyctl_read_alloc: Permission denied"
    details = caught.value.details()
    assert dict((k, details[k]) for k in ("cmd", "rc", "stdout", "stderr")) == {
        "cmd": ["keyctl", "rlist", "123"], "rc": 1, "stdout": "", "stderr": "keyctl_read_alloc: Permission denied\n"}
    assert runner.run(["keyctl", "rlist", "123"]).rc == 1, "unchecked, a failure is a result"


def test_one_redaction_masks_every_secret_option_in_both_forms_and_nothing_else():
    argv = ["nvme", "connect", "--nqn=nqn.x", "--dhchap-secret=" + KEY, "--dhchap-ctrl-secret", KEY,
            "--tls_key=NVMeTLSkey-1:01:c2VjcmV0:", "--tls-key", "x", "--keydata=NVMeTLSkey-1:01:c2VjcmV0:",
            "--keyring=.nvme"]
    assert redact_argv(argv) == ["nvme", "connect", "--nqn=nqn.x", "--dhchap-secret=" + MASK,
                                 "--dhchap-ctrl-secret", MASK, "--tls_key=" + MASK, "--tls-key", MASK,
                                 "--keydata=" + MASK, "--keyring=.nvme"]
    assert redact_argv(["keyctl", "unlink", "12", "34"]) == ["keyctl", "unlink", "12", "34"]


def test_outside_ansible_the_runner_starts_programs_itself():
    rc, out, err = subprocess_run_command([sys.executable, "-c", "import os, sys; sys.stdout.write(os.environ['LC_ALL']); "
                                           "sys.stderr.write(sys.stdin.read()); sys.exit(3)"],
                                          environ_update=ENV, data="to stdin")
    assert (rc, out, err) == (3, "C", "to stdin")
    rc, out, err = subprocess_run_command(["/nonexistent/aiinfra-no-such-program"])
    assert rc == 127 and out == "" and "aiinfra-no-such-program" in err


class FakeModule(object):
    def __init__(self, run):
        self.run_command = run

    def get_bin_path(self, name, required=False):
        return "/usr/sbin/" + name


def test_the_tls_loader_runs_nvme_cli_and_keyctl_through_the_modules_one_runner(tmp_path):
    proc = tmp_path / "keys"
    proc.write_text("0a1b2c3d I--Q---     1 perm 3f030000     0     0 keyring   .nvme: 1\n")
    run = Recorder([(["/usr/sbin/nvme", "check-tls-key"], (0, "  [  --insert, -i ] --- x\n", "")),
                    (["/usr/sbin/keyctl", "rlist"], (1, "", "keyctl_read_alloc: Permission denied\n"))])
    cli = NvmeCli(FakeModule(run))
    loader = cli.key_loader()
    assert loader.runner is cli.runner
    loader.proc_keys = str(proc)
    assert loader.derivation() is not None
    with pytest.raises(KeyringError) as caught:
        loader.loaded(".nvme")
    assert caught.value.rc == 1 and caught.value.cmd == ["/usr/sbin/keyctl", "rlist", str(0x0a1b2c3d)]
    assert "cannot list the keys of keyring .nvme" in caught.value.msg
    assert [argv[:3] for argv, env, data in run.calls] == [
        ["/usr/sbin/nvme", "check-tls-key", "--help"], ["/usr/sbin/nvme", "keys", "insert-tls-psk"],
        ["/usr/sbin/keyctl", "rlist", str(0x0a1b2c3d)]]
    assert all(env == ENV for argv, env, data in run.calls)
