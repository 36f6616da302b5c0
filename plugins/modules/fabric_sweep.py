#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_sweep
short_description: Find the slow node or link - pairwise and bisection sweeps with MPI or nccl-tests
version_added: "0.1.0"
description:
  - Runs a benchmark between pairs or groups of O(nodes) from the host the task runs on (the
    launching host) and ranks the suspects, with the evidence - each pair's number against the
    group's median and against the expectation - and an exclude list in Slurm's hostlist syntax.
  - O(mode=pairwise) pairs every node with every other node in rounds of disjoint pairs (a
    round-robin tournament; an odd count gives one node a bye each round). All pairs of a round
    run at the same time, so a round takes one test's time; N nodes take N-1 rounds (N when odd).
  - O(mode=reference) pairs every node with a known-good node of O(references), as many pairs
    per round as there are references.
  - O(mode=bisect) runs O(group_test) on the whole group; when the result misses its C(expect),
    the group is halved (both halves in one round) until the low node is found, testing a
    single node with a known-good partner. O(bisect_when_low=true) does the same after a
    pairwise or reference sweep (one whole-group test when the group is fine).
  - Jobs are launched with the collection's MPI launcher code (the same as
    M(aiinfra.fabric.mpi_run) and M(aiinfra.fabric.nccl_test), with the same launcher options under the same
    names) - C(mpirun) with a private hostfile per job, or C(srun) with a node list - and stopped on every host
    after O(timeout).
  - The module measures and changes nothing on the nodes (C(changed=false), after a sweep and in check mode, as in
    every job module). It never drains a node; RV(drain_command) is the command for whoever decides to.
  - When more than half the nodes are low (RV(verdict=group_wide)) the fault is something they share - a
    switch, the fabric, a firmware roll-out, or an expectation that does not fit - and RV(exclude) and
    RV(drain_command) stay empty; RV(verdict_reason) says why and names the likely cause.
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - On the launching host, mpirun (Open MPI, MPICH or Intel MPI) or Slurm's srun, and the benchmark programs
    (the OSU Micro-Benchmarks, the mpi_bench role's C(fabric_mpi_bench) or nccl-tests) at the same path on every node.
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.job_module
  - aiinfra.fabric.launcher
  - aiinfra.fabric.launcher.extra_args_alias
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: full
    details: In check mode nothing runs; the module validates the input and returns the rounds and the first commands.
options:
  nodes:
    description:
      - The nodes to sweep, each a name or C({name, address}). C(name) is what the results and the
        exclude list call the node (its Slurm/inventory name); C(address) is what mpirun uses
        (a fabric host name or address; default the name). srun gets the names.
    type: list
    elements: raw
    required: true
  references:
    description:
      - Known-good nodes (same form as O(nodes)), not tested themselves. Required for
        O(mode=reference); in a bisection they partner single nodes.
    type: list
    elements: raw
    default: []
  mode:
    description: C(pairwise), C(reference) or C(bisect) (see the description).
    type: str
    choices: [pairwise, reference, bisect]
    default: pairwise
  tests:
    description:
      - The per-pair tests of the pairwise and reference sweeps. Each is a dict with C(name),
        C(program), C(args), C(parse) (C(osu) - OSU Micro-Benchmarks tables, also the mpi_bench
        role's fabric_mpi_bench - or C(nccl) - nccl-tests), C(table) (OSU table kind - C(latency),
        C(bandwidth), C(bibandwidth), C(collective)), C(metric) (C(latency_us), C(bandwidth_mbs);
        nccl C(busbw), C(algbw)), C(size) (bytes; default the smallest size for latencies, the
        largest for bandwidths), C(better) (C(higher) or C(lower), from the metric), C(expect)
        (the value a healthy pair reaches, optional) and, for nccl-tests, C(nccl) (options as the
        nccl_test module takes them - C(minbytes), C(maxbytes), C(ngpus), C(iters) ...).
      - Tests with the same program and arguments run as one job.
    type: list
    elements: dict
    default: []
  group_test:
    description:
      - The whole-group test of a bisection, in the form of one O(tests) entry; its C(expect) is
        required (a group is low when it misses C(expect) by more than O(tolerance)).
    type: dict
  bisect_when_low:
    description: After a pairwise or reference sweep, also test the whole group with O(group_test) and bisect it when low.
    type: bool
    default: false
  expectations:
    description:
      - The expected-busbw catalog (C(models) and C(expectations), the schema of the C(aiinfra.fabric.nccl_tests)
        role's catalog, the collection's C(files/expected_busbw.yml), as M(aiinfra.fabric.nccl_test) takes it).
      - For an nccl-tests test (C(parse=nccl), metric C(busbw)) without C(expect), the GPU model the jobs printed
        selects the catalog's multi-node figure for that model, the GPUs per node and O(network), at the largest
        published size not above the size measured; it is then the test's expectation (RV(expectations_used)).
        When none applies, RV(verdict_reason) says why.
    type: dict
  network:
    description: The network as the catalog names it (NICs per node x speed, for example V(8x400G)); without it no
      multi-node figure of O(expectations) is selected.
    type: str
  tolerance:
    description: How far below the group median or the expectation (a fraction) a pair may be before it is low.
    type: float
    default: 0.2
  retest_low:
    description:
      - How many times a low pair of the pairwise or reference sweep is measured again before it counts as
        low. Only the pairs still low are run again, in rounds of disjoint pairs, and each pair keeps its best
        value (C(samples) in RV(pairs) lists them all), so a job slowed once by a passing cause (another job on
        the host, a retransmit burst) names nobody, while a slow node or link is low every time.
      - Costs one more job per low pair and attempt, nothing when no pair is low. V(0) judges on one
        measurement. At most V(5).
    type: int
    default: 1
  slots_per_node:
    description: Ranks per node in each job (1 for MPI point-to-point; the GPU count for nccl-tests with one process per GPU).
    type: int
    default: 1
  parallel:
    description: Run the pairs of a round at the same time (false - one after the other, for a shared test bed).
    type: bool
    default: true
  launcher:
    description: C(mpirun) (O(mpirun_path)) or C(srun) (O(srun_path)).
    type: str
    choices: [mpirun, srun]
    default: mpirun
  mca:
    description:
      - Open MPI MCA parameters for every job, passed to mpirun as C(--mca NAME VALUE) (sorted by name).
      - With O(launcher=srun) they reach the ranks as C(OMPI_MCA_<name>) variables in srun's environment
        (which srun passes on), as does O(environment).
    type: dict
    default: {}
  chdir:
    description: Working directory of the jobs.
    type: path
  timeout:
    description: Seconds after which one job is stopped on every host (its pair then counts as failed, which is low).
    type: int
    default: 300
  drain_reason:
    description: The reason RV(drain_command) gives Slurm.
    type: str
    default: fabric_sweep found this node slow
notes:
  - The launching host needs what mpirun needs to reach the nodes (the C(aiinfra.fabric.mpi_bench) role
    sets up SSH from its first node) and the programs at the same path on every node.
  - Without an expectation the nodes are judged against each other, which works while most of them are healthy.
    With 2 nodes (3 for a pairwise sweep without references), or when the nodes' results split in two and the
    better side is not a majority (a bad roll-out on half the group), RV(verdict) is V(cannot_judge) - never
    V(no_suspect) - until an expectation (C(expect), or O(expectations) for nccl-tests), or known-good references
    in the pairs (O(mode=reference)), say which side is healthy.
seealso:
  - module: aiinfra.fabric.mpi_run
  - name: Slurm hostlist expressions
    description: The syntax of RV(exclude) (sbatch/srun C(--exclude), C(scontrol update NodeName=)).
    link: https://slurm.schedmd.com/sbatch.html#OPT_exclude
"""

EXAMPLES = r"""
- name: Sweep every pair of MPI nodes with the OSU latency and bandwidth tests
  aiinfra.fabric.fabric_sweep:
    nodes: [{name: node01, address: node01-ib}, {name: node02, address: node02-ib}, {name: node03, address: node03-ib}]
    tests:
      - {name: latency, program: /opt/osu/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_latency,
         args: [-m, "8:8"], table: latency}
      - {name: bandwidth, program: /opt/osu/libexec/osu-micro-benchmarks/mpi/pt2pt/osu_bw,
         args: [-m, "1048576:1048576"], table: bandwidth, expect: 10000}
    mca: {btl: "tcp,self", btl_tcp_if_include: 10.99.0.0/24}
  register: sweep

- name: Find the slow GPU node by halving the group (nccl-tests all_reduce_perf, 8 GPUs a node)
  aiinfra.fabric.fabric_sweep:
    mode: bisect
    nodes: "{{ groups['gpu_nodes'] }}"
    slots_per_node: 8
    group_test:
      name: all_reduce
      program: /opt/nccl-tests/build/all_reduce_perf
      parse: nccl
      nccl: {minbytes: 1G, maxbytes: 1G, ngpus: 1}
      expect: 360
    launcher: srun
    srun_mpi: pmix
"""

RETURN = r"""
changed:
  description: Always false - a sweep measures and changes nothing on the nodes (the same in every job module).
  returned: always
  type: bool
  sample: false
ran:
  description: Whether the sweep's jobs ran (false in check mode and when the input was refused).
  returned: always
  type: bool
  sample: true
launcher:
  description: How the jobs were started (mpirun or srun), as asked.
  returned: always
  type: str
  sample: mpirun
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
mode:
  description: The mode that ran.
  returned: always
  type: str
  sample: pairwise
rounds:
  description: The planned rounds of the pairwise/reference sweep, each a list of pairs (node names), and the byes.
  returned: always
  type: list
  elements: dict
  sample: [{round: 1, pairs: [[te2, te3]], byes: [te1]}]
  contains:
    round:
      description: The round's number, from 1.
      type: int
    pairs:
      description: The pairs measured at once in this round, each a list of two node names.
      type: list
      elements: list
    byes:
      description: The nodes without a partner in this round.
      type: list
      elements: str
commands:
  description: The launcher command of each job of the first round (check mode shows what would run).
  returned: always
  type: list
  elements: str
  sample: ["/usr/bin/mpirun -np 2 --hostfile '<hostfile>' --map-by node /opt/fabric/fabric_mpi_bench all -m 65536"]
pairs:
  description: Every pair's measurement per test, the low ones marked.
  returned: when a pairwise or reference sweep ran
  type: list
  elements: dict
  sample:
    - {test: latency, nodes: [te2, te3], value: 4100.0, unit: us, size: 0, better: lower, median: 150.0,
       baseline_from: median, expected: null, vs_median: 0.0366, vs_expected: null, low: true,
       why: [below the group median], error: null, samples: [4100.0, 4100.0],
       text: "te2-te3 latency 4100 us at 0 B (4 % of the group median 150, best of 2 runs)"}
  contains:
    test:
      description: The test's name (C(name) of its O(tests) entry).
      type: str
    nodes:
      description: The two nodes of the pair.
      type: list
      elements: str
    value:
      description: The pair's value (the best of RV(pairs[].samples)); null when its jobs failed.
      type: float
    unit:
      description: The value's unit (C(us), C(MB/s), C(GB/s)).
      type: str
    size:
      description: The message size in bytes the value was read at.
      type: int
    better:
      description: V(lower) (latency) or V(higher) (bandwidth).
      type: str
    median:
      description: The group's baseline - the median of each node's best pair.
      type: float
    baseline_from:
      description: Where the baseline came from - V(median), or V(references) (known-good nodes).
      type: str
    expected:
      description: The test's expectation, if it has one.
      type: float
    vs_median:
      description: The value as a fraction of the baseline (1.0 - as good as the median; lower is worse).
      type: float
    vs_expected:
      description: The value as a fraction of the expectation.
      type: float
    low:
      description: Whether the pair counts as low.
      type: bool
    why:
      description: Why it is low (below the median, below the expectation, its job failed).
      type: list
      elements: str
    error:
      description: What went wrong with the pair's job, if anything.
      type: str
    samples:
      description: Every value the pair got - more than one when it was measured again (O(retest_low)).
      type: list
      elements: float
    text:
      description: The pair in one readable line.
      type: str
jobs:
  description:
    - Every job of the rounds, per round and pair - C(tests), C(argv) (list) and C(command) (string, the hostfile
      reads C(<hostfile>)) as every job module returns them, C(rc), C(duration), C(timed_out), C(cancelled),
      C(error) and, for a failed job, C(output_tail).
  returned: when a sweep ran
  type: list
  elements: dict
  sample:
    - round: 1
      pairs:
        - nodes: [te2, te3]
          jobs: [{tests: [latency, bandwidth], command: "/usr/bin/mpirun -np 2 --hostfile '<hostfile>' ...", rc: 0,
                  duration: 2.8, timed_out: false, error: null}]
          values: {latency: 4100.0, bandwidth: 4.5}
  contains:
    round:
      description: The round's number.
      type: int
    pairs:
      description: The round's pairs.
      type: list
      elements: dict
      contains:
        nodes:
          description: The two nodes.
          type: list
          elements: str
        jobs:
          description:
            - The pair's jobs (one per program run) - C(tests) (what the run measured), C(command), C(rc),
              C(duration) (seconds), C(timed_out) and C(error).
          type: list
          elements: dict
          contains:
            tests:
              description: The tests this run measured.
              type: list
              elements: str
            command:
              description: The launcher command.
              type: str
            rc:
              description: The launcher's exit status.
              type: int
            duration:
              description: Seconds the job ran.
              type: float
            timed_out:
              description: Whether O(timeout) stopped it.
              type: bool
            error:
              description: What went wrong, if anything.
              type: str
        values:
          description: The value per test name that the pair's jobs gave (test name to number).
          type: dict
          contains:
            <test>:
              description: The value of the test of that name, in its unit.
              type: float
retests:
  description:
    - The measurements again of low pairs (O(retest_low)), per attempt. Empty when no pair was low.
  returned: when a pairwise or reference sweep ran
  type: list
  elements: dict
  sample: [{attempt: 1, pairs: [[te2, te3], [te1, te3]], rounds: [{round: 1, pairs: [{nodes: [te2, te3], jobs: []}]}]}]
  contains:
    attempt:
      description: The attempt's number, from 1.
      type: int
    pairs:
      description: The pairs measured again.
      type: list
      elements: list
    rounds:
      description: Their jobs, in the same form as RV(jobs).
      type: list
      elements: dict
      contains:
        round:
          description: The round's number.
          type: int
        pairs:
          description: The round's pairs and jobs, as in RV(jobs[].pairs).
          type: list
          elements: dict
          contains:
            nodes:
              description: The two nodes.
              type: list
              elements: str
            jobs:
              description: The pair's jobs, as in RV(jobs[].pairs[].jobs).
              type: list
              elements: dict
              contains:
                command:
                  description: The launcher command.
                  type: str
                rc:
                  description: The launcher's exit status.
                  type: int
suspects:
  description: Node suspects, worst first.
  returned: always
  type: list
  elements: dict
  sample:
    - node: te3
      kind: node
      severity: 0.975
      tests: [latency, bandwidth]
      evidence: ["te2-te3 latency 4100 us at 0 B (4 % of the group median 150, best of 2 runs)"]
      rank: 1
  contains:
    node:
      description: The node's name.
      type: str
    kind:
      description: Always V(node).
      type: str
    severity:
      description: How much worse than the baseline its best pair is (0.5 - half as good).
      type: float
    tests:
      description: The tests it is low in.
      type: list
      elements: str
    evidence:
      description: The low pairs' lines that name it.
      type: list
      elements: str
    rank:
      description: Its place in the ranking of node and link suspects, from 1.
      type: int
link_suspects:
  description: Low pairs of nodes that are not suspects themselves - the path between them.
  returned: always
  type: list
  elements: dict
  sample: [{nodes: [te1, te4], kind: link, severity: 0.4, tests: [bandwidth], evidence: ["te1-te4 bandwidth ..."],
            rank: 2}]
  contains:
    nodes:
      description: The two nodes.
      type: list
      elements: str
    kind:
      description: Always V(link).
      type: str
    severity:
      description: How much worse than the baseline the pair is.
      type: float
    tests:
      description: The tests the pair is low in.
      type: list
      elements: str
    evidence:
      description: The pair's low lines.
      type: list
      elements: str
    rank:
      description: Its place in the ranking, after the node suspects.
      type: int
bisection:
  description: What the bisection found and each of its steps.
  returned: when a bisection ran
  type: dict
  sample:
    group: [te1, te2, te3]
    suspects: [te3]
    unresolved: []
    inconclusive: []
    known_good: [te1, te2]
    steps: [{id: 1, nodes: [te1, te2, te3], subject: [te1, te2, te3], kind: group, low: true, value: 8000.0}]
    rounds: [[[te1, te2, te3]]]
    tests: [{nodes: [te1, te2, te3], kind: group, value: 8000.0, size: 4, unit: us, expected: 1000.0, low: true}]
  contains:
    group:
      description: The nodes bisected.
      type: list
      elements: str
    suspects:
      description: The nodes found low with a known-good partner.
      type: list
      elements: str
    unresolved:
      description: Nodes still without a known-good partner when no untried probe was left.
      type: list
      elements: str
    inconclusive:
      description: Low groups whose parts all passed - a fault between the parts (a link, a switch path or a load
        effect), for a pairwise sweep of the group.
      type: list
      elements: list
    known_good:
      description: The nodes that passed (and the references), used as partners.
      type: list
      elements: str
    steps:
      description: Each step - C(id), C(nodes) (who ran), C(subject) (who was judged), C(kind) (V(group), V(probe),
        V(with_partner)), C(low) and C(value).
      type: list
      elements: dict
      contains:
        id:
          description: The step's number.
          type: int
        nodes:
          description: The nodes the job ran on.
          type: list
          elements: str
        subject:
          description: The nodes the step judged.
          type: list
          elements: str
        kind:
          description: V(group), V(probe) or V(with_partner).
          type: str
        low:
          description: Whether the result was low.
          type: bool
        value:
          description: The group test's value.
          type: float
    rounds:
      description: The groups run per round.
      type: list
      elements: list
    tests:
      description: Each group test's measurement, with its jobs (as in RV(jobs[].pairs[].jobs)).
      type: list
      elements: dict
      contains:
        nodes:
          description: The nodes of the job.
          type: list
          elements: str
        value:
          description: The value.
          type: float
        unit:
          description: Its unit.
          type: str
        expected:
          description: The C(expect) of O(group_test).
          type: float
        low:
          description: Whether it missed the expectation by more than the tolerance.
          type: bool
suspect_nodes:
  description: The names of every suspect node, from the ranking and from the bisection.
  returned: when a sweep ran
  type: list
  elements: str
  sample: [te3]
verdict:
  description:
    - The sweep's conclusion in one word - V(suspects) (nodes or links named; the node suspects are in
      RV(exclude) and RV(drain_command)), V(group_wide) (more than half the nodes are low - the fault is something
      they share, not the nodes; nobody is excluded or drained), V(cannot_judge) (nobody named, but the numbers
      cannot show a bad node - see RV(cannot_judge)), or V(no_suspect).
  returned: when a sweep ran
  type: str
  sample: group_wide
