"""Unit tests of the controller-side no-change check of nvmet_target (nvmet/snapshot.py).

The role's real probe (roles/nvmeof_target/files/probe.sh) runs with sh on the FAKE
configfs tree of nvmet_fake.py (a plain directory laid out like Debian 6.12's nvmet
tree); the snapshot read from its lines must equal the module's own read of that tree,
and a plan against it the module's plan. The real kernel is the lab's job
(molecule/nvmeof_rdma and nvmeof_tls: their idempotence steps run the role on te1).
"""

import os
import subprocess

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import savefile, snapshot
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.snapshot import (
    SnapshotTree,
    parse_probe,
    target_pending,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.target import read_and_plan

from nvmet_fake import HOST, HOST2, SUB, EmulatedTree, make_key

HERE = os.path.dirname(__file__)
PROBE = os.path.join(HERE, "..", "..", "..", "..", "roles", "nvmeof_target", "files", "probe.sh")
SUB2 = "nqn.2024-04.io.aiinfra.lab:te1.second"
TCP = {"trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "adrfam": "ipv4"}
RDMA = {"trtype": "rdma", "traddr": "10.99.0.1", "trsvcid": "4421", "adrfam": "ipv4"}


def probe(root, save="-", path=None):
    """The role's probe, run for real on the fake tree; its lines (the nvmet part packed
    into one nvmet-dump line where PATH has gzip and base64)."""
    args = ["true", "true", os.path.join(root, "record.json"), "-", "", save, "0"]
    env = dict(os.environ, AIINFRA_NVMET_CONFIGFS=os.path.join(root, "nvmet"),
               AIINFRA_SYS_MODULE=os.path.join(root, "sys", "module"))
    if path:
        env["PATH"] = path
    out = subprocess.run(["sh", PROBE] + args, check=True, capture_output=True, text=True, env=env).stdout
    return out.splitlines()


def unpacked(lines):
    """The probe's lines with the nvmet-dump line opened, as a host without gzip prints them."""
    return list(snapshot._unpacked(lines))


def document(files, key=None, extra_ns=0):
    hosts = [{"nqn": HOST, "dhchap": {"key": key}}] if key else [{"nqn": HOST}]
    paths = files[:2 + extra_ns]
    return {
        "hosts": hosts + [{"nqn": HOST2}],
        "subsystems": [
            {"nqn": SUB, "attr": {"allow_any_host": "0", "serial": "abc"}, "allowed_hosts": [HOST, HOST2],
             "namespaces": [{"nsid": i + 1, "enable": 1, "device": {"path": p}} for i, p in enumerate(paths)]},
            {"nqn": SUB2, "attr": {"allow_any_host": "1"}, "allowed_hosts": [],
             "namespaces": [{"nsid": 1, "enable": 1, "device": {"path": files[4]}}]},
        ],
        "ports": [{"portid": 1, "addr": dict(TCP), "subsystems": [SUB, SUB2],
                   "ana_groups": [{"grpid": 1, "ana": {"state": "optimized"}}, {"grpid": 2, "ana": {"state": "non-optimized"}}]},
                  {"portid": 2, "addr": dict(RDMA), "subsystems": [SUB]}],
    }


def converge(root, doc, purge="listed", save=None):
    """What the module does: plan on the tree, apply, save."""
    tree = EmulatedTree(root)
    state, ops = read_and_plan(tree, doc, purge)
    apply_plan(tree, ops)
    if save:
        savefile.save_to_file(tree, save)
    return ops


def test_the_snapshot_reads_as_the_tree_and_plans_as_the_module(root, files):
    key = make_key()
    doc = document(files, key=key)
    converge(root, doc)
    lines = probe(root)
    snap_tree = SnapshotTree(parse_probe(lines), [key])
    assert snap_tree.read() == ConfigfsTree(os.path.join(root)).read()
    # The key never leaves the host: only its sha256 is printed.
    plain = unpacked(lines)
    assert key not in "\n".join(plain)
    assert any(line.startswith("nvmet-secret hosts/%s/dhchap_key " % HOST) for line in plain)
    # The same document plans nothing on both; a changed one plans the same operations on both.
    assert read_and_plan(snap_tree, doc, "listed")[1] == []
    changed = document(files, key=key, extra_ns=1)
    changed["subsystems"][0]["attr"]["serial"] = "abc"
    real_ops = read_and_plan(EmulatedTree(root), changed, "listed")[1]
    assert real_ops and read_and_plan(snap_tree, changed, "listed")[1] == real_ops


def test_nothing_pending_after_a_converge_with_its_save_file(root, files, tmp_path):
    save = str(tmp_path / "etc" / "config.json")
    key = make_key()
    doc = document(files, key=key)
    assert converge(root, doc, save=save)
    verdict = target_pending(doc, probe(root, save), purge="listed", save_file=save)
    assert verdict == {"pending": False, "why": "configfs and the save file are as the document wants"}
    # The module agrees: no operation, and the save file unchanged.
    assert converge(root, doc) == []
    assert savefile.save_to_file(EmulatedTree(root), save, check=True) == "unchanged"


@pytest.mark.parametrize("change, why", [
    (lambda d, f: d["subsystems"][0]["namespaces"].append({"nsid": 3, "enable": 1, "device": {"path": f[2]}}),
     "configfs operation(s), the first: mkdir subsystems/%s/namespaces/3" % SUB),
    # Unlinking needs the live connections, which a probe does not read: the module decides.
    (lambda d, f: d["ports"][0]["subsystems"].remove(SUB2), "cannot tell"),
    (lambda d, f: d["subsystems"][1]["attr"].update(allow_any_host="0"), "allow_any_host"),
    (lambda d, f: d["hosts"][0].update(dhchap={"key": make_key(size=48, transform=2)}), "write hosts/%s/dhchap_key = " % HOST),
])
def test_a_change_is_pending_and_says_what(root, files, change, why):
    doc = document(files, key=make_key())
    converge(root, doc)
    lines = probe(root)
    change(doc, files)
    verdict = target_pending(doc, lines, purge="listed")
    assert verdict["pending"] is True
    assert why in verdict["why"]
    # No key is in the reason (a new one is masked).
    for host in doc["hosts"]:
        key = (host.get("dhchap") or {}).get("key")
        assert not key or key not in verdict["why"]


def test_a_save_file_missing_or_different_is_pending(root, files, tmp_path):
    save = str(tmp_path / "config.json")
    doc = document(files)
    converge(root, doc)
    assert target_pending(doc, probe(root, save), purge="listed", save_file=save) == {
        "pending": True, "why": "%s does not exist" % save}
    savefile.save_to_file(EmulatedTree(root), save)
    assert target_pending(doc, probe(root, save), purge="listed", save_file=save)["pending"] is False
    with open(save, "a") as f:
        f.write(" ")
    assert target_pending(doc, probe(root, save), purge="listed", save_file=save) == {
        "pending": True, "why": "%s differs from configfs" % save}


def test_a_save_file_with_a_wider_mode_is_pending_and_rewritten(root, files, tmp_path):
    # The save file holds the hosts' keys in clear: the same text under 0644 still needs the module.
    save = str(tmp_path / "config.json")
    doc = document(files, key=make_key())
    converge(root, doc, save=save)
    os.chmod(save, 0o644)
    assert any(line.startswith("nvmet-save ") and line.endswith(" 644") for line in unpacked(probe(root, save)))
    assert target_pending(doc, probe(root, save), purge="listed", save_file=save) == {
        "pending": True, "why": "%s has mode 0644, not 0600 (it holds the hosts' keys)" % save}
    assert savefile.save_to_file(EmulatedTree(root), save, check=True) == "would write"
    assert os.stat(save).st_mode & 0o777 == 0o644
    assert savefile.save_to_file(EmulatedTree(root), save) == "written"
    assert os.stat(save).st_mode & 0o777 == 0o600
    assert target_pending(doc, probe(root, save), purge="listed", save_file=save)["pending"] is False


def test_a_transport_module_not_loaded_or_no_configfs_is_pending(root, files):
    doc = document(files)
    converge(root, doc)
    os.rmdir(os.path.join(root, "sys", "module", "nvmet_rdma"))
    assert target_pending(doc, probe(root), purge="listed") == {
        "pending": True, "why": "kernel module(s) not loaded: nvmet_rdma"}
    assert target_pending(doc, ["no-configfs"], purge="listed") == {
        "pending": True, "why": "configfs has no nvmet directory"}


def test_what_cannot_be_judged_is_pending(root, files):
    doc = document(files)
    converge(root, doc)
    lines = unpacked(probe(root))
    assert target_pending(doc, lines, purge="listed")["pending"] is False
    # The listing cut short, a file that could not be read, a line out of place.
    cut = lines[:lines.index("nvmet-end")]
    assert "no nvmet-end line" in target_pending(doc, cut, purge="listed")["why"]
    serial = "./subsystems/%s/attr_serial:" % SUB
    unreadable = [line for line in lines if not line.startswith(serial) and line != serial[:-1] + ":1"]
    verdict = target_pending(doc, unreadable, purge="listed")
    assert verdict == {"pending": True, "why": "nvmet: the probe could not read subsystems/%s/attr_serial" % SUB}
    stray = lines[:lines.index("nvmet-text") + 1] + ["Binary file ./x matches"] + lines[lines.index("nvmet-text") + 1:]
    assert "unexpected line" in target_pending(doc, stray, purge="listed")["why"]
    # A document error is left to the module, which lists them all.
    bad = document(files)
    bad["ports"][0]["addr"]["trtype"] = "carrier-pigeon"
    assert target_pending(bad, lines, purge="listed") == {
        "pending": True, "why": "the document has errors (the module lists them)"}


def test_a_removal_under_a_guard_is_pending_because_connections_are_unknown(root, files):
    doc = document(files)
    converge(root, doc)
    smaller = document(files)
    smaller["subsystems"][0]["namespaces"].pop()
    verdict = target_pending(smaller, probe(root), purge="listed")
    assert verdict["pending"] is True
    assert "cannot tell" in verdict["why"]


def test_purge_none_keeps_undeclared_objects_and_plans_nothing(root, files):
    doc = document(files)
    converge(root, doc)
    # The role's default: purge none, a document naming less than configfs has.
    smaller = document(files)
    smaller["subsystems"][0]["namespaces"].pop()
    smaller["subsystems"][0]["allowed_hosts"] = [HOST]
    assert target_pending(smaller, probe(root), purge="none")["pending"] is False
    assert converge(root, smaller, purge="none") == []


def test_the_nvmet_part_comes_as_one_packed_line_or_as_it_is_without_gzip(root, files, tmp_path):
    doc = document(files, extra_ns=2)
    converge(root, doc)
    packed = probe(root)
    dumps = [line for line in packed if line.startswith("nvmet-dump ")]
    assert len(dumps) == 1
    assert [line for line in packed if line.startswith("nvmet-") and not line.startswith("nvmet-dump ")] == []
    assert "configfs" in packed
    # A host without gzip: the same lines, unpacked, and the same verdicts.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for d in ("/usr/local/bin", "/usr/bin", "/bin"):
        for name in os.listdir(d) if os.path.isdir(d) else []:
            if name != "gzip" and not (bin_dir / name).exists():
                os.symlink(os.path.join(d, name), str(bin_dir / name))
    plain = probe(root, path=str(bin_dir))
    assert not any(line.startswith("nvmet-dump ") for line in plain)
    assert "nvmet-counts" in plain
    assert unpacked(packed) == plain
    assert target_pending(doc, packed, purge="listed") == target_pending(doc, plain, purge="listed")
    assert target_pending(doc, packed, purge="listed")["pending"] is False
    smaller = document(files, extra_ns=1)
    assert target_pending(smaller, packed, purge="listed") == target_pending(smaller, plain, purge="listed")
    assert target_pending(smaller, packed, purge="listed")["pending"] is True


def test_a_packed_line_that_does_not_decode_is_pending(root, files):
    doc = document(files)
    converge(root, doc)
    lines = probe(root)
    broken = [line[:-8] + "!!!!!!!!" if line.startswith("nvmet-dump ") else line for line in lines]
    verdict = target_pending(doc, broken, purge="listed")
    assert verdict["pending"] is True
    assert "does not decode" in verdict["why"]
    cut = [line[:len(line) // 2] if line.startswith("nvmet-dump ") else line for line in lines]
    assert target_pending(doc, cut, purge="listed")["pending"] is True


def test_a_backing_file_replaced_under_a_live_namespace_is_pending(root, files, tmp_path):
    """The save file holds each exported file's identity; a blank file made in place of an
    image the kernel still serves is not the saved one: the module runs and refuses."""
    save = str(tmp_path / "etc" / "config.json")
    doc = document(files)
    converge(root, doc, save=save)
    assert target_pending(doc, probe(root, save), purge="listed", save_file=save)["pending"] is False
    with open(files[1] + ".new", "wb") as f:
        f.truncate(os.path.getsize(files[1]))
    os.replace(files[1] + ".new", files[1])
    verdict = target_pending(doc, probe(root, save), purge="listed", save_file=save)
    assert verdict == {"pending": True, "why": "%s differs from configfs" % save}
