"""The per-host summary lines the main playbooks end with, from the facts roles really set."""

import json
import os

from ansible_collections.aiinfra.fabric.plugins.filter.result_summary import result_summary
from ansible_collections.aiinfra.fabric.plugins.module_utils.report.summary import summary_lines

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "report")


def load(folder, host):
    with open(os.path.join(FIXTURES, folder, host + ".json")) as handle:
        return json.load(handle)


def test_lab_run_lines():
    lines = summary_lines({"te1": load("lab_captured", "te1"), "te2": load("lab_captured", "te2")})
    assert lines[0] == ("te1: NVMe-oF target: rdma 10.99.0.1:4420 nqn.2024-04.com.example:te1.target1, ns 1 "
                        "/var/lib/nvmet/disk1.img (1073741824 bytes), allows 1 host(s), persisted in /etc/nvmet/config.json")
    assert "te1: MPI (openmpi 4.1.4): 9 job(s) on te1, te2, all passed, sums right" in lines
    assert "te2: NVMe-oF initiator: rdma to nqn.2024-04.com.example:te1.target1 at 10.99.0.1:4420 -> /dev/nvme0n1 " \
           "(ext4 on /mnt/nvmeof_rdma_test)" in lines
    assert "te2: I/O check: PASS (4194304 bytes written with O_DIRECT, read back, sha256 match)" in lines
    assert "te2: fio aiinfra read: 25.3 IOPS, 0.0986 MiB/s, p99 clat latency 250610 us" in lines
    assert "te2: MPI: ran from te1 (see its lines)" in lines


def test_failures_are_said():
    te2 = load("lab_captured", "te2")
    te2["nvmeof_initiator_result"]["io_check"]["match"] = False
    te2["nvmeof_initiator_result"]["failed"] = True
    te2["nvmeof_initiator_result"]["msg"] = "read back differs"
    lines = summary_lines({"te2": te2})
    assert "te2: I/O check: FAIL (4194304 bytes written with O_DIRECT, read back, sha256 MISMATCH)" in lines
    assert "te2: FAILED: read back differs" in lines
    gpu = load("role_captured", "gpu1")
    nccl = [ln for ln in summary_lines({"gpu1": gpu}) if "alltoall 1K-8G on this node" in ln]
    assert nccl == ["gpu1: NCCL alltoall 1K-8G on this node (16 ranks): busbw 35.9 GB/s at 8G, peak 35.9 GB/s, "
                    "#wrong 0: FAIL - nccl-tests alltoall: out-of-place busbw 35.90 GB/s at the largest size "
                    "(8589934592 B) is below min_busbw = 40.0 GB/s on vm (devices: R6KD-CX8aaS-GPU-11: 0,1,2,3,4,5,6,7 "
                    "NVIDIA RTX 6000D; R6KD-CX8aaS-GPU-12: 0,1,2,3,4,5,6,7 NVIDIA RTX 6000D)"]


def test_failed_only_keeps_the_hosts_that_failed():
    good = {"te2": load("lab_captured", "te2")}
    assert result_summary(["te2"], good, failed_only=True) == []
    gpu = {"gpu1": load("role_captured", "gpu1")}   # alltoall below its gate
    assert result_summary(["gpu1"], gpu, failed_only=True) == result_summary(["gpu1"], gpu)


def test_filter_reads_hostvars_and_hosts_without_results():
    hostvars = {"te1": {"nvmeof_target_result": load("lab_captured", "te1")["nvmeof_target_result"]}, "te3": {}}
    lines = result_summary(["te1", "te3"], hostvars)
    assert lines[0].startswith("te1: NVMe-oF target: rdma ") and lines[-1] == "te3: no results"


def test_nccl_verdict_and_transport_in_plain_words():
    """A run's catalog verdict and transport proof, as the nccl_test module returns them, are summary lines."""
    import copy
    gpu = copy.deepcopy(load("role_captured", "gpu1"))
    run = gpu["nccl_tests_result"]["single_node"][0]
    run["expectation"] = {"status": "below", "text": "gpu1: all_reduce busbw 312 GB/s at 8 GiB, 35 % below the H100 "
                          "SXM single-node expectation of 479 GB/s, more than the 10 % tolerance (source: S)"}
    run["transport"] = {"summary": "Socket on 1 rank(s); channels via NET/Socket; GDR OFF; NVLS not reported",
                        "passed": False}
    lines = summary_lines({"gpu1": gpu})
    assert ("gpu1: all_reduce busbw 312 GB/s at 8 GiB, 35 % below the H100 SXM single-node expectation of 479 GB/s, "
            "more than the 10 % tolerance (source: S)") in lines
    assert ("gpu1: NCCL %s transport: Socket on 1 rank(s); channels via NET/Socket; GDR OFF; NVLS not reported, "
            "requirement NOT proven" % run["test"]) in lines
    # A multi-node verdict names its hosts and keeps them.
    run["expectation"]["text"] = "a+b: all_reduce busbw 1 GB/s at 8 GiB, not compared: x"
    assert "gpu1: a+b: all_reduce busbw 1 GB/s at 8 GiB, not compared: x" in summary_lines({"gpu1": gpu})


def _teardown_facts(check_mode):
    # The fields roles/nvmeof_target/tasks/teardown.yml and roles/nvmeof_initiator/tasks/teardown.yml publish.
    target = {"state": "absent", "check_mode": check_mode, "nqn": "nqn.2024-04.com.example:te1.target1",
              "subsystems_removed": ["nqn.2024-04.com.example:te1.target1"], "ports_removed": [1],
              "hosts_removed": ["nqn.2014-08.org.nvmexpress:uuid:22d6f13f"], "port_removed": True, "port_kept_for": [],
              "backing_file_removed": True, "backing_files_removed": ["/var/lib/nvmet/disk1.img"]}
    initiator = {"state": "absent", "check_mode": check_mode, "from_record": True,
                 "target": {"address": "10.99.0.1", "trsvcid": "4420", "nqn": "nqn.2024-04.com.example:te1.target1"}}
    return {"te1": {"nvmeof_target_result": target}, "te2": {"nvmeof_initiator_result": initiator}}


def test_teardown_lines_say_what_was_removed():
    lines = summary_lines(_teardown_facts(False))
    assert lines == ["te1: NVMe-oF target: removed nqn.2024-04.com.example:te1.target1 (hosts removed: 1, "
                     "backing file deleted)",
                     "te2: NVMe-oF initiator: disconnected from nqn.2024-04.com.example:te1.target1 at 10.99.0.1:4420"]


def test_teardown_under_check_does_not_claim_a_removal():
    lines = summary_lines(_teardown_facts(True))
    assert lines == ["te1: NVMe-oF target: --check, nothing changed: would remove nqn.2024-04.com.example:te1.target1 "
                     "(hosts: 1, backing file too)",
                     "te2: NVMe-oF initiator: --check, nothing changed: would disconnect from "
                     "nqn.2024-04.com.example:te1.target1 at 10.99.0.1:4420"]
