"""Run the collection's playbooks the way AWX runs a job: through ansible-runner, in a
private data directory, with the survey answers as extra vars, reading the event stream
and the artifacts (set_stats) afterwards."""

import json
import os
import socket
import sys
import time

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
sys.path.insert(0, os.path.join(TOP, "tests", "unit"))

from awx import surveys  # noqa: E402  pylint: disable=wrong-import-position

__all__ = ["TOP", "Job", "lab_up", "run_job", "surveys", "SSH_PORT_BASE"]

# ansible-runner starts ansible-playbook from PATH: use the project's venv.
os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

SSH_PORT_BASE = int(os.environ.get("AIINFRA_LAB_SSH_PORT_BASE", "2221"))


class Job:
    """One finished ansible-runner job: status, events and artifacts."""

    def __init__(self, runner, elapsed):
        self.status = runner.status
        self.rc = runner.rc
        self.events = list(runner.events)
        self.elapsed = elapsed
        self.stdout = runner.stdout.read()

    def of(self, *names):
        return [e for e in self.events if e.get("event") in names]

    @property
    def stats(self):
        found = self.of("playbook_on_stats")
        assert found, "no playbook_on_stats event: the playbook did not finish\n" + self.stdout[-4000:]
        return found[-1]["event_data"]

    @property
    def artifacts(self):
        return self.stats.get("artifact_data") or {}

    def task_results(self):
        """(event, task name, role, host) of every per-host task result, in order."""
        out = []
        for e in self.of("runner_on_ok", "runner_on_failed", "runner_on_skipped", "runner_on_unreachable",
                         "runner_item_on_failed"):
            d = e["event_data"]
            out.append((e["event"], d.get("task"), d.get("role"), d.get("host")))
        return out

    def explain(self):
        failed = [(e["event"], e["event_data"].get("task"), e["event_data"].get("host"),
                   (e["event_data"].get("res") or {}).get("msg"))
                  for e in self.of("runner_on_failed", "runner_on_unreachable")]
        return "status %s rc %s in %.0f s; failed: %s\n%s" % (
            self.status, self.rc, self.elapsed, json.dumps(failed, indent=1, default=str)[:4000], self.stdout[-3000:])


def run_job(tmp_path, stem, extravars, timeout=1800, inventory=None):
    """Launch playbooks/<stem>.yml as AWX would launch its job template, with the lab inventory."""
    import ansible_runner

    private = tmp_path / ("job-" + stem)
    private.mkdir()
    start = time.monotonic()
    runner = ansible_runner.run(
        private_data_dir=str(private),
        project_dir=TOP,
        playbook="playbooks/%s.yml" % stem,
        inventory=inventory or os.path.join(TOP, "inventory", "lab"),
        extravars=extravars,
        envvars={
            # The lab's settings (Mitogen: TCG guests are slow); in AWX the EE's defaults apply.
            "ANSIBLE_CONFIG": os.path.join(TOP, "lab", "ansible.cfg"),
            "ANSIBLE_COLLECTIONS_PATH": os.path.join(TOP, ".cache", "collections"),
            "ANSIBLE_NOCOLOR": "1",
            # SSH handshakes with software-emulated guests on a busy machine exceed the 10 s default.
            "ANSIBLE_TIMEOUT": "60",
        },
        quiet=True,
        timeout=timeout,
    )
    return Job(runner, time.monotonic() - start)


def lab_up():
    for port in (SSH_PORT_BASE, SSH_PORT_BASE + 1):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=3) as s:
                s.settimeout(5)
                if not s.recv(64).startswith(b"SSH-"):
                    return False
        except OSError:
            return False
    return True
