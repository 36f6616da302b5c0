"""Unit tests for the plugins/module_utils/nvmet package: validators, planner, model, applier.

The model tests read a temporary directory laid out like the nvmet configfs tree of
Debian's 6.12.117 kernel (file names and default values copied from the lab VM te1).
That tree is a FAKE: a plain directory cannot emulate configfs semantics - mkdir that
auto-creates attribute files and child groups, symlinks that enable a port, writes the
kernel refuses with EBUSY/EACCES/EINVAL. ``EmulatedTree`` (nvmet_fake.py) adds by
hand what the 6.12 kernel does for the operations the planner issues. The real semantics are proven
on the real kernel by molecule/nvmet_modules.
"""

import errno
import json
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import applier, bootrestore, restore
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan, simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError, Op
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import plan_host, plan_port, plan_subsystem
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import from_savefile, to_savefile
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.target import plan_target, read_and_plan
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import (
    normalize_host,
    normalize_port,
    normalize_subsystem,
    validate_dhchap_key,
    validate_nqn,
)

from nvmet_fake import (  # tests/unit/plugins/module_utils/nvmet_fake.py
    HOST,
    HOST2,
    SUB,
    EmulatedTree,
    fake_host,
    fake_namespace,
    fake_port,
    fake_subsystem,
    link,
    make_key,
    write,
)


def apply_document(doc, tree, check=False):
    """A document made exact on the tree the way the nvmet_target module makes it (purge
    listed: each listed object as declared, the rest left alone): the operation texts."""
    ops = read_and_plan(tree, doc, purge="listed")[1]
    if check:
        return [op.text() for op in ops]
    return apply_plan(tree, ops)


def empty_state():
    return {"hosts": {}, "ports": {}, "subsystems": {}}


def sub_spec(**kw):
    spec = {"nqn": SUB, "state": "present", "allow_any_host": False, "allowed_hosts": [], "namespaces": [],
            "purge_namespaces": False, "purge_allowed_hosts": False, "attributes": {}}
    spec.update(kw)
    return normalize_subsystem(spec, check_paths=False)


def port_spec(root, **kw):
    spec = {"port_id": 1, "state": "present", "trtype": "tcp", "traddr": "10.99.0.1", "params": {}}
    spec.update(kw)
    return normalize_port(spec, os.path.join(root, "sys"))


def texts(ops):
    return [op.text() for op in ops]


# --------------------------------------------------------------------------- validators


@pytest.mark.parametrize("nqn", [
    "nqn.2024-04.io.aiinfra.lab:te1.modules",
    "nqn.2014-08.org.nvmexpress:uuid:6d4104d1-02ff-4b25-86c0-e09cdeb71663",
    "nqn.1999-12.com.example-corp:a:b:c",
])
def test_valid_nqns(nqn):
    assert validate_nqn(nqn) == nqn


@pytest.mark.parametrize("nqn,fragment", [
    ("nqn.2024-4.io.bad:x", "is not a valid NQN"),
    ("nqn.2024-13.io.bad:x", "is not a valid NQN"),
    ("iqn.2024-04.io.bad:x", "is not a valid NQN"),
    ("nqn.2024-04.io.bad", "is not a valid NQN"),
    ("nqn.2024-04.io.bad:with space", "is not a valid NQN"),
    ("nqn.2024-04.io.bad:with/slash", "is not a valid NQN"),
    ("nqn.2014-08.org.nvmexpress:uuid:1234", "is not a UUID"),
    ("nqn.2014-08.org.nvmexpress.discovery", "discovery NQN"),
    ("", "an NQN is required"),
])
def test_invalid_nqns_name_parameter_and_value(nqn, fragment):
    with pytest.raises(NvmetError) as err:
        validate_nqn(nqn, "allowed_hosts[0]")
    assert fragment in err.value.msg
    assert err.value.msg.startswith("allowed_hosts[0]: ")


def test_nqn_byte_limit():
    prefix = "nqn.2024-04.io.aiinfra:"
    assert validate_nqn(prefix + "a" * (223 - len(prefix)))
    with pytest.raises(NvmetError, match="is 224 bytes long; an NQN is at most 223 bytes"):
        validate_nqn(prefix + "a" * (224 - len(prefix)))
    # Bytes, not characters: 'é' is two bytes in UTF-8.
    with pytest.raises(NvmetError, match="224 bytes"):
        validate_nqn(prefix + "é" + "a" * (222 - len(prefix)))


def test_dhchap_key_from_nvme_cli_is_accepted():
    # Made by `nvme gen-dhchap-key -m 1 -n nqn.2014-08.org.test:h1` (nvme-cli 2.3) on the lab VM te1.
    key = "DHHC-1:01:UdqW9EroA7DPIebRi9XopopBS4iSni8VRBsijznQdMMIh2bh:"
    assert validate_dhchap_key(key, "dhchap_key") == key


@pytest.mark.parametrize("size,transform", [(32, 0), (48, 0), (64, 0), (32, 1), (48, 2), (64, 3)])
def test_dhchap_key_lengths_accepted(size, transform):
    validate_dhchap_key(make_key(size, transform), "dhchap_key")


