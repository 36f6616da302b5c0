# -*- coding: utf-8 -*-
"""nvme_connections glue on a FAKE sysfs, a FAKE nvme-cli and a FAKE multipath sysfs: every path
validated and planned before the first change, one connect per missing path, the multipath
step per subsystem, re-runs that change nothing, check mode, and refusals that change nothing.
The real kernel side is proven in the lab (molecule nvmeof_rdma, nvmeof_multipath, and
benchmarks/nvme_many_initiators.sh)."""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import connect_run
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCliError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.host import host_identity
from ansible_collections.aiinfra.fabric.plugins.modules import nvme_connections
from module_harness import run_main  # tests/unit/plugins/modules/module_harness.py

MP = "nqn.2024-04.io.aiinfra.lab:te1.mp"
SCRATCH = "nqn.2024-04.io.aiinfra.lab:te1.scratch"
OWN = "nqn.2014-08.org.nvmexpress:uuid:11111111-1111-4111-8111-111111111111"


class FakeSysfs(object):
    """FAKE FabricsSysfs over the controllers in ``live``; ``in_use`` lists busy block devices."""

    live = []
    in_use = {}
    reads = 0
    holding, held = False, None
    waits = []  # how many new connections each wait was for

    def __init__(self, *a, **kw):
        FakeSysfs.holding, FakeSysfs.held = False, None  # a module run starts with nothing held

    def controllers(self, match=None):
        # As FabricsSysfs: while held, every call answers from the first read.
        if FakeSysfs.held is None:
            FakeSysfs.reads += 1
            snapshot = [dict(c) for c in FakeSysfs.live]
            if FakeSysfs.holding:
                FakeSysfs.held = snapshot
        else:
            snapshot = FakeSysfs.held
        return [dict(c) for c in snapshot if match is None or match(c)]

    def hold(self):
        FakeSysfs.holding, FakeSysfs.held = True, None

    def release(self):
        FakeSysfs.holding, FakeSysfs.held = False, None

    def read_secrets(self, name):
        return {}

    def online_cpus(self):
        return 2

    def devices_of(self, controllers):
        return [dict(path="/dev/%sn1" % c["name"], name="%sn1" % c["name"], nsid=1, controller=c["name"])
                for c in controllers]

    def usage(self, names):
        return ["%s is mounted on %s" % (n, FakeSysfs.in_use[n]) for n in names if n in FakeSysfs.in_use]

    def fabrics_device_present(self):
        return True

    def transport_module_loaded(self, transport):
        return True


class FakeCli(object):
    """FAKE NvmeCli: a connect adds a live controller, a disconnect removes it; every call is recorded."""

    calls = []

    def __init__(self, module):
        pass

    def gen_hostnqn(self):
        raise AssertionError("nvme_connections never generates a host NQN")

    def help_options(self, command):
        return {"config"}

    def saved_connections_format(self):
        return "json"

    refuse = None  # a traddr whose connect fails, as the kernel refusing it

    def connect(self, values, tls_key_flag="--tls_key"):
        name = "nvme%d" % len(FakeCli.calls)
        FakeCli.calls.append(("connect", values["nqn"], values["traddr"]))
        if values["traddr"] == FakeCli.refuse:
            raise NvmeCliError("nvme connect failed: connection refused", kind="connection_refused", rc=1)
        FakeSysfs.live.append(dict(name=name, state="live", transport=values["transport"], subsysnqn=values["nqn"],
                                   traddr=values["traddr"], trsvcid=values["trsvcid"], host_traddr=None,
                                   host_iface=None, hostnqn=values["hostnqn"], hostid=values["hostid"]))

    @staticmethod
    def kernel_connect(values, *a, **kw):
        """FAKE connect_run.connect_through_kernel: a connect with secrets is written to
        /dev/nvme-fabrics (never nvme-cli's argv); it adds a live controller as connect does."""
        name = "nvme%d" % len(FakeCli.calls)
        FakeCli.calls.append(("kernel connect", values["nqn"], values["traddr"]))
        FakeSysfs.live.append(dict(name=name, state="live", transport=values["transport"], subsysnqn=values["nqn"],
                                   traddr=values["traddr"], trsvcid=values["trsvcid"], host_traddr=None,
                                   host_iface=None, hostnqn=values["hostnqn"], hostid=values["hostid"]))
        return name

    def disconnect(self, name):
        FakeCli.calls.append(("disconnect", name))
        FakeSysfs.live[:] = [c for c in FakeSysfs.live if c["name"] != name]


class FakeMultipath(object):
    """FAKE MultipathSysfs: one subsystem per connected NQN, one head whose paths are its controllers."""

    policies = {}
    writes = []

    def __init__(self, *a, **kw):
        pass

    def native_multipath(self):
        return True

    def subsystems(self, nqns):
        out = []
        for i, nqn in enumerate(sorted(set(c["subsysnqn"] for c in FakeSysfs.live))):
            if nqn not in nqns:
                continue
            paths = [dict(controller=c["name"], transport=c["transport"], traddr=c["traddr"], trsvcid=c["trsvcid"],
                          state="live", ana_state="optimized") for c in FakeSysfs.live if c["subsysnqn"] == nqn]
            out.append(dict(name="nvme-subsys%d" % i, nqn=nqn, iopolicy=FakeMultipath.policies.get(nqn, "numa"),
                            heads=[dict(path="/dev/nvme%dn1" % i, paths=paths)]))
        return out

    def write_iopolicy(self, name, iopolicy):
        FakeMultipath.writes.append((name, iopolicy))
        for sub in self.subsystems(list(set(c["subsysnqn"] for c in FakeSysfs.live))):
            if sub["name"] == name:
                FakeMultipath.policies[sub["nqn"]] = iopolicy


