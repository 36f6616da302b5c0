"""Connecting through /dev/nvme-fabrics: the option string, the kernel's reply, its refusals.

The device here is a FAKE: a named pipe pair is not what the kernel offers, so a small
file-like stand-in replaces os.open/os.write/os.read on one path; the real device is
proven in the lab (benchmarks/nvme_many_initiators.sh)."""

import errno
import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import fabrics_dev
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCliError

KEY = "DHHC-1:00:ZmFrZS1ob3N0LWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"
VALUES = dict(transport="tcp", traddr="10.99.0.1", trsvcid="4439", nqn="nqn.2024-04.io.aiinfra.bench:many",
              host_traddr=None, host_iface=None, hostnqn="nqn.2014-08.org.nvmexpress:uuid:0f3b8a52-6c4e-4d4e-8f0e-2b7d9c1a5e33",
              hostid="0f3b8a52-6c4e-4d4e-8f0e-2b7d9c1a5e33", ctrl_loss_tmo=None, reconnect_delay=5, keep_alive_tmo=None,
              nr_io_queues=None, queue_size=None, dhchap_secret=None, dhchap_ctrl_secret=None, tls=False,
              hostnqn_given=True)


def test_option_string_in_the_kernels_names_and_nvme_clis_order():
    assert fabrics_dev.kernel_options(VALUES) == (
        "nqn=nqn.2024-04.io.aiinfra.bench:many,transport=tcp,traddr=10.99.0.1,trsvcid=4439,"
        "hostnqn=nqn.2014-08.org.nvmexpress:uuid:0f3b8a52-6c4e-4d4e-8f0e-2b7d9c1a5e33,"
        "hostid=0f3b8a52-6c4e-4d4e-8f0e-2b7d9c1a5e33,reconnect_delay=5")


def test_a_comma_in_a_value_is_refused_and_a_secret_is_never_shown():
    with pytest.raises(NvmeCliError, match="host_iface='eth1,x' holds a comma"):
        fabrics_dev.kernel_options(dict(VALUES, host_iface="eth1,x"))
    with pytest.raises(NvmeCliError) as caught:
        fabrics_dev.kernel_options(dict(VALUES, dhchap_secret="DHHC-1:00:a,b:"))
    assert "a,b" not in caught.value.msg
    masked = fabrics_dev.redact_options(fabrics_dev.kernel_options(dict(VALUES, dhchap_secret=KEY)))
    assert KEY not in masked and "dhchap_secret=********" in masked


@pytest.mark.parametrize("reply,name", [("instance=3,cntlid=1\n", "nvme3"), ("cntlid=2,instance=12", "nvme12"),
                                        ("", None), ("instance=x", None)])
def test_reply_names_the_controller(reply, name):
    assert fabrics_dev.parse_instance(reply) == name


class FakeFabricsDevice(object):
    """Stands in for the kernel's /dev/nvme-fabrics: records what is written, answers
    a read with ``reply``, or fails the write with ``fail`` (an errno)."""

    def __init__(self, monkeypatch, path, reply="instance=7,cntlid=2\n", fail=None):
        self.path, self.reply, self.fail, self.written, self.fd = path, reply, fail, [], None
        real_open, real_write, real_read, real_close = os.open, os.write, os.read, os.close

        def fake_open(p, flags, *a):
            if p == path:
                self.fd = real_open(os.devnull, os.O_RDWR)
                return self.fd
            return real_open(p, flags, *a)

        def fake_write(fd, data):
            if fd != self.fd:
                return real_write(fd, data)
            if self.fail:
                raise OSError(self.fail, os.strerror(self.fail))
            self.written.append(data.decode())
            return len(data)

        def fake_read(fd, n):
            return self.reply.encode() if fd == self.fd else real_read(fd, n)

        monkeypatch.setattr(fabrics_dev.os, "open", fake_open)
        monkeypatch.setattr(fabrics_dev.os, "write", fake_write)
        monkeypatch.setattr(fabrics_dev.os, "read", fake_read)
        monkeypatch.setattr(fabrics_dev.os, "close", real_close)


def test_connect_writes_one_option_string_and_returns_the_new_controller(monkeypatch, tmp_path):
    dev = FakeFabricsDevice(monkeypatch, str(tmp_path / "nvme-fabrics"))
    name = fabrics_dev.connect_through_kernel(VALUES, dev=dev.path, kmsg_path=str(tmp_path / "no-kmsg"))
    assert name == "nvme7"
    assert dev.written == [fabrics_dev.kernel_options(VALUES)]


@pytest.mark.parametrize("code,kind", [(errno.EALREADY, "already_connected"), (errno.ECONNREFUSED, "unreachable"),
                                       (errno.EKEYREJECTED, "authentication")])
def test_kernel_refusals_are_classified_and_keep_the_secret_out(monkeypatch, tmp_path, code, kind):
    dev = FakeFabricsDevice(monkeypatch, str(tmp_path / "nvme-fabrics"), fail=code)
    with pytest.raises(NvmeCliError) as caught:
        fabrics_dev.connect_through_kernel(dict(VALUES, dhchap_secret=KEY), dev=dev.path,
                                           kmsg_path=str(tmp_path / "no-kmsg"))
    assert caught.value.kind == kind
    assert KEY not in caught.value.msg and KEY not in str(caught.value.cmd)