@pytest.mark.parametrize("key,fragment", [
    ("DHHC-1:0X:abc:", "is not a DH-HMAC-CHAP key"),
    ("DHHC-1:04:" + make_key()[10:], "is not a DH-HMAC-CHAP key"),
    (make_key()[:-1], "is not a DH-HMAC-CHAP key"),
    ("secret", "is not a DH-HMAC-CHAP key"),
    (make_key(48, 1), "with transform 01 it must be 32 bytes"),
    (make_key(16, 0), "it must be 32 or 48 or 64 bytes"),
    (make_key(corrupt=True), "CRC-32 does not match"),
])
def test_bad_dhchap_keys_fail_without_showing_the_key(key, fragment):
    with pytest.raises(NvmetError) as err:
        validate_dhchap_key(key, "dhchap_ctrl_key")
    assert fragment in err.value.msg
    assert err.value.msg.startswith("dhchap_ctrl_key: ")
    assert key not in err.value.msg


def test_ctrl_key_needs_host_key():
    with pytest.raises(NvmetError, match="dhchap_ctrl_key: bidirectional"):
        normalize_host({"hostnqn": HOST, "dhchap_ctrl_key": make_key()})


def test_subsystem_input_errors(backing):
    with pytest.raises(NvmetError, match=r"namespaces\[1\].nsid: 1 is listed twice"):
        sub_spec(namespaces=[{"nsid": 1, "device_path": "/a"}, {"nsid": 1, "device_path": "/b"}])
    with pytest.raises(NvmetError, match=r"namespaces\[0\].nsid: 0 is out of range 1..4294967294"):
        sub_spec(namespaces=[{"nsid": 0, "device_path": "/a"}])
    with pytest.raises(NvmetError, match=r"namespaces\[0\].device_path: is required"):
        sub_spec(namespaces=[{"nsid": 1}])
    with pytest.raises(NvmetError, match=r"namespaces\[0\].device_path: '/nonexistent' does not exist"):
        normalize_subsystem({"nqn": SUB, "namespaces": [{"nsid": 1, "device_path": "/nonexistent"}]})
    with pytest.raises(NvmetError, match=r"device_path: '/' is neither a block device nor a regular file"):
        normalize_subsystem({"nqn": SUB, "namespaces": [{"nsid": 1, "device_path": "/"}]})
    assert normalize_subsystem({"nqn": SUB, "namespaces": [{"nsid": 1, "device_path": backing[0]}]})
    with pytest.raises(NvmetError, match="exclude each other"):
        sub_spec(allow_any_host=True, allowed_hosts=[HOST])
    with pytest.raises(NvmetError, match=r"namespaces\[0\].uuid: 'nope' is not a UUID"):
        sub_spec(namespaces=[{"nsid": 1, "device_path": "/a", "uuid": "nope"}])
    with pytest.raises(NvmetError, match="attributes: key 'model' has its own option"):
        sub_spec(attributes={"model": "x"})
    with pytest.raises(NvmetError, match="without its attr_/param_ prefix"):
        sub_spec(attributes={"attr_cntlid_min": 1})
    with pytest.raises(NvmetError, match="serial: 'x{21}' must be 1-20"):
        sub_spec(serial="x" * 21)


def test_nguid_is_normalized_to_the_kernel_form():
    spec = sub_spec(namespaces=[{"nsid": 1, "device_path": "/a", "nguid": "0123456789ABCDEF0123456789ABCDEF"}])
    assert spec["namespaces"][0]["nguid"] == "01234567-89ab-cdef-0123-456789abcdef"


def test_port_input_errors(root):
    with pytest.raises(NvmetError, match="traddr: '10.99.0.1' is an IPv4 address but adrfam is ipv6"):
        port_spec(root, adrfam="ipv6")
    with pytest.raises(NvmetError, match="traddr: '::1' is an IPv6 address but adrfam is ipv4"):
        port_spec(root, traddr="::1", adrfam="ipv4")
    with pytest.raises(NvmetError, match="port_id: 70000 is out of range 0..65535"):
        port_spec(root, port_id=70000)
    with pytest.raises(NvmetError, match="trsvcid: 0 is out of range 1..65535"):
        port_spec(root, trsvcid="0")
    with pytest.raises(NvmetError, match="trsvcid: 'http' is not an integer"):
        port_spec(root, trsvcid="http")
    with pytest.raises(NvmetError, match="kernel module nvmet_fc, which is not loaded"):
        port_spec(root, trtype="fc", traddr="nn-0x1000000000000001:pn-0x2000000000000001")
    with pytest.raises(NvmetError, match="tsas: 'tls1.3' is only meaningful for trtype tcp"):
        port_spec(root, trtype="rdma", tsas="tls1.3")
    with pytest.raises(NvmetError, match="traddr: 'te1' is not an IPv4 or IPv6 address"):
        port_spec(root, traddr="te1")


def test_port_defaults(root):
    spec = port_spec(root)
    assert (spec["adrfam"], spec["trsvcid"]) == ("ipv4", "4420")
    assert port_spec(root, traddr="fe80::1")["adrfam"] == "ipv6"


# --------------------------------------------------------------------------- model