def reset():
    FakeSysfs.live, FakeSysfs.in_use = [], {}
    FakeSysfs.reads, FakeSysfs.holding, FakeSysfs.held, FakeSysfs.waits = 0, False, None, []
    FakeCli.calls, FakeCli.refuse = [], None
    FakeMultipath.policies, FakeMultipath.writes = {}, []


def run(monkeypatch, tmp_path, args, check_mode=False):
    (tmp_path / "hostnqn").write_text(OWN + "\n")
    monkeypatch.setattr(nvme_connections, "FabricsSysfs", FakeSysfs)
    monkeypatch.setattr(nvme_connections, "NvmeCli", FakeCli)
    monkeypatch.setattr(nvme_connections, "MultipathSysfs", FakeMultipath)
    monkeypatch.setattr(connect_run, "connect_through_kernel", FakeCli.kernel_connect)
    monkeypatch.setattr(connect_run, "CONFIG_JSON", str(tmp_path / "config.json"))
    monkeypatch.setattr(connect_run, "NVME_ETC", str(tmp_path))
    monkeypatch.setattr(connect_run, "host_identity", lambda *a: host_identity(*a, etc=str(tmp_path)))

    def wait_for_connections(sysfs, wanted, timeout):
        FakeSysfs.waits.append(len(wanted))
        found = [connect_run.matching_controllers(sysfs.controllers(), desired) for desired in wanted]
        return [(ctrls, sysfs.devices_of(ctrls), None) for ctrls in found]
    monkeypatch.setattr(connect_run, "wait_for_connections", wait_for_connections)
    monkeypatch.setattr(connect_run, "wait_gone", lambda *a: None)
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    return run_main(monkeypatch, nvme_connections, args)


TOPOLOGY = [
    dict(nqn=MP, iopolicy="round-robin", paths=[dict(transport="tcp", traddr="10.99.0.1", trsvcid="4420"),
                                                dict(transport="tcp", traddr="10.99.1.1", trsvcid="4420")]),
    dict(nqn=SCRATCH, paths=[dict(transport="rdma", traddr="10.99.0.1", trsvcid="4421")]),
]


def test_connects_every_path_sets_the_policy_and_a_rerun_changes_nothing(monkeypatch, tmp_path):
    reset()
    first = run(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY, ctrl_loss_tmo=600))
    assert "failed" not in first, first
    assert first["changed"] is True
    assert FakeCli.calls == [("connect", MP, "10.99.0.1"), ("connect", MP, "10.99.1.1"),
                             ("connect", SCRATCH, "10.99.0.1")]
    assert [c["where"] for c in first["connections"]] == ["subsystems[0].paths[0]", "subsystems[0].paths[1]",
                                                          "subsystems[1].paths[0]"]
    assert [c["operations"] for c in first["connections"]] == [["connect"]] * 3
    assert FakeSysfs.waits == [3]  # connected one after the other, then waited for together
    assert [c["name"] for c in first["controllers"]] == ["nvme0", "nvme1", "nvme2"]
    assert FakeMultipath.writes == [("nvme-subsys0", "round-robin")]  # the scratch subsystem names no policy
    assert [s["nqn"] for s in first["subsystems"]] == [MP, SCRATCH]
    assert "nvme-subsys0 iopolicy numa -> round-robin" in first["operations"]

    FakeSysfs.reads = 0
    again = run(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY, ctrl_loss_tmo=600))
    assert "failed" not in again, again
    assert again["changed"] is False and again["operations"] == []
    # Planned and reported from one read of the controllers, not two per path; no new wait.
    assert FakeSysfs.reads == 1 and FakeSysfs.waits == [3]
    assert len(FakeCli.calls) == 3 and len(FakeMultipath.writes) == 1
    assert [d["path"] for d in again["devices"]] == ["/dev/nvme0n1", "/dev/nvme1n1", "/dev/nvme2n1"]


def test_every_input_error_is_named_at_once_and_nothing_is_touched(monkeypatch, tmp_path):
    reset()
    bad = [
        dict(nqn=MP, paths=[dict(transport="tcp", traddr="10.99.0.1"), dict(transport="tcp", traddr="not-an-ip")]),
        dict(nqn=SCRATCH, min_live_paths=3, paths=[dict(transport="rdma", traddr="10.99.0.1", trsvcid="4421")]),
        dict(nqn=MP, paths=[dict(transport="tcp", traddr="10.99.0.1")]),
    ]
    out = run(monkeypatch, tmp_path, dict(subsystems=bad))
    assert out.get("failed") is True
    assert len(out["errors"]) == 4, out["errors"]
    assert out["errors"][0].startswith("subsystems[0].paths[1]: ") and "traddr" in out["errors"][0]
    assert out["errors"][1].startswith("subsystems[1].min_live_paths: ")
    assert out["errors"][2].startswith("subsystems[2].paths[0]: the same path as subsystems[0].paths[0]")
    assert out["errors"][3].startswith("subsystems[2].nqn: ") and "listed twice" in out["errors"][3]
    assert FakeCli.calls == [] and not (tmp_path / "config.json").exists()


