"""No role reads another role's folder or the collection's plugins/ by path: what several roles
share is served by two lookups (aiinfra.fabric.shared_file for files/, aiinfra.fabric.host_library
for the module_utils a host-side program carries), which find the collection's files where it is
installed, and the built collection carries all of them."""

from __future__ import annotations

import fnmatch
import glob
import os
import re

import pytest
import yaml
from ansible.errors import AnsibleLookupError

from ansible_collections.aiinfra.fabric.plugins.lookup.host_library import LookupModule as HostLibrary
from ansible_collections.aiinfra.fabric.plugins.lookup.shared_file import LookupModule as SharedFile
from ansible_collections.aiinfra.fabric.plugins.plugin_utils import collection_files

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
ROLE_FILES = sorted(glob.glob(os.path.join(TOP, "roles", "*", "*", "*.yml"))
                    + glob.glob(os.path.join(TOP, "roles", "*", "templates", "*.j2"))
                    + glob.glob(os.path.join(TOP, "playbooks", "*.yml")))


@pytest.mark.parametrize("path", ROLE_FILES, ids=lambda p: os.path.relpath(p, TOP))
def test_no_role_reads_a_folder_outside_its_own(path):
    with open(path) as handle:
        text = handle.read()
    found = re.findall(r"role_path\s*~\s*'/\.\.[^']*'|role_path\s*\|\s*dirname|\.\./\.\./plugins|"
                       r"roles/[a-z_]+/files/|fabric_preflight/files", text)
    assert not found, "%s reaches outside its role: %s" % (os.path.relpath(path, TOP), found)


def test_the_check_above_can_fail():
    text = "lookup('ansible.builtin.file', role_path ~ '/../fabric_preflight/files/host_state.sh')"
    assert re.findall(r"role_path\s*~\s*'/\.\.[^']*'", text) == ["role_path ~ '/../fabric_preflight/files/host_state.sh'"]


def test_the_plugins_find_the_collection_where_it_is():
    assert collection_files.ROOT == TOP or os.path.realpath(collection_files.ROOT) == os.path.realpath(TOP)
    assert os.path.isfile(os.path.join(collection_files.ROLES, "nvmeof_target", "meta", "argument_specs.yml"))


def test_shared_file_serves_the_files_folder_and_nothing_outside_it():
    host_state, missing = SharedFile().run(["host_state.sh", "missing_packages.sh"])
    with open(os.path.join(TOP, "files", "host_state.sh")) as handle:
        assert host_state == handle.read()
    assert any(line.startswith("# Print each package name given as an argument that is not installed")
               for line in missing.splitlines()[:3]), missing[:300]
    assert yaml.safe_load(SharedFile().run(["expected_busbw.yml"])[0])["version"] == 1
    for bad in ("../galaxy.yml", "/etc/passwd", "no_such.sh", ""):
        with pytest.raises(AnsibleLookupError, match="is not a file of the collection's files/ folder"):
            SharedFile().run([bad])


def names(entries):
    return [e["name"] for e in entries]


# What the boot restorer runs (nvmet/restore.py and its imports, transitively); the controller's
# topology, record, snapshot and key handling and the nvmet_target module's document planning
# (document, target) and apply-and-exit (result) stay out.
RESTORER = ["atomic_write", "nvmet", "nvmet.applier", "nvmet.backing", "nvmet.bootrestore", "nvmet.canonical",
            "nvmet.common", "nvmet.discovery", "nvmet.model", "nvmet.planner", "nvmet.restore", "nvmet.savefile",
            "nvmet.validate", "transports"]
NOT_ON_THE_TARGET_AT_BOOT = ["nvmet.document", "nvmet.record", "nvmet.result", "nvmet.snapshot", "nvmet.target",
                             "nvmet.tls_keys", "nvmet.topology"]


def test_host_library_gives_the_restorer_restore_and_what_it_imports_only():
    entries = HostLibrary().run(["nvmet.restore"])
    assert names(entries) == RESTORER
    by_name = dict((e["name"], e) for e in entries)
    assert by_name["nvmet"]["path"] == "nvmet/__init__.py" and by_name["transports"]["path"] == "transports.py"
    with open(os.path.join(TOP, "plugins", "module_utils", "nvmet", "common.py")) as handle:
        assert by_name["nvmet.common"]["source"] == handle.read()
    # Every module of the package is one or the other: a new one is placed on purpose.
    nvmet = sorted("nvmet." + os.path.basename(p)[:-3]
                   for p in glob.glob(os.path.join(TOP, "plugins", "module_utils", "nvmet", "*.py"))
                   if not p.endswith("__init__.py"))
    assert sorted(n for n in RESTORER + NOT_ON_THE_TARGET_AT_BOOT if n.startswith("nvmet.")) == nvmet


def test_host_library_takes_a_named_package_whole_and_an_imported_one_by_its_modules():
    whole = names(HostLibrary().run(["nvmet"]))
    assert set(RESTORER + NOT_ON_THE_TARGET_AT_BOOT) <= set(whole)
    # savefile.py has "from ...nvmet import backing": the package's __init__ and backing, not all of nvmet.
    assert "nvmet.backing" in names(HostLibrary().run(["nvmet.savefile"]))
    assert not set(NOT_ON_THE_TARGET_AT_BOOT) & set(names(HostLibrary().run(["nvmet.savefile"])))
    # tls/load.py has "from ...tls import tlshd": the healer carries tlshd, not tls.converge (no import of it).
    heal = names(HostLibrary().run(["nvme.heal"]))
    assert "tls.tlshd" in heal and "tls" in heal and "tls.converge" not in heal


def test_host_library_gives_the_tls_loader_the_tls_package_and_what_it_imports():
    assert names(HostLibrary().run(["tls"])) == sorted(
        ["nvme", "nvme.capabilities", "nvme.runner", "tls"]
        + ["tls." + os.path.basename(p)[:-3] for p in glob.glob(os.path.join(TOP, "plugins", "module_utils", "tls", "*.py"))
           if not p.endswith("__init__.py")])
    # A module alone brings its package's __init__ and its own imports.
    assert names(HostLibrary().run(["nvme.capabilities"])) == ["nvme", "nvme.capabilities"]
    with pytest.raises(AnsibleLookupError, match="'nvme.nothing' is neither a package nor a module"):
        HostLibrary().run(["nvme.nothing"])


def test_the_built_collection_carries_what_the_lookups_serve():
    """ansible-galaxy leaves out what build_ignore matches (fnmatch on the relative path)."""
    with open(os.path.join(TOP, "galaxy.yml")) as handle:
        ignore = yaml.safe_load(handle)["build_ignore"]
    served = ["files/" + n for n in os.listdir(os.path.join(TOP, "files"))]
    served += ["plugins/module_utils/" + e["path"] for e in HostLibrary().run(["nvmet.restore", "tls", "nvme.heal"])]
    served += ["plugins/lookup/shared_file.py", "plugins/lookup/host_library.py", "plugins/plugin_utils/collection_files.py"]
    dropped = [f for f in served for pattern in ignore
               if fnmatch.fnmatch(f, pattern) or any(fnmatch.fnmatch(part, pattern) for part in f.split("/"))]
    assert not dropped, dropped
