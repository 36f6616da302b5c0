"""`ansible-galaxy collection build` makes a clean tarball; it installs into an empty
collections path and every module and role documents itself from there."""

import fnmatch
import json
import os
import tarfile

import pytest

from eco_helpers import TOP, repo_files, run, tool

# What a user of the collection does not need: the lab, the tests, the tooling, caches.
CLUTTER = [
    ".cache/*", ".venv/*", ".git/*", ".ci/*", "lab/*", "molecule/*", "scripts/*", "requirements/*",
    "benchmarks/*", "third_party/*", "build/*", "context/*", "results/*", "inventory/lab/*", "inventory/lab3/*",
    "tests/unit/*", "tests/integration/*", "tests/lab/*", "tests/fixtures/*", "tests/output/*", "tests/conftest.py",
    "*/__pycache__/*", "*.pyc", ".pytest_cache/*", "*.tar.gz",
    "ansible.cfg", "pytest.ini", ".ansible-lint", ".yamllint", ".shellcheckrc", ".gitignore", "execution-environment.yml",
]


def members(tarball):
    with tarfile.open(str(tarball)) as tar:
        return sorted(m.name for m in tar.getmembers() if m.isfile())


def test_tarball_has_no_clutter(tarball):
    found = [n for n in members(tarball) if any(fnmatch.fnmatch(n, pat) for pat in CLUTTER)]
    assert not found, "build_ignore in galaxy.yml lets these into the tarball:\n" + "\n".join(found)


def test_tarball_has_what_users_need(tarball):
    names = set(members(tarball))
    wanted = {"MANIFEST.json", "FILES.json", "README.md", "meta/runtime.yml", "meta/execution-environment.yml",
              "meta/ee-requirements.txt", "meta/ee-bindep.txt", "changelogs/changelog.yaml", "docs/awx.md"}
    for f in repo_files():
        if fnmatch.fnmatch(f, "plugins/*/*.py") or fnmatch.fnmatch(f, "roles/*") or \
                fnmatch.fnmatch(f, "playbooks/*.yml") or fnmatch.fnmatch(f, "awx/job_templates/*.yml") or \
                fnmatch.fnmatch(f, "files/*"):
            wanted.add(f)
    missing = sorted(wanted - names)
    assert not missing, "missing from the tarball:\n" + "\n".join(missing)


def modules():
    return sorted(f[len("plugins/modules/"):-3] for f in repo_files()
                  if fnmatch.fnmatch(f, "plugins/modules/*.py") and not f.endswith("__init__.py"))


def roles():
    return sorted({f.split("/")[1] for f in repo_files() if fnmatch.fnmatch(f, "roles/*/meta/argument_specs.yml")})


def test_there_are_modules_and_roles_to_document():
    assert modules() and roles()


@pytest.mark.parametrize("module", modules())
def test_ansible_doc_renders_module_from_install(module, installed):
    env = {"ANSIBLE_COLLECTIONS_PATH": str(installed)}
    fqcn = "aiinfra.fabric." + module
    text = run([tool("ansible-doc"), fqcn], cwd=str(installed), env=env)
    assert fqcn in text.stdout and "OPTIONS" in text.stdout and "RETURN VALUES" in text.stdout, text.stdout[:2000]
    assert "WARNING" not in text.stderr, text.stderr
    doc = json.loads(run([tool("ansible-doc"), "--json", fqcn], cwd=str(installed), env=env).stdout)[fqcn]
    # Rendered from the installed copy, not from the checkout.
    assert doc["doc"]["filename"].startswith(str(installed)), doc["doc"]["filename"]
    for key in ("short_description", "description", "options", "author"):
        assert doc["doc"].get(key), "%s has no %s" % (fqcn, key)
    assert doc["examples"] and doc["return"], "%s lacks EXAMPLES or RETURN" % fqcn


@pytest.mark.parametrize("role", roles())
def test_ansible_doc_renders_role_from_install(role, installed):
    env = {"ANSIBLE_COLLECTIONS_PATH": str(installed)}
    fqcn = "aiinfra.fabric." + role
    doc = json.loads(run([tool("ansible-doc"), "-t", "role", "--json", fqcn], cwd=str(installed), env=env).stdout)
    main = doc[fqcn]["entry_points"]["main"]
    assert main.get("short_description") and main.get("options"), main


def test_installed_collection_lists_its_modules(installed):
    env = {"ANSIBLE_COLLECTIONS_PATH": str(installed)}
    listed = json.loads(run([tool("ansible-doc"), "--list", "--json", "aiinfra.fabric"], cwd=str(installed), env=env).stdout)
    assert sorted(k[len("aiinfra.fabric."):] for k in listed) == modules()


@pytest.mark.parametrize("playbook", ["awx_setup", "nvmeof_rdma", "nvmeof_tcp", "fabric_health", "nvmeof_port_maintenance",
                                      "mpi_bench"])
def test_installed_playbook_runs_from_the_collection(installed, playbook, tmp_path):
    """A playbook of the installed collection is found by its FQCN (as AWX and users call it),
    from a folder outside the repository, with the example inventory the tarball carries."""
    env = {"ANSIBLE_COLLECTIONS_PATH": str(installed)}
    inventory = os.path.join(str(installed), "ansible_collections", "aiinfra", "fabric", "inventory", "example")
    assert os.path.isfile(os.path.join(inventory, "hosts.yml"))
    proc = run([tool("ansible-playbook"), "--syntax-check", "-i", inventory, "aiinfra.fabric." + playbook],
               cwd=str(tmp_path), env=env)
    assert "playbook: " in proc.stdout


def test_scripts_docs_builds_the_docs_site(tmp_path):
    """scripts/docs: antsibull-docs and Sphinx make a page per module, filter and role, with
    warnings as errors (a broken reference into the collection fails the build)."""
    out = tmp_path / "docs"
    proc = run([os.path.join(TOP, "scripts", "docs"), str(out)], cwd=TOP)
    assert "pages of aiinfra.fabric" in proc.stdout, proc.stdout + proc.stderr
    site = out / "html" / "collections" / "aiinfra" / "fabric"
    for module in modules():
        page = (site / (module + "_module.html")).read_text()
        assert "aiinfra.fabric.%s module" % module in page and "Return Values" in page, module
    for role in roles():
        assert "aiinfra.fabric.%s role" % role in (site / (role + "_role.html")).read_text(), role
    filters = sorted(f[len("plugins/filter/"):-4] for f in repo_files() if fnmatch.fnmatch(f, "plugins/filter/*.yml"))
    assert filters and all((site / (f + "_filter.html")).exists() for f in filters), filters
    index = (site / "index.html").read_text()
    assert all("%s_module.html" % m in index for m in modules())
