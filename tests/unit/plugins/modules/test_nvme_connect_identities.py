# -*- coding: utf-8 -*-
"""nvme_connect glue, one machine as many host identities, on FAKE sysfs and a FAKE nvme-cli:
the second identity to a subsystem and address connects through /dev/nvme-fabrics, because
nvme-cli 2.3 refuses it as "already connected" (the real refusal and the real kernel connect
are proven in the lab: benchmarks/nvme_many_initiators.sh)."""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.host import host_identity
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import connect_run
from ansible_collections.aiinfra.fabric.plugins.modules import nvme_connect
from module_harness import run_main  # tests/unit/plugins/modules/module_harness.py

NQN = "nqn.2024-04.io.aiinfra.bench:many"
FIRST = "nqn.2014-08.org.nvmexpress:uuid:11111111-1111-4111-8111-111111111111"
SECOND = "nqn.2014-08.org.nvmexpress:uuid:22222222-2222-4222-8222-222222222222"


def controller(name, hostnqn):
    return dict(name=name, state="live", transport="tcp", subsysnqn=NQN, traddr="10.99.0.1", trsvcid="4439",
                host_traddr=None, host_iface=None, src_addr="10.99.0.2", hostnqn=hostnqn, hostid=hostnqn[-36:],
                ctrl_loss_tmo=600, reconnect_delay=10, keep_alive_tmo=5, nr_io_queues=1, queue_size=128,
                namespaces=[])


class FakeSysfs(object):
    """FAKE FabricsSysfs: the controllers listed in ``live``; a connect adds one."""

    live = []

    def __init__(self, *a, **kw):
        pass

    def controllers(self, match=None):
        return [c for c in FakeSysfs.live if match is None or match(c)]

    def read_secrets(self, name):
        return {}

    def online_cpus(self):
        return 1

    def devices_of(self, controllers):
        return []

    def usage(self, names):
        return []

    def fabrics_device_present(self):
        return True

    def transport_module_loaded(self, transport):
        return True


class FakeCli(object):
    """FAKE NvmeCli: records connects and, like nvme-cli 2.3, refuses one when any host
    NQN already has a controller to the subsystem at the address."""

    calls = []

    def __init__(self, module):
        pass

    def gen_hostnqn(self):
        raise AssertionError("no host NQN is generated here")

    def help_options(self, command):
        return {"config"}

    def connect(self, values, tls_key_flag="--tls_key"):
        if FakeSysfs.live:
            raise AssertionError("nvme-cli 2.3 would say 'already connected' here")
        FakeCli.calls.append(("nvme connect", values["hostnqn"], values["hostid"]))
        FakeSysfs.live.append(controller("nvme%d" % len(FakeSysfs.live), values["hostnqn"]))


def run(monkeypatch, tmp_path, hostnqn):
    kernel = []

    def fake_kernel_connect(values, *a, **kw):
        kernel.append((values["hostnqn"], values["hostid"]))
        FakeSysfs.live.append(controller("nvme%d" % len(FakeSysfs.live), values["hostnqn"]))
        return "nvme%d" % (len(FakeSysfs.live) - 1)

    monkeypatch.setattr(nvme_connect, "FabricsSysfs", FakeSysfs)
    monkeypatch.setattr(nvme_connect, "NvmeCli", FakeCli)
    monkeypatch.setattr(connect_run, "connect_through_kernel", fake_kernel_connect, raising=False)
    monkeypatch.setattr(connect_run, "CONFIG_JSON", str(tmp_path / "config.json"))
    monkeypatch.setattr(connect_run, "host_identity", lambda *a: host_identity(*a, etc=str(tmp_path)))
    monkeypatch.setattr(connect_run, "wait_for_connection",
                        lambda sysfs, desired, timeout: ([c for c in FakeSysfs.live if c["hostnqn"] == hostnqn], [], None))
    args = dict(transport="tcp", traddr="10.99.0.1", trsvcid="4439", nqn=NQN, hostnqn=hostnqn)
    return run_main(monkeypatch, nvme_connect, args), kernel


def test_second_identity_connects_through_the_kernel_and_reruns_change_nothing(monkeypatch, tmp_path):
    FakeSysfs.live, FakeCli.calls = [], []
    first, kernel = run(monkeypatch, tmp_path, FIRST)
    assert first["changed"] is True and first["operations"] == ["connect"]
    assert FakeCli.calls == [("nvme connect", FIRST, FIRST[-36:])] and kernel == []
    second, kernel = run(monkeypatch, tmp_path, SECOND)
    assert "failed" not in second, second
    assert second["changed"] is True and second["operations"] == [connect_run.CONNECT_VIA_KERNEL]
    assert kernel == [(SECOND, SECOND[-36:])]  # its own host ID, from its NQN
    assert [c["name"] for c in second["controllers"]] == ["nvme1"]
    for hostnqn in (FIRST, SECOND):
        again, kernel = run(monkeypatch, tmp_path, hostnqn)
        assert again["changed"] is False and again["operations"] == [] and kernel == []
