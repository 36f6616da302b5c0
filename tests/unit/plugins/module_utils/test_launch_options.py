"""The launcher layer the job modules share (issue 36): one argument spec fragment with the same
option names and aliases in mpi_run, nccl_test and fabric_sweep, documented once (the doc
fragment says what the spec says), one launcher resolution, and one error family per package."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.aiinfra.fabric.plugins.doc_fragments.launcher import ModuleDocFragment
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import job as mpi_job
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launch_options as LO
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import launcher as L
from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.errors import MpiError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.errors import NcclError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.sweep.errors import SweepError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.errors import TlsError
from ansible_collections.aiinfra.fabric.plugins.modules import fabric_sweep, mpi_run, nccl_test

MODULES = {"mpi_run": mpi_run, "nccl_test": nccl_test, "fabric_sweep": fabric_sweep}
SHARED = ("launcher", "mpirun_path", "srun_path", "implementation", "mca", "environment", "allow_run_as_root",
          "launcher_args", "srun_mpi", "timeout")
# The names each module took before, now aliases (nccl_test's extra_args are nccl-tests' own arguments).
OLD_NAMES = {"mpirun": "mpirun_path", "srun": "srun_path", "env": "environment", "extra_args": "launcher_args"}


def option_names(spec):
    names = {}
    for name, option in spec.items():
        names[name] = name
        for alias in option.get("aliases", []):
            names[alias] = name
    return names


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_job_module_takes_the_shared_options_as_the_fragment_defines_them(module):
    spec = MODULES[module].argument_spec()
    for name in SHARED:
        assert name in spec, (module, name)
    for name, option in LO.LAUNCHER_OPTIONS.items():
        mine = dict(spec[name])
        theirs = dict(option)
        if module == "nccl_test" and name == "launcher_args":
            assert "aliases" not in mine
            theirs.pop("aliases")
        assert mine == theirs, (module, name)


def test_the_old_names_are_aliases_everywhere_they_meant_the_same():
    for module, mod in MODULES.items():
        names = option_names(mod.argument_spec())
        for old, new in OLD_NAMES.items():
            if module == "nccl_test" and old == "extra_args":
                # Its own option: the benchmark's arguments, not the launcher's.
                assert names["extra_args"] == "extra_args"
                continue
            assert names[old] == new, (module, old)
    # nccl_test's names of before are the shared names themselves.
    for name in ("mpirun_path", "srun_path", "environment", "launcher_args"):
        assert name in nccl_test.argument_spec()
    assert option_names(mpi_run.argument_spec())["sbatch"] == "sbatch_path"


def test_launcher_choices_and_timeouts_stay_per_module():
    specs = dict((m, mod.argument_spec()) for m, mod in MODULES.items())
    assert specs["mpi_run"]["launcher"] == dict(type="str", choices=["mpirun", "srun", "sbatch"], default="mpirun")
    assert specs["nccl_test"]["launcher"] == dict(type="str", choices=["none", "mpirun", "srun"], default="none")
    assert specs["fabric_sweep"]["launcher"] == dict(type="str", choices=["mpirun", "srun"], default="mpirun")
    assert [specs[m]["timeout"]["default"] for m in ("mpi_run", "nccl_test", "fabric_sweep")] == [3600, 1800, 300]


def test_the_spec_fragment_is_copied_not_shared():
    spec = LO.launcher_argument_spec(["mpirun"], "mpirun", 10, extra_args_alias=False)
    spec["mca"]["default"]["x"] = 1
    assert LO.LAUNCHER_OPTIONS["mca"]["default"] == {}
    assert LO.LAUNCHER_OPTIONS["launcher_args"]["aliases"] == ["extra_args"]


def test_doc_fragment_documents_what_the_spec_takes():
    documented = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]
    assert sorted(documented) == sorted(LO.LAUNCHER_OPTIONS)
    for name, option in LO.LAUNCHER_OPTIONS.items():
        doc = documented[name]
        assert doc["type"] == option["type"], name
        assert doc.get("default") == option.get("default"), name
        assert doc.get("choices") == option.get("choices"), name
        assert doc.get("elements") == option.get("elements"), name
        if name != "launcher_args":
            assert doc.get("aliases") == option.get("aliases"), name
    # launcher_args' alias is a fragment of its own: only where extra_args meant the launcher's.
    assert "aliases" not in documented["launcher_args"]
    assert yaml.safe_load(ModuleDocFragment.EXTRA_ARGS_ALIAS)["options"] == {"launcher_args": {"aliases": ["extra_args"]}}
    for module, mod in MODULES.items():
        fragments = yaml.safe_load(mod.DOCUMENTATION)["extends_documentation_fragment"]
        assert "aiinfra.fabric.launcher" in fragments and "aiinfra.fabric.attributes.job_module" in fragments
        assert ("aiinfra.fabric.launcher.extra_args_alias" in fragments) == (module != "nccl_test"), module
        own = yaml.safe_load(mod.DOCUMENTATION)["options"]
        # The module documents launcher and timeout (its choices, its default); the rest comes from the fragment.
        assert own["launcher"]["choices"] == mod.argument_spec()["launcher"]["choices"]
        assert own["timeout"]["default"] == mod.argument_spec()["timeout"]["default"]
        assert not set(own) & (set(LO.LAUNCHER_OPTIONS) - {"mca", "launcher_args"}), module


def test_aliases_reach_the_module_utils_entry_points():
    assert LO.with_canonical_names({"mpirun": "/x/mpirun", "env": {"A": 1}, "extra_args": ["-v"], "sbatch": "sb"}) == {
        "mpirun_path": "/x/mpirun", "environment": {"A": 1}, "launcher_args": ["-v"], "sbatch_path": "sb"}
    # AnsibleModule leaves the alias beside the name it filled; the name wins.
    assert LO.with_canonical_names({"env": {"A": 1}, "environment": {"B": 2}}) == {"environment": {"B": 2}}
    plan = mpi_job.plan_job({"program": "a", "mpirun": "/opt/ompi/bin/mpirun", "env": {"A": "1"},
                             "extra_args": ["--report-bindings"]}, L.OPENMPI, 1, lambda n: True, "/bin/a")
    same = mpi_job.plan_job({"program": "a", "mpirun_path": "/opt/ompi/bin/mpirun", "environment": {"A": "1"},
                             "launcher_args": ["--report-bindings"]}, L.OPENMPI, 1, lambda n: True, "/bin/a")
    assert plan["argv"] == same["argv"] == ["/opt/ompi/bin/mpirun", "-np", "1", "-x", "A=1", "--report-bindings",
                                            "/bin/a"]


# --------------------------------------------------------------------------- one launcher resolution

def executable(path, mode=0o755):
    path.write_text("#!/bin/sh\n")
    path.chmod(mode)
    return str(path)


def test_find_executable(tmp_path):
    prog = executable(tmp_path / "prog")
    plain = executable(tmp_path / "plain", 0o644)
    which = {"osu_bw": "/usr/bin/osu_bw"}.get
    assert L.find_executable("osu_bw", which) == "/usr/bin/osu_bw"
    assert L.find_executable("nosuch", which) is None
    assert L.find_executable(prog, which) == prog
    assert L.find_executable(plain, which) is None
    assert L.find_executable(str(tmp_path), which) is None
    assert L.find_executable("./sub/../prog", which, cwd=str(tmp_path)) == prog
    assert L.find_executable("", which) is None


class Probe(object):
    def __init__(self, out="mpirun (Open MPI) 4.1.4\n", rc=0):
        self.calls = []
        self.out, self.rc = out, rc

    def __call__(self, argv):
        self.calls.append(list(argv))
        return self.rc, self.out, ""


def test_resolve_mpirun_detects_the_mpi(tmp_path):
    probe = Probe()
    got = L.resolve_launcher("mpirun", {"mpirun_path": "mpirun", "implementation": "auto"},
                             {"mpirun": "/usr/bin/mpirun"}.get, probe, "te1")
    assert got == {"launcher": "mpirun", "paths": {"mpirun": "/usr/bin/mpirun"},
                   "implementation": {"implementation": "openmpi", "version": "4.1.4",
                                      "banner": "mpirun (Open MPI) 4.1.4"}}
    assert probe.calls == [["/usr/bin/mpirun", "--version"]]
    mpirun = executable(tmp_path / "mpirun")
    probe = Probe()
    got = L.resolve_launcher("mpirun", {"mpirun_path": mpirun, "implementation": "mpich"}, {}.get, probe)
    assert got["paths"] == {"mpirun": mpirun} and got["implementation"]["implementation"] == "mpich"
    assert probe.calls == []


def test_resolve_slurm_launchers_find_their_tools(tmp_path):
    srun = executable(tmp_path / "srun")
    sbatch = executable(tmp_path / "sbatch")
    got = L.resolve_launcher("sbatch", {"srun_path": srun, "sbatch_path": sbatch}, {}.get, Probe())
    assert got == {"launcher": "sbatch", "paths": {"srun": srun, "sbatch": sbatch}, "implementation": None}
    assert L.resolve_launcher("srun", {}, {"srun": "/usr/bin/srun"}.get, Probe())["paths"] == {"srun": "/usr/bin/srun"}
    assert L.resolve_launcher("none", {}, {}.get, Probe()) == {"launcher": "none", "paths": {}, "implementation": None}


def test_resolve_fails_before_anything_runs_and_says_what_to_do():
    with pytest.raises(L.LauncherError, match=r"^mpirun '/opt/x/mpirun' was not found on te1: install an MPI "
                                              r"\(e\.g\. openmpi-bin\) or set mpirun_path to its path$"):
        L.resolve_launcher("mpirun", {"mpirun_path": "/opt/x/mpirun"}, {}.get, Probe(), "te1")
    with pytest.raises(L.LauncherError, match=r"^sbatch 'sbatch' was not found on te1: launcher=sbatch needs "
                                              r"Slurm's client commands \(slurm-client\), or set sbatch_path"):
        L.resolve_launcher("sbatch", {}, {"srun": "/usr/bin/srun"}.get, Probe(), "te1")
    with pytest.raises(L.LauncherError, match=r"'/usr/bin/mpirun --version' failed \(rc=1\)"):
        L.resolve_launcher("mpirun", {}, {"mpirun": "/usr/bin/mpirun"}.get, Probe(rc=1))
    with pytest.raises(L.LauncherError, match="launcher must be one of"):
        L.resolve_launcher("pbs", {}, {}.get, Probe())


def test_the_modules_no_longer_carry_their_own_lookup_helpers():
    assert not hasattr(mpi_run, "_find_program") and not hasattr(mpi_run, "_resolves")
    for mod in MODULES.values():
        with open(mod.__file__) as handle:
            text = handle.read()
        assert "detect_implementation" not in text and "def find_program" not in text, mod.__name__


# --------------------------------------------------------------------------- one error family per package

FAMILIES = {
    NvmeError: ("nvme", ["cli.NvmeCliError", "connection.ValidationError", "connect_run.ConnectFailure",
                         "multipath.MultipathError", "multipath_run.MultipathFailure", "signatures.SignatureError",
                         "rdma_link.RdmaLinkError", "fio.FioError", "heal.HealError", "health.HealthError"]),
    TlsError: ("tls", ["psk.PskError", "kernel_keys.KernelKeyError", "load.KeyringError"]),
    # nvmet's base lives in common.py, which the boot restorer carries (an errors.py would be
    # one more file on the target for one class).
    NvmetError: ("nvmet", ["document.DocumentError", "record.RecordError", "tls_keys.TlsKeyError",
                           "topology.TopologyError", "canonical.KernelRejects"]),
    MpiError: ("mpi", ["launcher.LauncherError", "sbatch.BatchError", "sbatch.UnsafeOutput", "job.MpiJobError",
                       "expect.ExpectError"]),
    NcclError: ("nccl", ["command.NcclTestsError", "catalog.CatalogError", "transport.TransportError",
                         "job.NcclJobError"]),
    SweepError: ("sweep", ["plan.SweepPlanError", "measure.MeasureError", "execute.SweepRunError", "rank.RankError",
                           "bisect.BisectionError", "hostlist.HostlistError"]),
}


@pytest.mark.parametrize("base", list(FAMILIES), ids=lambda b: b.__name__)
def test_each_package_has_one_error_family(base):
    import importlib
    package, members = FAMILIES[base]
    found = set()
    for member in members:
        module, name = member.split(".")
        cls = getattr(importlib.import_module("ansible_collections.aiinfra.fabric.plugins.module_utils.%s.%s"
                                              % (package, module)), name)
        assert issubclass(cls, base), member
        if base in (MpiError, NcclError, SweepError) or name in ("ValidationError", "MultipathError", "PskError",
                                                                 "KernelRejects"):
            # These were ValueErrors; the family keeps them so.
            assert issubclass(cls, ValueError), member
        found.add(member)
    # Every public exception class of the package is in the family (private stop signals aside).
    # (Constructors differ - FioError(msg, **details), NvmeCliError(argv, rc, ...) - so none is built here.)
    here = os.path.dirname(importlib.import_module(base.__module__).__file__)
    declared = set()
    for filename in sorted(os.listdir(here)):
        if not filename.endswith(".py") or filename == "errors.py":
            continue
        mod = importlib.import_module("ansible_collections.aiinfra.fabric.plugins.module_utils.%s.%s"
                                      % (package, filename[:-3]))
        for name, value in vars(mod).items():
            if isinstance(value, type) and issubclass(value, Exception) and value.__module__ == mod.__name__ \
                    and not name.startswith("_"):
                declared.add("%s.%s" % (filename[:-3], name))
    declared.discard("%s.%s" % (base.__module__.rsplit(".", 1)[1], base.__name__))
    assert declared - SHARED_COMMAND_ERRORS == found


def test_the_nvmet_members_keep_their_messages_and_gain_msg():
    """nvmet modules report ``exc.msg``: each member has it, equal to its message as before."""
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import canonical, record, tls_keys, topology
    for exc in (topology.TopologyError(["a: bad", "b: bad"]), tls_keys.TlsKeyError(["h: no PSK"]),
                record.RecordError("x: not in the record"), canonical.KernelRejects("'x' is not a boolean")):
        assert isinstance(exc, NvmetError) and exc.msg == str(exc) and exc.applied == []
    assert str(topology.TopologyError(["a: bad", "b: bad"])) == (
        "nvmeof_target: 2 error(s) in the variables, nothing was changed: a: bad; b: bad")
    assert topology.TopologyError(["a: bad"]).errors == ["a: bad"]
    with pytest.raises(ValueError, match="is not a boolean"):
        canonical.kstrtobool("maybe", "enable")


# The command runner's failure (nvme/runner.py) is the one exception both packages' command
# failures derive from, beside their own package's base, so it is neither's member.
SHARED_COMMAND_ERRORS = {"runner.CommandError"}


def test_command_failures_of_both_packages_share_the_runners_error():
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCliError
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.runner import CommandError
    from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyringError
    for cls, base in ((NvmeCliError, NvmeError), (KeyringError, TlsError)):
        assert issubclass(cls, CommandError) and issubclass(cls, base)
        exc = cls("failed", rc=1, stdout="", stderr="no", cmd=["keyctl", "rlist", "1"])
        assert dict((k, exc.details()[k]) for k in ("rc", "stdout", "stderr", "cmd")) == {
            "rc": 1, "stdout": "", "stderr": "no", "cmd": ["keyctl", "rlist", "1"]}
    assert not issubclass(CommandError, NvmeError) and not issubclass(CommandError, TlsError)


def test_a_stop_signal_is_not_an_error():
    from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi import runner, sbatch
    assert not issubclass(runner._Cancelled, MpiError) and not issubclass(sbatch._Stopped, MpiError)
