"""fio IOPS log -> timeline and pauses (the failover measurement of molecule nvmeof_multipath).

The log lines follow fio 3.33's format with --log_avg_msec and --log_unix_epoch
("time_ms, value, direction, bs, offset, prio"); the numbers are made up.
"""

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fio_log import (
    parse_iops_log, pauses, summarize, timeline,
)

T0 = 1764560000000


def log(rows):
    return "".join("%d, %d, %d, 4096, 0, 0\n" % row for row in rows)


def test_parse_skips_garbage():
    assert parse_iops_log("1000, 5, 1, 4096, 0, 0\nfoo\n\n2000, x, 1\n") == [(1000, 5, 1)]


def test_timeline_sums_jobs_and_directions_per_interval():
    job1 = parse_iops_log(log([(T0 + 1000, 10, 0), (T0 + 1000, 20, 1), (T0 + 2001, 5, 1)]))
    job2 = parse_iops_log(log([(T0 + 999, 1, 1), (T0 + 1998, 2, 0)]))
    points = timeline([job1, job2], 1000)
    assert points == [
        {"t_ms": T0 + 1000, "read_iops": 10, "write_iops": 21, "total_iops": 31},
        {"t_ms": T0 + 2000, "read_iops": 2, "write_iops": 5, "total_iops": 7},
    ]


def test_zero_intervals_make_a_pause_from_last_busy_to_first_busy():
    rows = [(T0 + i * 500, iops, 1) for i, iops in enumerate([100, 100, 0, 0, 0, 0, 90, 100])]
    result = summarize([parse_iops_log(log(rows))], 500)
    assert result["pauses"] == [{"start_ms": T0 + 500, "end_ms": T0 + 3000, "seconds": 2.5}]
    assert result["longest_pause_s"] == 2.5


def test_a_hole_in_the_log_is_a_pause_too():
    rows = [(T0, 50, 1), (T0 + 1000, 50, 1), (T0 + 5000, 50, 1)]
    assert pauses(timeline([parse_iops_log(log(rows))], 1000), 1000) == [
        {"start_ms": T0 + 1000, "end_ms": T0 + 5000, "seconds": 4.0}]


def test_one_slow_interval_is_not_a_pause_but_a_pause_at_the_end_is_reported_open():
    rows = [(T0, 50, 1), (T0 + 500, 0, 1), (T0 + 1000, 50, 1), (T0 + 1500, 0, 1), (T0 + 2000, 0, 1)]
    result = summarize([parse_iops_log(log(rows))], 500)
    assert result["pauses"] == [{"start_ms": T0 + 1000, "end_ms": None, "seconds": None}]
    assert result["longest_pause_s"] == 0


def test_steady_io_has_no_pause():
    rows = [(T0 + i * 1000, 30, 0) for i in range(10)]
    assert summarize([parse_iops_log(log(rows))], 1000)["pauses"] == []
