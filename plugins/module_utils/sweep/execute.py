# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Running a sweep: each round's tests at the same time, through the MPI launcher code.

``Executor(base_params, implementation, ...)``
    ``base_params``: the launcher options of every job, under their shared names
    (:mod:`mpi.launch_options`; the aliases are accepted). Plans (``plan(tests, addresses)``: the launcher argv of every job, validated through
    :func:`mpi.job.plan_job`, nothing run) and runs (``measure(tests, addresses)``) the
    jobs of one test set on a set of nodes, one after the other, and reads each test's
    number. ``run_job`` and ``write_hostfile`` are constructor arguments so unit tests
    replace them with recorded outputs.
``run_round(items, work, parallel=True) -> [result, ...]``
    ``work(item)`` for every item of a round, in threads (the items use disjoint nodes).
``pairwise(rounds, names_to_addresses, measure_pair) -> (measurements, round_records)``
``retest_low(measurements, rank, address_of, tests, executor, times, parallel) -> (measurements, ranking, retests)``
    Measures the pairs that are low again, up to ``times`` times (only those still low,
    in rounds of disjoint pairs), each keeping its best value: a hiccup during one job
    (a busy host, a retransmit storm) names nobody, a slow node stays slow every time.
``bisection(search, names_to_addresses, measure_group, test) -> dict``
"""

from __future__ import annotations

import os
import threading

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job as mpi_job
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job_result as JR
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launch_options
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner as R
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.parsers import parse_output
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import gates as G
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.parse import parse_text as parse_nccl
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import measure as M
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import bisect as B
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import plan as P
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep import rank as RK
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep.errors import SweepError


class SweepRunError(SweepError):
    """A job of the sweep cannot be planned (bad input): nothing was run."""


def _parse(kind, text):
    if kind == "nccl":
        return parse_nccl(text)
    return parse_output("osu", text)


class Executor(object):
    def __init__(self, base_params, implementation, local_slots, resolves, find_program, slots_per_node=1,
                 timeout=None, hostfile_dir=None, run_job=None, write_hostfile=None):
        self.base = launch_options.with_canonical_names(base_params)
        self.implementation = implementation
        self.local_slots = local_slots
        self.resolves = resolves
        self.find_program = find_program
        self.slots_per_node = slots_per_node
        self.timeout = timeout
        self.hostfile_dir = hostfile_dir
        self.run_job = run_job or R.run_job
        self.write_hostfile = write_hostfile or L.write_hostfile
        self.run_env = None
        if self.base.get("launcher") == "srun":
            # srun hands its own environment to the tasks (--export=ALL is its default), and
            # --export cannot carry a comma (btl=tcp,self): the ranks' variables and the MCA
            # parameters (as OMPI_MCA_<name>) go into srun's environment instead.
            run_env = dict((str(k), v) for k, v in (self.base.get("environment") or {}).items() if v is not None)
            for name, value in (self.base.get("mca") or {}).items():
                run_env.setdefault("OMPI_MCA_%s" % name, value)
            self.run_env = run_env
            self.base["environment"] = {}
            self.base["mca"] = {}

    def plan(self, tests, addresses):
        planned = []
        for job in M.jobs_for(tests):
            params = M.job_params(self.base, job, addresses, self.slots_per_node)
            try:
                plan = mpi_job.plan_job(params, self.implementation, self.local_slots, self.resolves,
                                        self.find_program(job["program"]))
            except mpi_job.MpiJobError as exc:
                raise SweepRunError("%s on %s: %s" % (", ".join(job["tests"]), ", ".join(addresses), exc))
            shown = mpi_job.with_hostfile(plan["argv"], "<hostfile>" if plan["hostfile_content"] else None)
            planned.append({"job": job, "plan": plan, "argv": shown, "command": JR.command_line(shown)})
        return planned

    def measure(self, tests, addresses):
        """Run the jobs of ``tests`` on ``addresses``.

        ``{'jobs': [...], 'values': {test: (v, size, err)}, 'gpus': {test: {'gpu_models', 'gpus_per_node'}}}``;
        ``gpus`` holds the nccl-tests jobs' devices (what the catalog's expectation depends on).
        """
        by_name = dict((t["name"], t) for t in tests)
        values = {}
        gpus = {}
        jobs = []
        for item in self.plan(tests, addresses):
            job, plan = item["job"], item["plan"]
            hostfile = None
            try:
                if plan["hostfile_content"]:
                    hostfile = self.write_hostfile(plan["hosts"], self.implementation, directory=self.hostfile_dir)
                argv = mpi_job.with_hostfile(plan["argv"], hostfile)
                run = self.run_job(argv, timeout=self.timeout, env=self.run_env, cwd=self.base.get("chdir"))
            finally:
                if hostfile and os.path.exists(hostfile):
                    os.unlink(hostfile)
            record = {"tests": list(job["tests"]), "error": None}
            record.update(JR.job_record(item["argv"], run))
            error = None
            parsed = None
            if run.get("cancelled"):
                error = "cancelled (%s)" % run["cancelled"]
            elif run["timed_out"]:
                error = "ran past the timeout of %s s and was stopped" % self.timeout
            elif run["rc"] != 0:
                error = "rc=%s: %s" % (run["rc"], (run["stderr"] or run["stdout"] or "").strip()[-300:])
            else:
                text = mpi_job.summarize_output(run["stdout"], self.base.get("launcher") or "mpirun",
                                                self.implementation, False)[0]
                try:
                    parsed = _parse(job["parse"], text)
                except ValueError as exc:
                    error = "output not understood: %s" % exc
            record["error"] = error
            if error:
                record["output_tail"] = ((run["stdout"] or "") + (run["stderr"] or ""))[-1000:]
            jobs.append(record)
            for name in job["tests"]:
                values[name] = (None, by_name[name]["size"], error) if error else M.extract(by_name[name], parsed)
                if job["parse"] == "nccl" and parsed is not None:
                    gpus[name] = _devices(parsed)
        return {"jobs": jobs, "values": values, "gpus": gpus}


def _devices(parsed):
    """The GPU models an nccl-tests job printed, and its GPUs per node when every node had as many."""
    summary = G.summarize(parsed)
    hosts = summary["hosts"]
    per_node = None
    if summary["nranks"] and hosts and summary["nranks"] % len(hosts) == 0:
        per_node = summary["nranks"] // len(hosts)
    return {"gpu_models": summary["gpu_models"], "gpus_per_node": per_node}


def run_round(items, work, parallel=True):
    """``[work(item) for item in items]``, the items at the same time in threads."""
    if not parallel or len(items) < 2:
        return [work(item) for item in items]
    results = [None] * len(items)
    errors = [None] * len(items)

    def target(index, item):
        try:
            results[index] = work(item)
        except Exception as exc:  # reported after the round: a thread cannot raise into the module
            errors[index] = exc

    threads = [threading.Thread(target=target, args=(i, item)) for i, item in enumerate(items)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for error in errors:
        if error is not None:
            raise error
    return results


def pairwise(rounds, address_of, tests, executor, parallel=True):
    """Run each round's pairs together; ``(measurements, round_records)``."""
    measurements = []
    records = []
    for number, pairs in enumerate(rounds, 1):
        outcomes = run_round(pairs, lambda pair: executor.measure(tests, [address_of[pair[0]], address_of[pair[1]]]),
                             parallel)
        record = {"round": number, "pairs": []}
        for pair, outcome in zip(pairs, outcomes):
            entry = {"nodes": list(pair), "jobs": outcome["jobs"], "values": {}}
            for test in tests:
                value, size, error = outcome["values"][test["name"]]
                entry["values"][test["name"]] = value
                measurement = {"test": test["name"], "nodes": list(pair), "value": value, "better": test["better"],
                               "unit": test["unit"], "size": size, "error": error}
                measurement.update(outcome.get("gpus", {}).get(test["name"]) or {})
                measurements.append(measurement)
            record["pairs"].append(entry)
        records.append(record)
    return measurements, records


