"""nvme-cli runner: argv building, discovery JSON layouts (real captures), failure classification."""

import json
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.runner import ENV, redact_argv
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import (
    KernelLog, NvmeCli, NvmeCliError, build_connect_argv, build_disconnect_argv, build_discover_argv,
    classify_failure, parse_discovery_json, parse_version,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvme_cli")
HOST_KEY = "DHHC-1:00:ZmFrZS1ob3N0LWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"
CTRL_KEY = "DHHC-1:00:ZmFrZS1jdHJsLWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def test_connect_argv_is_a_list_of_long_options():
    argv = build_connect_argv("/usr/sbin/nvme", {
        "transport": "rdma", "traddr": "10.99.0.1", "trsvcid": "4421", "nqn": "nqn.2024-01.io.x:a",
        "hostnqn": "nqn.2014-08.org.nvmexpress:uuid:819aca5a-f59f-42a3-bc77-d440efb6a6b0",
        "hostid": "819aca5a-f59f-42a3-bc77-d440efb6a6b0", "ctrl_loss_tmo": -1, "queue_size": 64,
        "keep_alive_tmo": 0, "host_traddr": None, "tls": False,
    })
    assert argv == [
        "/usr/sbin/nvme", "connect", "--transport=rdma", "--traddr=10.99.0.1", "--trsvcid=4421",
        "--nqn=nqn.2024-01.io.x:a", "--hostnqn=nqn.2014-08.org.nvmexpress:uuid:819aca5a-f59f-42a3-bc77-d440efb6a6b0",
        "--hostid=819aca5a-f59f-42a3-bc77-d440efb6a6b0", "--ctrl-loss-tmo=-1", "--keep-alive-tmo=0",
        "--queue-size=64",
    ]


def test_secrets_never_reach_an_nvme_cli_argv():
    # Secret options are not in the tables, and the runner refuses values that hold one
    # (connects and discoveries with secrets go through /dev/nvme-fabrics: fabrics_dev.py).
    values = {"transport": "tcp", "traddr": "10.0.0.1", "trsvcid": "4420", "nqn": "nqn.2024-01.io.x:a",
              "dhchap_secret": HOST_KEY, "dhchap_ctrl_secret": CTRL_KEY, "tls": True, "tls_key": "0x2d3f"}
    for argv in (build_connect_argv("nvme", values), build_discover_argv("nvme", values)):
        assert not [a for a in argv if HOST_KEY in a or CTRL_KEY in a or "0x2d3f" in a]
    module = FakeModule([])
    for call in (NvmeCli(module).connect, NvmeCli(module).discover):
        with pytest.raises(NvmeCliError) as info:
            call(values)
        assert info.value.kind == "internal" and HOST_KEY not in info.value.msg
    assert module.calls == []


def test_connect_argv_tls_and_loop():
    argv = build_connect_argv("nvme", {"transport": "tcp", "traddr": "10.0.0.1", "trsvcid": "4420",
                                       "nqn": "nqn.2024-01.io.x:a", "tls": True, "keyring": ".nvme"})
    assert argv[-2:] == ["--keyring=.nvme", "--tls"]
    argv = build_connect_argv("nvme", {"transport": "tcp", "traddr": "10.0.0.1", "nqn": "nqn.2024-01.io.x:a",
                                       "tls": True, "concat": True})
    assert argv[-2:] == ["--tls", "--concat"]
    assert build_connect_argv("nvme", {"transport": "loop", "nqn": "nqn.2024-01.io.x:a"}) == [
        "nvme", "connect", "--transport=loop", "--nqn=nqn.2024-01.io.x:a"]


def test_disconnect_argv_names_one_device():
    assert build_disconnect_argv("nvme", "nvme3") == ["nvme", "disconnect", "--device=nvme3"]


def test_discover_argv_asks_for_json():
    argv = build_discover_argv("nvme", {"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420",
                                        "host_iface": "eth1", "nqn": "ignored"})
    assert argv == ["nvme", "discover", "--transport=tcp", "--traddr=10.99.0.1", "--trsvcid=4420",
                    "--host-iface=eth1", "--output-format=json"]
    # The log of an existing discovery controller (made by the kernel with the host's secret).
    assert build_discover_argv("nvme", {"transport": "tcp", "traddr": "10.99.0.1"}, "nvme5") == [
        "nvme", "discover", "--device=nvme5", "--transport=tcp", "--traddr=10.99.0.1", "--output-format=json"]


def test_redact_argv_masks_the_tls_key_in_both_spellings():
    # Before the fix only the DH-HMAC-CHAP options were masked: a TLS key (a PSK in
    # interchange format for newer nvme-cli) was returned in 'cmd' of a failed connect.
    argv = ["nvme", "connect", "--tls", "--tls_key=NVMeTLSkey-1:01:c2VjcmV0:", "--tls-key=NVMeTLSkey-1:01:c2VjcmV0:"]
    assert redact_argv(argv) == ["nvme", "connect", "--tls", "--tls_key=********", "--tls-key=********"]


def test_redact_argv_masks_secrets_only():
    argv = ["nvme", "connect", "--nqn=nqn.x", "--dhchap-secret=" + HOST_KEY, "--dhchap-ctrl-secret=" + CTRL_KEY]
    assert redact_argv(argv) == ["nvme", "connect", "--nqn=nqn.x", "--dhchap-secret=********",
                                 "--dhchap-ctrl-secret=********"]


@pytest.mark.parametrize("text,version", [
    ("nvme version 2.3 (git 2.3)\nlibnvme version 1.3 (git 1.3)\n", (2, 3)),
    ("nvme version 2.11 (git 2.11)\n", (2, 11)),
    ("nvme version 1.16\n", (1, 16)),
    ("bash: nvme: not found", None),
])
def test_parse_version(text, version):
    assert parse_version(text) == version


def test_discovery_tcp_capture():
    entries, genctrs = parse_discovery_json(fixture("discover-tcp-nvme-cli-2.3.json"))
    assert genctrs == [17]
    assert [e["subtype"] for e in entries] == ["current discovery subsystem", "nvme subsystem", "nvme subsystem"]
    plain = entries[1]
    assert plain == {
        "trtype": "tcp", "adrfam": "ipv4", "subtype": "nvme subsystem",
        "treq": "not specified, sq flow control disable supported", "portid": 1, "trsvcid": "4420",
        "subnqn": "nqn.2024-01.io.aiinfra.test:plain", "traddr": "10.99.0.1", "eflags": "none", "sectype": "none",
    }


def test_discovery_rdma_capture_has_rdma_fields():
    entries = parse_discovery_json(fixture("discover-rdma-nvme-cli-2.3.json"))[0]
    assert {e["trtype"] for e in entries} == {"rdma"}
    assert entries[2]["subnqn"] == "nqn.2024-01.io.aiinfra.test:auth"
    assert entries[2]["rdma_cms"] == "rdma-cm" and entries[2]["rdma_pkey"] == 0 and entries[2]["portid"] == 2
    assert "sectype" not in entries[2]


def test_discovery_2_7_layout_port_id_is_normalized():
    old = parse_discovery_json(fixture("discover-tcp-nvme-cli-2.3.json"))[0]
    new = parse_discovery_json(fixture("discover-tcp-nvme-cli-2.7-layout.json"))[0]
    assert all("Port ID" not in e for e in new)
    assert new == old


@pytest.mark.parametrize("version", ["2.3", "2.13"])
def test_discovery_of_the_role_target_on_both_nvme_cli_versions(version):
    # The same target (playbooks/nvmeof_tcp.yml's defaults) discovered from te2 on bookworm
    # (nvme-cli 2.3) and on trixie (2.13), captured on 2026-12-02.
    entries, genctrs = parse_discovery_json(fixture("discover-tcp-role-target-nvme-cli-%s.json" % version))
    assert genctrs == [2]
    assert [(e["subtype"], e["subnqn"], e["portid"], e["trsvcid"]) for e in entries] == [
        ("current discovery subsystem", "nqn.2014-08.org.nvmexpress.discovery", 1, "4420"),
        ("nvme subsystem", "nqn.2024-04.com.example:te1.target1", 1, "4420")]
    assert {e["sectype"] for e in entries} == {"none"}


def test_discovery_layout_is_the_same_in_nvme_cli_2_3_and_2_13():
    old = parse_discovery_json(fixture("discover-tcp-role-target-nvme-cli-2.3.json"))[0]
    new = parse_discovery_json(fixture("discover-tcp-role-target-nvme-cli-2.13.json"))[0]
    assert new == old


def test_discovery_documents_back_to_back():
    # The JSON part of a real `nvme discover -o json` run that used discovery.conf:
    # one document per discovery controller, printed back to back.
    text = fixture("discover-conf-two-controllers-nvme-cli-2.3.out")
    json_part = text[:text.index("Discovery Log Number of Records")]
    entries, genctrs = parse_discovery_json(json_part)
    assert genctrs == [17, 17]
    assert [(e["trtype"], e["trsvcid"]) for e in entries if e["subtype"] == "nvme subsystem"] == [
        ("rdma", "4421"), ("rdma", "4421"), ("tcp", "4420"), ("tcp", "4420")]


def test_discovery_conf_mode_mixed_output_is_rejected_clearly():
    # nvme-cli 2.3 then also printed the same logs in its human format: refuse, do not guess.
    with pytest.raises(ValueError, match="not JSON at offset"):
        parse_discovery_json(fixture("discover-conf-two-controllers-nvme-cli-2.3.out"))


def test_discovery_1x_layout_and_string_portid():
    text = json.dumps({"device": "nvme0", "genctr": 3, "records": [
        {"trtype": "rdma", "adrfam": "ipv4", "subtype": "nvme subsystem", "treq": "not specified",
         "portid": "7", "trsvcid": "4420 ", "subnqn": "nqn.2024-01.io.x:a", "traddr": "192.0.2.1"}]})
    entries = parse_discovery_json(text)[0]
    assert entries[0]["portid"] == 7 and entries[0]["trsvcid"] == "4420"


def test_discovery_empty_log():
    assert parse_discovery_json('{"genctr": 0, "records": []}') == ([], [0])


@pytest.mark.parametrize("text", ["Failed to write to /dev/nvme-fabrics", '{"genctr": 1}', "[1]"])
def test_discovery_rejects_other_output(text):
    with pytest.raises(ValueError):
        parse_discovery_json(text)


# stderr and kernel lines as seen in the lab (nvme-cli 2.3, kernel 6.12)
WRITE_FAILED = "could not add new controller: failed to write to nvme-fabrics device"


@pytest.mark.parametrize("stderr,kernel,kind", [
    ("Failed to write to /dev/nvme-fabrics: Key was rejected by service\n" + WRITE_FAILED,
     ["nvme nvme2: qid 0: controller authentication failed", "nvme nvme2: qid 0: authentication failed, error -129"],
     "authentication"),
    ("Failed to write to /dev/nvme-fabrics: Required key not available\n" + WRITE_FAILED,
     ["nvme nvme0: qid 0: no key", "nvme nvme0: qid 0: authentication setup failed"], "authentication_required"),
    ("Failed to write to /dev/nvme-fabrics: Input/output error\n" + WRITE_FAILED,
     ['nvme nvme0: Connect Invalid Data Parameter, subsysnqn "nqn.2024-01.io.aiinfra.test:nope"'],
     "subsystem_not_found"),
    ("Failed to write to /dev/nvme-fabrics: Input/output error\n" + WRITE_FAILED,
     ["nvme nvme1: qid 0: authentication failed, error 880"], "authentication"),
    ("Failed to write to /dev/nvme-fabrics: Connection refused\nfailed to add controller, error connection refused",
     ["nvme nvme0: failed to connect socket: -111"], "unreachable"),
    # nvme-cli 2.13 (trixie lab, 2026-12-02), a wrong controller secret: nvme-cli says only that
    # the write failed; the kernel says why.
    (WRITE_FAILED + "\n",
     ["nvme nvme2: qid 0: authenticated with hash hmac(sha256) dhgroup ffdhe2048",
      "nvme nvme2: qid 0: controller authentication failed", "nvme nvme2: qid 0: authentication failed, error -129",
      "nvme nvme2: queue 0 socket state 11", "nvme nvme2: failed to connect queue: 0 ret=-129"],
     "authentication"),
    ("already connected\n", [], "already_connected"),
    ("Failed to open /dev/nvme-fabrics: No such file or directory", [], "transport_module"),
    ("something new", [], "command"),
])
def test_classify_failure(stderr, kernel, kind):
    assert classify_failure(stderr, kernel) == kind


class FakeModule(object):
    """Records argv/env of run_command and answers from a script (rc, out, err)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.calls = []

    def get_bin_path(self, name, required=False):
        return "/usr/sbin/" + name

    def run_command(self, argv, environ_update=None, data=None):
        self.calls.append((argv, environ_update))
        return self.answers.pop(0)


def test_runner_uses_lc_all_c_and_parses_discovery(tmp_path):
    module = FakeModule([(0, fixture("discover-tcp-nvme-cli-2.3.json"), "")])
    cli = NvmeCli(module, kmsg_path=str(tmp_path / "no-kmsg"))
    entries = cli.discover({"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420"})[0]
    assert len(entries) == 3
    argv, env = module.calls[0]
    assert argv[:2] == ["/usr/sbin/nvme", "discover"] and env == ENV and env["LC_ALL"] == "C"


def test_runner_connect_failure_is_classified(tmp_path):
    # nvme-cli 2.3 reusing another path's secret (no --dhchap-secret given) that the target rejects.
    kmsg = tmp_path / "kmsg"
    kmsg.write_text("")
    module = FakeModule([(1, "", "Failed to write to /dev/nvme-fabrics: Key was rejected by service\n" + WRITE_FAILED)])
    cli = NvmeCli(module, kmsg_path=str(kmsg))
    with pytest.raises(NvmeCliError) as info:
        cli.connect({"transport": "tcp", "traddr": "10.99.0.1", "trsvcid": "4420", "nqn": "nqn.2024-01.io.x:a"})
    err = info.value
    assert err.kind == "authentication"
    assert "Key was rejected by service" in err.msg and "DH-HMAC-CHAP" in err.msg
    assert err.cmd[:2] == ["/usr/sbin/nvme", "connect"] and json.dumps(err.details())


def test_kernel_log_reads_only_new_nvme_records(tmp_path):
    # /dev/kmsg hands out one record per read; a regular file gives them all at once,
    # so feed records one by one through a fifo-like sequence of files.
    path = tmp_path / "kmsg"
    path.write_text("6,100,1,-;old message\n")
    log = KernelLog(str(path))
    log.mark()
    with open(str(path), "a") as handle:
        handle.write("3,101,2,-;nvme nvme0: failed to connect socket: -111\n")
    lines = log.read_new()
    assert lines == ["nvme nvme0: failed to connect socket: -111"]


@pytest.mark.parametrize("stderr, kernel, kind", [
    # Seen on the trixie lab (nvme-cli 2.13, kernel 6.12.118+deb13), molecule nvmeof_tls verify:
    ("could not add new controller: pre-shared TLS key is missing", ["nvme nvme0: no valid PSK found"],
     "tls_key_missing"),
    ("could not add new controller: failed to write to nvme-fabrics device",
     ["nvme nvme0: queue 0: TLS handshake complete, error -110"], "tls_handshake"),
    ("could not add new controller: failed to write to nvme-fabrics device",
     ["nvme_tcp: queue 0: failed to receive icresp, error -104"], "connection_reset"),
])
def test_tls_failures_are_told_apart(stderr, kernel, kind):
    assert classify_failure(stderr, kernel) == kind


def test_connect_argv_fast_io_fail_tmo_uses_nvme_clis_spelling():
    # nvme-cli spells this one with underscores (connect --help of 2.13, in tests/fixtures/nvme_cli).
    argv = build_connect_argv("/usr/sbin/nvme", {"transport": "tcp", "traddr": "10.99.1.1", "nqn": "nqn.2024-01.io.x:a",
                                                 "fast_io_fail_tmo": 2, "keep_alive_tmo": 3, "tls": False})
    assert "--fast_io_fail_tmo=2" in argv and "--keep-alive-tmo=3" in argv
    with open(os.path.join(FIXTURES, "connect-help-nvme-cli-2.13.txt")) as handle:
        assert "--fast_io_fail_tmo=<NUM>" in handle.read()


def test_help_and_the_saved_format_are_asked_once_per_run(tmp_path):
    # A module converging many connections asks for every one; nvme-cli starts once.
    module = FakeModule([(0, "Usage: nvme config-convert [OPTIONS]\n", ""),
                         (0, "  [  --config=<FILE>  ]\n  [  --verbose  ]\n", "")])
    cli = NvmeCli(module, kmsg_path=str(tmp_path / "no-kmsg"))
    assert [cli.saved_connections_format() for i in range(3)] == ["ini"] * 3
    assert all("config" in cli.help_options("connect-all") for i in range(3))
    assert [call[0][1:] for call in module.calls] == [["config-convert", "--help"], ["connect-all", "--help"]]