def test_missing_device_says_the_module_is_not_loaded(tmp_path):
    with pytest.raises(NvmeCliError, match="nvme-fabrics kernel module") as caught:
        fabrics_dev.connect_through_kernel(VALUES, dev=str(tmp_path / "absent"), kmsg_path=str(tmp_path / "no-kmsg"))
    assert caught.value.kind == "transport_module"


def test_tls_keys_and_flags_follow_nvme_clis_order_as_serials():
    # libnvme 1.13 build_options: ..., ctrl_loss_tmo, fast_io_fail_tmo, (tos), keyring, tls_key, ..., tls, concat.
    values = dict(VALUES, dhchap_secret=KEY, fast_io_fail_tmo=4, keyring=0x0B1C2D3E, tls_key=0x1234, tls=True,
                  concat=True)
    assert fabrics_dev.kernel_options(values).split(",")[-7:] == [
        "dhchap_secret=" + KEY, "reconnect_delay=5", "fast_io_fail_tmo=4", "keyring=186395966", "tls_key=4660",
        "tls", "concat"]
    assert "tls" not in fabrics_dev.kernel_options(dict(VALUES, tls=False)).split(",")


def test_numbers_nvme_cli_would_leave_out_are_left_out():
    # libnvme 1.13 build_options: add_int_argument skips 0 and below, ctrl_loss_tmo keeps -1 and 0.
    text = fabrics_dev.kernel_options(dict(VALUES, keep_alive_tmo=0, fast_io_fail_tmo=-1, ctrl_loss_tmo=-1))
    assert "keep_alive_tmo" not in text and "fast_io_fail_tmo" not in text and text.endswith(",ctrl_loss_tmo=-1")
    assert fabrics_dev.kernel_options(dict(VALUES, ctrl_loss_tmo=0)).endswith(",ctrl_loss_tmo=0")


def test_what_carries_a_secret():
    assert not fabrics_dev.carries_secret(dict(VALUES, tls=True, keyring=".nvme"))
    for key in ("dhchap_secret", "dhchap_ctrl_secret", "tls_key"):
        assert fabrics_dev.carries_secret(dict(VALUES, **{key: "x"}))


def test_the_host_id_of_a_uuid_host_nqn_as_nvme_cli_213_sends_it():
    values = dict(VALUES, hostid=None)
    assert fabrics_dev.with_hostid(values)["hostid"] == "0f3b8a52-6c4e-4d4e-8f0e-2b7d9c1a5e33"
    other = dict(values, hostnqn="nqn.2024-04.io.aiinfra:host1")
    assert fabrics_dev.with_hostid(other)["hostid"] is None
    assert fabrics_dev.with_hostid(dict(VALUES, hostid="11111111-2222-3333-4444-555555555555"))["hostid"] == \
        "11111111-2222-3333-4444-555555555555"


class FakeDiscoverCli(object):
    """FAKE NvmeCli: reads a discovery log from a device (or fails), records disconnects."""

    def __init__(self, fail=False):
        self.fail, self.calls = fail, []

    def discover_device(self, name, values):
        self.calls.append(("discover", name, values.get("dhchap_secret")))
        if self.fail:
            raise NvmeCliError("nvme discover failed: no log", kind="command")
        return [{"subnqn": "nqn.x"}], [3]

    def disconnect(self, name):
        self.calls.append(("disconnect", name))


@pytest.mark.parametrize("fail", [False, True])
def test_discovery_with_a_secret_makes_reads_and_removes_its_controller(monkeypatch, tmp_path, fail):
    dev = FakeFabricsDevice(monkeypatch, str(tmp_path / "nvme-fabrics"))
    cli = FakeDiscoverCli(fail)
    values = dict(transport="tcp", traddr="10.99.0.1", trsvcid="4420", hostnqn=VALUES["hostnqn"],
                  hostid=VALUES["hostid"], dhchap_secret=KEY)
    if fail:
        with pytest.raises(NvmeCliError, match="no log"):
            fabrics_dev.discover_through_kernel(cli, values, dev=dev.path, kmsg_path=str(tmp_path / "no-kmsg"))
    else:
        assert fabrics_dev.discover_through_kernel(cli, values, dev=dev.path,
                                                   kmsg_path=str(tmp_path / "no-kmsg")) == ([{"subnqn": "nqn.x"}], [3])
    assert dev.written == ["nqn=nqn.2014-08.org.nvmexpress.discovery,transport=tcp,traddr=10.99.0.1,trsvcid=4420,"
                           "hostnqn=%s,hostid=%s,dhchap_secret=%s" % (VALUES["hostnqn"], VALUES["hostid"], KEY)]
    assert cli.calls == [("discover", "nvme7", KEY), ("disconnect", "nvme7")]
