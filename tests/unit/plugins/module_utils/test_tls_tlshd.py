"""tls/tlshd.py and ``nvme-tls-keys wait-tlshd``: tlshd counts as started only once it holds a
generic netlink socket in a multicast group (the kernel's handshake group).

The /proc rows below are shaped like te2's (Debian 13, Linux 6.12) with tlshd running:
``00000000bfaaf7b0 16  318767398  00002000 ... 2236`` (fd 4 -> socket:[2236]). In the lab,
nvme connect-all at boot lost the race with a tlshd that had not joined yet and the kernel
logged ``nvme nvme0: queue 0: failed to start TLS: -3``.
"""

from __future__ import annotations

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.tls import load, tlshd

HEADER = "sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode\n"


def _row(eth, groups, inode):
    return "00000000bfaaf7b0 %-3d 318767398  %08x 0        0        0     2        0        %d     \n" % (eth, groups, inode)


def fake_proc(tmp_path, pid=294, sockets=(2204, 2236), rows=()):
    proc = tmp_path / "proc"
    fd = proc / str(pid) / "fd"
    fd.mkdir(parents=True)
    os.symlink("/dev/null", str(fd / "0"))
    for number, inode in enumerate(sockets, start=1):
        os.symlink("socket:[%d]" % inode, str(fd / str(number)))
    (proc / "net").mkdir()
    (proc / "net" / "netlink").write_text(HEADER + "".join(rows))
    return str(proc)


def test_tlshd_in_the_handshake_group_is_listening(tmp_path):
    proc = fake_proc(tmp_path, rows=[_row(16, 0x2000, 2236), _row(16, 0, 1041)])
    assert tlshd.listening(294, proc) is True


def test_a_generic_netlink_socket_that_joined_no_group_yet_is_not_listening(tmp_path):
    # genl_connect() comes before the group is joined: the socket exists, its mask is 0.
    proc = fake_proc(tmp_path, rows=[_row(16, 0, 2236)])
    assert tlshd.listening(294, proc) is False


def test_another_process_in_the_group_or_another_netlink_protocol_does_not_count(tmp_path):
    proc = fake_proc(tmp_path, rows=[_row(16, 0x2000, 9999),   # not one of tlshd's sockets
                                     _row(0, 0x1, 2236)])      # tlshd's, but NETLINK_ROUTE
    assert tlshd.listening(294, proc) is False


def test_wait_returns_as_soon_as_tlshd_joins(tmp_path):
    proc = fake_proc(tmp_path, rows=[_row(16, 0, 2236)])
    now = [0.0]
    naps = []

    def sleep(seconds):
        naps.append(seconds)
        now[0] += seconds
        if len(naps) == 3:  # tlshd joins the group while we wait
            (tmp_path / "proc" / "net" / "netlink").write_text(HEADER + _row(16, 0x2000, 2236))

    ready, waited, why = tlshd.wait(294, 30, proc, sleep=sleep, clock=lambda: now[0], interval=0.05)
    assert (ready, why) == (True, "")
    assert len(naps) == 3
    assert waited == pytest.approx(0.15)


def test_wait_gives_up_after_the_timeout_and_says_what_fails(tmp_path):
    proc = fake_proc(tmp_path, rows=[_row(16, 0, 2236)])
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    ready, waited, why = tlshd.wait(294, 2, proc, sleep=sleep, clock=lambda: now[0], interval=0.5)
    assert ready is False
    assert waited == pytest.approx(2.0)
    assert "has joined no generic netlink group after 2 s" in why
    assert "failed to start TLS: -3" in why


def test_wait_for_a_tlshd_that_exited_stops_at_once(tmp_path):
    proc = fake_proc(tmp_path, rows=[])
    ready, waited, why = tlshd.wait(4242, 30, proc, sleep=lambda s: pytest.fail("slept"), clock=lambda: 0.0)
    assert ready is False
    assert "tlshd (pid 4242) is gone" in why
    assert waited == 0.0


def test_the_command_line_says_ready_and_fails_only_on_a_timeout(capsys):
    calls = []

    def ready_wait(pid, seconds):
        calls.append((pid, seconds))
        return True, 0.25, ""

    assert load.wait_tlshd(["294"], wait=ready_wait) == 0
    assert calls == [(294, load.WAIT_TLSHD_SECONDS)]
    assert "tlshd (pid 294) is listening for handshakes (waited 0.25 s)" in capsys.readouterr().out

    assert load.wait_tlshd(["294", "5"], wait=lambda pid, s: (False, s, "why not")) == 1
    assert "nvme-tls-keys: why not" in capsys.readouterr().err


def test_the_command_line_refuses_a_pid_that_is_not_a_number(capsys):
    assert load.main(["wait-tlshd", "$MAINPID"]) == 2
    assert "wait-tlshd PID [SECONDS]" in capsys.readouterr().err
    assert load.main(["wait-tlshd"]) == 2