verdict_reason:
  description: The conclusion as a sentence - who is named, or for V(group_wide) how many nodes are low, the
    evidence and the likely shared cause (a switch, the fabric, a roll-out, or the expectation itself).
  returned: when a sweep ran
  type: str
  sample: >-
    group-wide: 6 of 6 nodes are low (bandwidth: every pair about 46 % of the expected 24000 MB/s and the pairs
    agree with each other): the likely cause is something they share - the switch or fabric between them (link speed,
    MTU, congestion control, a firmware or driver roll-out) - or an expectation that does not fit this hardware;
    nobody is drained or excluded, check what the nodes share first
cannot_judge:
  description:
    - The tests whose numbers cannot name a node - a test without an expectation on
      too few nodes, or whose nodes split in two with the better side not a majority (both sides named, with
      what they reach).
  returned: when a sweep ran
  type: list
  elements: dict
  contains:
    test:
      description: The test's name.
      type: str
    reason:
      description: Why it cannot be judged; it ends with why the catalog (O(expectations)) gave no figure, when it
        did not.
      type: str
  sample:
    - test: bandwidth
      reason: >-
        bandwidth: the nodes split in two - gpu[1-2] reach 1000 MB/s, gpu[3-6] reach 300 MB/s (each node's best
        pair) - and the better side is not a majority, so the group median cannot tell which side is healthy (a bad
        roll-out on part of the group, or a topology in which some pairs are faster); the group cannot be judged
        without an expectation or a known-good reference