def test_read_tree_like_debian_6_12(root):
    fake_subsystem(root, SUB)
    fake_namespace(root, SUB, 1, path="/var/lib/nvmet-lab/disk1.img", enable="1")
    fake_namespace(root, SUB, 2)
    fake_host(root, HOST, key=make_key())
    link(root, "hosts/" + HOST, "subsystems/%s/allowed_hosts/%s" % (SUB, HOST))
    fake_port(root, 1, trtype="tcp", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4", tsas="none")
    link(root, "subsystems/" + SUB, "ports/1/subsystems/" + SUB)
    state = ConfigfsTree(root).read()
    sub = state["subsystems"][SUB]
    assert sub["allow_any_host"] is False
    assert sub["allowed_hosts"] == [HOST]
    assert sub["attributes"]["model"] == "Linux" and "allow_any_host" not in sub["attributes"]
    assert sub["namespaces"][1] == {"nsid": 1, "device_path": "/var/lib/nvmet-lab/disk1.img", "enabled": True,
                                    "uuid": "c1dcff13-cbcf-44e6-997c-ee94dc0b42e3", "nguid": None,
                                    "ana_grpid": 1, "buffered_io": False}
    assert sub["namespaces"][2]["device_path"] is None  # the kernel prints "(null)"
    port = state["ports"][1]
    assert (port["trtype"], port["traddr"], port["trsvcid"], port["adrfam"]) == ("tcp", "10.99.0.1", "4420", "ipv4")
    assert port["subsystems"] == [SUB] and port["inline_data_size"] == -1
    assert port["params"] == {"max_queue_size": "-1", "pi_enable": "0"}
    assert state["hosts"][HOST]["dhchap_key"] == make_key()


def test_savefile_masks_keys_and_round_trips(root):
    fake_subsystem(root, SUB)
    fake_namespace(root, SUB, 1, path="/var/lib/nvmet-lab/disk1.img", enable="1")
    fake_host(root, HOST, key=make_key())
    link(root, "hosts/" + HOST, "subsystems/%s/allowed_hosts/%s" % (SUB, HOST))
    fake_port(root, 1, trtype="tcp", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4", tsas="none")
    link(root, "subsystems/" + SUB, "ports/1/subsystems/" + SUB)
    tree = EmulatedTree(root)
    state = tree.read()
    masked = to_savefile(state)
    assert masked["hosts"] == [{"nqn": HOST, "dhchap": {"key": "********", "hash": "hmac(sha256)", "dhgroup": "null"}}]
    assert make_key() not in json.dumps(masked)
    assert masked["subsystems"][0]["attr"]["allow_any_host"] == "0"
    assert masked["subsystems"][0]["namespaces"][0]["device"]["path"] == "/var/lib/nvmet-lab/disk1.img"
    assert masked["ports"][0]["addr"]["trtype"] == "tcp"
    # A masked document restores onto the same state as a no-op: masked keys are not written.
    assert plan_target(tree, state, masked, purge="listed") == []
    # The same with clear keys, after a JSON round trip.
    clear = json.loads(json.dumps(to_savefile(state, mask_keys=False)))
    assert plan_target(tree, state, clear, purge="listed") == []


def test_restore_builds_from_nothing_in_order(root, backing):
    doc = {
        "hosts": [{"nqn": HOST, "dhchap": {"key": make_key(), "hash": "hmac(sha256)", "dhgroup": "ffdhe2048"}}],
        "ports": [{"portid": 1, "addr": {"trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420",
                                         "adrfam": "ipv4", "treq": "not specified", "tsas": "none"},
                   "param": {}, "subsystems": [SUB], "referrals": [], "ana_groups": []}],
        "subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "0", "model": "aiinfra"}, "allowed_hosts": [HOST],
                        "namespaces": [{"nsid": 1, "enable": 1, "device": {"path": backing[0]}}]}],
    }
    tree = EmulatedTree(root)
    planned = apply_document(doc, tree, check=True)
    assert tree.done == []
    assert planned[0] == "mkdir hosts/" + HOST
    assert "write hosts/%s/dhchap_key = ********" % HOST in planned
    assert planned.index("mkdir subsystems/" + SUB) < planned.index("mkdir ports/1")
    assert planned[-1] == "link ports/1/subsystems/%s -> subsystems/%s" % (SUB, SUB)
    applied = apply_document(doc, tree)
    assert applied == planned
    assert apply_document(doc, tree) == []


def test_clear_removes_only_what_the_document_lists_ports_first(root, backing):
    sub2 = SUB + ".other"
    doc = {
        "hosts": [{"nqn": HOST}],
        "ports": [{"portid": 1, "addr": {"trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420",
                                         "adrfam": "ipv4", "treq": "not specified", "tsas": "none"},
                   "param": {}, "subsystems": [SUB], "referrals": [], "ana_groups": []}],
        "subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "0"}, "allowed_hosts": [HOST],
                        "namespaces": [{"nsid": 1, "enable": 1, "device": {"path": backing[0]}}]}],
    }
    other = {"subsystems": [{"nqn": sub2, "attr": {"allow_any_host": "1"},
                             "namespaces": [{"nsid": 1, "enable": 0, "device": {"path": backing[1]}}]}]}
    tree = EmulatedTree(root)
    apply_document(doc, tree)
    apply_document(other, tree)
    planned = bootrestore.clear_document(doc, check=True, tree=tree)
    assert planned[:2] == ["unlink ports/1/subsystems/" + SUB, "rmdir ports/1"]
    assert planned[-1] == "rmdir hosts/" + HOST
    assert planned.index("rmdir subsystems/" + SUB) < planned.index("rmdir hosts/" + HOST)
    assert bootrestore.clear_document(doc, tree=tree) == planned
    state = tree.read()
    assert list(state["subsystems"]) == [sub2]
    assert state["ports"] == {} and state["hosts"] == {}
    assert bootrestore.clear_document(doc, tree=tree) == []


def test_main_clear_without_file_or_nvmet_is_nothing_to_do(tmp_path, capsys):
    assert restore.main(["--configfs-root", str(tmp_path), "clear", str(tmp_path / "missing.json")]) == 0
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"hosts": [{"nqn": HOST}]}))
    assert restore.main(["--configfs-root", str(tmp_path), "clear", str(path)]) == 0
    assert capsys.readouterr().out == ""


