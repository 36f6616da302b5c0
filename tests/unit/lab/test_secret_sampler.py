"""tests/lab/secret_sampler.py (the lab proof of issue 35 item 1) on a FAKE /proc tree: what it
looks for, what it counts, and that it refuses a secrets file others could read. The real
/proc and the kernel's exec events are used on the lab's guests (tests/lab/secrets_off_argv.sh)."""

import importlib.util
import json
import os

import pytest

PATH = os.path.join(os.path.dirname(__file__), "..", "..", "lab", "secret_sampler.py")
SPEC = importlib.util.spec_from_file_location("secret_sampler", PATH)
sampler = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(sampler)

DHCHAP = "DHHC-1:01:WkvA/cagoTXoXqlrCEOamh6A9Bm/N+ta4oiD4mE3sVNI0f/Y:"
PSK = "NVMeTLSkey-1:01:1ewEOHQK4GLOGuwpsC2DLwTSKOq0PO455eNCK660GqG1IqjC:"


def fake_process(proc, pid, argv, environ=(), comm=None, starttime=100):
    base = proc / str(pid)
    base.mkdir(parents=True)
    (base / "cmdline").write_bytes(b"".join(a.encode() + b"\0" for a in argv))
    (base / "environ").write_bytes(b"".join(e.encode() + b"\0" for e in environ))
    name = comm or os.path.basename(argv[0])[:15] if argv else "kworker/0:1"
    fields = ["S"] + ["0"] * 18 + [str(starttime)] + ["0"] * 10
    (base / "stat").write_text("%d (%s) %s\n" % (pid, name, " ".join(fields)))


def test_needles_are_each_secret_and_its_key_body():
    found = sampler.needles([DHCHAP, "# a comment", "", PSK, "short"])
    assert found == [(1, DHCHAP.encode()), (1, b"WkvA/cagoTXoXqlrCEOamh6A9Bm/N+ta4oiD4mE3sVNI0f/Y"),
                     (2, PSK.encode()), (2, b"1ewEOHQK4GLOGuwpsC2DLwTSKOq0PO455eNCK660GqG1IqjC")]


def test_a_secrets_file_others_may_read_is_refused(tmp_path):
    path = tmp_path / "secrets"
    path.write_text(DHCHAP + "\n")
    os.chmod(str(path), 0o644)
    if os.geteuid() != 0:
        pytest.skip("the file must be root's: run as root")
    with pytest.raises(SystemExit, match="mode 0600"):
        sampler.read_secrets(str(path))
    os.chmod(str(path), 0o600)
    assert sampler.read_secrets(str(path))[0] == (1, DHCHAP.encode())


def test_hits_in_cmdline_and_environ_and_the_counts(tmp_path):
    proc = tmp_path / "proc"
    fake_process(proc, 10, ["/usr/sbin/nvme", "connect", "--transport=tcp", "--dhchap-secret=" + DHCHAP])
    fake_process(proc, 11, ["nvme", "--help"])
    fake_process(proc, 12, ["/usr/bin/keyctl", "padd", "psk", "x", "@s"], environ=["K=" + PSK.split(":")[2]])
    fake_process(proc, 13, ["/usr/bin/python3", "/usr/local/libexec/aiinfra-fabric/nvme-tls-keys", "load"])
    fake_process(proc, 14, [])  # a kernel thread: nothing to read
    found = sampler.Sampler(sampler.needles([DHCHAP, PSK]), proc=str(proc))
    found.sweep()
    found.sweep()
    summary = found.summary()
    assert summary["processes_seen"] == 4 and summary["reads"] == 8
    assert summary["nvme_processes"] == 2 and summary["nvme_commands"] == {"connect": 1, "(none)": 1}
    assert summary["keyctl_processes"] == 1 and summary["boot_loaders"] == {"nvme-tls-keys": 1}
    assert summary["hits"] == 2
    hits = summary["hit_details"]
    assert [(h["pid"], h["field"], h["secret"], h["times"]) for h in hits] == [(10, "cmdline", 1, 2), (12, "environ", 2, 2)]
    assert DHCHAP not in json.dumps(summary) and PSK.split(":")[2] not in json.dumps(summary)


def test_a_process_seen_again_with_a_new_start_time_is_another_process(tmp_path):
    proc = tmp_path / "proc"
    fake_process(proc, 20, ["nvme", "disconnect", "--device=nvme1"], starttime=5)
    found = sampler.Sampler(sampler.needles([DHCHAP]), proc=str(proc))
    found.sweep()
    (proc / "20" / "stat").write_text("20 (nvme) S " + " ".join(["0"] * 18 + ["6"] + ["0"] * 10) + "\n")
    found.sweep()
    assert found.summary()["nvme_commands"] == {"disconnect": 2}


def test_report_fails_on_any_hit(tmp_path, capsys):
    state = tmp_path / "state"
    state.mkdir()
    base = {"started": 1, "hits": 0, "nvme_processes": 3}
    (state / "a-1.json").write_text(json.dumps(base))
    assert sampler.main(["report", str(state)]) == 0
    assert json.loads(capsys.readouterr().out)["nvme_processes"] == 3
    (state / "b-2.json").write_text(json.dumps(dict(base, started=2, hits=1)))
    assert sampler.main(["report", str(state)]) == 1
