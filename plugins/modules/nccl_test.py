#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_test
short_description: Run one NVIDIA nccl-tests benchmark and return every result row, with pass/fail gates
version_added: "0.1.0"
description:
  - Runs one of NVIDIA's nccl-tests binaries (C(all_reduce_perf), C(all_gather_perf), ...) on the
    GPUs of one node, or across nodes through C(mpirun) or Slurm's C(srun), and returns the whole
    result table as data - not only the average line.
  - Uses the binary's JSON report (C(-J), nccl-tests 2.17 and later) when the binary offers it and
    the report is written on this host; otherwise parses the printed table. Both the current layout
    (C(root), C(#wrong)) and the older one (C(error) column, no C(root)) are understood, with
    C(mpirun --tag-output) / C(srun --label) prefixes and NCCL INFO/WARN lines mixed in.
  - Fails when a value was wrong (C(#wrong) not 0), when the out-of-bounds footer says FAILED, and
    when the out-of-place bus bandwidth at the largest size is below O(min_busbw) (or the
    O(min_busbw_per_gpu) bound for the GPU model). The message names the value, the bound, the
    host and the devices.
  - Fails, too, when the result cannot be trusted - a value that is not a number (C(nan), C(inf), text
    where a time, bandwidth or C(#wrong) count belongs; C(N/A) is the legitimate "not checked"), a row
    cut short, a table without its footer or with fewer sizes than asked for (a killed or cut-off run),
    or a job that ran on another number of GPUs than O(expected_gpus).
  - nccl-tests' C(Reducing maxBytes to N) (the sizes did not fit in GPU memory) is shown in
    RV(max_bytes_reduced_to) and as a warning; the gate is then applied at the largest size measured,
    C(gates.size).
  - Recognises the classic multi-node mistake, a binary built without C(MPI=1) started by a launcher
    (every process runs alone and prints its own header and rank 0), and fails saying to rebuild.
  - The job runs through the collection's shared launcher code (the same as
    M(aiinfra.fabric.mpi_run) and M(aiinfra.fabric.fabric_sweep), with the same launcher options - O(mpirun_path),
    O(implementation), O(mca), O(environment) (C(NCCL_DEBUG), C(NCCL_IB_HCA), C(NCCL_SOCKET_IFNAME) ...),
    O(launcher_args) ...); on timeout the launcher and every process it started are stopped.
  - A benchmark measures and changes nothing on the hosts, so the module reports C(changed=false), after a run
    and in check mode, like every job module of the collection; each run measures again. RV(ran) says whether
    it ran; O(creates)/O(removes) guard a run.
options:
  test:
    description: The collective to measure; runs C(<test>_perf<binary_suffix>) from O(binary_dir).
    type: str
    required: true
    choices: [all_reduce, all_gather, broadcast, reduce, reduce_scatter, alltoall, gather, scatter, sendrecv, hypercube]
  binary_dir:
    description: Directory holding the nccl-tests binaries (the C(build) directory of a nccl-tests build).
    type: path
    required: true
  binary_suffix:
    description: The C(NAME_SUFFIX) the binaries were built with, for example C(_mpi).
    type: str
    default: ""
  minbytes:
    description: Smallest message size (C(-b)); a byte count with an optional K, M or G suffix (powers of 1024).
    type: str
    default: "8"
  maxbytes:
    description: Largest message size (C(-e)); the busbw gate is applied at this size.
    type: str
    default: 128M
  stepfactor:
    description: Multiply the size by this factor between steps (C(-f)). Ignored when O(stepbytes) is set.
    type: int
    default: 2
  stepbytes:
    description: Add this many bytes between steps (C(-i)) instead of multiplying.
    type: str
  ngpus:
    description: GPUs per thread (C(-g)). With O(launcher=none) this is how many GPUs of the node are used.
    type: int
    default: 1
  threads:
    description: Threads per process (C(-t)).
    type: int
    default: 1
  iters:
    description: Timed iterations per size (C(-n)); nccl-tests' default when not set.
    type: int
  warmup_iters:
    description: Untimed warm-up iterations (C(-w)).
    type: int
  check:
    description: Iterations whose results are checked (C(-c)); V(0) turns checking off (C(#wrong) then reads N/A).
    type: int
  op:
    description: Reduction operation (C(-o)).
    type: str
    choices: [sum, prod, min, max, avg, mulsum, all]
  datatype:
    description: Data type (C(-d)), for example C(float), C(half), C(bfloat16), or C(all).
    type: str
  root:
    description: Root rank for rooted collectives (C(-r)).
    type: int
  blocking:
    description: Blocking mode (C(-z)) - 0 non-blocking, 1 wait and barrier after each iteration, 2 wait only, 3 per outer iteration.
    type: int
    choices: [0, 1, 2, 3]
  cudagraph:
    description: Capture the iterations as a CUDA graph and replay it this many times (C(-G)).
    type: int
  extra_args:
    description: More nccl-tests arguments, passed as they are after the others.
    type: list
    elements: str
    default: []
  json:
    description:
      - Whether to read the results from the binary's C(-J) JSON report.
      - V(auto) uses it when C(<binary> -h) lists C(-J) and O(launcher=none) (with a launcher, rank 0 and
        therefore the report may be on another host); V(always) requires it; V(never) parses the table.
      - The report lists the environment of rank 0; the module keeps only the results and deletes the file.
    type: str
    choices: [auto, always, never]
    default: auto
  timeout:
    description: Seconds after which the job is stopped (the launcher and every process it started) and the task fails.
    type: int
    default: 1800
  launcher:
    description:
      - V(none) runs the binary as one process on this host (use O(ngpus) for its GPUs).
      - V(mpirun) runs it across O(hosts) with a hostfile; the binary must be built with C(MPI=1).
      - V(srun) runs it as a Slurm job step.
    type: str
    choices: [none, mpirun, srun]
    default: none
  hosts:
    description:
      - Hosts for O(launcher=mpirun) (written to a private hostfile) or the node list for O(launcher=srun).
      - Each item is a name or a dict with C(name) and C(slots) (processes on that host, usually its GPU count).
    type: list
    elements: raw
  np:
    description: Number of processes. Defaults to the sum of the hosts' slots; larger is refused.
    type: int
  launcher_args:
    description:
      - Further launcher arguments (mpirun, srun), passed verbatim before the binary.
      - Unlike in M(aiinfra.fabric.mpi_run) and M(aiinfra.fabric.fabric_sweep), C(extra_args) is not an alias here -
        O(extra_args) are nccl-tests' own arguments.
    type: list
    elements: str
    default: []
  srun_nodes:
    description: C(srun --nodes).
    type: int
  srun_ntasks_per_node:
    description: C(srun --ntasks-per-node).
    type: int
  min_busbw:
    description: Lowest acceptable out-of-place bus bandwidth in GB/s at the largest size.
    type: float
  min_busbw_per_gpu:
    description:
      - Bounds per GPU model - each key is looked for, case-insensitively, in the GPU names nccl-tests
        prints (for example C(H100), C(A10)). For each GPU the first key found, in the order given, is its
        bound, so list the specific name first (C(H100 PCIe) before C(H100)). A match wins over
        O(min_busbw). When the job spans several models, the strictest of their bounds applies.
    type: dict
    default: {}
  expected_gpus:
    description:
      - How many GPUs (ranks in nccl-tests' device list) the job must run on; the task fails otherwise.
      - Defaults to processes x O(threads) x O(ngpus) - one process with O(launcher=none), O(np) (or the
        hosts' slots) with a launcher. Unknown (not checked) with O(launcher=srun) and no O(np).
    type: int
  require_transport:
    description:
      - The path NCCL must prove it took, from its own C(NCCL_DEBUG=INFO) lines; the task fails otherwise
        (a silent fallback to TCP sockets, GPUDirect RDMA off, NVLS not used).
      - Keys - C(network) (V(ib) for NCCL's InfiniBand/RoCE verbs transport, including NVIDIA's C(IBext) plugin;
        V(socket); or another net plugin's name as NCCL prints it), C(gdr) (true - every network channel must be
        C(/GDRDMA)), C(nvls) (true or false), C(min_nics) (NICs in NCCL's C(NET/IB) device list),
        C(all_ranks) (default true - every rank must print the proof).
      - When set, the job runs with C(NCCL_DEBUG=INFO) (a warning says so when O(environment) asked for less), and a
        C(NCCL_DEBUG_SUBSYS) given in O(environment) is extended with C(INIT), the subsystem of the lines read
        (NCCL's default list has it); C(NCCL_DEBUG_FILE) is refused. The parsed facts are in
        RV(transport) whether or not a requirement is set, when the output has INFO lines.
    type: dict
  expectations:
    description:
      - The expected-busbw catalog (C(models) and C(expectations), the schema of the C(aiinfra.fabric.nccl_tests)
        role's catalog, the collection's C(files/expected_busbw.yml)). The GPU model is the first C(models)
        entry whose C(match) text is in the GPU name; the expectation is the first for that model, scope, test and GPUs per node (and
        O(network) across nodes).
      - The out-of-place busbw at the largest size is compared with it; RV(expectation) explains the verdict in one
        sentence with the figure's source. More than C(tolerance_pct) below fails the task unless
        O(expectation_gate=false).
    type: dict
  expectations_overrides:
    description:
      - Entries in the schema of O(expectations) (C(models), C(expectations)) laid over it - for a cluster's own
        figures. An entry with the C(id) of a catalog entry replaces it; the others come first (a user's model
        rule is tried before the catalog's).
    type: dict
  expectation_scope:
    description: Which expectation applies - V(single_node) (NVLink/NVSwitch, xGMI) or V(multi_node). Defaults to
      V(single_node) with O(launcher=none) and V(multi_node) with a launcher.
    type: str
    choices: [single_node, multi_node]
  network:
    description: The network of a multi-node run as the catalog names it (NICs per node x speed, for example
      V(8x400G)); without it no multi-node expectation is selected.
    type: str
  expectation_gate:
    description: Fail the task when the busbw is more than the tolerance below the catalog's expectation.
      With V(false) the verdict is only reported.
    type: bool
    default: true
  creates:
    description: Do not run when this path exists.
    type: path
  removes:
    description: Do not run unless this path exists.
    type: path
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.job_module
  - aiinfra.fabric.launcher
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: partial
    details:
      - In check mode the benchmark is not run; the module validates the input, runs only read-only probes
        (C(mpirun --version), C(<binary> -h)) and returns the command it would run.
notes:
  - Needs NVIDIA GPUs, the NCCL library and a build of nccl-tests; the C(aiinfra.fabric.nccl_tests) role
    installs and builds them.
  - O(launcher=mpirun) with a binary built without C(MPI=1) does not fail by itself; this module detects it.
seealso:
  - name: nccl-tests
    description: NVIDIA's NCCL performance tests and the meaning of algbw and busbw.
    link: https://github.com/NVIDIA/nccl-tests
  - name: NCCL environment variables
    description: NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE, which the transport proof relies on.
    link: https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - NVIDIA nccl-tests built on the GPU nodes (the nccl_tests role builds them), NCCL and the NVIDIA driver there; for
    a run across nodes, an MPI build of nccl-tests and C(mpirun) or Slurm's C(srun) on the launching host.
"""

EXAMPLES = r"""
- name: Measure all_reduce on the 8 GPUs of this node, failing under 350 GB/s on H100s
  aiinfra.fabric.nccl_test:
    test: all_reduce
    binary_dir: /opt/nccl-tests/build
    minbytes: 8
    maxbytes: 8G
    ngpus: 8
    min_busbw_per_gpu:
      H100: 350

- name: Measure all_reduce across the GPU nodes, one process per GPU
  aiinfra.fabric.nccl_test:
    test: all_reduce
    binary_dir: /opt/nccl-tests/build
    maxbytes: 1G
    launcher: mpirun
    hosts:
      - {name: te1, slots: 2}
      - {name: te2, slots: 1}
    mca:
      pml: ob1
      btl: tcp,self
      btl_tcp_if_include: eth0
    environment:
      NCCL_DEBUG: WARN
  register: allreduce

- name: Show the bus bandwidth at the largest size
  ansible.builtin.debug:
    msg: "{{ allreduce.largest_size_busbw }} GB/s at {{ allreduce.largest_size }} bytes"
"""

RETURN = r"""
rows:
  description: Every result row. C(wrong) is null when checking was off (N/A) or in the older layout, which prints C(error) (largest deviation) instead.
  returned: when the job ran
  type: list
  elements: dict
  sample:
    - size: 134217728
      count: 33554432
      type: float
      redop: sum
      root: -1
      out_of_place: {time_us: 1916.4, algbw: 70.04, busbw: 122.57, wrong: 0}
      in_place: {time_us: 1907.8, algbw: 70.35, busbw: 123.11, wrong: 0}
  contains:
    size:
      description: Message size in bytes.
      type: int
    count:
      description: Elements per rank.
      type: int
    type:
      description: Data type (C(float), C(half) ...).
      type: str
    redop:
      description: Reduction operation (C(sum) ...), C(none) where there is none.
      type: str
    root:
      description: Root rank, -1 where there is none.
      type: int
    out_of_place:
      description: The out-of-place numbers.
      type: dict
      contains:
        time_us:
          description: Time in microseconds.
          type: float
        algbw:
          description: Algorithm bandwidth, GB/s.
          type: float
        busbw:
          description: Bus bandwidth, GB/s.
          type: float
        wrong:
          description: The C(#wrong) count (null - N/A or the older layout).
          type: int
        error:
          description: The older layout's largest deviation, instead of C(wrong).
          type: float
    in_place:
      description: The in-place numbers, the keys of C(out_of_place).
      type: dict
      contains:
        time_us:
          description: Time in microseconds.
          type: float
        busbw:
          description: Bus bandwidth, GB/s.
          type: float
avg_busbw:
  description: The C(Avg bus bandwidth) footer as printed (an average over every row, small sizes included).
  returned: when the job ran
  type: float
  sample: 19.7866
peak_busbw:
  description: Highest out-of-place busbw in GB/s, and RV(peak_busbw_size) its size in bytes.
  returned: when the job ran
  type: float
  sample: 122.57
peak_busbw_size:
  description: Size in bytes of the row with RV(peak_busbw).
  returned: when the job ran
  type: int
  sample: 134217728
largest_size:
  description: Largest size measured, in bytes.
  returned: when the job ran
  type: int
  sample: 134217728
largest_size_busbw:
  description: Out-of-place busbw at RV(largest_size) (the slowest row when several types/ops ran), what the gate compares.
  returned: when the job ran
  type: float
  sample: 122.57
wrong_total:
  description: Sum of all C(#wrong) values, in place and out of place.
  returned: when the job ran
  type: int
  sample: 0
out_of_bounds:
  description: The C(Out of bounds values) footer count.
  returned: when the job ran
  type: int
  sample: 0
devices:
  description: The device list nccl-tests printed (rank, group, pid, host, device, bus_id, name).
  returned: when the job ran
  type: list
  elements: dict
  sample: [{rank: 0, group: 0, pid: 204199, host: nid005471, device: 0, bus_id: "0009:01:00", name: NVIDIA GH200 120GB}]
  contains:
    rank:
      description: The rank.
      type: int
    group:
      description: The group.
      type: int
    pid:
      description: The rank's process id.
      type: int
    host:
      description: The host it ran on.
      type: str
    device:
      description: The CUDA device number.
      type: int
    bus_id:
      description: The GPU's PCI bus id.
      type: str
    name:
      description: The GPU's name.
      type: str
hosts:
  description: Hosts in the device list, in rank order.
  returned: when the job ran
  type: list
  elements: str
  sample: [nid005471, nid005487]
nranks:
  description: Number of ranks (GPUs) in the job.
  returned: when the job ran
  type: int
  sample: 8
version:
  description: nccl-tests version, NCCL header and library codes (nccl-tests 2.17+), and the C(NCCL version) line.
  returned: when the job ran
  type: dict
  sample: {nccl_tests: 2.18.3, nccl_headers: 23003, nccl_library: 23003, nccl: 2.30.3+cuda13.0}
  contains:
    nccl_tests:
      description: The nccl-tests version (2.17 and later print it).
      type: str
    nccl_headers:
      description: The NCCL version code nccl-tests was built with.
      type: int
    nccl_library:
      description: The NCCL version code of the library it ran with.
      type: int
    nccl:
      description: The C(NCCL version) line's version.
      type: str
result_source:
  description: V(json) when the rows came from the C(-J) report, V(text) when from the printed table.
  returned: when the job ran
  type: str
  sample: json
passed:
  description: True when the job ran and every gate passed, false when it failed, null when it did not run (check mode, O(creates)/O(removes)).
  returned: always
  type: bool
  sample: true
gates:
  description: C(passed), C(failures) (messages), C(min_busbw) (the bound used), C(bound_source) and C(size) (the size in bytes where the bound was compared).
  returned: when the job ran
  type: dict
  sample: {passed: true, failures: [], min_busbw: 100.0, bound_source: min_busbw, size: 134217728}
  contains:
    passed:
      description: Whether every gate passed.
      type: bool
    failures:
      description: One message per failed gate.
      type: list
      elements: str
    min_busbw:
      description: The busbw bound used, GB/s (null - none).
      type: float
    bound_source:
      description: Where the bound came from (O(min_busbw), O(min_busbw_per_gpu) ...).
      type: str
    size:
      description: The size in bytes where the bound was compared.
      type: int
problems:
  description: Rows that could not be trusted (cut short, a value that is not a number), one message each; any fails the task.
  returned: when the job ran
  type: list
  elements: str
  sample: []
footer:
  description: Whether the table's footer was printed (false - the output was cut off).
  returned: when the job ran
  type: bool
  sample: true
requested_maxbytes:
  description: The maxbytes nccl-tests was asked for, in bytes, as its header printed it.
  returned: when the job ran
  type: int
  sample: 134217728
max_bytes_reduced_to:
  description: The maxBytes nccl-tests fell back to for lack of GPU memory (its C(Reducing maxBytes) line), null when it did not.
  returned: when the job ran
  type: int
  sample: null
expected_gpus:
  description: The number of GPUs the job was checked against (null when unknown).
  returned: when the job ran
  type: int
  sample: 8
other_rank_rows:
  description: Result rows printed by ranks other than the reporting one (rank 0); they are not merged into RV(rows).
  returned: when the job ran
  type: int
  sample: 0
transport:
  description:
    - What NCCL's INFO lines say about the path it took, when the output has them (null otherwise) - C(ranks)
      (per rank - C(rank), C(host), C(pid), C(device), C(network) selected, C(network_used) by its channels,
      C(nics), C(nics_used) (the NICs its network channels went through), C(transports) (channels per
      transport, for example C(NET/IB), C(P2P/CUMEM), C(SHM)), C(gdr), C(nvls), C(coll_channels),
      C(nvls_channels)), C(networks), C(transports), C(gdr), C(nvls), C(summary)
      (one line), C(required) and C(passed) (null without O(require_transport)).
  returned: when the job ran
  type: dict
  sample:
    ranks: [{rank: 0, host: gpu1, pid: 4242, device: 0, network: IB, network_used: IB, nics: [mlx5_0], nics_used: [mlx5_0],
             transports: {NET/IB: 4, P2P/CUMEM: 24}, gdr: true, nvls: false, coll_channels: 32, nvls_channels: null}]
    networks: [IB]
    transports: [NET/IB, P2P/CUMEM]
    gdr: true
    nvls: false
    summary: "IB on 8 rank(s); channels via NET/IB, P2P/CUMEM; GDR on; NVLS off"
    required: null
    passed: null
  contains:
    ranks:
      description: Per rank, what its INFO lines said.
      type: list
      elements: dict
      contains:
        rank:
          description: The rank.
          type: int
        host:
          description: Its host.
          type: str
        pid:
          description: Its process id.
          type: int
        device:
          description: Its CUDA device.
          type: int
        network:
          description: The network NCCL selected (C(IB), C(Socket) ...).
          type: str
        network_used:
          description: The network its channels went through.
          type: str
        nics:
          description: The NICs NCCL found.
          type: list
          elements: str
        nics_used:
          description: The NICs its network channels went through.
          type: list
          elements: str
        transports:
          description: Channels per transport (C(NET/IB), C(P2P/CUMEM), C(SHM) ...), the transport being the key.
          type: dict
          contains:
            <transport>:
              description: The number of channels over it.
              type: int
        gdr:
          description: Whether its network channels used GPUDirect RDMA.
          type: bool
        nvls:
          description: Whether it used NVLink SHARP.
          type: bool
        coll_channels:
          description: Its collective channels.
          type: int
        nvls_channels:
          description: Its NVLS channels.
          type: int
    networks:
      description: The networks of all ranks.
      type: list
      elements: str
    transports:
      description: The transports of all ranks.
      type: list
      elements: str
    gdr:
      description: GPUDirect RDMA on every rank (true), on none (false), mixed or unknown (null).
      type: bool
    nvls:
      description: NVLS on every rank (true), on none (false), mixed or unknown (null).
      type: bool
    summary:
      description: The path in one line.
      type: str
    required:
      description: O(require_transport) as checked, its keys (null without it).
      type: dict
      contains:
        network:
          description: The network required, if any.
          type: str
        gdr:
          description: Whether GPUDirect RDMA was required.
          type: bool
        nvls:
          description: Whether NVLS was required.
          type: bool
        min_nics:
          description: The fewest NICs each rank had to use.
          type: int
        all_ranks:
          description: Whether every rank had to prove it.
          type: bool
    passed:
      description: Whether O(require_transport) was met (null without it).
      type: bool
expectation:
  description:
    - The comparison with the catalog (null without O(expectations)) - C(status) (V(pass), V(below),
      V(not_compared)), C(text) (the verdict in plain words, with the source), C(model), C(expected_busbw),
      C(measured_busbw), C(size), C(deficit_pct), C(tolerance_pct), C(expectation_id), C(source).
  returned: when the job ran
  type: dict
  sample:
    status: below
    text: "te7: all_reduce busbw 312 GB/s at 8 GiB, 35 % below the H100 SXM single-node expectation of 479 GB/s, ..."
  contains:
    status:
      description: V(pass), V(below) or V(not_compared).
      type: str
    text:
      description: The verdict in plain words, with the source.
      type: str
    model:
      description: The GPU model the figure is for.
      type: str
    expected_busbw:
      description: The catalog's busbw, GB/s.
      type: float
    measured_busbw:
      description: The run's busbw at that size, GB/s.
      type: float
    size:
      description: The size compared at, bytes.
      type: int
    deficit_pct:
      description: How far below the expectation, percent.
      type: float
    tolerance_pct:
      description: The tolerance, percent.
      type: float
    expectation_id:
      description: The catalog entry's id.
      type: str
    source:
      description: Where the figure comes from.
      type: str
warnings:
  description: What the task also warned about (a reduced maxBytes, a device list missing so the GPU count was not checked).
  returned: when the job ran
  type: list
  elements: str
  sample: []
changed:
  description: Always false - running the benchmark changes nothing on the hosts (the same in every job module).
  returned: always
  type: bool
  sample: false
ran:
  description: Whether the benchmark was run (false in check mode, when O(creates)/O(removes) skipped it, and when
    the input was refused).
  returned: always
  type: bool
  sample: true
launcher:
  description: How the job was started (none, mpirun or srun), as asked.
  returned: always
  type: str
  sample: mpirun
launched_from:
  description: The name of the host that ran the binary or the launcher.
  returned: always
  type: str
  sample: te1
implementation:
  description: With O(launcher=mpirun), the MPI O(mpirun_path) is (C(implementation), C(version), C(banner)); null
    otherwise.
  returned: always
  type: dict
  sample: {implementation: openmpi, version: 4.1.4, banner: "mpirun (Open MPI) 4.1.4"}
  contains:
    implementation:
      description: The MPI implementation (C(openmpi), C(mpich), ...).
      type: str
      sample: openmpi
    version:
      description: Its version.
      type: str
      sample: 4.1.4
    banner:
      description: The first line C(mpirun --version) printed.
      type: str
      sample: mpirun (Open MPI) 4.1.4
argv:
  description: The command as a list (in check mode the hostfile path reads C(<hostfile>)), the same key and type in
    every job module.
  returned: always
  type: list
  elements: str
  sample: [/usr/bin/mpirun, -np, "2", --hostfile, <hostfile>, /opt/osu/pt2pt/osu_latency]
command:
  description:
    - The command as one shell-quoted string, for logs and copy-paste, the same key and type in every job module.
    - Earlier releases of this module returned the argv list here; that list is RV(argv) now.
  returned: always
  type: str
  sample: "/usr/bin/mpirun -np 2 --hostfile /tmp/aiinfra-hostfile-x.txt /opt/osu/pt2pt/osu_latency"
cmd:
  description: The same string as RV(command). Deprecated - use RV(command) (string) or RV(argv) (list);
    M(aiinfra.fabric.mpi_run)'s RV(cmd) is a list.
  returned: always
  type: str
  sample: "/usr/bin/mpirun -np 8 --hostfile /tmp/aiinfra-hostfile-x.txt /opt/nccl-tests/build/all_reduce_perf -b 8 -e 8G"
timed_out:
  description: Whether the job was stopped after O(timeout) seconds.
  returned: when the job ran
  type: bool
  sample: false
cancelled:
  description: The signal that cancelled the task (C(SIGTERM), C(SIGINT), C(SIGHUP)) while the job ran, after which
    the job was stopped; null otherwise.
  returned: when the job ran
  type: str
  sample: null
duration:
  description: Seconds the job ran.
  returned: when the job ran
  type: float
  sample: 42.7
rc:
  description: Exit status of the binary or launcher.
  returned: when the job ran
  type: int
  sample: 0
stdout:
  description: What the job printed.
  returned: when the job ran
  type: str
  sample: "# nThread 1 nGpus 1 minBytes 8 maxBytes 134217728 step: 2(factor) ..."
stderr:
  description: What the job printed on stderr.
  returned: when the job ran
  type: str
  sample: ""
"""

import os
import platform
import shutil
import socket
import tempfile

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job_result as JR
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launch_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner as R
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.errors import MpiError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import command as N
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.errors import NcclError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.job import (
    expected_gpus,
    plan_job,
    read_report,
    result_fields,
)

# nccl_test's cmd was the shell-quoted string before argv/command were shared (mpi_run's a list).
CMD_TYPE = "str"
LAUNCHERS = ["none", "mpirun", "srun"]


def argument_spec():
    spec = dict(
        test=dict(type="str", required=True, choices=list(N.TESTS)),
        binary_dir=dict(type="path", required=True),
        binary_suffix=dict(type="str", default=""),
        minbytes=dict(type="str", default="8"),
        maxbytes=dict(type="str", default="128M"),
        stepfactor=dict(type="int", default=2),
        stepbytes=dict(type="str"),
        ngpus=dict(type="int", default=1),
        threads=dict(type="int", default=1),
        iters=dict(type="int"),
        warmup_iters=dict(type="int"),
        check=dict(type="int"),
        op=dict(type="str", choices=list(N.OPS)),
        datatype=dict(type="str"),
        root=dict(type="int"),
        blocking=dict(type="int", choices=[0, 1, 2, 3]),
        cudagraph=dict(type="int"),
        extra_args=dict(type="list", elements="str", default=[]),
        json=dict(type="str", choices=["auto", "always", "never"], default="auto"),
        hosts=dict(type="list", elements="raw"),
        np=dict(type="int"),
        srun_nodes=dict(type="int"),
        srun_ntasks_per_node=dict(type="int"),
        min_busbw=dict(type="float"),
        min_busbw_per_gpu=dict(type="dict", default={}),
        expected_gpus=dict(type="int"),
        require_transport=dict(type="dict"),
        expectations=dict(type="dict"),
        expectations_overrides=dict(type="dict"),
        expectation_scope=dict(type="str", choices=["single_node", "multi_node"]),
        network=dict(type="str"),
        expectation_gate=dict(type="bool", default=True),
        creates=dict(type="path"),
        removes=dict(type="path"),
    )
    # extra_args are nccl-tests' own arguments here, so launcher_args keeps no extra_args alias.
    spec.update(launch_options.launcher_argument_spec(LAUNCHERS, "none", timeout=1800, extra_args_alias=False))
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    result = JR.job_result(p["launcher"], socket.gethostname(), CMD_TYPE)
    result["passed"] = None

    for guard, wanted in (("creates", True), ("removes", False)):
        if p[guard] and os.path.exists(p[guard]) == wanted:
            module.exit_json(skipped=True, msg="not run: %s %s" % (p[guard], "exists" if wanted else "does not exist"),
                             **result)

    def run_command(argv, env=None):
        update = dict((k, str(v)) for k, v in (env or {}).items())
        update["LC_ALL"] = "C"
        return module.run_command(argv, environ_update=update)

    def find(name, given):
        return given or module.get_bin_path(name, required=False)

    workdir = None
    try:
        plan = plan_job(p, find=find, run_command=run_command, check_mode=module.check_mode,
                        exists=os.path.exists, executable=lambda path: os.access(path, os.X_OK))
        result["implementation"] = plan.launch["implementation"]
        for warning in plan.warnings:
            module.warn(warning)
        JR.set_command(result, plan.argv_for_display(), CMD_TYPE)
        if module.check_mode:
            module.exit_json(msg="check mode: the benchmark was not run", **result)
        workdir = tempfile.mkdtemp(prefix="aiinfra-nccl-")
        argv = plan.materialize(workdir)
        JR.set_command(result, argv, CMD_TYPE)
        job = R.run_job(argv, timeout=p["timeout"], env=plan.env)
        JR.set_run(result, job)
        report = read_report(job, plan, workdir)
    except (NcclError, MpiError) as exc:
        result["passed"] = False
        module.fail_json(msg=str(exc), **result)
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)

    fields = result_fields(report, job, plan, host=platform.node(), min_busbw=p["min_busbw"],
                           min_busbw_per_gpu=p["min_busbw_per_gpu"], timeout=p["timeout"], gpus=expected_gpus(p),
                           p=p)
    for warning in fields["warnings"]:
        module.warn(warning)
    result.update(fields)
    failure = result.pop("failure")
    result["passed"] = failure is None
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
