"""The table of transports (plugins/module_utils/transports.py) is the one place a transport is
described.

Module documentation and role argument specs must be static YAML, so they list the transports
again: these tests keep every such list equal to the table. And the code that validates, plans
and reads must take per-transport facts from the table, not spell them: the last tests fail when
a kernel module name or a comparison with a transport name comes back into it.
"""

import ast
import glob
import os
import re

import pytest
import yaml

from ansible_collections.aiinfra.fabric.plugins.doc_fragments.nvme_transport import ModuleDocFragment
from ansible_collections.aiinfra.fabric.plugins.lookup.nvme_transports import LookupModule
from ansible_collections.aiinfra.fabric.plugins.module_utils import transports as T
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme import connection
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import common, topology

from ansible.errors import AnsibleLookupError

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
NAMES = list(T.NAMES)


def load(path):
    with open(os.path.join(TOP, path)) as handle:
        return yaml.safe_load(handle)


def module_doc(name):
    """A module's DOCUMENTATION, parsed, as ansible-doc reads it (from the source, not imported)."""
    with open(os.path.join(TOP, "plugins", "modules", name + ".py")) as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no DOCUMENTATION" % name)


def test_each_transport_is_one_complete_row():
    assert len(set(NAMES)) == len(NAMES) == len(T.TRANSPORTS)
    for t in T.TRANSPORTS:
        assert t.target_module and t.host_module
        assert t.address in ("ip", "fc", None)
        assert (t.address is None) == (t.adrfams == ()), t.name
        assert (t.service_id is not None) == (t.address == "ip"), t.name
        assert t.peers in ("sockets", "cm_ids", "host_controllers", None)
        assert t.firewall is None or (t.firewall[0] in ("tcp", "udp") and t.address == "ip")
        assert t.inline_data_pages >= 0
    # What nvmet's addr_adrfam takes (drivers/nvme/target/configfs.c, nvmet_addr_family).
    assert set(T.ADRFAMS) <= {"ipv4", "ipv6", "ib", "fc", "loop"}
    assert T.ADRFAMS[:4] == ("ipv4", "ipv6", "ib", "fc")
    assert {"tcp", "rdma"} <= set(T.IP_TRANSPORTS)


def test_the_packages_take_their_lists_from_the_table():
    assert list(common.TRANSPORT_MODULES) == NAMES
    assert common.TRANSPORT_MODULES["loop"] == "nvme_loop" and common.TRANSPORT_MODULES["rdma"] == "nvmet_rdma"
    assert common.ADRFAMS == T.ADRFAMS
    assert connection.TRANSPORTS == T.NAMES
    assert connection.address_spec()["transport"]["choices"] == NAMES
    assert connection.address_spec()["trsvcid"]["default"] == T.DEFAULT_SERVICE_ID
    assert sorted(topology.TRANSPORTS) == sorted(T.IP_TRANSPORTS)


def test_the_host_side_modules_document_the_table_once_in_a_fragment():
    fragment = yaml.safe_load(ModuleDocFragment.DOCUMENTATION)["options"]["transport"]
    assert fragment["choices"] == NAMES
    for name in ("nvme_connect", "nvme_discover"):
        doc = module_doc(name)
        assert "aiinfra.fabric.nvme_transport" in doc["extends_documentation_fragment"]
        assert set(doc["options"]["transport"]) == {"description"}, "%s gives the description only" % name


def test_the_module_docs_that_cannot_take_the_fragment_list_the_table():
    """Suboptions and nvmet_port's trtype: static YAML of their own, compared here."""
    port = module_doc("nvmet_port")["options"]
    assert port["trtype"]["choices"] == NAMES
    assert port["referrals"]["suboptions"]["trtype"]["choices"] == NAMES
    assert port["adrfam"]["choices"] == list(T.ADRFAMS)
    assert port["referrals"]["suboptions"]["adrfam"]["choices"] == list(T.ADRFAMS)
    for name in ("nvme_connections", "nvme_health"):
        paths = module_doc(name)["options"]["subsystems"]["suboptions"]["paths"]["suboptions"]
        assert paths["transport"]["choices"] == NAMES, name


