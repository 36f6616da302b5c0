"""The nccl_tests role's multi-node run with nccl_tests_launcher=srun, on localhost with a
FAKE srun (it keeps its argv and starts the program once, as rank 0 of an MPI build
prints the report) and the FAKE nccl-tests binary replaying a recorded 16-GPU output.
This proves the role's wiring to srun (node names, task count, --mpi, no MCA), not Slurm:
molecule/slurm runs real srun on the lab."""

from __future__ import annotations

import json
import os

import pytest

from test_nccl_tests_role import PLAYBOOK, STAND_IN, play, role_vars, two_nodes

FAKE_SRUN = """#!/bin/sh
# A FAKE srun: keeps its argv, exports --export's NAME=VALUE items as srun does for its
# tasks, then runs the program (the first argument without a leading -).
echo "$@" >> "%(dir)s/srun.argv"
while [ $# -gt 0 ]; do
  case "$1" in
    --export=*)
      items=${1#--export=}; IFS=,
      for item in $items; do case "$item" in *=*) export "$item";; esac; done
      unset IFS; shift;;
    -*) shift;;
    *) exec "$@";;
  esac
done
"""


@pytest.fixture
def lab(tmp_path):
    bindir = tmp_path / "build"
    bindir.mkdir()
    os.symlink(STAND_IN, str(bindir / "alltoall_perf"))
    (tmp_path / "play.yml").write_text(PLAYBOOK)
    return tmp_path


def test_multi_node_run_through_srun(lab):
    fake = two_nodes(lab, "fake_srun", FAKE_SRUN)
    rc, out = play(lab, role_vars(lab, nccl_tests_tests=["alltoall"], nccl_tests_sizes=[{"minbytes": "1K", "maxbytes": "8G"}],
                                  nccl_tests_single_node=False, nccl_tests_launcher="srun",
                                  nccl_tests_srun_path=str(fake), nccl_tests_srun_args=["--overcommit"],
                                  nccl_tests_mpirun_mca={"btl_tcp_if_include": "eth1"}))
    assert rc == 0, out
    result = json.loads((lab / "result.json").read_text())
    (run,) = result["multi_node"]
    assert run["passed"] is True and run["nranks"] == 16
    # One srun for the group: Slurm node names (inventory names, not fabric addresses), one
    # task per GPU, pmix, the extra args; the mpirun MCA settings are not passed.
    (argv,) = (lab / "srun.argv").read_text().splitlines()
    assert argv.startswith("--nodes=2 --ntasks=16 --nodelist=gpu1,gpu2 --mpi=pmix --export=ALL,")
    assert " --label --overcommit " in argv and "btl_tcp_if_include" not in argv
    assert argv.endswith("alltoall_perf -b 1K -e 8G -f 2 -g 1 -t 1")