expectations_used:
  description:
    - The expectation of each test that has one.
  returned: when a pairwise or reference sweep ran
  type: list
  elements: dict
  contains:
    test:
      description: The test's name.
      type: str
    expect:
      description: The expected value, in the test's unit.
      type: float
    origin:
      description: V(expect) (given with the test) or V(catalog).
      type: str
    expectation_id:
      description: The catalog entry's id (catalog ones only).
      type: str
    model:
      description: The GPU model the figure is for (catalog ones only).
      type: str
    size:
      description: The message size of the figure, in bytes (catalog ones only).
      type: int
    source:
      description: Where the figure comes from (catalog ones only).
      type: str
    text:
      description: The expectation in one line (catalog ones only).
      type: str
  sample:
    - {test: all_reduce, expect: 384.0, origin: catalog, expectation_id: h100_sxm-multi-8x400g-all_reduce,
       model: H100 SXM, size: 8589934592, source: "NCCL maintainer's rule of thumb ...",
       text: "all_reduce: expected 384 GB/s at 8 GiB - the catalog's h100_sxm-multi-8x400g-all_reduce figure ..."}
exclude:
  description:
    - The suspect nodes (RV(suspect_nodes)) as a Slurm hostlist (empty when none).
    - Empty when RV(verdict) is V(group_wide) - excluding most of the group would not remove the cause.
  returned: always
  type: str
  sample: te[3,7]
