"""mpi_run's job planning: input validation before launch and the exact argv."""

from __future__ import annotations

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job as J

LAB_HOSTS = [{"name": "te1", "slots": 2}, {"name": "te2", "slots": 1}]
FABRIC_MCA = {"btl": "tcp,self", "btl_tcp_if_include": "10.99.0.0/24", "oob_tcp_if_include": "10.99.0.0/24"}


def plan(impl=L.OPENMPI, local_slots=2, known=("te1", "te2"), program_path="/opt/mpi/allreduce_mpi", **params):
    params.setdefault("program", "allreduce_mpi")
    return J.plan_job(params, impl, local_slots, lambda name: name in known, program_path)


def test_lab_cross_node_argv():
    p = plan(hosts=LAB_HOSTS, mca=FABRIC_MCA, allow_run_as_root=True, tag_output=True, parse="seed",
             expect={"sums_match": True})
    assert p["np"] == 3 and p["total_slots"] == 3
    assert p["hostfile_content"] == "te1 slots=2\nte2 slots=1\n"
    assert p["argv"] == ["mpirun", "--allow-run-as-root", "-np", "3", "--hostfile", J.HOSTFILE_PLACEHOLDER,
                         "--tag-output", "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "10.99.0.0/24",
                         "--mca", "oob_tcp_if_include", "10.99.0.0/24", "/opt/mpi/allreduce_mpi"]
    assert J.with_hostfile(p["argv"], "/tmp/hf")[5] == "/tmp/hf"


def test_single_node_defaults_to_cpu_count_and_has_no_hostfile():
    p = plan(local_slots=2)
    assert p["argv"] == ["mpirun", "-np", "2", "/opt/mpi/allreduce_mpi"] and p["hostfile_content"] is None


def test_np_above_slots_needs_oversubscribe():
    with pytest.raises(J.MpiJobError, match=r"np=4 is more than the slots available: hosts te1:2, te2:1 have 3 "
                                            r"slots in total\. .*oversubscribe=true"):
        plan(hosts=LAB_HOSTS, np=4)
    with pytest.raises(J.MpiJobError, match=r"np=4 .* the launching host has 2 slots \(its CPU count"):
        plan(np=4)
    assert plan(np=4, oversubscribe=True)["argv"] == ["mpirun", "-np", "4", "--oversubscribe", "/opt/mpi/allreduce_mpi"]


def test_missing_program():
    with pytest.raises(J.MpiJobError, match=r"program 'allreduce_mpi' was not found or is not executable"):
        plan(program_path=None)
    with pytest.raises(J.MpiJobError, match=r"program './a' was not found .* \(relative to chdir /w\)"):
        plan(program="./a", chdir="/w", program_path=None)


def test_unknown_and_empty_hosts():
    with pytest.raises(J.MpiJobError, match=r"unknown host te3: the launching host cannot resolve it"):
        plan(hosts=[{"name": "te1"}, {"name": "te3"}])
    with pytest.raises(J.MpiJobError, match=r"unknown hosts te3, te4"):
        plan(hosts=["te3", "te4"])
    with pytest.raises(J.MpiJobError, match=r"hosts is empty"):
        plan(hosts=[])
    with pytest.raises(J.MpiJobError, match=r"hosts\[1\]\.slots for te2 must be an integer >= 1, got 0"):
        plan(hosts=[{"name": "te1"}, {"name": "te2", "slots": 0}])


def test_bad_expect_and_parse_fail_in_planning():
    with pytest.raises(J.MpiJobError, match=r"expect.sums_match needs parse=seed"):
        plan(expect={"sums_match": True})
    with pytest.raises(J.MpiJobError, match=r"parse must be one of"):
        plan(parse="xml")


def test_unknown_implementation_is_refused():
    with pytest.raises(J.MpiJobError, match=r"could not tell which MPI mpirun is \(detected 'unknown'\)"):
        plan(impl=L.UNKNOWN)


