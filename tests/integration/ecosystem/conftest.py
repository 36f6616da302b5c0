"""Shared fixtures of the ecosystem tests: the collection built once per session with
ansible-galaxy and installed into a clean collections path."""

import os

import pytest

from eco_helpers import TOP, galaxy_meta, run, tool


@pytest.fixture(scope="session")
def tarball(tmp_path_factory):
    out = tmp_path_factory.mktemp("galaxy-build")
    run([tool("ansible-galaxy"), "collection", "build", "--output-path", str(out), TOP], cwd=str(out))
    meta = galaxy_meta()
    path = out / ("%s-%s-%s.tar.gz" % (meta["namespace"], meta["name"], meta["version"]))
    assert path.exists(), os.listdir(str(out))
    return path


@pytest.fixture(scope="session")
def installed(tarball, tmp_path_factory):
    """The tarball installed into an empty collections path; returns that path."""
    root = tmp_path_factory.mktemp("galaxy-install")
    cols = root / "collections"
    # Offline: the dependencies (ansible.posix, community.general) are found where the
    # ansible package installed them; nothing is fetched from Galaxy.
    run([tool("ansible-galaxy"), "collection", "install", "--offline", "-p", str(cols), str(tarball)],
        cwd=str(root), env={"ANSIBLE_COLLECTIONS_PATH": str(cols)})
    assert (cols / "ansible_collections" / "aiinfra" / "fabric" / "MANIFEST.json").exists()
    return cols
