"""MultipathSysfs and the multipath decisions against a temporary /sys and /dev.

The tree is written by hand in the layout of Linux 6.12 with native multipath
(/sys/class/nvme-subsystem/nvme-subsys<S>/{iopolicy,subsysnqn,nvme<C>,nvme<S>n<H>},
/sys/class/nvme/nvme<C>/nvme<S>c<C>n<H>/{ana_state,ana_grpid}); it is a fake of that
layout, the lab scenario nvmeof_multipath reads the real one.
"""

import os
import sys

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import (
    MultipathError, MultipathSysfs, kernel_version, missing_subsystems, path_shortfall, plan_iopolicy,
    usable_paths, validate_iopolicy,
)

sys.path.insert(0, os.path.dirname(__file__))
from nvme_multipath_fake import NQN, OTHER, two_path_tree, write  # noqa: E402


def test_subsystem_heads_paths_and_ana(tmp_path):
    sysfs = two_path_tree(tmp_path)
    [subsystem] = sysfs.subsystems([NQN])
    assert subsystem["name"] == "nvme-subsys1" and subsystem["iopolicy"] == "numa"
    assert [p["controller"] for p in subsystem["paths"]] == ["nvme1", "nvme2"]
    assert [p["traddr"] for p in subsystem["paths"]] == ["10.99.0.1", "10.99.1.1"]
    head1, head2 = subsystem["heads"]
    assert head1["path"] == "/dev/nvme1n1" and head1["nsid"] == 1 and head1["size_bytes"] == 1 << 30
    # The WWID-based by-id name is preferred over model_serial; the partition link is not the head's.
    assert head1["by_id"].endswith("/disk/by-id/nvme-uuid.00000001-aaaa-bbbb-cccc-dddddddddddd")
    assert len(head1["by_id_links"]) == 2
    assert [(p["controller"], p["ana_state"], p["state"]) for p in head1["paths"]] == [
        ("nvme1", "optimized", "live"), ("nvme2", "optimized", "live")]
    assert [p["ana_state"] for p in head2["paths"]] == ["non-optimized", "optimized"]
    assert head2["by_id"] is None
    # Completed reads + writes per path (block stat fields 1 and 5): which path carried I/O.
    assert [p["ios"] for p in head1["paths"]] == [110, 220]


def test_completed_ios():
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import completed_ios
    assert completed_ios("    1234        0   98720      361     4321        0    34568     2000        0") == 5555
    assert completed_ios(None) is None
    assert completed_ios("1 2") is None


def test_only_requested_nqns_are_read(tmp_path):
    sysfs = two_path_tree(tmp_path)
    assert [s["nqn"] for s in sysfs.subsystems()] == [NQN, OTHER]
    assert missing_subsystems(sysfs.subsystems([NQN, "nqn.2024-04.io.x:gone"]), [NQN, "nqn.2024-04.io.x:gone"]) == [
        "nqn.2024-04.io.x:gone"]


def test_native_multipath_parameter(tmp_path):
    sysfs = MultipathSysfs(sys_root=str(tmp_path))
    assert sysfs.native_multipath() is None
    write(tmp_path, "module/nvme_core/parameters/multipath", "N")
    assert sysfs.native_multipath() is False
    write(tmp_path, "module/nvme_core/parameters/multipath", "Y")
    assert sysfs.native_multipath() is True


def test_a_lost_path_and_an_inaccessible_path_are_not_usable(tmp_path):
    sysfs = two_path_tree(tmp_path, second_state="connecting")
    head1 = sysfs.subsystems([NQN])[0]["heads"][0]
    assert [p["controller"] for p in usable_paths(head1)] == ["nvme1"]
    problems = path_shortfall(sysfs.subsystems([NQN]), 2)
    assert len(problems) == 2 and "state=connecting" in problems[0]
    write(tmp_path, "sys/class/nvme/nvme2/state", "live")
    write(tmp_path, "sys/class/nvme/nvme1/nvme1c1n1/ana_state", "inaccessible")
    problems = path_shortfall(sysfs.subsystems([NQN]), 2)
    assert len(problems) == 1 and "/dev/nvme1n1" in problems[0] and "ana=inaccessible" in problems[0]
    write(tmp_path, "sys/class/nvme/nvme1/nvme1c1n1/ana_state", "optimized")
    assert path_shortfall(sysfs.subsystems([NQN]), 2) == []
    assert path_shortfall(sysfs.subsystems([NQN]), 0) == []


def test_plan_iopolicy_only_where_it_differs(tmp_path):
    sysfs = two_path_tree(tmp_path)
    subsystems = sysfs.subsystems()
    assert plan_iopolicy(subsystems, None) == []
    assert plan_iopolicy(subsystems, "round-robin") == [
        ("nvme-subsys1", NQN, "numa", "round-robin"), ("nvme-subsys0", OTHER, "numa", "round-robin")]
    assert plan_iopolicy(subsystems, "numa") == []


def test_write_iopolicy_reads_back(tmp_path):
    sysfs = two_path_tree(tmp_path)
    sysfs.write_iopolicy("nvme-subsys1", "round-robin")
    assert sysfs.subsystems([NQN])[0]["iopolicy"] == "round-robin"
    with pytest.raises(MultipathError, match="failed"):
        sysfs.write_iopolicy("nvme-subsys9", "round-robin")


@pytest.mark.parametrize("release, expected", [("6.12.48+deb12-amd64", (6, 12)), ("5.10.0-30-amd64", (5, 10)),
                                               ("garbage", None)])
def test_kernel_version(release, expected):
    assert kernel_version(release) == expected


def test_queue_depth_needs_6_11():
    assert validate_iopolicy("queue-depth", "6.12.48+deb12-amd64") == "queue-depth"
    assert validate_iopolicy("queue-depth", "6.11.0") == "queue-depth"
    with pytest.raises(MultipathError, match="Linux 6.11 or later; this host runs 6.1.0-28-amd64"):
        validate_iopolicy("queue-depth", "6.1.0-28-amd64")
    assert validate_iopolicy("round-robin", "5.4.0") == "round-robin"
    assert validate_iopolicy(None, "6.1.0") is None
    with pytest.raises(MultipathError, match="not one of"):
        validate_iopolicy("least-busy", "6.12.0")
