"""Main playbooks launched through ansible-runner against the lab, with the survey
defaults as extra vars (and one answer changed, to prove answers reach the roles):
the job succeeds, no task fails, and the artifacts the job template promises are there."""

import json
import os

import pytest

from conftest import TOP, run_job, surveys

# Jobs in the order a user would launch them (teardown last leaves the lab clean), with
# the survey answers that differ from the defaults. AIINFRA_AWX_RUNNER_JOBS selects some.
JOBS = [
    ("nvmeof_rdma", {"nvmeof_initiator_mount_point": "/mnt/awx_runner"}),
    ("nvmeof_teardown", {"nvmeof_initiator_mount_point": "/mnt/awx_runner"}),
]
WANTED = os.environ.get("AIINFRA_AWX_RUNNER_JOBS", ",".join(job[0] for job in JOBS)).split(",")
SELECTED = [job for job in JOBS if job[0] in WANTED]


@pytest.mark.parametrize("stem,answers", SELECTED, ids=[job[0] for job in SELECTED])
def test_job_succeeds_with_artifacts(stem, answers, templates, lab, tmp_path):
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
    for var, value in answers.items():
        if template.get("artifacts"):
            assert value in json.dumps(job.artifacts), "the answer %s=%s does not show in the artifacts" % (var, value)
