#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: mpi_run
short_description: Run one MPI job with mpirun or srun and return its results as data
version_added: "0.1.0"
description:
  - Runs one MPI program on the host the task runs on (the launching host), on that host
    alone or across O(hosts) with a hostfile written from the list, and returns rc, duration,
    stdout/stderr, the lines of each rank (O(tag_output)), the output parsed into data
    (O(parse)) and the outcome of O(expect) checks.
  - Detects the MPI implementation from C(mpirun --version) and speaks its flags
    (Open MPI fully; MPICH and Intel MPI, whose mpirun is Hydra, where they differ).
    O(launcher=srun) runs the job under Slurm instead; O(launcher=sbatch) hands it to Slurm as a
    batch job and waits for it (see O(launcher)).
  - The launcher options (O(mpirun_path), O(environment), O(launcher_args) ...) are the ones
    M(aiinfra.fabric.nccl_test) and M(aiinfra.fabric.fabric_sweep) take, under the same names, found
    and spoken by the same code; the names this module used before (O(mpirun), O(env), O(extra_args),
    O(srun), O(sbatch)) stay as aliases.
  - Validates everything it can before launching; bad input (np larger than the slots
    without O(oversubscribe), a missing program, a host that does not resolve, an empty
    O(hosts), a malformed O(expect)) fails without running anything.
  - A job that runs longer than O(timeout) is stopped; the whole job goes, on every host
    (mpirun is asked to stop first, so it tears down its remote daemons and their ranks,
    then anything left of the job on the launching host is killed).
  - A job measures or checks; running it changes nothing on the hosts (the hostfile is private and removed
    after the job), so the module reports C(changed=false), after a run and in check mode, like
    M(aiinfra.fabric.nccl_test) and M(aiinfra.fabric.fabric_sweep) - a converge that runs it again stays at
    C(changed=0). RV(ran) says whether the job ran. For a program that does change something, set
    C(changed_when) in the task; use O(creates)/O(removes) to run a job only once.
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - On the launching host, C(mpirun) of Open MPI, MPICH or Intel MPI (O(launcher=mpirun)), or Slurm's C(srun)
    (O(launcher=srun)) or C(sbatch), C(scontrol) and C(scancel) (O(launcher=sbatch)).
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.job_module
  - aiinfra.fabric.launcher
  - aiinfra.fabric.launcher.extra_args_alias
