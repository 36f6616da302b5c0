# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""fio's IOPS log (``--write_iops_log`` with ``--log_avg_msec`` and ``--log_unix_epoch``)
as a timeline, and the stretches in it where no I/O completed: how long I/O paused
while a path failed over.

Each log line is ``time_ms, value, data direction, block size, offset[, priority]``
(fio's HOWTO, "Log File Formats"): with ``log_avg_msec`` the value is the average
IOPS of the interval ending at ``time_ms``; direction 0 is read, 1 write, 2 trim.
Pure functions, standard library only (they run on the managed node).
"""

from __future__ import annotations

DIRECTION_NAMES = {0: "read", 1: "write", 2: "trim"}


def parse_iops_log(text):
    """[(time_ms, iops, direction)] from one log file; malformed lines are skipped."""
    samples = []
    for line in (text or "").splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 3:
            continue
        try:
            samples.append((int(fields[0]), int(fields[1]), int(fields[2])))
        except ValueError:
            continue
    return samples


def timeline(logs, interval_ms):
    """Sum the jobs' logs per interval: [{"t_ms", "read_iops", "write_iops", "total_iops"}].

    Samples are put into buckets of ``interval_ms`` (the jobs' clocks are not aligned to
    the millisecond), sorted by time.
    """
    buckets = {}
    for samples in logs:
        for time_ms, iops, direction in samples:
            key = int(round(float(time_ms) / interval_ms)) * interval_ms
            entry = buckets.setdefault(key, {"t_ms": key, "read_iops": 0, "write_iops": 0})
            name = DIRECTION_NAMES.get(direction)
            if name in ("read", "write"):
                entry[name + "_iops"] += iops
    result = [buckets[k] for k in sorted(buckets)]
    for entry in result:
        entry["total_iops"] = entry["read_iops"] + entry["write_iops"]
    return result


def pauses(points, interval_ms):
    """Stretches with no completed I/O: consecutive intervals at 0 IOPS, and holes in the
    log longer than one interval (fio logs nothing for a direction while nothing
    completes in it). Each: {"start_ms", "end_ms", "seconds"} where start is the end of
    the last interval with I/O and end the end of the first one with I/O again.
    A pause still running at the end of the log has "end_ms" None.
    """
    result = []
    last_busy = None
    idle_since = None
    for point in points:
        busy = point["total_iops"] > 0
        if busy:
            gap_start = idle_since
            if gap_start is None and last_busy is not None and point["t_ms"] - last_busy > interval_ms:
                gap_start = last_busy
            if gap_start is not None:
                result.append({"start_ms": gap_start, "end_ms": point["t_ms"],
                               "seconds": round((point["t_ms"] - gap_start) / 1000.0, 3)})
            idle_since = None
            last_busy = point["t_ms"]
        elif idle_since is None and last_busy is not None:
            idle_since = last_busy
    if idle_since is not None:
        result.append({"start_ms": idle_since, "end_ms": None, "seconds": None})
    return result


def summarize(logs, interval_ms, min_pause_ms=None):
    """The timeline and the pauses longer than ``min_pause_ms`` (default: two intervals,
    so a single empty interval between busy ones is not called a pause)."""
    points = timeline(logs, interval_ms)
    floor = 2 * interval_ms if min_pause_ms is None else min_pause_ms
    found = [p for p in pauses(points, interval_ms) if p["end_ms"] is None or p["end_ms"] - p["start_ms"] > floor]
    longest = max([p["seconds"] for p in found if p["seconds"] is not None] or [0])
    return {"interval_ms": interval_ms, "points": points, "pauses": found, "longest_pause_s": longest}
