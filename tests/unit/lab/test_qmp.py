"""lab/qmp.py against a stand-in QEMU monitor on a Unix socket (the real one is used by
lab/labctl when it saves the lab's booted state)."""

import json
import os
import socket
import subprocess
import sys
import threading

import pytest

QMP = os.path.join(os.path.dirname(__file__), "..", "..", "..", "lab", "qmp.py")


def fake_monitor(path, replies):
    """Answer each command with the next canned reply (a list of JSON lines); record the commands."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    received = []

    def serve():
        conn = server.accept()[0]
        reader = conn.makefile("r")
        conn.sendall(b'{"QMP": {"version": {}, "capabilities": []}}\n')
        for reply in replies:
            line = reader.readline()
            if not line:
                break
            received.append(json.loads(line))
            for item in reply:
                conn.sendall(json.dumps(item).encode() + b"\n")
        conn.close()
        server.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return received, thread


def run(path, *args):
    return subprocess.run([sys.executable, QMP, path] + list(args), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=30, check=False)


@pytest.fixture
def sock(tmp_path):
    return str(tmp_path / "vm.qmp")


def test_hmp_savevm_sends_the_command_line_and_skips_events(sock):
    received, thread = fake_monitor(sock, [[{"return": {}}],
                                           [{"event": "STOP", "data": {}}, {"return": ""}]])
    result = run(sock, "hmp", "savevm", "booted")
    thread.join(5)
    assert result.returncode == 0, result.stderr
    assert received == [{"execute": "qmp_capabilities"},
                        {"execute": "human-monitor-command", "arguments": {"command-line": "savevm booted"}}]


def test_hmp_error_text_fails_with_the_message(sock):
    thread = fake_monitor(sock, [[{"return": {}}],
                                 [{"return": "Error: Device 'virtio0' is writable but does not support snapshots\r\n"}]])[1]
    result = run(sock, "hmp", "savevm", "booted")
    thread.join(5)
    assert result.returncode == 1
    assert "does not support snapshots" in result.stderr


def test_qmp_error_fails_with_its_description(sock):
    thread = fake_monitor(sock, [[{"return": {}}],
                                 [{"error": {"class": "GenericError", "desc": "not now"}}]])[1]
    result = run(sock, "stop")
    thread.join(5)
    assert result.returncode == 1
    assert "stop failed: not now" in result.stderr


def test_quit_accepts_the_monitor_closing(sock):
    received, thread = fake_monitor(sock, [[{"return": {}}], []])
    result = run(sock, "quit")
    thread.join(5)
    assert result.returncode == 0, result.stderr
    assert received[-1] == {"execute": "quit"}


def test_json_arguments_reach_the_command(sock):
    """labctl hot-plugs the lab's NVMe drives with device_add and a JSON argument object."""
    received, thread = fake_monitor(sock, [[{"return": {}}], [{"return": {}}]])
    result = run(sock, "device_add", '{"driver": "nvme", "bus": "rp1", "serial": "aiinfra-te1-nvme1"}')
    thread.join(5)
    assert result.returncode == 0, result.stderr
    assert received[1] == {"execute": "device_add",
                           "arguments": {"driver": "nvme", "bus": "rp1", "serial": "aiinfra-te1-nvme1"}}