options:
  program:
    description:
      - The MPI program. A name without C(/) is looked up on the PATH of the launching host;
        a relative path is taken relative to O(chdir).
      - It must exist at the same path on every host of O(hosts); only the launching host is
        checked before the launch.
    type: str
    required: true
  args:
    description: Arguments for the program.
    type: list
    elements: str
    default: []
  np:
    description:
      - Number of ranks. With C(mpirun) it defaults to the total slots of O(hosts) (or the CPU
        count of the launching host when O(hosts) is not given), and more needs O(oversubscribe).
      - With O(launcher=srun) Slurm places the tasks, so the launching host's CPUs neither
        limit O(np) nor set its default; without O(np) srun takes the count from the allocation.
    type: int
  hosts:
    description:
      - Hosts to run on, each a dictionary with C(name) (a host name or address the launching
        host resolves) and C(slots) (default 1). The module writes a private hostfile from it
        (Open MPI C(name slots=N), Hydra C(name:N)) and removes it after the job.
      - Leave it out to run on the launching host only. An empty list is an error.
    type: list
    elements: dict
  launcher:
    description:
      - C(mpirun) (Open MPI, MPICH, Intel MPI; O(mpirun_path)), C(srun) (a Slurm job step, run from the task;
        O(srun_path)), or C(sbatch) (a Slurm batch job for long runs; O(sbatch_path) and O(srun_path)).
      - With C(sbatch) the module submits a batch script whose one step is the srun command
        C(launcher=srun) would run, then polls C(scontrol show job) every O(sbatch_poll_interval)
        seconds until the job is over or O(timeout) has passed; then it cancels the job with
        C(scancel) and waits until Slurm reports it ended. The job gets C(--time) of O(timeout)
        rounded up to minutes plus one, so Slurm ends it even if the module is killed. The job's
        output files are read into RV(stdout)/RV(stderr) and parsed as with the other launchers.
      - For runs of hours, give the task C(async) (longer than O(timeout)) and C(poll), so no SSH
        session stays open while the job runs; each poll is a short connection.
    type: str
    choices: [mpirun, srun, sbatch]
    default: mpirun
  oversubscribe:
    description:
      - Allow more ranks than slots (Open MPI C(--oversubscribe)). Without it, O(np) above
        the total slots fails before launching.
    type: bool
    default: false
  map_by:
    description: Rank mapping (Open MPI C(--map-by), Hydra C(-map-by)), e.g. C(node), C(slot), C(core).
    type: str
  bind_to:
    description: Process binding (C(--bind-to)/C(-bind-to)), e.g. C(none), C(core).
    type: str
  tag_output:
    description:
      - Tag each output line with its rank (Open MPI C(--tag-output), Hydra C(-prepend-rank),
        srun C(--label)); the module splits the lines per rank into RV(rank_output) and parses
        the untagged text.
    type: bool
    default: false
  chdir:
    description: Working directory of the launcher and the ranks (C(--wdir)/C(-wdir)/C(--chdir)).
    type: path
  timeout:
    description:
      - Seconds after which the job is stopped on every host and the task fails. C(0) means no
        limit (then only a cancel stops the job).
      - A cancelled task stops the job the same way - SIGTERM, SIGINT or SIGHUP to the module
        (an AWX cancel, Ctrl-C) and even SIGKILL (an C(async) timeout) take the launcher and
        every rank down on every host; see RV(cancelled).
    type: int
    default: 3600
  ntasks_per_node:
    description: srun C(--ntasks-per-node).
    type: int
  cpus_per_task:
    description: srun C(--cpus-per-task).
    type: int
  sbatch_path:
    description:
      - The sbatch command or path, for O(launcher=sbatch); C(scontrol) and C(scancel) are taken from its directory.
      - The batch script's one step is the srun command of O(srun_path).
    type: path
    default: sbatch
    aliases: [sbatch]
  sbatch_output_dir:
    description:
      - Directory in which each batch job gets a private output directory of its own (a new
        C(aiinfra-sbatch-*) directory, mode 0700, the running user's) for its output files
        (C(<job name>-<job id>.out) and C(.err)). They are written by the job's batch host (the first
        node of its allocation) and read by the launching host, so O(sbatch_output_dir) must be on the
        same host or a file system both mount. Default O(chdir), else C(/tmp).
      - The files are opened without following links and read only when the running user owns them and
        their directory; an output file that is missing (the batch host wrote it to its own disk) or not
        safe to read fails the task, naming the batch host.
      - As root on an NFS export that squashes root the private directory comes out owned by nobody, and the
        task fails before submitting; choose a directory where root's files are its own, or run as a regular user.
    type: path
  sbatch_job_name:
    description: The batch job's name (C(--job-name)).
    type: str
    default: aiinfra-mpi
  sbatch_partition:
    description: The partition to submit to (C(--partition)); default the cluster's default partition.
    type: str
  sbatch_args:
    description: Further sbatch arguments, verbatim (e.g. C(--account=x), C(--exclude=node7)).
    type: list
    elements: str
    default: []
  sbatch_poll_interval:
    description: Seconds between two C(scontrol show job) polls of a batch job.
    type: int
    default: 10
  sbatch_keep_output:
    description: Keep the batch job's output files and their private directory (C(output_dir) in RV(batch))
      after reading them (they are removed by default).
    type: bool
    default: false
  parse:
    description:
      - Turn the output into data in RV(parsed). C(osu) reads OSU Micro-Benchmarks tables (and
        the mpi_bench role's OSU-style benchmark), C(imb) Intel MPI Benchmarks tables, C(seed)
        the hello/reduce/allreduce check programs' lines (rank, received sum, expected sum).
    type: str
    choices: [none, osu, imb, seed]
    default: none
  expect:
    description:
      - Conditions the job must meet; the task fails with a message naming the measured value,
        the bound and the host when one does not hold. All are checked and reported in RV(checks).
      - C(sums_match) (bool, O(parse=seed)) every rank's received sum equals the expected sum,
        which must be 0+1+...+(np-1), and every rank reported.
      - C(all_ranks) (bool, O(parse=seed)) ranks 0..np-1 each printed a line.
      - C(min_bandwidth) (list of C({size, value, metric})) bandwidth in MB/s at C(size) bytes
        (default the largest size) is at least C(value). C(metric) defaults to C(bandwidth_mbs).
      - C(max_latency) (list of C({size, value, metric})) latency in microseconds at C(size)
        (default the smallest size) is at most C(value). C(metric) defaults to C(latency_us)
        (OSU) or C(t_usec)/C(t_avg_usec) (IMB).
      - C(reference) (list of C({metric, size, value, lower, upper, unit})), ReFrame-style;
        the metric must lie in C([value*(1+lower), value*(1+upper)]); C(lower) <= 0 and
        C(upper) >= 0 are fractions, C(null) for no bound on that side.
      - Numeric checks apply to every parsed table that has the metric. An entry with C(kind)
        (C(latency), C(bandwidth), C(bibandwidth), C(message_rate), C(collective)) or C(table)
        (part of the table's title, any case) applies only to the matching tables.
    type: dict
    default: {}
  fail_on_rc:
    description: Fail the task when the launcher exits non-zero (after recording the results).
    type: bool
    default: true
  creates:
    description: Do not run the job when this path exists on the launching host.
    type: path
  removes:
    description: Do not run the job unless this path exists on the launching host.
    type: path
  hostfile_dir:
    description: Directory for the temporary hostfile (default the module's temporary directory).
    type: path
notes:
  - srun cannot carry a comma inside an C(--export) value, so with O(launcher=srun) or O(launcher=sbatch) such a
    variable of O(environment) (C(OMPI_MCA_btl=tcp,self)) is set in srun's (sbatch's) own environment and named in
    C(--export), which passes it on to the tasks.
  - Multi-host runs need what mpirun needs - passwordless SSH from the launching host to the
    others for the user running the task, and the program at the same path everywhere. The
    C(aiinfra.fabric.mpi_bench) role sets both up.
  - The job runs with C(LC_ALL=C).
seealso:
  - name: Open MPI mpirun
    description: Open MPI's mpirun options.
    link: https://docs.open-mpi.org/en/v5.0.x/man-openmpi/man1/mpirun.1.html
  - name: OSU Micro-Benchmarks
    description: The benchmark suite O(parse=osu) reads.
    link: https://mvapich.cse.ohio-state.edu/benchmarks/
"""

EXAMPLES = r"""
- name: Run allreduce across the MPI nodes over the fabric and check every rank's sum
  aiinfra.fabric.mpi_run:
    program: /opt/mpi-bench/allreduce_mpi
    hosts:
      - {name: te1, slots: 2}
      - {name: te2, slots: 1}
    mca:
      btl: tcp,self
      btl_tcp_if_include: 10.99.0.0/24
      oob_tcp_if_include: 10.99.0.0/24
    tag_output: true
    parse: seed
    expect:
      sums_match: true
    timeout: 120
  run_once: true

- name: Measure point-to-point latency between two nodes and gate on it
  aiinfra.fabric.mpi_run:
    program: /opt/osu/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency
    hosts: [{name: node1, slots: 1}, {name: node2, slots: 1}]
    np: 2
    parse: osu
    expect:
      max_latency:
        - {size: 8, value: 5.0}
      reference:
        - {metric: latency_us, size: 0, value: 1.7, lower: null, upper: 0.2}
  register: latency

- name: Run under Slurm
  aiinfra.fabric.mpi_run:
    launcher: srun
    srun_mpi: pmix
    program: ./osu_allreduce
    args: [-f]
    chdir: /shared/osu
    np: 64
    ntasks_per_node: 32
    parse: osu

- name: Hand a long run to Slurm, wait up to two hours without holding an SSH session open
  aiinfra.fabric.mpi_run:
    launcher: sbatch
    srun_mpi: pmix
    program: /shared/osu/osu_alltoall
    hosts: [{name: node1, slots: 32}, {name: node2, slots: 32}]
    sbatch_output_dir: /shared/jobs
    sbatch_args: [--exclusive]
    timeout: 7200
    parse: osu
  async: 7500
  poll: 60

- name: Show the command a run would use, without running it
  aiinfra.fabric.mpi_run:
    program: /opt/mpi-bench/hello_mpi
    np: 4
    oversubscribe: true
  check_mode: true
"""

RETURN = r"""
changed:
  description: Always false - running the job changes nothing on the hosts (the same in every job module).
  returned: always
  type: bool
  sample: false
argv:
  description:
    - The launcher command line as a list (in check mode and with O(hosts) the hostfile reads C(<hostfile>)),
      the same key and type in every job module. With O(launcher=sbatch) the sbatch command line.
  returned: always
  type: list
  elements: str
  sample: [mpirun, -np, "3", --hostfile, /tmp/aiinfra-hostfile-x.txt, --tag-output, /opt/mpi-bench/allreduce_mpi]
command:
  description: The same, as one shell-quoted string (for logs and copy-paste).
  returned: always
  type: str
  sample: mpirun -np 3 --hostfile /tmp/aiinfra-hostfile-x.txt --tag-output /opt/mpi-bench/allreduce_mpi
cmd:
  description:
    - The same as RV(argv), a list. Deprecated - use RV(argv) (list) or RV(command) (string), which every
      job module returns with the same types; M(aiinfra.fabric.nccl_test)'s RV(cmd) is a string.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/mpirun, -np, "2", --hostfile, <hostfile>, /opt/osu/pt2pt/osu_latency]
rc:
  description: The launcher's exit status (negative signal number when it was killed).
  returned: when the job ran
  type: int
  sample: 0
stdout:
  description: Standard output of the job.
  returned: when the job ran
  type: str
  sample: "[1,0]<stdout>:Process 0 on te1 contributing data 0\n"
stderr:
  description: Standard error of the job.
  returned: when the job ran
  type: str
  sample: ""
duration:
  description: Wall-clock seconds of the job.
  returned: when the job ran
  type: float
  sample: 7.548
timed_out:
  description: Whether the job was stopped after O(timeout) seconds.
  returned: when the job ran
  type: bool
  sample: false
cancelled:
  description:
    - The signal that cancelled the task (C(SIGTERM), C(SIGINT), C(SIGHUP)) while the job ran; the
      job was then stopped on every host and the task failed. Null otherwise.
  returned: always
  type: str
  sample: null
launcher:
  description: How the job was started (mpirun, srun or sbatch), as asked.
  returned: always
  type: str
  sample: srun
transport:
  description:
    - What the job was told to carry MPI messages over, from O(mca) and O(environment) (C(OMPI_MCA_*),
      C(UCX_*)). C(kind) is C(tcp) (pml ob1 with the tcp BTL - kernel sockets, not RDMA, even on
      InfiniBand/RoCE hosts), C(ucx) (pml ucx - verbs where UCX finds an RDMA device), C(verbs)
      (the openib BTL) or C(auto) (nothing pinned, the MPI chooses); C(summary) says it in words.
  returned: always
  type: dict
  sample: {kind: tcp, pml: ob1, btl: "tcp,self", ucx_tls: null, ucx_net_devices: null,
           summary: "TCP sockets (Open MPI pml ob1, btl tcp,self)"}
  contains:
    kind:
      description: V(tcp), V(ucx), V(verbs) or V(auto).
      type: str
    pml:
      description: The Open MPI pml asked for, if any.
      type: str
    btl:
      description: The Open MPI BTLs asked for, if any.
      type: str
    ucx_tls:
      description: C(UCX_TLS), if set.
      type: str
    ucx_net_devices:
      description: C(UCX_NET_DEVICES), if set.
      type: str
    summary:
      description: The transport in words.
      type: str
ran:
  description: Whether the job was run (false in check mode and when O(creates)/O(removes) skipped it).
  returned: always
  type: bool
  sample: true
implementation:
  description: The MPI implementation used (null for srun and sbatch).
  returned: always
  type: dict
  sample: {implementation: openmpi, version: 4.1.4, banner: "mpirun (Open MPI) 4.1.4"}
  contains:
    implementation:
      description: V(openmpi), V(mpich), V(intelmpi) or V(unknown).
      type: str
    version:
      description: Its version, as C(mpirun --version) printed it.
      type: str
    banner:
      description: The first line of C(mpirun --version).
      type: str
np:
  description: The number of ranks.
  returned: always
  type: int
  sample: 3
hosts:
  description: The hosts with their slots (empty when the job ran on the launching host only).
  returned: always
  type: list
  elements: dict
  sample: [{name: te1, slots: 2}, {name: te2, slots: 1}]
  contains:
    name:
      description: The host's name or address, as the launcher reaches it.
      type: str
    slots:
      description: The ranks it may run.
      type: int
hostfile_content:
  description: The hostfile written for the job (null without O(hosts)).
  returned: always
  type: str
  sample: "te1 slots=2\nte2 slots=1\n"
batch:
  description:
    - With O(launcher=sbatch), the batch job - C(job_id), C(job_state) (C(COMPLETED), C(FAILED),
      C(CANCELLED), C(TIMEOUT) ...), C(batch_host), C(reason), C(script) (the submitted batch script),
      C(output_dir) (the job's private output directory), C(output_files), C(time_limit_minutes) and
      C(polls) (how many status calls the wait took).
      RV(argv) is then the sbatch command line; before the job is submitted (check mode) its output
      paths show C(<private dir>) for the directory made at submission. Null with the other launchers.
  returned: always
  type: dict
  sample: {job_id: "12", job_state: COMPLETED, batch_host: te1, reason: None, polls: 3,
           script: "#!/bin/sh\nexec /usr/bin/srun --nodes=2 --ntasks=2 --label /opt/a\n",
           output_dir: /tmp/aiinfra-sbatch-k3v9x2qa,
           output_files: [/tmp/aiinfra-sbatch-k3v9x2qa/aiinfra-mpi-12.out,
                          /tmp/aiinfra-sbatch-k3v9x2qa/aiinfra-mpi-12.err],
           time_limit_minutes: 3}
  contains:
    job_id:
      description: Slurm's job id.
      type: str
    job_state:
      description: The job's last state (C(COMPLETED), C(FAILED), C(CANCELLED), C(TIMEOUT) ...).
      type: str
    batch_host:
      description: The node that ran the batch script.
      type: str
    reason:
      description: Slurm's reason for the state, if any.
      type: str
    script:
      description: The submitted batch script.
      type: str
    output_dir:
      description: The job's private output directory (mode 0700).
      type: str
    output_files:
      description: The job's output and error files.
      type: list
      elements: str
    time_limit_minutes:
      description: The time limit given to Slurm.
      type: int
    polls:
      description: How many status calls the wait took.
      type: int
launched_from:
  description: The launching host's name.
  returned: always
  type: str
  sample: te1
rank_output:
  description: With O(tag_output), each rank's output lines, keyed by rank number (as a string).
  returned: always
  type: dict
  sample: {"0": ["Process 0 on te1 contributing data 0"], "2": ["Process 2 on te2 contributing data 2"]}
  contains:
    <rank>:
      description: The lines rank C(<rank>) printed.
      type: list
      elements: str
parsed:
  description:
    - The output parsed by O(parse). C(osu) - C(tables), each with C(title), C(benchmark),
      C(version), C(kind) (latency, bandwidth, bibandwidth, message_rate, collective), C(datatype),
      C(columns) and C(rows) (C(size), C(latency_us), C(min_latency_us), C(max_latency_us),
      C(iterations), C(bandwidth_mbs), C(messages_per_s)); the first table's keys also at the top.
      C(imb) - C(version), C(part), C(tables) with C(benchmark), C(processes),
      C(waiting_processes), C(rows) (C(size), C(repetitions), C(t_usec), C(t_min_usec),
      C(t_max_usec), C(t_avg_usec), C(bandwidth_mbs), C(messages_per_s)).
      C(seed) - C(hello), C(contributions), C(results) (C(op), C(rank), C(host), C(received),
      C(expected), C(match)), C(world_size), C(ranks), C(hosts), C(all_match).
    - Null with O(parse=none).
  returned: always
  type: dict
  sample:
    world_size: 4
    ranks: [0, 1, 2, 3]
    hosts: {"0": te1, "1": te1, "2": te1, "3": te1}
    hello: [{host: te1, rank: 0, size: 4}, {host: te1, rank: 1, size: 4}]
    contributions: []
    results: []
    all_match: false
  contains:
    tables:
      description: C(osu) and C(imb) - the tables of the output, in order.
      type: list
      elements: dict
      contains:
        benchmark:
          description: The benchmark's name.
          type: str
        kind:
          description: C(osu) - V(latency), V(bandwidth), V(bibandwidth), V(message_rate) or V(collective).
          type: str
        rows:
          description: One per message size - C(size) and the table's columns (see above).
          type: list
          elements: dict
          contains:
            size:
              description: The message size in bytes.
              type: int
    rows:
      description: C(osu) - the first table's rows (its other keys are at the top too).
      type: list
      elements: dict
      contains:
        size:
          description: The message size in bytes.
          type: int
        latency_us:
          description: Latency in microseconds (latency and collective tables).
          type: float
        bandwidth_mbs:
          description: Bandwidth in MB/s (bandwidth tables).
          type: float
    version:
      description: C(osu) and C(imb) - the benchmark suite's version.
      type: str
    part:
      description: C(imb) - the IMB part (for example C(MPI-1)).
      type: str
    hello:
      description: C(seed) - one entry per hello line - C(rank), C(size), C(host).
      type: list
      elements: dict
      contains:
        rank:
          description: The rank.
          type: int
        size:
          description: The world size it printed.
          type: int
        host:
          description: Where it ran.
          type: str
    contributions:
      description: C(seed) - the ranks' contribution lines.
      type: list
      elements: dict
      contains:
        rank:
          description: The rank.
          type: int
        value:
          description: What it contributed.
          type: int
    results:
      description: C(seed) - the reduced sums received.
      type: list
      elements: dict
      contains:
        op:
          description: The operation (reduce, allreduce).
          type: str
        rank:
          description: The receiving rank.
          type: int
        host:
          description: Its host.
          type: str
        received:
          description: The sum it received.
          type: int
        expected:
          description: The right sum.
          type: int
        match:
          description: Whether they agree.
          type: bool
    world_size:
      description: C(seed) - the job's size.
      type: int
    ranks:
      description: C(seed) - the ranks that printed.
      type: list
      elements: int
    hosts:
      description: C(seed) - each rank's host, keyed by rank (as a string).
      type: dict
      contains:
        <rank>:
          description: The host of rank C(<rank>).
          type: str
    all_match:
      description: C(seed) - whether every sum was right (false when none was printed).
      type: bool
checks:
  description: Every O(expect) check with C(check), C(ok), C(message) and the measured value and bound.
  returned: always
  type: list
  elements: dict
  sample: [{check: sums_match, ok: true, message: "rank 0 on te1 (allreduce) received sum 3, expected 3", rank: 0,
            host: te1, measured: 3, bound: 3}]
  contains:
    check:
      description: The O(expect) key the check comes from.
      type: str
    ok:
      description: Whether it passed.
      type: bool
    message:
      description: The check in words, with the value and the bound.
      type: str
    measured:
      description: The measured value, where there is one.
      type: raw
    bound:
      description: The bound it was held to, where there is one.
      type: raw
failed_checks:
  description: The messages of the checks that failed.
  returned: always
  type: list
  elements: str
  sample: ["rank 2 on te2 (allreduce) received sum 1, expected 3 on te1 (hosts te1,te2)"]
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner as R
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import expect as mpi_expect
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job as mpi_job
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job_result as JR
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launch_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import sbatch as mpi_sbatch
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.errors import MpiError
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.parsers import parse_output

# mpi_run's cmd was the argv list before argv/command were shared (nccl_test's a string).
CMD_TYPE = "list"


def argument_spec():
    spec = dict(
        program=dict(type="str", required=True),
        args=dict(type="list", elements="str", default=[]),
        np=dict(type="int"),
        hosts=dict(type="list", elements="dict"),
        oversubscribe=dict(type="bool", default=False),
        map_by=dict(type="str"),
        bind_to=dict(type="str"),
        tag_output=dict(type="bool", default=False),
        chdir=dict(type="path"),
        ntasks_per_node=dict(type="int"),
        cpus_per_task=dict(type="int"),
        sbatch_output_dir=dict(type="path"),
        sbatch_job_name=dict(type="str", default="aiinfra-mpi"),
        sbatch_partition=dict(type="str"),
        sbatch_args=dict(type="list", elements="str", default=[]),
        sbatch_poll_interval=dict(type="int", default=10),
        sbatch_keep_output=dict(type="bool", default=False),
        parse=dict(type="str", choices=["none", "osu", "imb", "seed"], default="none"),
        expect=dict(type="dict", default={}),
        fail_on_rc=dict(type="bool", default=True),
        creates=dict(type="path"),
        removes=dict(type="path"),
        hostfile_dir=dict(type="path"),
    )
    spec.update(launch_options.launcher_argument_spec(mpi_job.LAUNCHERS, "mpirun", timeout=3600))
    spec.update(launch_options.SBATCH_PATH_OPTION)
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    here = socket.gethostname()
    result = JR.job_result(p["launcher"], here, CMD_TYPE)
    result.update(np=None, hosts=[], hostfile_content=None, rank_output={}, parsed=None, checks=[],
                  failed_checks=[], cancelled=None, transport=None, batch=None)

    if p["chdir"] and not os.path.isdir(p["chdir"]):
        module.fail_json(msg="chdir %s is not a directory on %s" % (p["chdir"], here), **result)

    # Everything below up to the launch only reads.
    if p["launcher"] == "sbatch" and p["sbatch_poll_interval"] < 1:
        module.fail_json(msg="sbatch_poll_interval must be >= 1 second, got %d" % p["sbatch_poll_interval"],
                         **result)
    try:
        launch = L.resolve_launcher(p["launcher"], p, lambda name: module.get_bin_path(name, required=False),
                                    lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}), here)
    except L.LauncherError as exc:
        module.fail_json(msg=str(exc), **result)
    for tool, path in launch["paths"].items():
        p["%s_path" % tool] = path
    result["implementation"] = launch["implementation"]
    implementation = launch["implementation"]["implementation"] if launch["implementation"] else None

    try:
        plan = mpi_job.plan_job(p, implementation, os.cpu_count() or 1, L.host_resolves,
                                L.find_executable(p["program"], lambda name: module.get_bin_path(name, required=False),
                                                  p["chdir"]))
        expect = mpi_expect.normalize_expect(p["expect"], p["parse"])
    except MpiError as exc:
        module.fail_json(msg=str(exc), **result)

    result.update(np=plan["np"], hosts=plan["hosts"], hostfile_content=plan["hostfile_content"])
    result["transport"] = mpi_job.describe_transport(p["launcher"], implementation, p["mca"], p["environment"])
    shown_hostfile = "<hostfile>" if plan["hostfile_content"] else None
    JR.set_command(result, mpi_job.with_hostfile(plan["argv"], shown_hostfile), CMD_TYPE)
    if plan["batch"]:
        JR.set_command(result, plan["batch"]["argv"], CMD_TYPE)
        result["batch"] = {"job_id": None, "job_state": None, "batch_host": None, "reason": None, "polls": 0,
                           "script": plan["batch"]["script"], "output_dir": None, "output_files": [],
                           "time_limit_minutes": plan["batch"]["time_limit_minutes"]}

    if p["creates"] and os.path.exists(p["creates"]):
        module.exit_json(msg="skipped: %s exists" % p["creates"], **result)
    if p["removes"] and not os.path.exists(p["removes"]):
        module.exit_json(msg="skipped: %s does not exist" % p["removes"], **result)
    if module.check_mode:
        module.exit_json(msg="check mode: the job was not run", **result)

    if plan["batch"]:
        run_batch(module, p, plan["batch"], plan["launch_env"], result)
        where = "as Slurm batch job %s%s" % (result["batch"]["job_id"], (" on %s" % ", ".join(
            h["name"] for h in plan["hosts"])) if plan["hosts"] else "")
        finish(module, p, plan, expect, result, implementation, where)

    hostfile = None
    try:
        if plan["hostfile_content"]:
            hostfile = L.write_hostfile(plan["hosts"], implementation, directory=p["hostfile_dir"] or module.tmpdir)
        argv = mpi_job.with_hostfile(plan["argv"], hostfile)
        JR.set_command(result, argv, CMD_TYPE)
        run = R.run_job(argv, timeout=p["timeout"] or None, cwd=p["chdir"], env=plan["launch_env"])
    finally:
        if hostfile and os.path.exists(hostfile):
            os.unlink(hostfile)
    JR.set_run(result, run)

    where = "on %s" % (", ".join(h["name"] for h in plan["hosts"]) if plan["hosts"] else here)
    if plan["hosts"]:
        where += " (launched from %s)" % here
    finish(module, p, plan, expect, result, implementation, where)


def run_batch(module, p, batch_plan, launch_env, result):
    """Submit the batch job, wait for it (cancel past the deadline), fill ``result``."""
    tools = os.path.dirname(p["sbatch_path"])

    def run_command(argv, data=None):
        return module.run_command(argv, data=data, binary_data=data is not None,
                                  environ_update=dict(launch_env, LC_ALL="C"))

    try:
        run = mpi_sbatch.run_batch(run_command, batch_plan, timeout=p["timeout"] or None,
                                   poll_interval=p["sbatch_poll_interval"],
                                   scontrol=os.path.join(tools, "scontrol") if tools else "scontrol",
                                   scancel=os.path.join(tools, "scancel") if tools else "scancel",
                                   keep_output=p["sbatch_keep_output"], launching_host=result["launched_from"])
    except mpi_sbatch.BatchError as exc:
        module.fail_json(msg="%s; nothing was submitted" % exc, **result)
    for key in ("job_id", "job_state", "batch_host", "reason", "polls", "output_dir", "output_files"):
        result["batch"][key] = run[key]
    if run.get("status_error"):
        result["batch"]["status_error"] = run["status_error"]
    JR.set_run(result, run)
    # Output that is missing (it went to the batch host's own disk) or not safe to read
    # (a link, another user's file) is an error, never an empty or foreign result.
    if run["output_error"]:
        module.fail_json(msg=run["output_error"], **result)


def finish(module, p, plan, expect, result, implementation, where):
    """Fail on a stopped or failed job, else parse the output, check expectations, exit."""
    run = result
    batch = result.get("batch")
    if run["cancelled"]:
        module.fail_json(msg="the MPI job %s was cancelled (%s) and stopped on every host: %s"
                         % (where, run["cancelled"], result["command"]), **result)
    if run["timed_out"]:
        module.fail_json(msg="the MPI job %s ran past the timeout of %d s and was stopped %s: %s"
                         % (where, p["timeout"], "with scancel (job state now %s)" % batch["job_state"]
                            if batch else "on every host", result["command"]), **result)
    if batch and batch["job_state"] != "COMPLETED" and p["fail_on_rc"]:
        module.fail_json(msg="the MPI job %s ended in state %s (exit %s, reason %s): %s; stderr: %s"
                         % (where, batch["job_state"], run["rc"], batch["reason"], result["command"],
                            run["stderr"].strip()[-2000:]), **result)
    if run["rc"] != 0 and p["fail_on_rc"]:
        module.fail_json(msg="the MPI job %s failed with rc=%s: %s; stderr: %s"
                         % (where, run["rc"], result["command"], run["stderr"].strip()[-2000:]), **result)

    text, result["rank_output"] = mpi_job.summarize_output(run["stdout"], p["launcher"], implementation,
                                                           p["tag_output"])
    if p["parse"] != "none":
        try:
            result["parsed"] = parse_output(p["parse"], text)
        except ValueError as exc:
            module.fail_json(msg="parse=%s: %s (job %s)" % (p["parse"], exc, where), **result)

    result["checks"] = mpi_expect.check(expect, result["parsed"], np=plan["np"], where=where)
    result["failed_checks"] = [c["message"] for c in mpi_expect.failures(result["checks"])]
    if result["failed_checks"]:
        module.fail_json(msg="MPI job expectations failed: " + "; ".join(result["failed_checks"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
