"""The nvmeof_target role's teardown on localhost (connection local, not in check mode):
its record lives in /var/lib/aiinfra-fabric next to the records of other roles (the
initiator's, on a host that is both target and initiator). Removing the target's record
must leave theirs, and the directory with them. Paths are pointed into a temporary
folder with extra vars; no configfs here, so no target object is touched (the lab proof
is molecule/nvmeof_multipath, where te1 is target and initiator). The last teardown also
removes the restorer it installed, but the restorer's folder holds what the nvme_tls role
installs there too (its key loader and library), which must stay."""

from __future__ import annotations

import os

from role_harness import run_local_role  # tests/unit/plugins/modules/role_harness.py


def teardown(tmp_path, record_dir, extra=None):
    extra = dict({
        "__nvmeof_target_record": str(record_dir / "nvmeof_target.json"),
        "__nvmeof_target_nvmetcli_marker": str(record_dir / "nvmet.service.masked"),
        # Keep the unit, restorer, save file and boot-time modules of this machine out of it.
        "__nvmeof_target_others_left": True,
        "nvmeof_target_save_file": str(tmp_path / "etc-nvmet" / "config.json"),
    }, **(extra or {}))
    return run_local_role(tmp_path, "aiinfra.fabric.nvmeof_target", {"nvmeof_target_state": "absent"}, extra)


def test_target_teardown_keeps_the_initiator_records_beside_its_own(tmp_path):
    records = tmp_path / "aiinfra-fabric"
    records.mkdir()
    (records / "nvmeof_target.json").write_text("{}\n")
    initiator = records / "nvmeof_initiator-0123456789ab.json"
    initiator.write_text('{"written_by": "aiinfra.fabric.nvmeof_initiator"}\n')
    proc = teardown(tmp_path, records)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (records / "nvmeof_target.json").exists()
    assert initiator.exists(), "the target teardown removed the initiator's record"


def test_target_teardown_removes_its_record_directory_when_nothing_else_is_in_it(tmp_path):
    records = tmp_path / "aiinfra-fabric"
    records.mkdir()
    (records / "nvmeof_target.json").write_text("{}\n")
    proc = teardown(tmp_path, records)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not records.exists()


def restorer_installed(tmp_path, with_tls):
    """The restorer's files as the role installs them, an older install's package folder, and
    (with_tls) what nvme_tls puts beside them; the extra vars that point the teardown there."""
    libexec = tmp_path / "libexec"
    lib = libexec / "lib" / "ansible_collections" / "aiinfra" / "fabric" / "plugins" / "module_utils"
    (lib / "nvmet").mkdir(parents=True)
    (lib / "nvmet" / "model.py").write_text("# an install from before the one-file restorer\n")
    (libexec / "nvmet-restore").write_text("# the restorer\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "nvmet-restore.json").write_text("{}\n")
    if with_tls:
        (lib / "tls").mkdir()
        (lib / "tls" / "keys.py").write_text("# nvme_tls's library\n")
        (libexec / "nvme-tls-keys").write_text("# nvme_tls's loader\n")
    dirs = [lib, lib.parent, lib.parent.parent, lib.parent.parent.parent, lib.parent.parent.parent.parent,
            libexec / "lib", libexec, tmp_path / "run"]
    extra = {
        "__nvmeof_target_others_left": False,
        "__nvmeof_target_unit": "aiinfra-test-absent-%d.service" % os.getpid(),
        "__nvmeof_target_restore_script": str(libexec / "nvmet-restore"),
        "__nvmeof_target_restore_legacy_package": str(lib / "nvmet"),
        "__nvmeof_target_restore_status": str(tmp_path / "run" / "nvmet-restore.json"),
        "__nvmeof_target_restore_dirs": [str(d) for d in dirs],
    }
    return libexec, lib, extra


def test_last_teardown_keeps_what_nvme_tls_installed_beside_the_restorer(tmp_path):
    libexec, lib, extra = restorer_installed(tmp_path, with_tls=True)
    proc = teardown(tmp_path, tmp_path / "records", extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not (libexec / "nvmet-restore").exists()
    assert not (lib / "nvmet").exists()
    assert not (tmp_path / "run").exists()
    assert (libexec / "nvme-tls-keys").exists(), "the target teardown removed nvme_tls's key loader"
    assert (lib / "tls" / "keys.py").exists(), "the target teardown removed nvme_tls's library"


def test_last_teardown_leaves_no_empty_folder_of_its_own(tmp_path):
    libexec, _lib, extra = restorer_installed(tmp_path, with_tls=False)
    proc = teardown(tmp_path, tmp_path / "records", extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not libexec.exists()
    assert not (tmp_path / "run").exists()