@pytest.mark.parametrize("role, options", [
    ("nvmeof_target", [("nvmeof_target_transport",), ("nvmeof_target_ports", "transport")]),
    ("nvmeof_initiator", [("nvmeof_initiator_transport",), ("nvmeof_initiator_subsystems", "paths", "transport")]),
])
def test_the_roles_offer_the_ip_transports_of_the_table(role, options):
    spec = load("roles/%s/meta/argument_specs.yml" % role)["argument_specs"]["main"]
    for path in options:
        entry = spec
        for name in path:
            entry = entry["options"][name]
        assert sorted(entry["choices"]) == sorted(T.IP_TRANSPORTS), (role, path)


def test_the_lookup_hands_the_rows_to_jinja():
    rows = LookupModule().run([])
    assert [r["name"] for r in rows] == NAMES
    rdma = LookupModule().run(["rdma"])[0]
    assert rdma["target_module"] == "nvmet_rdma" and rdma["host_module"] == "nvme_rdma"
    assert rdma["firewall"] == ["udp", "4791"] and rdma["target_packages"] == ["rdma-core"]
    assert [r["name"] for r in LookupModule().run(["tcp", "rdma"])] == ["tcp", "rdma"]
    with pytest.raises(AnsibleLookupError, match="'ib' is not one of %s" % ", ".join(NAMES)):
        LookupModule().run(["ib"])


# The code that must read the table instead of spelling a transport's facts.
_CODE = sorted(set(glob.glob(os.path.join(TOP, "plugins", "module_utils", "nvmet", "*.py"))
                   + glob.glob(os.path.join(TOP, "plugins", "module_utils", "nvme", "*.py"))
                   + glob.glob(os.path.join(TOP, "plugins", "modules", "nvme*.py"))))
_MODULE_NAMES = set(t.target_module for t in T.TRANSPORTS) | set(t.host_module for t in T.TRANSPORTS)
# "fc" is also an address family and a kind of address (adrfam == "fc", row.address == "fc"):
# those comparisons are about addresses, so only the other names are looked for.
_TRANSPORT_NAMES = [n for n in NAMES if n not in T.ADRFAMS]


def _constants(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [c for e in node.elts for c in _constants(e)]
    return []


@pytest.mark.parametrize("path", _CODE, ids=lambda p: os.path.relpath(p, TOP))
def test_the_code_spells_no_transport_fact(path):
    with open(path) as handle:
        tree = ast.parse(handle.read())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in _MODULE_NAMES:
            found.append("line %d: kernel module %r" % (node.lineno, node.value))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and re.search(r"nvmet?[-_]%s", node.value):
            found.append("line %d: a kernel module made from a transport name: %r" % (node.lineno, node.value))
        if isinstance(node, ast.Compare):
            for side in [node.left] + node.comparators:
                found.extend("line %d: compares with %r" % (node.lineno, c) for c in _constants(side) if c in _TRANSPORT_NAMES)
        if isinstance(node, ast.Dict):
            found.extend("line %d: keyed by %r" % (node.lineno, c) for k in node.keys if k is not None
                         for c in _constants(k) if c in _TRANSPORT_NAMES)
    assert not found, "per-transport facts belong in plugins/module_utils/transports.py: %s" % "; ".join(found)


def test_the_check_above_can_fail():
    tree = ast.parse('if trtype in ("tcp", "rdma"):\n    module = {"tcp": "nvme_tcp"}[trtype]\n')
    compares = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    assert [c for n in compares for side in n.comparators for c in _constants(side)] == ["tcp", "rdma"]
    assert any(isinstance(n, ast.Constant) and n.value in _MODULE_NAMES for n in ast.walk(tree))
