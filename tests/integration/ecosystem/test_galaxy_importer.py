"""galaxy-importer, the checks Galaxy runs when the collection is uploaded (metadata,
documentation through ansible-doc, ansible-lint of roles and playbooks, changelog), on the
tarball `ansible-galaxy collection build` makes: it imports with no warning and no error.
Settings in galaxy-importer.cfg (no container engine: ansible-test sanity runs in
scripts/test sanity instead). The importer comes from .cache/venv-docs (scripts/setup)."""

import json
import os

from eco_helpers import TOP, run

VENV = os.path.join(TOP, ".cache", "venv-docs")


def test_galaxy_importer_accepts_the_tarball_without_warnings(tarball, tmp_path):
    python = os.path.join(VENV, "bin", "python")
    assert os.path.exists(python), "%s is missing: run scripts/setup" % VENV
    env = {"GALAXY_IMPORTER_CONFIG": os.path.join(os.path.dirname(__file__), "galaxy-importer.cfg"),
           # ansible-lint and ansible-doc of the importer's own environment.
           "PATH": os.path.join(VENV, "bin") + os.pathsep + os.environ["PATH"],
           "PYTHONWARNINGS": "ignore::DeprecationWarning"}
    proc = run([python, "-m", "galaxy_importer.main", "--print-result", str(tarball)], cwd=str(tmp_path), env=env)
    out = proc.stdout + proc.stderr
    assert "Importer processing completed successfully" in out, out[-4000:]
    flagged = [line for line in out.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not flagged, "galaxy-importer:\n" + "\n".join(flagged)
    result = json.loads((tmp_path / "importer_result.json").read_text())
    names = {(c["content_type"], c["name"]) for c in result["contents"]}
    assert ("module", "nvme_connect") in names and ("role", "nvmeof_target") in names, sorted(names)[:20]
    assert result["requires_ansible"] == ">=2.16.0"