def test_mpich_hostfile_and_env():
    p = plan(impl=L.MPICH, hosts=LAB_HOSTS, env={"A": 1}, tag_output=True)
    assert p["hostfile_content"] == "te1:2\nte2:1\n"
    assert p["argv"] == ["mpirun", "-np", "3", "-f", J.HOSTFILE_PLACEHOLDER, "-prepend-rank", "-genv", "A", "1",
                         "/opt/mpi/allreduce_mpi"]


def test_srun_argv():
    p = plan(impl=None, launcher="srun", srun="/usr/bin/srun", hosts=LAB_HOSTS, srun_mpi="pmix",
             env={"UCX_TLS": "tcp"}, tag_output=True, ntasks_per_node=2)
    assert p["argv"] == ["/usr/bin/srun", "--nodes=2", "--ntasks=3", "--ntasks-per-node=2", "--nodelist=te1,te2",
                         "--mpi=pmix", "--export=ALL,UCX_TLS=tcp", "--label", "/opt/mpi/allreduce_mpi"]
    with pytest.raises(J.MpiJobError, match=r"mca parameters cannot be passed by srun"):
        plan(impl=None, launcher="srun", mca={"btl": "tcp"})


def test_timeout_must_not_be_negative():
    with pytest.raises(J.MpiJobError, match=r"timeout must be >= 0 seconds"):
        plan(timeout=-1)


def test_summarize_tagged_output():
    out = ("[1,2]<stdout>:Process 2 on te2 contributing data 2\n[1,0]<stdout>:Process 0 on te1 contributing data 0\n"
           "[1,0]<stdout>:Process 0 on te1 received reduced sum 3 via Allreduce (Expected: 3)\n")
    text, per_rank = J.summarize_output(out, "mpirun", L.OPENMPI, True)
    assert per_rank == {"0": ["Process 0 on te1 contributing data 0",
                              "Process 0 on te1 received reduced sum 3 via Allreduce (Expected: 3)"],
                        "2": ["Process 2 on te2 contributing data 2"]}
    assert text.splitlines()[0] == "Process 2 on te2 contributing data 2"
    assert J.summarize_output(out, "mpirun", L.OPENMPI, False) == (out, {})


def test_srun_np_is_left_to_slurm():
    # With srun the launching host (a login node) is not where the ranks run: its CPU
    # count neither limits np nor is np's default.
    p = plan(launcher="srun", srun="srun", local_slots=16, np=64, ntasks_per_node=32)
    assert p["np"] == 64 and "--ntasks=64" in p["argv"]
    p = plan(launcher="srun", srun="srun", local_slots=16)
    assert p["np"] is None and not [a for a in p["argv"] if a.startswith("--ntasks=")]


@pytest.mark.parametrize("mca, env, kind", [
    ({"pml": "ob1", "btl": "tcp,self"}, {}, "tcp"),
    ({"btl": "tcp,self,vader"}, {}, "tcp"),
    ({"pml": "ucx"}, {"UCX_NET_DEVICES": "mlx5_0:1"}, "ucx"),
    ({}, {"OMPI_MCA_pml": "ucx"}, "ucx"),
    ({"btl": "openib,self"}, {}, "verbs"),
    ({}, {}, "auto"),
    ({"btl": "^openib"}, {}, "auto"),
    ({"pml": "ucx", "btl": "tcp,self"}, {}, "ucx"),
])
def test_describe_transport(mca, env, kind):
    t = J.describe_transport("mpirun", "openmpi", mca, env)
    assert t["kind"] == kind, t
    if kind == "ucx" and env.get("UCX_NET_DEVICES"):
        assert t["summary"] == "UCX (pml ucx, UCX_NET_DEVICES=mlx5_0:1)"
    if mca == {"pml": "ob1", "btl": "tcp,self"}:
        assert t["summary"] == "TCP sockets (Open MPI pml ob1, btl tcp,self)"