def retest_low(measurements, rank, address_of, tests, executor, times, parallel=True):
    """Measure the low pairs of ``rank(measurements)`` again, up to ``times`` times; see the module doc."""
    ranking = rank(measurements)
    retests = []
    for attempt in range(1, times + 1):
        low = RK.low_pairs(ranking)
        if not low:
            break
        again, records = pairwise(P.disjoint_rounds(low), address_of, tests, executor, parallel)
        retests.append({"attempt": attempt, "pairs": [list(pair) for pair in low], "rounds": records})
        measurements = RK.keep_best(measurements, again)
        ranking = rank(measurements)
    return measurements, ranking, retests


def is_low(test, value, tolerance):
    """Whether a group's ``value`` misses ``test['expect']`` by more than ``tolerance``."""
    if value is None:
        return True
    if test["better"] == "higher":
        return value < test["expect"] * (1.0 - tolerance)
    return value > test["expect"] / (1.0 - tolerance)


def bisection(names, known_good, address_of, test, executor, tolerance, parallel=True):
    """Halve the group until the low part is found (see :mod:`bisect`); one test per group."""
    if test.get("expect") is None:
        raise SweepRunError("the bisection's group test %s needs expect: the value a healthy group reaches"
                            % test["name"])
    search = B.Bisection(names, known_good)
    details = []

    def measure(round_tests):
        outcomes = run_round(round_tests, lambda t: executor.measure([test], [address_of[n] for n in t["nodes"]]),
                             parallel)
        result = {}
        for t, outcome in zip(round_tests, outcomes):
            value, size, error = outcome["values"][test["name"]]
            low = is_low(test, value, tolerance)
            result[t["id"]] = (low, value)
            details.append({"nodes": list(t["nodes"]), "subject": list(t["subject"]), "kind": t["kind"],
                            "value": value, "size": size, "unit": test["unit"], "expected": test["expect"],
                            "low": low, "error": error, "jobs": outcome["jobs"]})
        return result

    result = B.run(search, measure)
    result["tests"] = details
    return result
