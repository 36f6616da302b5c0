"""A FAKE native-multipath sysfs tree, written by hand in the layout of Linux 6.12
(/sys/class/nvme-subsystem/nvme-subsys<S>/{iopolicy,subsysnqn,nvme<C>,nvme<S>n<H>},
/sys/class/nvme/nvme<C>/nvme<S>c<C>n<H>/{ana_state,ana_grpid,stat}). The lab scenario
nvmeof_multipath reads the real one."""

import os

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import MultipathSysfs

NQN = "nqn.2024-04.io.aiinfra.lab:te1.mp"
OTHER = "nqn.2024-04.io.aiinfra.lab:te1.other"


def write(root, rel, text):
    full = os.path.join(str(root), rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as out:
        out.write(text + "\n")


def add_ctrl(root, ctrl, subsys, traddr, state="live", heads=(), ana=None, transport="tcp"):
    write(root, "sys/class/nvme/nvme%d/transport" % ctrl, transport)
    write(root, "sys/class/nvme/nvme%d/state" % ctrl, state)
    write(root, "sys/class/nvme/nvme%d/address" % ctrl, "traddr=%s,trsvcid=4420,src_addr=10.99.0.2" % traddr)
    os.makedirs(os.path.join(str(root), "sys/class/nvme-subsystem/nvme-subsys%d/nvme%d" % (subsys, ctrl)), exist_ok=True)
    for head in heads:
        pdir = "sys/class/nvme/nvme%d/nvme%dc%dn%d" % (ctrl, subsys, ctrl, head)
        write(root, pdir + "/nsid", str(head))
        write(root, pdir + "/stat", "%d 0 0 0 %d 0 0 0 0 0 0 0 0 0 0 0 0" % (10 * ctrl, 100 * ctrl))
        if ana is not None:
            write(root, pdir + "/ana_state", ana[head])
            write(root, pdir + "/ana_grpid", str(head))


def add_subsys(root, subsys, nqn, iopolicy="numa", heads=()):
    base = "sys/class/nvme-subsystem/nvme-subsys%d" % subsys
    write(root, base + "/subsysnqn", nqn)
    write(root, base + "/iopolicy", iopolicy)
    write(root, base + "/model", "Linux")
    for head in heads:
        os.makedirs(os.path.join(str(root), base, "nvme%dn%d" % (subsys, head)), exist_ok=True)
        write(root, "sys/block/nvme%dn%d/size" % (subsys, head), "2097152")
        write(root, "sys/block/nvme%dn%d/nsid" % (subsys, head), str(head))
        write(root, "sys/block/nvme%dn%d/wwid" % (subsys, head), "uuid.0000000%d-aaaa-bbbb-cccc-dddddddddddd" % head)


def two_path_tree(root, second_state="live", second_ana="optimized"):
    add_subsys(root, 1, NQN, heads=(1, 2))
    add_ctrl(root, 1, 1, "10.99.0.1", heads=(1, 2), ana={1: "optimized", 2: "non-optimized"})
    add_ctrl(root, 2, 1, "10.99.1.1", state=second_state, heads=(1, 2), ana={1: second_ana, 2: "optimized"})
    # A local PCIe drive in its own subsystem: never mixed into the fabric one.
    add_subsys(root, 0, OTHER, heads=(1,))
    add_ctrl(root, 0, 0, "", heads=(1,), transport="pcie")
    by_id = os.path.join(str(root), "dev", "disk", "by-id")
    os.makedirs(by_id)
    os.symlink("../../nvme1n1", os.path.join(by_id, "nvme-Linux_abc_1"))
    os.symlink("../../nvme1n1", os.path.join(by_id, "nvme-uuid.00000001-aaaa-bbbb-cccc-dddddddddddd"))
    os.symlink("../../nvme1n1p1", os.path.join(by_id, "nvme-uuid.00000001-aaaa-bbbb-cccc-dddddddddddd-part1"))
    return MultipathSysfs(sys_root=os.path.join(str(root), "sys"), dev_root=os.path.join(str(root), "dev"))
