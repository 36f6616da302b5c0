"""The execution environment definition: `ansible-builder create` writes a build
context (no container engine needed), and ansible-builder's introspection finds the
collection's own dependencies in the installed collection."""

import os
import shutil

import yaml

from eco_helpers import TOP, run, tool


def test_builder_create_writes_a_build_context(tarball, tmp_path):
    # The EE file expects the tarball where `ansible-galaxy collection build --output-path build/` puts it.
    work = tmp_path / "ee"
    (work / "build").mkdir(parents=True)
    shutil.copy(os.path.join(TOP, "execution-environment.yml"), str(work))
    shutil.copytree(os.path.join(TOP, "meta"), str(work / "meta"))
    shutil.copy(str(tarball), str(work / "build"))
    run([tool("ansible-builder"), "create", "-f", "execution-environment.yml", "--context", "ctx",
         "--output-filename", "Containerfile"], cwd=str(work))
    ctx = work / "ctx"
    containerfile = (ctx / "Containerfile").read_text()
    assert (ctx / "_build" / "collections" / tarball.name).exists()
    assert "ansible-galaxy collection install" in containerfile
    assert "/build/collections/aiinfra-fabric-" in containerfile
    assert "introspect" in containerfile
    galaxy = yaml.safe_load((ctx / "_build" / "requirements.yml").read_text())
    names = {c["name"] for c in galaxy["collections"]}
    with open(os.path.join(TOP, "galaxy.yml")) as f:
        deps = set(yaml.safe_load(f)["dependencies"])
    assert deps <= names, "galaxy.yml dependencies missing from the EE: %s" % (deps - names)


def test_introspection_finds_the_collection_dependencies(installed):
    proc = run([tool("ansible-builder"), "introspect", "--sanitize", str(installed)], cwd=str(installed))
    out = proc.stdout
    with open(os.path.join(TOP, "meta", "ee-requirements.txt")) as f:
        python = [line.split(">")[0].split("=")[0].strip() for line in f if line.strip() and not line.startswith("#")]
    with open(os.path.join(TOP, "meta", "ee-bindep.txt")) as f:
        system = [line.split()[0] for line in f if line.strip() and not line.startswith("#")]
    for name in python + system:
        assert name in out, "%s not found by ansible-builder introspect:\n%s" % (name, out)
    assert "aiinfra.fabric" in out
