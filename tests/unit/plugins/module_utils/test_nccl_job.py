"""Unit tests for planning an nccl-tests job (exact command lines through the shared
launcher) and for turning what it printed into the nccl_test module's result."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl import job as J

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nccl_tests")
OMPI = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
USAGE_WITH_J = "USAGE: all_reduce_perf \n\t[-J,--output_file <file> write output to filepath, if accessible.]\n"
USAGE_WITHOUT_J = "USAGE: all_reduce_perf \n\t[-t,--nthreads <num threads>] \n\t[-h,--help]\n"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def params(**over):
    p = dict(test="all_reduce", binary_dir="/opt/nccl-tests/build", binary_suffix="", minbytes="8",
             maxbytes="1G", stepfactor=2, stepbytes=None, ngpus=1, threads=1, iters=None, warmup_iters=None,
             check=None, op=None, datatype=None, root=None, blocking=None, cudagraph=None, extra_args=[],
             json="auto", environment={}, timeout=600, launcher="none", mpirun_path=None, srun_path=None,
             hosts=None, np=None, mca={}, allow_run_as_root=False, launcher_args=[], srun_nodes=None,
             srun_ntasks_per_node=None, srun_mpi=None)
    p.update(over)
    return p


class Probe(object):
    """Records the read-only probes plan_job runs and answers them like the real tools."""

    def __init__(self, usage=USAGE_WITHOUT_J, version=OMPI):
        self.calls = []
        self.usage = usage
        self.version = version

    def __call__(self, argv, env):
        self.calls.append((list(argv), env))
        if argv[-1] == "--version":
            return 0, self.version, ""
        if argv[-1] == "-h":
            return 0, self.usage, ""
        raise AssertionError("unexpected probe %r" % (argv,))


def find(name, given):
    return given or "/usr/bin/" + name


def plan(probe=None, check_mode=False, exists=True, **over):
    return J.plan_job(params(**over), find=find, run_command=probe or Probe(), check_mode=check_mode,
                      exists=lambda path: exists)


def test_single_node_is_the_seed_command():
    p = plan(ngpus=2, environment={"NCCL_DEBUG": "INFO"})
    assert p.argv == ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "2", "-t", "1"]
    assert p.env == {"NCCL_DEBUG": "INFO"}
    assert p.use_json is False


def test_json_used_when_the_binary_offers_it():
    probe = Probe(usage=USAGE_WITH_J)
    p = plan(probe, environment={"LD_LIBRARY_PATH": "/opt/nccl/lib"})
    assert p.use_json is True
    assert p.argv[-2:] == ["-J", J.JSON_REPORT]
    # The probe ran the binary's usage with the job's environment (libnccl must load).
    assert probe.calls == [(["/opt/nccl-tests/build/all_reduce_perf", "-h"], {"LD_LIBRARY_PATH": "/opt/nccl/lib"})]


def test_json_always_fails_on_an_old_binary():
    with pytest.raises(J.NcclJobError, match="json=always but .* does not offer -J"):
        plan(Probe(usage=USAGE_WITHOUT_J), json="always")


def test_mpirun_command_is_the_seed_multi_node_command():
    # The seed: hostfile te1 slots=2, te2 slots=1; -np 3; -x NCCL_DEBUG=INFO; -mca pml ob1
    # -mca btl tcp,self -mca btl_tcp_if_include eth0; all_reduce_perf -b 8 -e 1G -f 2 -g 1
    probe = Probe(usage=USAGE_WITH_J)
    p = plan(probe, launcher="mpirun", hosts=[{"name": "te1", "slots": 2}, {"name": "te2", "slots": 1}],
             mca={"pml": "ob1", "btl": "tcp,self", "btl_tcp_if_include": "eth0"},
             environment={"NCCL_DEBUG": "INFO"}, allow_run_as_root=True)
    assert p.argv == [
        "/usr/bin/mpirun", "--allow-run-as-root", "-np", "3", "--hostfile", J.HOSTFILE, "--tag-output",
        "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "eth0", "--mca", "pml", "ob1",
        "-x", "NCCL_DEBUG=INFO",
        "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "1", "-t", "1",
    ]
    # With a launcher the JSON report would be written where rank 0 runs: not used in auto.
    assert p.use_json is False
    assert probe.calls == [(["/usr/bin/mpirun", "--version"], None)]


def test_mpirun_hostfile_is_written_on_materialize(tmp_path):
    p = plan(launcher="mpirun", hosts=[{"name": "te1", "slots": 2}, "te2"], np=2)
    argv = p.materialize(str(tmp_path))
    hostfile = argv[argv.index("--hostfile") + 1]
    assert os.path.dirname(hostfile) == str(tmp_path)
    with open(hostfile) as handle:
        assert handle.read() == "te1 slots=2\nte2 slots=1\n"
    assert oct(os.stat(hostfile).st_mode & 0o777) == "0o600"


def test_mpich_gets_hydra_flags():
    p = plan(Probe(version="HYDRA build details:\n    Version:   4.0.2\n"), launcher="mpirun",
             hosts=["a", "b"], environment={"NCCL_DEBUG": "WARN"})
    assert p.argv[:8] == ["/usr/bin/mpirun", "-np", "2", "-f", J.HOSTFILE, "-genv", "NCCL_DEBUG", "WARN"]


@pytest.mark.parametrize("over, message", [
    (dict(launcher="mpirun", hosts=[{"name": "te1", "slots": 2}], np=3), "np=3 does not fit the 2 slots of hosts te1:2"),
    (dict(launcher="mpirun", hosts=[]), "launcher=mpirun needs hosts"),
    (dict(launcher="none", np=2), "np=2 needs launcher=mpirun or launcher=srun"),
    (dict(launcher="none", mca={"btl": "tcp"}), "needs launcher=mpirun"),
    (dict(launcher="srun", mca={"btl": "tcp"}), "is for launcher=mpirun"),
    (dict(environment={"BAD-NAME": "1"}), "environment has an invalid variable name 'BAD-NAME'"),
    (dict(timeout=0), "timeout must be at least 1 second"),
])
def test_bad_input_is_refused_before_anything_runs(over, message):
    probe = Probe()
    with pytest.raises(J.NcclJobError, match=message.replace("(", r"\(")):
        plan(probe, **over)


def test_bad_hosts_are_refused_by_the_launcher():
    with pytest.raises(L.LauncherError, match="hosts lists te1 twice"):
        plan(launcher="mpirun", hosts=["te1", "te1"])


def test_srun_command():
    p = plan(launcher="srun", np=8, srun_nodes=2, srun_ntasks_per_node=4, srun_mpi="pmix",
             environment={"NCCL_DEBUG": "WARN"}, hosts=["nid005471", "nid005487"])
    assert p.argv == [
        "/usr/bin/srun", "--nodes=2", "--ntasks=8", "--ntasks-per-node=4", "--nodelist=nid005471,nid005487",
        "--mpi=pmix", "--export=ALL,NCCL_DEBUG=WARN", "--label",
        "/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "1", "-t", "1",
    ]


def test_missing_binary_fails_outside_check_mode_and_warns_in_it():
    with pytest.raises(J.NcclJobError, match="all_reduce_perf not found or not executable"):
        plan(exists=False)
    p = plan(exists=False, check_mode=True)
    assert p.argv[0] == "/opt/nccl-tests/build/all_reduce_perf"
    assert "not found" in p.warnings[0]


# --------------------------------------------------------------------------- results

def job(stdout, rc=0, stderr="", timed_out=False):
    return {"rc": rc, "stdout": stdout, "stderr": stderr, "duration": 1.5, "timed_out": timed_out}


def test_result_from_text_passes_gate():
    p = plan(launcher="srun", np=8)
    j = job(fixture("cscs_gh200_all_reduce_srun_2.17.1.txt"))
    report = J.read_report(j, p, "/nonexistent")
    f = J.result_fields(report, j, p, host="login1", min_busbw=100)
    assert f["failure"] is None
    assert f["gates"] == {"passed": True, "failures": [], "min_busbw": 100.0, "bound_source": "min_busbw",
                          "size": 134217728}
    assert (f["largest_size"], f["largest_size_busbw"], f["avg_busbw"]) == (134217728, 122.57, 19.7866)
    assert f["result_source"] == "text" and f["nranks"] == 8


def test_result_from_json_report(tmp_path):
    p = plan(Probe(usage=USAGE_WITH_J))
    shutil.copy(os.path.join(FIXTURES, "constructed_gh200_all_reduce.json"), p.report_path(str(tmp_path)))
    j = job(fixture("cscs_gh200_all_reduce_srun_2.17.1.txt"))
    f = J.result_fields(J.read_report(j, p, str(tmp_path)), j, p, host="h")
    assert f["result_source"] == "json" and len(f["rows"]) == 25
    assert "do-not-leak-this" not in json.dumps(f["rows"]) + json.dumps(f["devices"]) + json.dumps(f["version"])


def test_missing_json_report_falls_back_to_text(tmp_path):
    p = plan(Probe(usage=USAGE_WITH_J))
    j = job(fixture("gtx1080_all_reduce_g2_error_column.txt"))
    report = J.read_report(j, p, str(tmp_path))
    assert report["source"] == "text" and report["json_missing"] is True and len(report["rows"]) == 25


def test_no_mpi_build_fails_with_rebuild_advice():
    p = plan(launcher="mpirun", hosts=["GENOA-01", "GENOA-02"])
    j = job(fixture("constructed_no_mpi_two_nodes.txt"))
    f = J.result_fields(J.read_report(j, p, "/nonexistent"), j, p, host="GENOA-01", min_busbw=0)
    assert "2 separate headers" in f["failure"] and "MPI=1" in f["failure"]
    assert "GENOA-01, GENOA-02" in f["failure"] and "mpirun started 2 independent" in f["failure"]
    assert f["gates"]["passed"] is False


def test_nonzero_exit_reports_errors_and_stderr():
    p = plan()
    text = "nid006352: Test NCCL failure common.cu:958 'invalid usage (run with NCCL_DEBUG=WARN for details)\n"
    j = job(text, rc=3, stderr="nid006352:34157:34217 [1] net.cc:626 NCCL WARN Error: network AWS Libfabric not found.")
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="nid006352")
    assert f["failure"].startswith("all_reduce_perf exited with rc=3 on nid006352 (nid006352: Test NCCL failure")
    assert f["failure"].endswith("NCCL WARN Error: network AWS Libfabric not found.")


def test_timeout_is_reported():
    p = plan()
    j = job("# nThread 1 nGpus 1\n", rc=-15, timed_out=True)
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="h", timeout=5)
    assert f["failure"].startswith("nccl-tests did not finish within timeout=5 s on h")


def test_no_rows_is_a_failure():
    p = plan()
    j = job("# nThread 1 nGpus 1 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n")
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="h")
    assert f["failure"].startswith("all_reduce_perf printed no result rows on h")


def test_low_busbw_names_value_bound_host_and_devices():
    p = plan(launcher="mpirun", hosts=["a"])
    j = job(fixture("rtx6000d_alltoall_mpirun_2.18.3.txt"))
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="R6KD-CX8aaS-GPU-11",
                        min_busbw_per_gpu={"RTX 6000D": 40})
    assert f["failure"] == (
        "nccl-tests all_reduce: out-of-place busbw 35.90 GB/s at the largest size (8589934592 B) is below "
        "min_busbw_per_gpu[RTX 6000D] (NVIDIA RTX 6000D) = 40.0 GB/s on R6KD-CX8aaS-GPU-11 (devices: "
        "R6KD-CX8aaS-GPU-11: 0,1,2,3,4,5,6,7 NVIDIA RTX 6000D; R6KD-CX8aaS-GPU-12: 0,1,2,3,4,5,6,7 NVIDIA RTX 6000D)")


def test_real_cpu_only_run_fails_with_the_cuda_error():
    # Real output of nccl-tests 2.19.6 built in this project's CPU-only workplace (see the
    # fixtures README): the binary starts, prints its header, and stops at the first CUDA call.
    p = plan()
    text = fixture("local_cpu_only_all_reduce_2.19.6.txt")
    j = job(text, rc=2)
    report = J.read_report(j, p, "/x")
    assert report["version"] == {"nccl_tests": "2.19.6", "nccl_headers": 23203, "nccl_library": 23203, "nccl": None}
    assert report["config"]["unalign"] == 0 and report["rows"] == [] and report["devices"] == []
    f = J.result_fields(report, j, p, host="vm")
    assert f["failure"].startswith(
        "all_reduce_perf exited with rc=2 on vm (vm: Test CUDA failure util.cu:674 'CUDA driver version is "
        "insufficient for CUDA runtime version'; .. vm pid 18706: Test failure common.cu:1454). Last output:")


# --------------------------------------------------------------------------- transport proof, expectations

def info_fixture(name):
    with open(os.path.join(FIXTURES, "..", "nccl_info", name)) as handle:
        return handle.read()


def catalog_doc():
    import yaml
    with open(os.path.join(FIXTURES, "..", "..", "..", "files", "expected_busbw.yml")) as h:
        return yaml.safe_load(h)


def test_require_transport_turns_on_nccl_info_for_every_rank():
    p = plan(launcher="mpirun", hosts=["a", "b"], environment={"NCCL_DEBUG": "WARN"},
             require_transport={"network": "ib", "gdr": True})
    assert "NCCL_DEBUG=INFO" in p.argv and not [a for a in p.argv if a.startswith("NCCL_DEBUG_SUBSYS")]
    assert "NCCL_DEBUG=WARN" not in p.argv
    assert p.warnings == ["NCCL_DEBUG=WARN was raised to INFO to prove the transport"]
    single = plan(require_transport={"nvls": True})
    assert single.env["NCCL_DEBUG"] == "INFO"
    # Without a requirement the environment is the user's.
    assert "NCCL_DEBUG=WARN" in plan(launcher="mpirun", hosts=["a"], environment={"NCCL_DEBUG": "WARN"}).argv


@pytest.mark.parametrize("over, message", [
    ({"require_transport": {"network": "ib"}, "environment": {"NCCL_DEBUG_FILE": "/tmp/n.%p"}},
     "remove NCCL_DEBUG_FILE"),
    ({"require_transport": {"gdr": "yes"}}, "require_transport.gdr must be true or false"),
    ({"expectations": {"models": [], "expectations": [{"id": "x"}]}}, "expectations[0] needs model"),
])
def test_bad_requirement_or_catalog_is_refused_before_anything_runs(over, message):
    probe = Probe()
    with pytest.raises(J.NcclJobError) as err:
        plan(probe, **over)
    assert message in str(err.value)
    assert probe.calls == []


def test_socket_fallback_fails_a_run_whose_numbers_look_fine():
    p = plan(launcher="srun", np=8, require_transport={"network": "ib", "all_ranks": False})
    j = job(fixture("cscs_gh200_all_reduce_srun_2.17.1.txt") + info_fixture("issue166_socket_channels.txt"))
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="login1", min_busbw=100, p=params(
        launcher="srun", np=8, require_transport={"network": "ib", "all_ranks": False}))
    assert f["largest_size_busbw"] == 122.57 and len(f["rows"]) == 25    # the table is read as before
    assert f["gates"]["passed"] is False
    assert f["failure"] == ("nccl-tests all_reduce: transport: rank 8 (ubuntu pid 9621 dev 0) used NET/Socket on 14 "
                            "channel(s) - a silent fallback to TCP sockets; required network ib")
    assert f["transport"]["passed"] is False and f["transport"]["ranks"][0]["transports"] == {"NET/Socket": 14}


def test_ib_with_gdr_passes_and_is_reported():
    req = {"network": "ib", "gdr": True, "all_ranks": False}
    p = plan(launcher="srun", np=8, require_transport=req)
    j = job(fixture("cscs_gh200_all_reduce_srun_2.17.1.txt"), stderr=info_fixture("aks_ib_gdrdma_2nodes.txt"))
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="login1", p=params(
        launcher="srun", np=8, require_transport=req))
    assert f["failure"] is None and f["transport"]["passed"] is True
    assert f["transport"]["summary"] == "IB on 4 rank(s); channels via NET/IB; GDR on; NVLS not reported"


def test_without_a_requirement_the_facts_are_reported_and_nothing_fails():
    p = plan(launcher="mpirun", hosts=["a"])
    j = job(fixture("eks_t4_all_reduce_tag_output_info.txt"))
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="h", p=params(launcher="mpirun", hosts=["a"]))
    assert f["failure"] is None and f["transport"]["required"] is None and f["transport"]["passed"] is None
    assert f["transport"]["networks"] == ["AWS Libfabric"]
    quiet = job(fixture("cscs_gh200_all_reduce_srun_2.17.1.txt"))
    assert J.result_fields(J.read_report(quiet, p, "/x"), quiet, p, host="h", p=params())["transport"] is None


def test_expectation_verdict_on_a_real_two_node_h100_run():
    over = dict(launcher="mpirun", hosts=[{"name": "ztan-mig-235z", "slots": 8}, {"name": "ztan-mig-gq73", "slots": 8}],
                expectations=catalog_doc(), network="gcp-a3-mega-tcpxo")
    p = plan(**over)
    j = job(fixture("gcp_a3mega_h100_all_reduce_2nodes_8G.txt"))
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="ztan-mig-235z", gpus=16, p=params(**over))
    e = f["expectation"]
    assert f["failure"] is None and e["status"] == "pass" and e["expected_busbw"] == 338.82
    assert e["text"].startswith("ztan-mig-235z+ztan-mig-gq73: all_reduce busbw 339 GB/s at 8 GiB, at the H100 SXM "
                                "multi-node expectation of 339 GB/s, within the 10 % tolerance (source: a published")


def test_expectation_below_tolerance_fails_the_run_unless_the_gate_is_off():
    # The same real run judged against a cluster's own (stricter) figure.
    override = {"expectations": [{"id": "h100_sxm-multi-gcp-a3-mega-all_reduce", "model": "h100_sxm",
                                  "scope": "multi_node", "network": "gcp-a3-mega-tcpxo", "gpus": 8,
                                  "test": "all_reduce", "min_size": "8G", "busbw": 400, "tolerance_pct": 5,
                                  "source": {"title": "site acceptance baseline"}}]}
    over = dict(launcher="mpirun", hosts=["ztan-mig-235z", "ztan-mig-gq73"], expectations=catalog_doc(),
                expectations_overrides=override, network="gcp-a3-mega-tcpxo")
    p = plan(**over)
    j = job(fixture("gcp_a3mega_h100_all_reduce_2nodes_8G.txt"))
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="ztan-mig-235z", p=params(**over))
    assert f["expectation"]["status"] == "below"
    assert f["failure"] == (
        "nccl-tests all_reduce: ztan-mig-235z+ztan-mig-gq73: all_reduce busbw 339 GB/s at 8 GiB, 15 % below the "
        "H100 SXM multi-node expectation of 400 GB/s, more than the 5 % tolerance (source: site acceptance baseline)")
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="ztan-mig-235z",
                        p=params(expectation_gate=False, **over))
    assert f["failure"] is None and f["expectation"]["status"] == "below"


def test_multi_node_expectations_without_network_warn_and_compare_nothing():
    over = dict(launcher="mpirun", hosts=["a", "b"], expectations=catalog_doc())
    p = plan(**over)
    assert any("network (for example 8x400G) is not" in w for w in p.warnings)
    j = job(fixture("gcp_a3mega_h100_all_reduce_2nodes_8G.txt"))
    f = J.result_fields(J.read_report(j, p, "/x"), j, p, host="a", p=params(**over))
    assert f["expectation"]["status"] == "not_compared" and "no network was given" in f["expectation"]["text"]