def test_main_restore_cli(root, backing, tmp_path, capsys):
    doc = {"subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "1"},
                           "namespaces": [{"nsid": 1, "enable": 0, "device": {"path": backing[0]}}]}]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    assert restore.main(["--configfs-root", root, "restore", "--check", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "would mkdir subsystems/" + SUB
    assert not os.path.exists(os.path.join(root, "nvmet", "subsystems", SUB))


def test_main_save_output_writes_keys_privately_and_only_on_change(root, tmp_path, capsys):
    key = make_key()
    fake_host(root, HOST, key=key)
    out = tmp_path / "etc" / "nvmet" / "config.json"
    args = ["--configfs-root", root, "save", "--output", str(out)]
    assert restore.main(args + ["--check"]) == 0
    assert capsys.readouterr().out == "would write\n"
    assert not out.exists()
    assert restore.main(args) == 0
    printed = capsys.readouterr().out
    assert printed == "written\n"
    assert key not in printed
    assert oct(os.stat(str(out)).st_mode & 0o777) == "0o600"
    assert oct(os.stat(str(out.parent)).st_mode & 0o777) == "0o700"
    doc = json.loads(out.read_text())
    assert doc["hosts"] == [{"nqn": HOST, "dhchap": {"key": key, "hash": "hmac(sha256)", "dhgroup": "null"}}]
    mtime = os.stat(str(out)).st_mtime_ns
    assert restore.main(args) == 0
    assert capsys.readouterr().out == "unchanged\n"
    assert os.stat(str(out)).st_mtime_ns == mtime
    assert [p.name for p in out.parent.iterdir()] == ["config.json"]


def test_main_save_output_removes_the_file_only_when_nothing_is_left(root, tmp_path, capsys):
    out = tmp_path / "config.json"
    args = ["--configfs-root", root, "save", "--output", str(out), "--remove-when-empty"]
    assert restore.main(args) == 0
    assert capsys.readouterr().out == "absent\n"
    assert not out.exists()
    fake_host(root, HOST)
    assert restore.main(args) == 0
    assert capsys.readouterr().out == "written\n"
    os.rename(os.path.join(root, "nvmet", "hosts", HOST), os.path.join(root, "gone"))
    assert restore.main(args + ["--check"]) == 0
    assert capsys.readouterr().out == "would remove\n"
    assert out.exists()
    assert restore.main(args) == 0
    assert capsys.readouterr().out == "removed\n"
    assert not out.exists()


def test_main_reports_missing_configfs(tmp_path, capsys):
    assert restore.main(["--configfs-root", str(tmp_path), "save"]) == 1
    assert "load the nvmet kernel module" in capsys.readouterr().err


INSTALL_PLAYBOOK = """
- name: Install the restorer as the nvmeof_target role does
  hosts: localhost
  gather_facts: false
  tasks:
    - name: The role's restorer tasks
      ansible.builtin.include_role:
        name: aiinfra.fabric.nvmeof_target
        tasks_from: restorer.yml
      vars:
        __nvmeof_target_restore_script: "%s"
"""


def test_restorer_runs_standalone_as_the_role_installs_it(root, tmp_path):
    """The role installs the restorer as one file (roles/nvmeof_target/tasks/restorer.yml, one host_config task,
    the template carrying nvmet/restore.py and what it imports). Install it with Ansible on localhost, then
    run it with an isolated interpreter (-I -S: no PYTHONPATH, no site-packages, so no
    Ansible) to prove it needs only the standard library and that file; installing
    again changes nothing."""
    import subprocess
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    collection = os.path.normpath(os.path.join(here, "..", "..", "..", ".."))
    entry = str(tmp_path / "libexec" / "aiinfra-fabric" / "nvmet-restore")
    (tmp_path / "play.yml").write_text(INSTALL_PLAYBOOK % entry)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(collection, ".cache", "collections"),
               ANSIBLE_NOCOLOR="1", ANSIBLE_LOCAL_TEMP=str(tmp_path / "tmp"), ANSIBLE_HOME=str(tmp_path / "home"))
    playbook = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,",
                "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable, str(tmp_path / "play.yml")]
    for expected in ("changed=1", "changed=0"):
        proc = subprocess.run(playbook, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, timeout=300,
                              check=False, universal_newlines=True)
        assert proc.returncode == 0 and expected in proc.stdout, proc.stdout
    assert sorted(os.listdir(os.path.dirname(entry))) == ["nvmet-restore"]
    fake_host(root, HOST)
    proc = subprocess.run([sys.executable, "-I", "-S", entry, "--configfs-root", root, "save"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path), check=False)
    assert proc.returncode == 0, proc.stderr.decode()
    assert json.loads(proc.stdout.decode())["hosts"] == [
        {"nqn": HOST, "dhchap": {"hash": "hmac(sha256)", "dhgroup": "null"}}]
    # A refused restore (no configfs) ends with a message, not a traceback.
    proc = subprocess.run([sys.executable, "-I", "-S", entry, "--configfs-root", str(tmp_path / "none"), "restore",
                           str(tmp_path / "absent.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          cwd=str(tmp_path), check=False)
    assert proc.returncode != 0 and b"Traceback" not in proc.stderr, proc.stderr.decode()


# --------------------------------------------------------------------------- connections


PROC_NET_TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100630A:1144 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3422 1 0 100 0 0 10 0
   2: 0100630A:1144 0200630A:8D66 01 00000000:00000000 00:00000000 00000000     0        0 4197 1 0 21 4 25 75 40
   3: 0100630A:1144 0200630A:8278 01 00000000:00000000 00:00000000 00000000     0        0 3670 1 0 24 4 25 10 -1
   5: 0F02000A:0016 0202000A:A014 01 00000000:00000000 02:000AFC1C 00000000     0        0 4201 3 0 20 4 28 10 -1
"""
# `rdma -j res show cm_id` on te1 with te2 connected over soft-RoCE (lab capture).
RDMA_CM_IDS = json.dumps([
    {"ifname": "rxe0", "state": "LISTEN", "comm": "nvmet_rdma", "src-addr": "10.99.0.1:4420", "dst-addr": "0.0.0.0:0"},
    {"ifname": "rxe0", "state": "CONNECT", "comm": "nvmet_rdma", "src-addr": "10.99.0.1:4420",
     "dst-addr": "10.99.0.2:39519"},
    {"ifname": "rxe0", "state": "CONNECT", "comm": "nvmet_rdma", "src-addr": "10.99.0.1:4420",
     "dst-addr": "10.99.0.2:48892"},
])


def test_connections_from_sockets_and_rdma(root):
    write(os.path.join(root, "proc", "net", "tcp"), PROC_NET_TCP)
    fake_subsystem(root, SUB)
    fake_subsystem(root, "nqn.2024-04.io.aiinfra.lab:other")
    fake_port(root, 1, trtype="tcp", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4")
    fake_port(root, 2, trtype="rdma", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4")
    fake_port(root, 3, trtype="tcp", traddr="10.99.0.1", trsvcid="4421", adrfam="ipv4")
    link(root, "subsystems/" + SUB, "ports/1/subsystems/" + SUB)
    link(root, "subsystems/" + SUB, "ports/2/subsystems/" + SUB)
    link(root, "subsystems/nqn.2024-04.io.aiinfra.lab:other", "ports/3/subsystems/nqn.2024-04.io.aiinfra.lab:other")
    tree = EmulatedTree(root, run_command=lambda argv: RDMA_CM_IDS)
    conns = tree.connections(tree.read())
    # The ssh socket (port 22) and the listener do not count; nothing is connected on 4421.
    assert conns == {"by_subsystem": {SUB: 4}, "by_port": {1: 2, 2: 2}, "exact": False}


def test_connections_unknown_without_rdma_tool(root):
    write(os.path.join(root, "proc", "net", "tcp"), PROC_NET_TCP)
    fake_subsystem(root, SUB)
    fake_port(root, 2, trtype="rdma", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4")
    link(root, "subsystems/" + SUB, "ports/2/subsystems/" + SUB)
    tree = EmulatedTree(root, run_command=lambda argv: None)
    assert tree.connections(tree.read()) is None


def test_connections_from_debugfs_are_exact(root):
    write(os.path.join(root, "debug", "nvmet", SUB, "ctrl1", "port"), "1")
    write(os.path.join(root, "debug", "nvmet", SUB, "ctrl1", "hostnqn"), HOST)
    tree = EmulatedTree(root)
    assert tree.connections(tree.read()) == {"by_subsystem": {SUB: 1}, "by_port": {1: 1}, "exact": True}


# --------------------------------------------------------------------------- planner


def linked_state():
    """te1 after converge: one subsystem with two enabled namespaces, exposed on port 1."""
    return {
        "hosts": {HOST: {"hostnqn": HOST, "dhchap_key": make_key(), "dhchap_ctrl_key": None,
                         "dhchap_hash": "hmac(sha256)", "dhchap_dhgroup": "null"}},
        "ports": {1: {"port_id": 1, "trtype": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "adrfam": "ipv4",
                      "treq": "not specified", "tsas": "none", "inline_data_size": 16384,
                      "params": {"max_queue_size": "1024", "pi_enable": "0"}, "subsystems": [SUB],
                      "referrals": [], "ana_groups": {1: "optimized"}}},
        "subsystems": {SUB: {"nqn": SUB, "allow_any_host": False, "allowed_hosts": [HOST],
                             "attributes": {"model": "Linux", "serial": "abc", "version": "1.3",
                                            "firmware": "6.12.117", "cntlid_min": "1"},
                             "namespaces": {
                                 1: {"nsid": 1, "device_path": "/d1", "enabled": True, "uuid": "u1", "nguid": None,
                                     "ana_grpid": 1, "buffered_io": False},
                                 2: {"nsid": 2, "device_path": "/dev/nullb0", "enabled": True, "uuid": "u2",
                                     "nguid": None, "ana_grpid": 1, "buffered_io": False}}}},
    }


QUIET = {"by_subsystem": {}, "by_port": {}, "exact": False}
BUSY = {"by_subsystem": {SUB: 3}, "by_port": {1: 3}, "exact": False}
NS = [{"nsid": 1, "device_path": "/d1"}, {"nsid": 2, "device_path": "/dev/nullb0"}]


def test_new_subsystem_plan_order():
    spec = sub_spec(allowed_hosts=[HOST2], model="aiinfra", attributes={"cntlid_min": 1},
                    namespaces=[{"nsid": 2, "device_path": "/dev/nullb0", "nguid": "0" * 31 + "1"},
                                {"nsid": 1, "device_path": "/d1", "enabled": False}])
    ops = plan_subsystem(empty_state(), spec, QUIET)
    r = "subsystems/" + SUB
    assert texts(ops) == [
        "mkdir " + r,
        "write %s/attr_model = aiinfra" % r,
        "write %s/attr_cntlid_min = 1" % r,
        "mkdir hosts/" + HOST2,
        "link %s/allowed_hosts/%s -> hosts/%s" % (r, HOST2, HOST2),
        "mkdir %s/namespaces/1" % r,
        "write %s/namespaces/1/device_path = /d1" % r,
        "mkdir %s/namespaces/2" % r,
        "write %s/namespaces/2/device_path = /dev/nullb0" % r,
        "write %s/namespaces/2/device_nguid = 00000000-0000-0000-0000-000000000001" % r,
        "write %s/namespaces/2/enable = 1" % r,
    ]


def test_converged_subsystem_plans_nothing():
    assert plan_subsystem(linked_state(), sub_spec(allowed_hosts=[HOST], namespaces=NS), BUSY) == []


def test_plan_is_idempotent_through_simulate():
    state = empty_state()
    spec = sub_spec(allowed_hosts=[HOST], namespaces=NS, serial="S1", attributes={"cntlid_min": "2"})
    ops = plan_subsystem(state, spec, QUIET)
    after = simulate(state, ops)
    after["subsystems"][SUB]["attributes"].update({"model": "Linux"})  # kernel defaults appear on mkdir
    assert plan_subsystem(after, spec, QUIET) == []


def test_device_change_disables_first_and_needs_force_when_busy():
    spec = sub_spec(allowed_hosts=[HOST], namespaces=[{"nsid": 1, "device_path": "/d2"}, NS[1]])
    with pytest.raises(NvmetError, match=r"has 3 live connection\(s\); set force: true to change device_path of namespace 1"):
        plan_subsystem(linked_state(), spec, BUSY)
    ns1 = "subsystems/%s/namespaces/1" % SUB
    assert texts(plan_subsystem(linked_state(), spec, BUSY, force=True)) == [
        "write %s/enable = 0" % ns1, "write %s/device_path = /d2" % ns1, "write %s/enable = 1" % ns1]
    # Nobody connected: no force needed.
    assert len(plan_subsystem(linked_state(), spec, QUIET)) == 3


def test_disabled_namespace_is_changed_without_toggling():
    state = linked_state()
    state["subsystems"][SUB]["namespaces"][1]["enabled"] = False
    spec = sub_spec(allowed_hosts=[HOST], namespaces=[{"nsid": 1, "device_path": "/d2", "enabled": False,
                                                       "buffered_io": True}, NS[1]])
    ns1 = "subsystems/%s/namespaces/1" % SUB
    assert texts(plan_subsystem(state, spec, BUSY)) == [
        "write %s/device_path = /d2" % ns1, "write %s/buffered_io = 1" % ns1]


def test_ana_grpid_change_into_an_inaccessible_group_needs_force():
    """Issue 14: group 2 is not defined on port 1, so it is inaccessible there; before the
    fix the move was planned without a word and cut the namespace's I/O."""
    spec = sub_spec(allowed_hosts=[HOST], namespaces=[dict(NS[0], ana_grpid=2), NS[1]])
    with pytest.raises(NvmetError, match=r"moving it to ANA group 2 cuts its I/O on port 1 \(group not defined"):
        plan_subsystem(linked_state(), spec, QUIET)
    move = ["write subsystems/%s/namespaces/1/ana_grpid = 2" % SUB]
    assert texts(plan_subsystem(linked_state(), spec, BUSY, force=True)) == move
    state = linked_state()
    state["ports"][1]["ana_groups"][2] = "inaccessible"
    with pytest.raises(NvmetError, match=r"port 1 \(inaccessible\)"):
        plan_subsystem(state, spec, QUIET)
    state["ports"][1]["ana_groups"][2] = "non-optimized"
    assert texts(plan_subsystem(state, spec, BUSY)) == move


def test_purge_namespace_needs_force_when_busy():
    spec = sub_spec(allowed_hosts=[HOST], namespaces=[NS[0]], purge_namespaces=True)
    with pytest.raises(NvmetError, match=r"set force: true to remove namespace\(s\) 2"):
        plan_subsystem(linked_state(), spec, BUSY)
    with pytest.raises(NvmetError, match="cannot tell"):
        plan_subsystem(linked_state(), spec, None)
    assert texts(plan_subsystem(linked_state(), spec, QUIET)) == [
        "write subsystems/%s/namespaces/2/enable = 0" % SUB, "rmdir subsystems/%s/namespaces/2" % SUB]
    # Without purge the extra namespace stays.
    assert plan_subsystem(linked_state(), sub_spec(allowed_hosts=[HOST], namespaces=[NS[0]]), BUSY) == []


def test_switch_to_allow_any_host_unlinks_first():
    spec = sub_spec(allow_any_host=True, namespaces=NS)
    r = "subsystems/" + SUB
    assert texts(plan_subsystem(linked_state(), spec, QUIET)) == [
        "unlink %s/allowed_hosts/%s" % (r, HOST), "write %s/attr_allow_any_host = 1" % r]


def test_switch_to_allowed_hosts_clears_allow_any_first():
    state = linked_state()
    state["subsystems"][SUB]["allow_any_host"] = True
    state["subsystems"][SUB]["allowed_hosts"] = []
    spec = sub_spec(allowed_hosts=[HOST], namespaces=NS)
    r = "subsystems/" + SUB
    assert texts(plan_subsystem(state, spec, QUIET)) == [
        "write %s/attr_allow_any_host = 0" % r, "link %s/allowed_hosts/%s -> hosts/%s" % (r, HOST, HOST)]


def test_purge_allowed_hosts_keeps_host_entries():
    state = linked_state()
    spec = sub_spec(allowed_hosts=[HOST2], namespaces=NS, purge_allowed_hosts=True)
    r = "subsystems/" + SUB
    assert texts(plan_subsystem(state, spec, QUIET)) == [
        "unlink %s/allowed_hosts/%s" % (r, HOST), "mkdir hosts/" + HOST2,
        "link %s/allowed_hosts/%s -> hosts/%s" % (r, HOST2, HOST2)]


def test_identity_attributes_are_written_before_anything_else():
    spec = sub_spec(allowed_hosts=[HOST], namespaces=[{"nsid": 1, "device_path": "/d2"}, NS[1]], serial="NEW",
                    attributes={"cntlid_min": "5"})
    ops = texts(plan_subsystem(linked_state(), spec, QUIET))
    assert ops[:2] == ["write subsystems/%s/attr_serial = NEW" % SUB, "write subsystems/%s/attr_cntlid_min = 5" % SUB]


def test_unknown_attribute_is_refused():
    with pytest.raises(NvmetError, match="attributes: this kernel has no attr_bogus"):
        plan_subsystem(linked_state(), sub_spec(allowed_hosts=[HOST], namespaces=NS, attributes={"bogus": 1}), QUIET)


def test_absent_subsystem_removes_in_reverse_order():
    r = "subsystems/" + SUB
    spec = sub_spec(state="absent")
    with pytest.raises(NvmetError, match="set force: true to remove it"):
        plan_subsystem(linked_state(), spec, BUSY)
    assert texts(plan_subsystem(linked_state(), spec, BUSY, force=True)) == [
        "unlink ports/1/subsystems/" + SUB,
        "write %s/namespaces/2/enable = 0" % r, "rmdir %s/namespaces/2" % r,
        "write %s/namespaces/1/enable = 0" % r, "rmdir %s/namespaces/1" % r,
        "unlink %s/allowed_hosts/%s" % (r, HOST), "rmdir " + r]
    assert plan_subsystem(empty_state(), spec) == []


def test_port_new_then_converged(root):
    state = linked_state()
    spec = port_spec(root, port_id=2, trtype="rdma", subsystems=[SUB])
    ops = plan_port(state, spec, QUIET)
    assert texts(ops) == [
        "mkdir ports/2", "write ports/2/addr_trtype = rdma", "write ports/2/addr_adrfam = ipv4",
        "write ports/2/addr_traddr = 10.99.0.1", "write ports/2/addr_trsvcid = 4420",
        "link ports/2/subsystems/%s -> subsystems/%s" % (SUB, SUB)]
    assert plan_port(simulate(state, ops), spec, QUIET) == []
    assert plan_port(state, port_spec(root, subsystems=[SUB]), BUSY) == []


def test_port_reconfigure_needs_opt_in_and_force(root):
    spec = port_spec(root, trsvcid="4421")
    with pytest.raises(NvmetError, match="addr_trsvcid differ.*set allow_reconfigure: true"):
        plan_port(linked_state(), spec, QUIET)
    with pytest.raises(NvmetError, match=r"port 1 has 3 live connection\(s\)"):
        plan_port(linked_state(), spec, BUSY, allow_reconfigure=True)
    assert texts(plan_port(linked_state(), spec, BUSY, force=True, allow_reconfigure=True)) == [
        "unlink ports/1/subsystems/" + SUB, "write ports/1/addr_trsvcid = 4421",
        "link ports/1/subsystems/%s -> subsystems/%s" % (SUB, SUB)]


def test_port_link_list_is_exact(root):
    state = linked_state()
    with pytest.raises(NvmetError, match="unlink %s from it" % SUB):
        plan_port(state, port_spec(root, subsystems=[]), BUSY)
    assert texts(plan_port(state, port_spec(root, subsystems=[]), QUIET)) == ["unlink ports/1/subsystems/" + SUB]
    with pytest.raises(NvmetError, match="subsystems: nqn.2024-04.io.x:none does not exist"):
        plan_port(state, port_spec(root, subsystems=["nqn.2024-04.io.x:none"]), QUIET)
    ops = plan_port(state, port_spec(root, subsystems=[SUB, "nqn.2024-04.io.x:none"]), QUIET, missing_ok=True)
    assert texts(ops) == ["link ports/1/subsystems/nqn.2024-04.io.x:none -> subsystems/nqn.2024-04.io.x:none"]


def test_port_absent(root):
    state = linked_state()
    state["ports"][1]["ana_groups"][2] = "optimized"
    state["ports"][1]["referrals"] = ["r1"]
    spec = {"port_id": 1, "state": "absent"}
    with pytest.raises(NvmetError, match="force"):
        plan_port(state, spec, BUSY)
    assert texts(plan_port(state, spec, QUIET)) == [
        "unlink ports/1/subsystems/" + SUB, "rmdir ports/1/referrals/r1", "rmdir ports/1/ana_groups/2",
        "rmdir ports/1"]


def test_host_plan_masks_keys_and_is_idempotent():
    spec = normalize_host({"hostnqn": HOST, "dhchap_key": make_key(), "dhchap_dhgroup": "ffdhe2048"})
    state = empty_state()
    ops = plan_host(state, spec)
    assert texts(ops) == ["mkdir hosts/" + HOST, "write hosts/%s/dhchap_key = ********" % HOST,
                          "write hosts/%s/dhchap_dhgroup = ffdhe2048" % HOST]
    assert all(make_key() not in t for t in texts(ops))
    assert plan_host(simulate(state, ops), spec) == []
    new_key = normalize_host({"hostnqn": HOST, "dhchap_key": make_key(48, 2)})
    assert texts(plan_host(linked_state(), new_key)) == ["write hosts/%s/dhchap_key = ********" % HOST]


def test_a_new_host_is_predicted_as_the_kernel_makes_it(root):
    """simulate's new host (common.HOST_DEFAULTS) is what the reader reads from a fresh entry."""
    predicted = simulate(empty_state(), [Op("mkdir", "hosts/" + HOST)])["hosts"][HOST]
    fake_host(root, HOST)
    assert predicted == ConfigfsTree(root).read_host(HOST)
    assert list(predicted) == ["hostnqn", "dhchap_key", "dhchap_ctrl_key", "dhchap_hash", "dhchap_dhgroup"]


def test_host_absent_while_allowed_needs_force():
    spec = {"hostnqn": HOST, "state": "absent"}
    with pytest.raises(NvmetError, match="is in allowed_hosts of subsystem"):
        plan_host(linked_state(), spec, QUIET)
    assert texts(plan_host(linked_state(), spec, QUIET, force=True)) == [
        "unlink subsystems/%s/allowed_hosts/%s" % (SUB, HOST), "rmdir hosts/" + HOST]


# --------------------------------------------------------------------------- applier


def test_apply_translates_kernel_errors(root):
    fake_subsystem(root, SUB)
    fake_namespace(root, SUB, 1, path="/d1", enable="1")
    ns1 = "subsystems/%s/namespaces/1" % SUB
    tree = EmulatedTree(root, refuse={ns1 + "/device_path": errno.EBUSY})
    ops = [Op("write", ns1 + "/uuid_placeholder_ok", "x"), Op("write", ns1 + "/device_path", "/d2")]
    with pytest.raises(NvmetError) as err:
        apply_plan(tree, ops)
    assert err.value.msg == (
        "nvmet: cannot write device_path = '/d2' on %s: Device or resource busy (EBUSY): "
        "this can only change while the namespace is disabled (enable=0)" % ns1)
    assert err.value.applied == ["write %s/uuid_placeholder_ok = x" % ns1]


@pytest.mark.parametrize("op,code,fragment", [
    (Op("write", "ports/1/addr_trsvcid", "4421"), errno.EACCES, "the port is enabled"),
    (Op("write", "subsystems/%s/attr_model" % SUB, "m"), errno.EINVAL, "freezes serial/model/version/firmware"),
    (Op("write", "subsystems/%s/attr_allow_any_host" % SUB, "1"), errno.EINVAL, "allowed_hosts is not empty"),
    (Op("link", "ports/1/subsystems/" + SUB, target="subsystems/" + SUB), errno.EADDRNOTAVAIL,
     "could not enable the port"),
    (Op("rmdir", "hosts/" + HOST), errno.EBUSY, "target of a link"),
    (Op("write", "hosts/%s/dhchap_key" % HOST, make_key(), secret=True), errno.EINVAL, "(value hidden)"),
])
def test_explain_names_object_attribute_and_reason(op, code, fragment):
    msg = applier.explain(op, OSError(code, os.strerror(code)))
    assert fragment in msg
    assert errno.errorcode[code] in msg
    assert make_key() not in msg


def test_apply_on_emulated_tree_then_read_back(root, backing):
    tree = EmulatedTree(root)
    spec = normalize_subsystem({"nqn": SUB, "allowed_hosts": [HOST],
                                "namespaces": [{"nsid": 1, "device_path": backing[0]}]})
    state = tree.read()
    ops = plan_subsystem(state, spec, QUIET)
    apply_plan(tree, ops)
    after = tree.read()
    assert after["subsystems"][SUB]["namespaces"][1]["device_path"] == backing[0]
    assert after["subsystems"][SUB]["namespaces"][1]["enabled"] is True
    assert after["subsystems"][SUB]["allowed_hosts"] == [HOST]
    assert plan_subsystem(after, spec, QUIET) == []
    # Check mode's prediction matches what was applied, except the uuid the kernel generates.
    predicted = simulate(state, ops)["subsystems"][SUB]["namespaces"][1]
    assert predicted == dict(after["subsystems"][SUB]["namespaces"][1], uuid=None)


def test_from_savefile_maps_nvmetcli_schema():
    doc = {"hosts": [{"nqn": HOST}],
           "ports": [{"portid": 2, "addr": {"trtype": "rdma", "traddr": "10.99.0.1", "trsvcid": "4420",
                                            "adrfam": "ipv4", "treq": "not specified", "tsas": "connected"},
                      "param": {"inline_data_size": "4096", "max_queue_size": "128"}, "subsystems": [SUB]}],
           "subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "1", "serial": "S", "cntlid_min": "1"},
                           "namespaces": [{"nsid": 1, "enable": 0, "ana_grpid": 1,
                                           "device": {"path": "/d", "uuid": "u",
                                                      "nguid": "00000000-0000-0000-0000-000000000000"}}]}]}
    specs = from_savefile(doc)
    assert specs["hosts"] == [{"hostnqn": HOST, "state": "present"}]
    port = specs["ports"][0]
    assert port["trtype"] == "rdma" and "tsas" not in port and port["inline_data_size"] == "4096"
    assert port["params"] == {"max_queue_size": "128"}
    sub = specs["subsystems"][0]
    assert sub["allow_any_host"] is True and sub["serial"] == "S" and sub["attributes"] == {"cntlid_min": "1"}
    assert sub["namespaces"] == [{"nsid": 1, "device_path": "/d", "enabled": False, "uuid": "u", "ana_grpid": 1}]
    with pytest.raises(NvmetError, match="top level must be a JSON object"):
        from_savefile([])
