"""Idempotence against what the 6.12 kernel shows (issue 14), on the FAKE tree of nvmet_fake.py.

Each test applies a plan to the kernel-like fake, reads the tree back and plans again:
a second plan must be empty even where the kernel rewrites the value written.
"""

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import plan_port, plan_subsystem
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.target import read_and_plan
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import normalize_port, normalize_subsystem

from nvmet_fake import SUB, EmulatedTree, fake_port, fake_subsystem, link

QUIET = {"by_subsystem": {}, "by_port": {}, "exact": False}


def converge(tree, plan):
    """Plan against the tree, apply, and return the plan made against the result."""
    apply_plan(tree, plan(tree.read()))
    return plan(tree.read())


def identity_spec(**kw):
    spec = {"nqn": SUB, "serial": "abc", "version": "2.0.0", "attributes": {"ieee_oui": "0xABCDEF"}}
    spec.update(kw)
    return normalize_subsystem(spec, check_paths=False)


def test_identity_values_the_kernel_rewrites_converge(root):
    tree = EmulatedTree(root)
    spec = identity_spec()
    assert converge(tree, lambda st: plan_subsystem(st, spec, QUIET)) == []
    shown = tree.read()["subsystems"][SUB]["attributes"]
    assert (shown["serial"], shown["version"], shown["ieee_oui"]) == ("abc", "2.0", "0xabcdef")


def test_equal_identity_is_not_rewritten_once_a_host_identified_the_subsystem(root):
    fake_subsystem(root, SUB, serial="abc".ljust(20))
    tree = EmulatedTree(root, discovered=[SUB])
    assert plan_subsystem(tree.read(), identity_spec(version="1.3", attributes={"ieee_oui": "0"}), QUIET) == []


def test_integer_and_boolean_attributes_compare_as_the_kernel_shows_them(root):
    tree = EmulatedTree(root)
    spec = identity_spec(attributes={"cntlid_min": "0x10", "qid_max": "064", "pi_enable": "yes"})
    assert converge(tree, lambda st: plan_subsystem(st, spec, QUIET)) == []
    attrs = tree.read()["subsystems"][SUB]["attributes"]
    assert (attrs["cntlid_min"], attrs["qid_max"], attrs["pi_enable"]) == ("16", "52", "1")


def test_nvmetcli_save_file_without_padding_plans_nothing(root):
    fake_subsystem(root, SUB, serial="abc".ljust(20))
    tree = EmulatedTree(root, discovered=[SUB])
    doc = {"subsystems": [{"nqn": SUB, "attr": {"allow_any_host": "0", "serial": "abc", "version": "1.3",
                                                "model": "Linux", "ieee_oui": "0x000000"},
                           "namespaces": []}]}
    assert read_and_plan(tree, doc, purge="listed")[1] == []


def test_port_inline_data_size_minus_one_converges_after_the_kernel_rewrites_it(root):
    fake_subsystem(root, SUB)
    tree = EmulatedTree(root)
    spec = normalize_port({"port_id": 1, "trtype": "tcp", "traddr": "10.99.0.1", "inline_data_size": -1,
                           "subsystems": [SUB]}, os.path.join(root, "sys"))
    assert converge(tree, lambda st: plan_port(st, spec, QUIET)) == []
    assert tree.read()["ports"][1]["inline_data_size"] == 16384


def test_port_inline_data_size_explicit_default_matches_a_disabled_port(root):
    fake_port(root, 1, trtype="tcp", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4")
    tree = EmulatedTree(root)
    spec = normalize_port({"port_id": 1, "trtype": "tcp", "traddr": "10.99.0.1", "inline_data_size": 16384,
                           "subsystems": []}, os.path.join(root, "sys"))
    # -1 on a port not enabled yet becomes 16384 once it is: nothing to write.
    assert plan_port(tree.read(), spec, QUIET) == []


@pytest.mark.parametrize("field,value,fragment", [
    ("serial", "x" * 21, "serial: .* must be 1-20 characters"),
    ("serial", "caf\u00e9", "printable ASCII"),
    ("version", "2.0.0.1", "not an NVMe version"),
    ("version", "1.256", "out of range"),
    ("model", "m" * 41, "model: .* must be 1-40"),
    ("firmware", "123456789", "firmware: .* must be 1-8"),
])
def test_identity_values_the_kernel_refuses_are_rejected_first(field, value, fragment):
    with pytest.raises(NvmetError, match=fragment):
        normalize_subsystem({"nqn": SUB, field: value}, check_paths=False)


@pytest.mark.parametrize("attrs,fragment", [
    ({"ieee_oui": "0x1000000"}, "more than 24 bits"),
    ({"ieee_oui": "ABCDEF"}, "not an unsigned integer"),
    ({"qid_max": 129}, r"attributes.qid_max: '129' is out of range 1\.\.128"),
    ({"cntlid_min": 0}, "0 is not a controller id"),
    ({"cntlid_max": 70000}, "does not fit in 16 bits"),
    ({"cntlid_min": 10, "cntlid_max": 5}, "cntlid_min 10 is above cntlid_max 5"),
    ({"pi_enable": "maybe"}, "not a boolean"),
])
def test_attributes_the_kernel_refuses_are_rejected_first(attrs, fragment):
    with pytest.raises(NvmetError, match=fragment):
        normalize_subsystem({"nqn": SUB, "attributes": attrs}, check_paths=False)


def test_port_params_the_kernel_refuses_are_rejected_first(root):
    with pytest.raises(NvmetError, match="max_queue_size"):
        normalize_port({"port_id": 1, "trtype": "tcp", "traddr": "10.99.0.1", "params": {"max_queue_size": "many"}},
                       os.path.join(root, "sys"))


def test_kernel_like_fake_refuses_a_changed_identity_after_discovery(root):
    """The fake is what the tests above rely on: it must refuse like the kernel does."""
    fake_subsystem(root, SUB)
    tree = EmulatedTree(root, discovered=[SUB])
    with pytest.raises(NvmetError, match="freezes serial/model/version/firmware"):
        apply_plan(tree, plan_subsystem(tree.read(), identity_spec(serial="other"), QUIET))


def test_kernel_like_fake_enables_the_port_on_the_first_link(root):
    fake_subsystem(root, SUB)
    fake_port(root, 1, trtype="rdma", traddr="10.99.0.1", trsvcid="4420", adrfam="ipv4")
    link(root, "subsystems/" + SUB, "ports/1/subsystems/" + SUB)
    tree = EmulatedTree(root)
    # already linked by hand: the fake only rewrites on a link it performs
    assert tree.read()["ports"][1]["inline_data_size"] == -1