exclude_option:
  description: The same as an sbatch/srun option.
  returned: always
  type: str
  sample: --exclude=te[3,7]
drain_command:
  description:
    - The C(scontrol) command that would drain the suspects (not run by this module).
    - Empty when RV(verdict) is V(group_wide) - a group-wide result never drains anyone.
  returned: always
  type: list
  elements: str
  sample: [scontrol, update, NodeName=te3, State=DRAIN, Reason=fabric_sweep found this node slow]
group_wide:
  description: More than half the nodes are suspects, of the ranking or the bisection - the fault is not one node
    (RV(verdict) is V(group_wide)).
  returned: always
  type: bool
  sample: false
lines:
  description:
    - The verdict in readable lines - the expectations taken from the catalog, each pair, then the suspects, the
      bisection steps and, unless suspects were named, RV(verdict_reason).
  returned: always
  type: list
  elements: str
  sample:
    - LOW  te2-te3 latency 4100 us at 0 B (4 % of the group median 150, best of 2 runs)
    - ok   te1-te2 latency 150 us at 0 B (100 % of the group median 150)
    - "suspect #1 te3 (node, 98 % worse; latency, bandwidth): te2-te3 latency 4100 us at 0 B ..."
launched_from:
  description: The name of the host the jobs were launched from.
  returned: always
  type: str
  sample: te1
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job_result as JR
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launch_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import catalog as C
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import execute as X
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import expected as E
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import measure as M
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import plan as P
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import rank as R
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import report as V
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep.errors import SweepError

