#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: fio_run
short_description: Run an fio job and return its results as structured data
version_added: "0.1.0"
description:
  - Runs C(fio --output-format=json) with one job described by options, or with a job file,
    and parses the JSON into read/write IOPS, bandwidth and latency percentiles per job.
  - Fails when fio fails or any job reports an error (for example a C(verify) mismatch),
    unless O(fail_on_job_error=false).
  - Reports C(changed) when the job changes what is on the target, the same rule as the collection's other job
    modules (a job that only measures reports C(changed=false)) - true for a write or trim pattern of O(rw), a
    O(job_file), O(extra_args) that set C(rw), C(readwrite), C(fill_device) or C(fill_fs), and a read job on a
    file that is not there yet (fio creates it); false for a C(read)/C(randread) job on an existing file or
    device. Check mode predicts the same value.
options:
  filename:
    description: File or block device the job runs on. Required unless O(job_file) is given.
    type: path
  job_file:
    description: An fio job file on the managed node; the job options below are then ignored.
    type: path
  name:
    description: Job name.
    type: str
    default: aiinfra
  rw:
    description: I/O pattern (fio's C(rw)).
    type: str
    default: randrw
    choices: [read, write, randread, randwrite, rw, readwrite, randrw, trim, randtrim, trimwrite]
  bs:
    description: Block size (fio's C(bs)), for example C(4k).
    type: str
    default: 4k
  size:
    description: Amount of I/O per job (fio's C(size)), for example C(64M).
    type: str
    default: 64M
  iodepth:
    description: Queue depth. Keep it low (at most 4) on soft-RoCE under emulation.
    type: int
    default: 4
  numjobs:
    description: Number of clones of the job.
    type: int
    default: 1
  runtime:
    description: Time limit in seconds (fio's C(runtime)); V(0) means none.
    type: int
    default: 0
  time_based:
    description: Keep running until O(runtime) even when O(size) is done.
    type: bool
    default: false
  ioengine:
    description: fio I/O engine.
    type: str
    default: libaio
  direct:
    description: Use O_DIRECT (bypass the page cache).
    type: bool
    default: true
  verify:
    description: Verification method (fio's C(verify)), for example C(crc32c); empty disables it.
    type: str
    default: ""
  extra_args:
    description: More fio command-line arguments, appended as given (e.g. C(--verify_fatal=1)).
    type: list
    elements: str
    default: []
  timeline_interval_ms:
    description:
      - Also log the jobs' IOPS every this many milliseconds (fio's C(--write_iops_log), C(--log_avg_msec),
        C(--log_unix_epoch)) and return them as RV(timeline) with the pauses in it, for example while a path
        fails over. 0 logs nothing.
    type: int
    default: 0
  fail_on_job_error:
    description: Fail when a job reports a non-zero error.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for fio before failing.
    type: int
    default: 600
  stop_file:
    description:
      - Stop fio when this file appears, as Ctrl-C does, with SIGINT to the fio process this module started. fio
        then ends its jobs and still writes its results, verify errors included. Its exit status 128 after that
        SIGINT is not an error; a job error still fails the module. Use it with O(time_based) and a long
        O(runtime) when another task decides when the I/O is done (for example after a failover test's rounds),
        running this module as an async task.
      - A stale file is removed before fio starts, and the file is removed after fio ended. RV(stopped) says
        whether it ended the run.
      - Without it fio runs until O(runtime) or O(size) is done.
    type: path
extends_documentation_fragment:
  - aiinfra.fabric.attributes
attributes:
  check_mode:
    description: Can run in check mode.
    support: partial
    details: In check mode fio is not run; the module returns the command it would run and predicts C(changed).
  diff_mode:
    description: Running a job changes no configuration, so there is no diff.
    support: none
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
    support: partial
    details: A read-only job on an existing target reports no change; a job that writes changes the data on every run.
requirements:
  - fio 3.x on the managed node.
author:
  - aiinfra.fabric developers (@aiinfra)
"""

EXAMPLES = r"""
- name: Run a light random read/write job with crc32c verification on the NVMe-oF namespace
  aiinfra.fabric.fio_run:
    filename: "{{ nvmeof_initiator_result.devices[0].path }}"
    rw: randrw
    bs: 4k
    size: 32M
    iodepth: 4
    verify: crc32c
  register: fio

- name: Show the write IOPS of the first job
  ansible.builtin.debug:
    msg: "{{ fio.jobs[0].write.iops }}"
"""

RETURN = r"""
changed:
  description: Whether the job changes what is on the target (see the description); predicted in check mode.
  returned: always
  type: bool
  sample: false
argv:
  description: The fio command line as a list, the key and type every job module uses for it.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/fio, --output-format=json, --name=randread, --filename=/dev/nvme0n1, --rw=randread]
command:
  description:
    - The fio command line, a list (the same as RV(argv)). In M(aiinfra.fabric.mpi_run),
      M(aiinfra.fabric.nccl_test) and M(aiinfra.fabric.fabric_sweep) RV(command) is a string; this module keeps
      the list its results (and the C(aiinfra.fabric.nvmeof_initiator) role's) have always carried.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/fio, --output-format=json, --name=aiinfra, --filename=/mnt/nvmeof/aiinfra-fio.dat, --rw=randrw,
           --bs=4k, --size=32M, --iodepth=4, --numjobs=1, --ioengine=libaio, --verify=crc32c, --direct=1]
fio_version:
  description: fio's version string from the JSON document.
  returned: when fio ran
  type: str
  sample: fio-3.33
jobs:
  description:
    - One entry per job, with C(name), C(error) and C(read)/C(write)/C(trim) (V(null) when the
      job did no I/O in that direction).
    - Each direction has C(iops), C(bw_bytes) (bytes/s), C(bw_mib) (MiB/s), C(io_bytes),
      C(total_ios), C(runtime_ms), C(clat_us) and C(lat_us) (C(mean), C(min), C(max), C(p50),
      C(p90), C(p95), C(p99), C(p99_9) in microseconds).
  returned: when fio ran
  type: list
  elements: dict
  sample:
    - name: aiinfra
      groupid: 0
      error: 0
      read: {iops: 25.251, bw_bytes: 103429, bw_mib: 0.099, io_bytes: 33554432, total_ios: 8192, runtime_ms: 324417,
             clat_us: {mean: 96832.48, min: 760.296, max: 1146470.759, p50: 88604.672, p90: 149946.368,
                       p95: 177209.344, p99: 250609.664, p99_9: 801112.064},
             lat_us: {mean: 100647.269, min: 3694.444, max: 1146827.086}}
      write: {iops: 18.955, bw_bytes: 77639, bw_mib: 0.074, io_bytes: 16965632, total_ios: 4142, runtime_ms: 218517,
              clat_us: {mean: 104540.533, p99: 250609.664}, lat_us: {mean: 112406.395}}
      trim: null
  contains:
    name:
      description: The job's name.
      type: str
    groupid:
      description: fio's group id of the job.
      type: int
    error:
      description: fio's error number for the job (0 - none).
      type: int
    read:
      description: The job's reads; V(null) when it did not read. C(write) and C(trim) have the same keys.
      type: dict
      contains:
        iops:
          description: I/O operations per second.
          type: float
        bw_bytes:
          description: Bandwidth in bytes per second.
          type: int
        bw_mib:
          description: Bandwidth in MiB per second.
          type: float
        io_bytes:
          description: Bytes moved.
          type: int
        total_ios:
          description: I/O operations completed.
          type: int
        runtime_ms:
          description: Milliseconds of I/O in this direction.
          type: int
        clat_us:
          description: Completion latency in microseconds - C(mean), C(min), C(max) and the percentiles C(p50),
            C(p90), C(p95), C(p99), C(p99_9) (those fio reported).
          type: dict
          contains:
            mean:
              description: Mean.
              type: float
            min:
              description: Minimum.
              type: float
            max:
              description: Maximum.
              type: float
            p99:
              description: 99th percentile (C(p50), C(p90), C(p95) and C(p99_9) alike).
              type: float
        lat_us:
          description: Total latency (submission and completion) in microseconds, the same keys as C(clat_us).
          type: dict
          contains:
            mean:
              description: Mean.
              type: float
            min:
              description: Minimum.
              type: float
            max:
              description: Maximum.
              type: float
    write:
      description: The job's writes, the keys of C(read); V(null) when it did not write.
      type: dict
      contains:
        iops:
          description: I/O operations per second.
          type: float
        bw_bytes:
          description: Bandwidth in bytes per second.
          type: int
    trim:
      description: The job's trims, the keys of C(read); V(null) when it did not trim.
      type: dict
      contains:
        iops:
          description: I/O operations per second.
          type: float
        bw_bytes:
          description: Bandwidth in bytes per second.
          type: int
totals:
  description: Sums over the jobs of read/write IOPS, bandwidth (bytes/s) and bytes moved.
  returned: when fio ran
  type: dict
  sample: {read_iops: 25.251, read_bw_bytes: 103429, read_io_bytes: 33554432, write_iops: 18.955,
           write_bw_bytes: 77639, write_io_bytes: 16965632}
  contains:
    read_iops:
      description: Read IOPS of all jobs.
      type: float
    read_bw_bytes:
      description: Read bandwidth of all jobs, bytes per second.
      type: int
    read_io_bytes:
      description: Bytes read by all jobs.
      type: int
    write_iops:
      description: Write IOPS of all jobs.
      type: float
    write_bw_bytes:
      description: Write bandwidth of all jobs, bytes per second.
      type: int
    write_io_bytes:
      description: Bytes written by all jobs.
      type: int
timeline:
  description:
    - With O(timeline_interval_ms), the IOPS of all jobs per interval (C(points), each C(t_ms) in Unix epoch
      milliseconds with C(read_iops), C(write_iops), C(total_iops)) and C(pauses), the stretches of at least two
      intervals in which no I/O completed (C(start_ms), C(end_ms), C(seconds); C(end_ms) null when I/O never
      resumed), and C(longest_pause_s).
  returned: when fio ran with O(timeline_interval_ms)
  type: dict
  sample:
    interval_ms: 500
    longest_pause_s: 6.5
    pauses: [{start_ms: 1764560000500, end_ms: 1764560007000, seconds: 6.5}]
    points: [{t_ms: 1764560000500, read_iops: 120, write_iops: 118, total_iops: 238}]
  contains:
    interval_ms:
      description: O(timeline_interval_ms).
      type: int
    points:
      description: The IOPS of all jobs per interval.
      type: list
      elements: dict
      contains:
        t_ms:
          description: The interval's end, Unix epoch milliseconds.
          type: int
        read_iops:
          description: Read IOPS in the interval.
          type: float
        write_iops:
          description: Write IOPS in the interval.
          type: float
        total_iops:
          description: Both together.
          type: float
    pauses:
      description: The stretches of at least two intervals in which no I/O completed.
      type: list
      elements: dict
      contains:
        start_ms:
          description: The pause's start, Unix epoch milliseconds.
          type: int
        end_ms:
          description: Its end; V(null) when I/O never resumed.
          type: int
        seconds:
          description: Its length.
          type: float
    longest_pause_s:
      description: The longest pause, in seconds (0 when there was none).
      type: float
stopped:
  description: Whether O(stop_file) ended the run (fio got SIGINT).
  returned: when O(stop_file) is given and fio ran
  type: bool
  sample: true
seconds:
  description: How long fio ran, in seconds.
  returned: when O(stop_file) is given and fio ran
  type: float
  sample: 41.7
errors:
  description: Jobs that reported an error, with fio's error number.
  returned: when fio ran
  type: list
  elements: dict
  sample: [{job: verify, error: 84}]
  contains:
    job:
      description: The job's name.
      type: str
    error:
      description: fio's error number (an errno; 84 - EILSEQ - is a verify mismatch).
      type: int
"""

import glob
import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fio import (
    FioError,
    build_argv,
    parse_fio_json,
    validate_options,
    writes_data,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fio_log import parse_iops_log, summarize
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fio_stop import run_until_stop_file


def main():
    module = AnsibleModule(
        argument_spec=dict(
            filename=dict(type="path"),
            job_file=dict(type="path"),
            name=dict(type="str", default="aiinfra"),
            rw=dict(type="str", default="randrw", choices=["read", "write", "randread", "randwrite", "rw", "readwrite",
                                                           "randrw", "trim", "randtrim", "trimwrite"]),
            bs=dict(type="str", default="4k"),
            size=dict(type="str", default="64M"),
            iodepth=dict(type="int", default=4),
            numjobs=dict(type="int", default=1),
            runtime=dict(type="int", default=0),
            time_based=dict(type="bool", default=False),
            ioengine=dict(type="str", default="libaio"),
            direct=dict(type="bool", default=True),
            verify=dict(type="str", default=""),
            extra_args=dict(type="list", elements="str", default=[]),
            timeline_interval_ms=dict(type="int", default=0),
            fail_on_job_error=dict(type="bool", default=True),
            timeout=dict(type="int", default=600),
            stop_file=dict(type="path"),
        ),
        required_one_of=[("filename", "job_file")],
        supports_check_mode=True,
    )
    p = module.params
    try:
        validate_options(p)
    except FioError as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    if p["timeline_interval_ms"] < 0:
        module.fail_json(msg="timeline_interval_ms=%d must be >= 0" % p["timeline_interval_ms"])
    argv = build_argv(module.get_bin_path("fio", required=True), p)
    # Decided before fio runs: a read job on a file fio has to create first writes it.
    changed = writes_data(p, os.path.exists)
    if module.check_mode:
        module.exit_json(changed=changed, command=argv, argv=list(argv), msg="check mode: fio not run")
    log_dir = None
    if p["timeline_interval_ms"]:
        log_dir = tempfile.mkdtemp(prefix="aiinfra-fio-")
        argv += ["--write_iops_log=%s" % os.path.join(log_dir, "job"), "--log_avg_msec=%d" % p["timeline_interval_ms"],
                 "--log_unix_epoch=1"]
    try:
        run_fio(module, p, argv, log_dir, changed)
    finally:
        if log_dir:
            shutil.rmtree(log_dir, ignore_errors=True)


def read_timeline(log_dir, interval_ms):
    logs = []
    for path in sorted(glob.glob(os.path.join(log_dir, "job_iops*.log"))):
        with open(path) as handle:
            logs.append(parse_iops_log(handle.read()))
    return summarize(logs, interval_ms)


def run_fio(module, p, argv, log_dir, changed=True):
    extra = {}
    if p["stop_file"]:
        run = run_until_stop_file(argv, dict(os.environ, LC_ALL="C"), p["stop_file"], p["timeout"])
        rc, out, err = run["rc"], run["stdout"], run["stderr"]
        if run["timed_out"]:
            module.fail_json(msg="fio did not finish within timeout=%d seconds and %s never appeared"
                             % (p["timeout"], p["stop_file"]), command=argv, argv=list(argv), rc=rc, stdout=out,
                             stderr=err)
        extra = {"stopped": run["stopped"], "seconds": run["seconds"]}
    else:
        timeout_bin = module.get_bin_path("timeout")
        run_argv = ([timeout_bin, str(p["timeout"])] + argv) if timeout_bin and p["timeout"] > 0 else argv
        rc, out, err = module.run_command(run_argv, environ_update={"LC_ALL": "C"})
        if rc == 124 and timeout_bin:
            module.fail_json(msg="fio did not finish within timeout=%d seconds" % p["timeout"], command=argv,
                             argv=list(argv), rc=rc, stdout=out, stderr=err)
    try:
        summary = parse_fio_json(out)
    except FioError as exc:
        module.fail_json(msg="fio failed (rc=%d): %s; %s" % (rc, exc.msg, err.strip()), command=argv,
                         argv=list(argv), rc=rc, stdout=out, stderr=err)
    result = dict(changed=changed, command=argv, argv=list(argv), rc=rc, stderr=err, **summary)
    result.update(extra)
    if log_dir:
        result["timeline"] = read_timeline(log_dir, p["timeline_interval_ms"])
    # fio exits 128 after SIGINT ("fio: terminating on signal 2"), also when the stop file asked for it.
    if rc != 0 and not (extra.get("stopped") and rc == 128) or (summary["errors"] and p["fail_on_job_error"]):
        module.fail_json(msg="fio reported errors (rc=%d): %s %s" % (rc, summary["errors"], err.strip()), **result)
    if rc != 0:
        # Stopped as asked: Ansible would take the non-zero rc for a failure unless told otherwise.
        result["failed"] = False
    module.exit_json(**result)


if __name__ == "__main__":
    main()
