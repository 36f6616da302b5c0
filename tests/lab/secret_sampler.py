#!/usr/bin/env python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Lab proof (issue 35, item 1): look for secrets in every process's command line and
environment, the way any local user could (/proc/PID/cmdline) and root can (/proc/PID/environ).

    secret_sampler.py run --secrets FILE --state DIR [--interval 0.05]
    secret_sampler.py report DIR

``run`` reads every process's cmdline and environ every ``--interval`` seconds (the next sweep
starts that long after the last one ended), and also the moment a process calls exec(), told
by the kernel's process events connector (netlink, root only), so that short-lived commands
such as ``nvme connect`` are read even between two sweeps. It counts hits of the secrets listed
one per line in FILE (which must be a regular file of root's, mode 0600 or narrower: the
secrets never pass through this script's own command line), and counts the distinct processes
it read, the nvme-cli ones by subcommand, keyctl, and the collection's boot-time loaders - so
that a run that saw none of them cannot pass for a proof. A hit is recorded by process, field
and secret number, never with the secret. The record of this boot is rewritten in DIR every
2 seconds and when SIGTERM stops the run. Under systemd (Type=notify) it says READY=1 after its
first sweep.

``report`` prints every record in DIR as one JSON document and exits 1 when any has a hit.

Standard library only, Python 3.9 and later; it runs on the lab's guests, not on the controller.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import socket
import stat
import struct
import sys
import threading
import time

NVME_COMMANDS = ("nvme",)
KEYCTL_COMMANDS = ("keyctl",)
# The collection's boot-time units run these (roles/nvme_tls, roles/nvmeof_target).
BOOT_LOADERS = ("nvme-tls-keys", "nvmet-restore")
MIN_NEEDLE = 16
FLUSH_EVERY = 2.0

# The kernel's process events connector (linux/connector.h, linux/cn_proc.h).
NETLINK_CONNECTOR = 11
CN_IDX_PROC = 1
CN_VAL_PROC = 1
PROC_CN_MCAST_LISTEN = 1
PROC_EVENT_EXEC = 0x00000002
NLMSG_DONE = 3


def needles(lines):
    """The byte strings to look for: each secret, and the base64 body of one in the
    DHHC-1:<hh>:<body>: or NVMeTLSkey-1:<hh>:<body>: form (the key without its frame)."""
    found = []
    secrets = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    for number, text in enumerate(secrets, 1):
        forms = [text]
        parts = text.split(":")
        if len(parts) == 4 and parts[0] in ("DHHC-1", "NVMeTLSkey-1") and parts[3] == "":
            forms.append(parts[2])
        found.extend((number, form.encode("utf-8")) for form in forms if len(form) >= MIN_NEEDLE)
    return found


def read_secrets(path):
    """The needles of the secrets file, refused unless it is a regular file of root's that
    no one else may read."""
    info = os.lstat(path)
    if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o077:
        raise SystemExit("secret_sampler: %s must be a regular file owned by root with mode 0600 (is %o, uid %d)"
                         % (path, stat.S_IMODE(info.st_mode), info.st_uid))
    with open(path) as handle:
        found = needles(handle.read().splitlines())
    if not found:
        raise SystemExit("secret_sampler: %s lists no secret of %d characters or more" % (path, MIN_NEEDLE))
    return found


def _read(path):
    with open(path, "rb") as handle:
        return handle.read()


def read_process(proc, pid):
    """(starttime, comm, argv list, environ bytes) of a process with a user-space command line;
    None for a kernel thread, a zombie or a process gone meanwhile."""
    base = os.path.join(proc, str(pid))
    try:
        cmdline = _read(base + "/cmdline")
        if not cmdline:
            return None
        environ = _read(base + "/environ")
        text = _read(base + "/stat").decode("utf-8", "replace")
    except (IOError, OSError):
        return None
    comm = text[text.find("(") + 1:text.rfind(")")]
    rest = text[text.rfind(")") + 2:].split()
    starttime = rest[19] if len(rest) > 19 else "?"
    argv = [a.decode("utf-8", "replace") for a in cmdline.rstrip(b"\0").split(b"\0")]
    return starttime, comm, argv, cmdline, environ


def classify(argv, comm):
    """(category, detail) of a command line: nvme with its subcommand, keyctl, a boot loader."""
    names = [os.path.basename(a) for a in argv[:2]]
    if names and (names[0] in NVME_COMMANDS or comm in NVME_COMMANDS):
        sub = next((a for a in argv[1:] if not a.startswith("-")), "(none)")
        return "nvme", sub
    if names and (names[0] in KEYCTL_COMMANDS or comm in KEYCTL_COMMANDS):
        return "keyctl", next((a for a in argv[1:] if not a.startswith("-")), "(none)")
    for name in names:
        if name in BOOT_LOADERS:
            return "loader", name
    return None, None


class Sampler(object):
    """What has been seen so far; every read goes through :meth:`look` (from the sweeps and
    from the exec events, under one lock)."""

    def __init__(self, found, proc="/proc"):
        self.needles = found
        self.proc = proc
        self.lock = threading.Lock()
        self.processes = set()
        self.categories = {}      # category -> {detail: set of process identities}
        self.hits = {}            # (identity, field, secret number) -> details
        self.reads = 0
        self.exec_reads = 0
        self.starttimes = {}      # pid -> (starttime, argv) of the last read

    def look(self, pid, from_exec=False):
        found = read_process(self.proc, pid)
        if found is None:
            return
        starttime, comm, argv, cmdline, environ = found
        identity = (pid, starttime)
        with self.lock:
            self.reads += 1
            self.exec_reads += int(from_exec)
            self.processes.add(identity)
            category, detail = classify(argv, comm)
            if category:
                self.categories.setdefault(category, {}).setdefault(detail, set()).add(identity)
            for field, data in (("cmdline", cmdline), ("environ", environ)):
                for number in sorted(set(n for n, needle in self.needles if needle in data)):
                    key = (identity, field, number)
                    if key not in self.hits:
                        self.hits[key] = {"pid": pid, "comm": comm, "argv0": argv[0] if argv else "",
                                          "command": category and "%s %s" % (category, detail) or comm,
                                          "field": field, "secret": number, "times": 0}
                    self.hits[key]["times"] += 1

    def sweep(self):
        own = os.getpid()
        try:
            entries = os.listdir(self.proc)
        except OSError:
            return
        for name in entries:
            if name.isdigit() and int(name) != own:
                self.look(int(name))

    def summary(self):
        with self.lock:
            counts = dict((category, dict((detail, len(ids)) for detail, ids in sorted(details.items())))
                          for category, details in self.categories.items())
            return {
                "processes_seen": len(self.processes),
                "reads": self.reads,
                "exec_reads": self.exec_reads,
                "nvme_processes": sum(counts.get("nvme", {}).values()),
                "nvme_commands": counts.get("nvme", {}),
                "keyctl_processes": sum(counts.get("keyctl", {}).values()),
                "keyctl_commands": counts.get("keyctl", {}),
                "boot_loaders": counts.get("loader", {}),
                "hits": len(self.hits),
                "hit_details": sorted(self.hits.values(), key=lambda h: (h["pid"], h["field"], h["secret"])),
            }


def exec_events(sampler, stop, status):
    """Read every process the moment it calls exec(), from the kernel's process events
    connector; ``status`` says whether that source works (it needs root and CONFIG_PROC_EVENTS)."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
        sock.bind((0, CN_IDX_PROC))
        op = struct.pack("=I", PROC_CN_MCAST_LISTEN)
        cn_msg = struct.pack("=IIIIHH", CN_IDX_PROC, CN_VAL_PROC, 0, 0, len(op), 0) + op
        sock.send(struct.pack("=IHHII", 16 + len(cn_msg), NLMSG_DONE, 0, 0, 0) + cn_msg)
        sock.settimeout(0.5)
    except (OSError, AttributeError) as exc:
        status["exec_source"] = "unavailable: %s" % exc
        return
    status["exec_source"] = "proc connector"
    status["ready"].set()
    while not stop.is_set():
        try:
            data = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError as exc:
            if exc.errno == errno.ENOBUFS:  # a burst overran the socket: events lost, go on
                status["exec_events_lost"] += 1
                continue
            status["exec_source"] = "proc connector, then %s" % exc
            return
        offset = 0
        while offset + 16 <= len(data):
            length = struct.unpack_from("=I", data, offset)[0]
            event = offset + 16 + 20  # nlmsghdr, cn_msg
            if length < 16 or event + 24 > len(data):
                break
            what = struct.unpack_from("=I", data, event)[0]
            if what == PROC_EVENT_EXEC:
                pid, tgid = struct.unpack_from("=ii", data, event + 16)
                status["exec_events"] += 1
                sampler.look(tgid, from_exec=True)
            offset += (length + 3) & ~3


def notify_ready():
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return
    if address.startswith("@"):
        address = "\0" + address[1:]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.connect(address)
        sock.send(b"READY=1")
    finally:
        sock.close()


def _uptime():
    try:
        return float(_read("/proc/uptime").split()[0])
    except (IOError, OSError, ValueError, IndexError):
        return None


def write_record(path, record):
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(record, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, path)


def run(args):
    sampler = Sampler(read_secrets(args.secrets))
    # Hand the interpreter to the exec-event thread quickly: a command it is told about may
    # exit within milliseconds, and a sweep holds the interpreter between its reads.
    sys.setswitchinterval(0.0002)
    os.makedirs(args.state, 0o700, exist_ok=True)
    boot_id = _read("/proc/sys/kernel/random/boot_id").decode().strip()
    started = time.time()
    path = os.path.join(args.state, "%s-%d.json" % (boot_id, int(started)))
    stop = threading.Event()
    status = {"exec_source": "starting", "exec_events": 0, "exec_events_lost": 0, "ready": threading.Event()}
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *a: stop.set())
    listener = threading.Thread(target=exec_events, args=(sampler, stop, status), name="exec-events")
    listener.daemon = True
    listener.start()
    status["ready"].wait(2.0)
    gaps = []
    last_begin = None
    last_flush = 0.0
    sweeps = 0

    def record(finished):
        out = {"host": socket.gethostname(), "boot_id": boot_id, "started": started, "ended": time.time(),
               "uptime_at_start_s": uptime_at_start, "finished": finished, "interval_s": args.interval,
               "sweeps": sweeps, "secrets_checked": len(set(n for n, needle in sampler.needles)),
               "exec_source": status["exec_source"], "exec_events": status["exec_events"],
               "exec_overruns": status["exec_events_lost"],
               "sweep_gap_ms": {"mean": round(1000 * sum(gaps) / len(gaps), 1) if gaps else None,
                                "max": round(1000 * max(gaps), 1) if gaps else None}}
        out.update(sampler.summary())
        return out

    uptime_at_start = _uptime()
    while not stop.is_set():
        begin = time.time()
        if last_begin is not None:
            gaps.append(begin - last_begin)  # from one sweep's start to the next's
        last_begin = begin
        sampler.sweep()
        sweeps += 1
        last_end = time.time()
        if sweeps == 1:
            notify_ready()
        if last_end - last_flush >= FLUSH_EVERY:
            write_record(path, record(False))
            last_flush = last_end
        stop.wait(args.interval)
    write_record(path, record(True))
    return 0


def report(args):
    records = []
    for name in sorted(os.listdir(args.state)):
        if name.endswith(".json"):
            with open(os.path.join(args.state, name)) as handle:
                records.append(json.load(handle))
    records.sort(key=lambda r: r["started"])
    json.dump({"records": records, "hits": sum(r["hits"] for r in records),
               "nvme_processes": sum(r["nvme_processes"] for r in records)}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
    return 1 if any(r["hits"] for r in records) else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    commands = parser.add_subparsers(dest="command")
    run_p = commands.add_parser("run")
    run_p.add_argument("--secrets", required=True)
    run_p.add_argument("--state", required=True)
    run_p.add_argument("--interval", type=float, default=0.05)
    report_p = commands.add_parser("report")
    report_p.add_argument("state")
    args = parser.parse_args(argv)
    if args.command == "run":
        return run(args)
    if args.command == "report":
        return report(args)
    parser.print_usage()
    return 2


if __name__ == "__main__":
    sys.exit(main())
