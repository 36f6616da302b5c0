"""Main playbooks launched through ansible-runner against the lab, with the survey
defaults as extra vars and some answers changed: the job succeeds, no task fails, the
artifacts the job template promises are there, and they show the answers took effect."""

import json
import os

import pytest

from runner_jobs import TOP, run_job, surveys


def nvmeof_mounted_at(path):
    def check(artifacts):
        results = artifacts["nvmeof_initiator_results"]
        assert path in json.dumps(results), "no initiator reports the mount point %s: %s" % (path, results)
    return check


def mpi_programs_ran(programs):
    def check(artifacts):
        result = artifacts["mpi_bench_result"]
        ran = sorted({job["name"].split(":", 1)[1] for job in result["jobs"] if job["scope"] not in ("benchmark", "osu")})
        assert ran == sorted(programs), "programs run: %s, asked for %s" % (ran, programs)
        assert not [j for j in result["jobs"] if j["scope"] in ("benchmark", "osu")], "benchmarks ran though the answer was false"
        assert result["sums_ok"] is True, result["sums"]
    return check


# Jobs in the order a user would launch them (teardown after the NVMe-oF job leaves the
# lab clean): survey answers that differ from the defaults, and what the artifacts must
# show of them. AIINFRA_AWX_RUNNER_JOBS=a,b selects some.
JOBS = [
    ("nvmeof_rdma", {"nvmeof_initiator_mount_point": "/mnt/awx_runner"}, nvmeof_mounted_at("/mnt/awx_runner")),
    ("nvmeof_teardown", {"nvmeof_initiator_mount_point": "/mnt/awx_runner"}, None),
    ("mpi_bench", {"mpi_bench_programs": "hello\nallreduce", "mpi_bench_benchmark": "false"},
     mpi_programs_ran(["hello", "allreduce"])),
]
WANTED = os.environ.get("AIINFRA_AWX_RUNNER_JOBS", ",".join(job[0] for job in JOBS)).split(",")
SELECTED = [job for job in JOBS if job[0] in WANTED]


@pytest.mark.parametrize("stem,answers,check", SELECTED, ids=[job[0] for job in SELECTED])
def test_job_succeeds_with_artifacts(stem, answers, check, templates, lab, tmp_path):
    assert lab
    if not os.path.exists(os.path.join(TOP, "playbooks", stem + ".yml")):
        pytest.fail("playbooks/%s.yml does not exist" % stem)
    template = templates[stem]
    extravars = surveys.survey_extra_vars(template, answers)
    job = run_job(tmp_path, stem, extravars)
    print("%s: %s in %.0f s, artifacts %s" % (stem, job.status, job.elapsed, sorted(job.artifacts)))
    assert job.status == "successful" and job.rc == 0, job.explain()
    assert not job.of("runner_on_failed", "runner_on_unreachable", "runner_item_on_failed"), job.explain()
    stats = job.stats
    assert not stats.get("failures") and not stats.get("dark"), stats
    assert stats.get("ok"), "no host ran a task: %s" % stats
    missing = [k for k in template.get("artifacts") or [] if not job.artifacts.get(k)]
    assert not missing, "job artifacts lack %s; set_stats published %s" % (missing, sorted(job.artifacts))
    if check:
        check(job.artifacts)