def test_a_disconnect_refused_on_one_path_disconnects_no_path(monkeypatch, tmp_path):
    reset()
    assert "failed" not in run(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY))
    FakeSysfs.in_use = {"nvme2n1": "/mnt/scratch"}  # the scratch subsystem's namespace, listed last
    out = run(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY, state="disconnected"))
    assert out.get("failed") is True
    assert out["msg"].startswith("subsystems[1].paths[0] (%s rdma 10.99.0.1:4421): refusing to disconnect" % SCRATCH)
    assert "nothing was changed" in out["msg"]
    assert [c for c in FakeCli.calls if c[0] == "disconnect"] == [] and len(FakeSysfs.live) == 3

    forced = run(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY, state="disconnected", force=True))
    assert "failed" not in forced, forced
    assert forced["changed"] is True and FakeSysfs.live == []
    assert "subsystems" not in forced  # no multipath step when disconnecting


def test_check_mode_plans_every_path_and_changes_nothing(monkeypatch, tmp_path):
    reset()
    out = run(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY, persistent=True), check_mode=True)
    assert "failed" not in out, out
    assert out["changed"] is True
    assert FakeCli.calls == [] and FakeMultipath.writes == [] and not (tmp_path / "config.json").exists()
    assert out["operations"][0] == "%s tcp 10.99.0.1:4420: connect" % MP
    assert "%s tcp 10.99.0.1:4420: write /etc/nvme/config.json" % MP in out["operations"]
    assert out["subsystems"] == []  # nothing connected yet: nothing to wait for


def test_the_roles_topology_and_records_become_the_modules_subsystems():
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connections import by_subsystem, from_role_topology
    defaults = dict(transport="rdma", trsvcid=4420, hostnqn="", iopolicy="round-robin", tls="False", min_live_paths="0")
    role = [dict(nqn=MP, paths=[dict(traddr="10.99.0.1", host_traddr=""),
                                dict(traddr="10.99.1.1", transport="tcp", trsvcid="4430")]),
            dict(nqn=SCRATCH, iopolicy="numa", tls=True, paths=[dict(traddr="10.99.0.1", transport="tcp")])]
    assert from_role_topology(role, defaults) == [
        dict(nqn=MP, iopolicy="round-robin", tls=False, min_live_paths=2,
             paths=[dict(transport="rdma", traddr="10.99.0.1", trsvcid="4420"),
                    dict(transport="tcp", traddr="10.99.1.1", trsvcid="4430")]),
        dict(nqn=SCRATCH, iopolicy="numa", tls=True, min_live_paths=1,
             paths=[dict(transport="tcp", traddr="10.99.0.1", trsvcid="4420")]),
    ]
    # A role-wide min_live_paths is passed on as given (the module refuses more than a subsystem lists).
    assert from_role_topology(role[:1], dict(defaults, min_live_paths=3))[0]["min_live_paths"] == 3
    recorded = [dict(nqn=MP, transport="tcp", traddr="10.99.0.1", trsvcid=4420, host_traddr="", hostnqn=OWN),
                dict(nqn=SCRATCH, transport="rdma", traddr="10.99.0.1", trsvcid="4421"),
                dict(nqn=MP, transport="tcp", traddr="10.99.0.1", trsvcid="4420", hostnqn=OWN)]
    assert by_subsystem(recorded) == [
        dict(nqn=MP, paths=[dict(transport="tcp", traddr="10.99.0.1", trsvcid="4420", hostnqn=OWN)]),
        dict(nqn=SCRATCH, paths=[dict(transport="rdma", traddr="10.99.0.1", trsvcid="4421")]),
    ]


def test_a_refused_connect_keeps_the_paths_before_it_and_touches_none_after(monkeypatch, tmp_path):
    reset()
    FakeCli.refuse = "10.99.1.1"  # the second path of the first subsystem
    out = run(monkeypatch, tmp_path, dict(subsystems=TOPOLOGY, persistent=True))
    assert out.get("failed") is True
    assert out["msg"].startswith("subsystems[0].paths[1] (%s tcp 10.99.1.1:4420): nvme connect failed" % MP)
    assert out["error_kind"] == "connection_refused"
    # The first path was connected, waited for and saved; the third was never tried.
    assert FakeCli.calls == [("connect", MP, "10.99.0.1"), ("connect", MP, "10.99.1.1")]
    assert FakeSysfs.waits == [1]
    assert [c["where"] for c in out["connections"]] == ["subsystems[0].paths[0]"]
    assert out["connections"][0]["persistent"] is True and (tmp_path / "config.json").exists()
