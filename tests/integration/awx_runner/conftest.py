"""Fixtures of the ansible-runner tests: the job templates, and the lab (which must be up)."""

import pytest

from runner_jobs import SSH_PORT_BASE, lab_up, surveys


@pytest.fixture(scope="session")
def templates():
    return surveys.job_templates()


@pytest.fixture(scope="session")
def lab():
    if not lab_up():
        pytest.fail("the lab is not up on ports %d/%d: export the AIINFRA_LAB_* variables and run lab/labctl up"
                    % (SSH_PORT_BASE, SSH_PORT_BASE + 1))
    return True
