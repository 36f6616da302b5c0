"""The nvmeof_target role's teardown on localhost (connection local, not in check mode):
its record lives in /var/lib/aiinfra-fabric next to the records of other roles (the
initiator's, on a host that is both target and initiator). Removing the target's record
must leave theirs, and the directory with them. Paths are pointed into a temporary
folder with extra vars; no configfs here, so no target object is touched (the lab proof
is molecule/nvmeof_multipath, where te1 is target and initiator). The last teardown also
removes the restorer it installed, but the restorer's folder holds what the nvme_tls role
installs there too (its key loader and library), which must stay."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from role_harness import ANSIBLE_PLAYBOOK, TOP, run_local_role  # tests/unit/plugins/modules/role_harness.py


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


A = "nqn.2024-04.com.example:te1.a"
B = "nqn.2024-04.com.example:te1.b"


def recorded(tmp_path, files_created):
    """A record of subsystems A (two images) and B, the images on disk with some data;
    ``files_created``: those of A's images the role made (the others were there before)."""
    images = tmp_path / "images"
    images.mkdir()
    a1, a2, b1 = images / "a1.img", images / "a2.img", images / "b1.img"
    for f in (a1, a2, b1):
        f.write_bytes(b"data written by an initiator\n")
    records = tmp_path / "records"
    records.mkdir()
    record = {"version": 2, "ports": {"1": {"transport": "tcp", "address": "10.99.0.1", "service_id": "4420"}},
              "subsystems": {
                  A: {"ports": [1], "hosts_created": [], "files": [str(a1), str(a2)],
                      "files_created": [str(f) for f in (a1, a2) if f.name in files_created],
                      "firewall_rules_added": []},
                  B: {"ports": [1], "hosts_created": [], "files": [str(b1)], "files_created": [str(b1)],
                      "firewall_rules_added": []}}}
    (records / "nvmeof_target.json").write_text(json.dumps(record, indent=2) + "\n")
    return records, (a1, a2, b1)


def test_a_teardown_naming_a_subsystem_the_record_does_not_list_fails_and_changes_nothing(tmp_path):
    records, images = recorded(tmp_path, files_created=["a1.img", "a2.img"])
    before = (records / "nvmeof_target.json").read_text()
    typo = A[:-1] + "x"  # one letter off
    proc = teardown(tmp_path, records, {"nvmeof_target_nqn": typo, "nvmeof_target_remove_backing_file": True})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert typo in out and A in out and B in out, out
    assert all(f.read_bytes() == b"data written by an initiator\n" for f in images)
    assert (records / "nvmeof_target.json").read_text() == before


def test_a_teardown_deletes_only_the_backing_files_the_role_created(tmp_path):
    records, (a1, a2, b1) = recorded(tmp_path, files_created=["a2.img"])
    proc = teardown(tmp_path, records, {"nvmeof_target_subsystems": [{"nqn": A, "namespaces": [{"file": str(a1)}]}],
                                        "nvmeof_target_remove_backing_file": True})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert a1.exists(), "the teardown deleted an image the role did not create"
    assert not a2.exists()
    assert b1.exists()
    left = json.loads((records / "nvmeof_target.json").read_text())
    assert sorted(left["subsystems"]) == [B]


def test_the_teardown_playbook_stops_before_the_initiators_on_a_name_the_record_does_not_list(tmp_path):
    """playbooks/nvmeof_teardown.yml checks the target's names in its first play, so a typo
    stops it before the initiators are disconnected. --tags selects none of the teardown
    plays' tasks: only the always-tagged first and last plays could run here."""
    records, images = recorded(tmp_path, files_created=["a1.img", "a2.img"])
    inv = {"all": {"children": {
        "nvmeof_targets": {"hosts": {"h1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}},
        "nvmeof_initiators": {"hosts": {"h2": {"ansible_connection": "local",
                                               "ansible_python_interpreter": sys.executable}}}}}}
    (tmp_path / "hosts.yml").write_text(json.dumps(inv))
    extra = {"__nvmeof_target_record": str(records / "nvmeof_target.json"),
             "nvmeof_target_nqn": A[:-1] + "x", "nvmeof_target_remove_backing_file": True}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(TOP, ".cache", "collections"),
               ANSIBLE_ROLES_PATH=os.path.join(TOP, "roles"), ANSIBLE_NOCOLOR="1", ANSIBLE_STRATEGY="linear")
    env.pop("ANSIBLE_STRATEGY_PLUGINS", None)
    env.pop("ANSIBLE_CONFIG", None)
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "hosts.yml"),
                           os.path.join(TOP, "playbooks", "nvmeof_teardown.yml"), "--tags", "no-such-tag",
                           "-e", json.dumps(extra)], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                          check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out
    assert "not in the record" in out and A in out and B in out, out
    assert "PLAY [Unmount and disconnect the initiators]" not in out, out
    assert all(f.exists() for f in images)
