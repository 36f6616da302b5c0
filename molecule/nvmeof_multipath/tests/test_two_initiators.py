"""The converged topology seen from every host: 4 drives in 2 subsystems over 2 ports, te2
given jbof-a and te1 (connecting to its own target over the fabric addresses) given
jbof-b. Each host sees exactly its own subsystem, 2 live paths to each of its 2
namespaces with the ANA states of the ports, its iopolicy, and nothing of the other's."""

import pytest

A = "nqn.2024-04.com.example:te1.jbof-a"
B = "nqn.2024-04.com.example:te1.jbof-b"
OWN = {"te2": (A, "round-robin"), "te1": (B, "queue-depth")}
# ANA group 1 (namespace 1) optimized on both ports; group 2 (namespace 2) optimized on
# port 1 (10.99.0.1) and non-optimized on port 2 (10.99.1.1).
ANA = {1: {"10.99.0.1": "optimized", "10.99.1.1": "optimized"},
       2: {"10.99.0.1": "optimized", "10.99.1.1": "non-optimized"}}


@pytest.fixture(params=["te2", "te1"])
def host(request, te1, te2):
    return request.param, {"te1": te1, "te2": te2}[request.param]


def fabric_subsystems(h):
    """{nqn: subsystem dir} of the subsystems reached over a fabric (te1's own PCIe
    drives are nvme subsystems too, over transport pcie)."""
    out = {}
    for line in h.check_output(
            "for s in /sys/class/nvme-subsystem/nvme-subsys*; do"
            " for c in $s/nvme*; do [ -f $c/transport ] && [ \"$(cat $c/transport)\" != pcie ]"
            " && echo \"$s $(cat $s/subsysnqn)\"; done;"
            " done | sort -u; true").splitlines():
        path, nqn = line.split(" ", 1)
        out[nqn] = path
    return out


def test_each_host_sees_exactly_its_own_subsystem(host):
    name, h = host
    assert sorted(fabric_subsystems(h)) == [OWN[name][0]]


def test_two_live_paths_with_the_ana_states_of_the_ports(host):
    name, h = host
    subsys = fabric_subsystems(h)[OWN[name][0]]
    assert h.check_output("cat %s/iopolicy", subsys) == OWN[name][1]
    ctrls = h.check_output("ls %s | grep -E '^nvme[0-9]+$'", subsys).split()
    assert len(ctrls) == 2
    addr = {}
    for ctrl in ctrls:
        assert h.check_output("cat /sys/class/nvme/%s/state", ctrl) == "live"
        addr[ctrl] = dict(kv.split("=", 1) for kv in h.check_output("cat /sys/class/nvme/%s/address", ctrl).split(","))
        assert addr[ctrl]["trsvcid"] == "4420"
    assert sorted(a["traddr"] for a in addr.values()) == ["10.99.0.1", "10.99.1.1"]
    heads = h.check_output("ls %s | grep -E '^nvme[0-9]+n[0-9]+$'", subsys).split()
    assert sorted(int(h.check_output("cat /sys/block/%s/nsid", head)) for head in heads) == [1, 2]
    # Each controller holds one path device (nvme<S>c<C>n<H>) per namespace.
    seen = {}
    for ctrl in ctrls:
        base = "/sys/class/nvme/%s" % ctrl
        paths = h.check_output("ls %s | grep -E '^nvme[0-9]+c[0-9]+n[0-9]+$'", base).split()
        assert len(paths) == 2, paths
        for path in paths:
            nsid = int(h.check_output("cat %s/%s/nsid", base, path))
            seen.setdefault(nsid, {})[addr[ctrl]["traddr"]] = h.check_output("cat %s/%s/ana_state", base, path)
    assert seen == ANA


def test_te2_binds_each_path_to_its_interface(te2):
    subsys = fabric_subsystems(te2)[A]
    ifaces = {}
    for ctrl in te2.check_output("ls %s | grep -E '^nvme[0-9]+$'", subsys).split():
        a = dict(kv.split("=", 1) for kv in te2.check_output("cat /sys/class/nvme/%s/address", ctrl).split(","))
        ifaces[a["traddr"]] = a.get("host_iface")
    assert ifaces == {"10.99.0.1": "eth1", "10.99.1.1": "eth2"}


@pytest.mark.parametrize("name,other", [("te1", A), ("te2", B)])
def test_the_target_refuses_the_other_hosts_subsystem(te1, te2, name, other):
    h = {"te1": te1, "te2": te2}[name]
    cmd = h.run("nvme connect --transport=tcp --traddr=10.99.0.1 --trsvcid=4420 --nqn=%s", other)
    assert cmd.rc != 0, cmd.stdout
    assert other not in fabric_subsystems(h)