LAUNCHERS = ["mpirun", "srun"]


def argument_spec():
    spec = dict(
        nodes=dict(type="list", elements="raw", required=True),
        references=dict(type="list", elements="raw", default=[]),
        mode=dict(type="str", choices=["pairwise", "reference", "bisect"], default="pairwise"),
        tests=dict(type="list", elements="dict", default=[]),
        group_test=dict(type="dict"),
        bisect_when_low=dict(type="bool", default=False),
        expectations=dict(type="dict"),
        network=dict(type="str"),
        tolerance=dict(type="float", default=0.2),
        retest_low=dict(type="int", default=1),
        slots_per_node=dict(type="int", default=1),
        parallel=dict(type="bool", default=True),
        chdir=dict(type="path"),
        drain_reason=dict(type="str", default="fabric_sweep found this node slow"),
    )
    spec.update(launch_options.launcher_argument_spec(LAUNCHERS, "mpirun", timeout=300))
    return spec


def _validate(p):
    """Everything that can be checked before a job runs; raises ValueError with the reason."""
    nodes = P.normalize_nodes(p["nodes"], "nodes")
    references = P.normalize_nodes(p["references"], "references")
    overlap = sorted(set(n["name"] for n in nodes) & set(r["name"] for r in references))
    if overlap:
        raise P.SweepPlanError("nodes %s are listed in nodes and in references" % ", ".join(overlap))
    if not 0 <= p["tolerance"] < 1:
        raise P.SweepPlanError("tolerance must be a fraction in [0, 1), got %r" % p["tolerance"])
    if not 0 <= p["retest_low"] <= 5:
        raise P.SweepPlanError("retest_low must be 0 to 5 (measurements again of a low pair), got %r"
                               % p["retest_low"])
    if p["slots_per_node"] < 1:
        raise P.SweepPlanError("slots_per_node must be >= 1, got %r" % p["slots_per_node"])
    if p["timeout"] < 1:
        raise P.SweepPlanError("timeout must be >= 1 second, got %r" % p["timeout"])
    if p["expectations"]:
        C.validate(p["expectations"])
    names = [n["name"] for n in nodes]
    tests = []
    rounds = []
    if p["mode"] == "pairwise":
        tests = M.normalize_tests(p["tests"], "tests")
        rounds = P.round_robin(names)
    elif p["mode"] == "reference":
        tests = M.normalize_tests(p["tests"], "tests")
        rounds = P.reference_rounds(names, [r["name"] for r in references])
    group_test = None
    if p["mode"] == "bisect" or (p["bisect_when_low"] and p["group_test"]):
        if not p["group_test"]:
            raise P.SweepPlanError("mode=bisect needs group_test (the whole-group test and its expect)")
        group_test = M.normalize_test(p["group_test"], 0, "group_test")
        if group_test["expect"] is None:
            raise P.SweepPlanError("group_test needs expect: the value a healthy group reaches (a group is low when "
                                   "it misses it by more than the tolerance)")
        if len(names) < 2:
            raise P.SweepPlanError("a bisection needs at least 2 nodes, got %s" % (names,))
    return nodes, references, tests, rounds, group_test


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    here = socket.gethostname()
    # The job modules' shared keys, less the one command (a sweep runs many: commands, jobs[].argv/command).
    result = dict((k, v) for k, v in JR.job_result(p["launcher"], here).items() if k not in ("argv", "command", "cmd"))
    result.update(mode=p["mode"], rounds=[], commands=[], pairs=[], jobs=[], suspects=[], link_suspects=[],
                  exclude="", exclude_option="", drain_command=[], group_wide=False, lines=[])
    try:
        nodes, references, tests, rounds, group_test = _validate(p)
    except C.CatalogError as exc:
        module.fail_json(msg="expectations: %s" % exc, **result)
    except SweepError as exc:
        module.fail_json(msg=str(exc), **result)
    names = [n["name"] for n in nodes]
    # srun takes Slurm's node names; mpirun the addresses (fabric names) of the nodes.
    address_of = dict((n["name"], n["name"] if p["launcher"] == "srun" else n["address"]) for n in nodes + references)
    result["rounds"] = [{"round": i, "pairs": [list(pair) for pair in pairs], "byes": bye}
                        for i, (pairs, bye) in enumerate(zip(rounds, P.byes(rounds, names)), 1)]

    def which(name):
        return module.get_bin_path(name, required=False)

    try:
        launch = L.resolve_launcher(p["launcher"], p, which,
                                    lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}), here)
    except L.LauncherError as exc:
        module.fail_json(msg=str(exc), **result)
    result["implementation"] = launch["implementation"]
    implementation = launch["implementation"]["implementation"] if launch["implementation"] else None
    base = dict((name, p[name]) for name in launch_options.LAUNCHER_OPTIONS)
    base.update(("%s_path" % tool, path) for tool, path in launch["paths"].items())
    base.update(launcher=p["launcher"], chdir=p["chdir"], timeout=p["timeout"])

    executor = X.Executor(base, implementation, os.cpu_count() or 1, L.host_resolves,
                          lambda program: L.find_executable(program, which, p["chdir"]),
                          slots_per_node=p["slots_per_node"], timeout=p["timeout"], hostfile_dir=module.tmpdir)
    # Plan the first jobs now: a bad program, host or launcher option fails before anything runs.
    try:
        if rounds:
            first = rounds[0][0]
            result["commands"] = [j["command"] for j in executor.plan(tests, [address_of[n] for n in first])]
        if group_test:
            result["commands"] += [j["command"] for j in executor.plan([group_test], [address_of[n] for n in names])]
        for name in names + [r["name"] for r in references]:
            if not L.host_resolves(address_of[name]):
                raise X.SweepRunError("%s's address %s does not resolve on %s" % (name, address_of[name], here))
    except SweepError as exc:
        module.fail_json(msg=str(exc), **result)
    if module.check_mode:
        result["lines"] = ["check mode: %d rounds planned, nothing run" % len(rounds)]
        module.exit_json(**result)

    ranking = None
    bisection = None
    notes = {}
    result["ran"] = True
    try:
        if rounds:
            measurements, records = X.pairwise(rounds, address_of, tests, executor, p["parallel"])
            result["jobs"] = records
            # The catalog's figure for the GPU model the jobs printed, where a test has no expect.
            found, notes = E.from_catalog(tests, measurements, p["expectations"], p["network"])
            result["expectations_used"] = E.used(tests, found)
            expectations = dict((e["test"], e["expect"]) for e in result["expectations_used"])
            reference_names = [r["name"] for r in references]
            measurements, ranking, result["retests"] = X.retest_low(
                measurements, lambda found: R.rank(found, p["tolerance"], expectations, references=reference_names),
                address_of, tests, executor, p["retest_low"], p["parallel"])
            result["pairs"] = [pair for t in ranking["tests"] for pair in t["pairs"]]
            result["suspects"] = ranking["suspects"]
            result["link_suspects"] = ranking["link_suspects"]
        if group_test and (p["mode"] == "bisect" or p["bisect_when_low"]):
            known_good = [r["name"] for r in references]
            bisection = X.bisection(names, known_good, address_of, group_test, executor, p["tolerance"],
                                    p["parallel"])
            result["bisection"] = bisection
        summary = V.verdict(ranking, bisection, p["drain_reason"], notes)
    except SweepError as exc:
        module.fail_json(msg=str(exc), **result)
    for key in ("verdict", "verdict_reason", "group_wide", "cannot_judge", "exclude", "exclude_option",
                "drain_command", "suspect_nodes"):
        result[key] = summary[key]
    result["lines"] = ([e["text"] for e in result.get("expectations_used", []) if e["origin"] == "catalog"]
                       + (V.pair_lines(ranking) if ranking else []) + summary["lines"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
