# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one way the nvme and tls packages run a command (nvme-cli, keyctl, modprobe).

:class:`CommandRunner` runs an argv list with ``LC_ALL=C`` through a ``run_command`` - an
AnsibleModule's in a module, :func:`subprocess_run_command` in the boot-time TLS key loader -
and returns every call's outcome as a :class:`CommandResult` with the same keys (``cmd``,
``rc``, ``stdout``, ``stderr``); a failed command it was asked to check raises the runner's
error class, a :class:`CommandError` (``details()``: the same keys).

What is shown of a command (``cmd``, messages) passes through the one redaction,
:func:`redact_argv`. No command of this collection carries a secret any more: DH-HMAC-CHAP
secrets and TLS keys go to the kernel through /dev/nvme-fabrics (nvme/fabrics_dev.py) and
add_key(2) (tls/kernel_keys.py), and nvme/cli.py refuses a connect or discovery that would put
one on nvme-cli's command line. The redaction stays as a second line of defence over the
options of the tools that take a secret.

Standard library only, and nothing of the collection imported: the boot-time TLS key loader
(tls/load.py, installed by the nvme_tls role) carries this file.
"""

from __future__ import annotations

import os
import subprocess
from collections import namedtuple

ENV = {"LC_ALL": "C", "LANG": "C"}
MASK = "********"
# Options whose value is a secret: nvme-cli's DH-HMAC-CHAP secrets, its TLS key (both
# spellings) and the PSK of check-tls-key/insert-tls-psk (--keydata).
SECRET_OPTIONS = ("--dhchap-secret", "--dhchap-ctrl-secret", "--tls_key", "--tls-key", "--keydata")


def redact_argv(argv, secrets=SECRET_OPTIONS):
    """A copy of argv safe to return or log: the values of secret options masked, given as
    ``--option=value`` or as ``--option value``."""
    result = []
    hide_next = False
    for arg in argv:
        arg = str(arg)
        flag = arg.split("=", 1)[0]
        if hide_next:
            result.append(MASK)
        elif flag in secrets and "=" in arg:
            result.append(flag + "=" + MASK)
        else:
            result.append(arg)
        hide_next = not hide_next and arg in secrets
    return result


class CommandResult(namedtuple("CommandResult", ("cmd", "rc", "stdout", "stderr"))):
    """What every call of a runner returns: the command as shown (redacted), its exit status,
    its output."""

    __slots__ = ()

    def details(self):
        return {"cmd": self.cmd, "rc": self.rc, "stdout": self.stdout, "stderr": self.stderr}

    @property
    def output(self):
        """stdout and stderr together (what ``--help`` prints goes to either)."""
        return self.stdout + "\n" + self.stderr

    def said(self):
        """What the command said about its failure: stderr, else stdout, stripped."""
        return (self.stderr or self.stdout).strip()


class CommandError(Exception):
    """A command that failed, or could not be run as asked. ``msg`` is the message; ``rc``,
    ``stdout``, ``stderr`` and ``cmd`` (redacted) what is known of the command, None or empty
    when it did not run. nvme.cli.NvmeCliError and tls.load.KeyringError derive from it and
    from their package's base."""

    def __init__(self, msg, rc=None, stdout="", stderr="", cmd=None):
        super(CommandError, self).__init__(msg)
        self.msg = msg
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.cmd = cmd

    def details(self):
        return {"rc": self.rc, "stdout": self.stdout, "stderr": self.stderr, "cmd": self.cmd}


class CommandRunner(object):
    """Runs commands through ``run_command(argv, environ_update=..., data=...) -> (rc, stdout,
    stderr)`` (AnsibleModule.run_command's signature). ``error``: the class raised by
    ``run(..., check=True)``."""

    def __init__(self, run_command, error=CommandError):
        self._run_command = run_command
        self.error = error

    def run(self, argv, check=False, data=None):
        """Run ``argv``; a :class:`CommandResult`. With ``check``, a non-zero exit raises
        ``error`` naming the command (its first two words) and what it said."""
        rc, out, err = self._run_command(list(argv), environ_update=dict(ENV), data=data)
        result = CommandResult(redact_argv(argv), rc, out or "", err or "")
        if check and rc != 0:
            raise self.failure(result, "%s failed (rc=%s): %s" % (" ".join(result.cmd[:2]), rc, result.said()))
        return result

    def failure(self, result, msg):
        """The runner's error for ``result``, with ``msg`` as its message."""
        return self.error(msg, **result.details())


def subprocess_run_command(argv, environ_update=None, data=None):
    """``run_command`` outside Ansible (the boot-time loader): rc 127 and the reason when the
    program cannot be started."""
    env = dict(os.environ)
    env.update(environ_update or {})
    try:
        proc = subprocess.run(argv, input=data, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, env=env, check=False)
    except OSError as exc:
        return 127, "", str(exc)
    return proc.returncode, proc.stdout, proc.stderr
