"""The nvme_tls role's teardown (state absent) on localhost: it removes the key loader and
the package it installed for it, and the folders only when empty, since the target's boot
restorer lives in the same folder. Every host path is pointed into a temporary folder with
extra vars; the key store does not exist, so no keyring is touched."""

from __future__ import annotations

from role_harness import run_local_role  # tests/unit/plugins/modules/role_harness.py


def installed(tmp_path, with_restorer):
    libexec = tmp_path / "libexec"
    lib = libexec / "lib" / "ansible_collections" / "aiinfra" / "fabric" / "plugins" / "module_utils"
    for package, files in (("tls", ["__init__.py", "store.py"]), ("nvme", ["__init__.py", "capabilities.py"])):
        (lib / package / "__pycache__").mkdir(parents=True)
        (lib / package / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"")
        for name in files:
            (lib / package / name).write_text("# installed by nvme_tls\n")
    (libexec / "nvme-tls-keys").write_text("# the loader\n")
    if with_restorer:
        (libexec / "nvmet-restore").write_text("# the target's boot restorer\n")
    parents = [lib, lib.parent, lib.parent.parent, lib.parent.parent.parent, lib.parent.parent.parent.parent,
               libexec / "lib", libexec]
    extra = {
        "nvme_tls_store": str(tmp_path / "etc" / "tls-keys.json"),
        "__nvme_tls_unit": "aiinfra-test-absent-tls.service",
        "__nvme_tls_loader": str(libexec / "nvme-tls-keys"),
        "__nvme_tls_lib": str(lib),
        "__nvme_tls_dirs": [str(p) for p in parents],
    }
    return libexec, extra


def test_absent_removes_the_loader_and_its_package_and_keeps_the_restorer(tmp_path):
    libexec, extra = installed(tmp_path, with_restorer=True)
    proc = run_local_role(tmp_path, "aiinfra.fabric.nvme_tls", {"nvme_tls_state": "absent"}, extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (libexec / "nvme-tls-keys").exists(), "the loader stayed"
    assert not (libexec / "lib").exists(), "the loader's package stayed"
    assert (libexec / "nvmet-restore").exists(), "the target's restorer was removed"


def test_absent_leaves_no_folder_behind_when_nothing_else_is_there(tmp_path):
    libexec, extra = installed(tmp_path, with_restorer=False)
    proc = run_local_role(tmp_path, "aiinfra.fabric.nvme_tls", {"nvme_tls_state": "absent"}, extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not libexec.exists()
