"""Lists of choices that have one definition in module_utils and static copies elsewhere.

Module DOCUMENTATION and role argument specs are static YAML, and a role's Jinja asserts are
text, so they spell a table's values again. These tests keep every such copy equal to its
table, and check that the modules' argument specs are built from the table itself
(module_utils/transports.py's copies are kept by test_transports.py).
"""

import ast
import os
import re

import yaml

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import IOPOLICIES
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet import canonical, common, document, topology

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def _module_source(name):
    with open(os.path.join(TOP, "plugins", "modules", name + ".py")) as handle:
        return ast.parse(handle.read())


def module_doc(name):
    """A module's DOCUMENTATION, parsed, as ansible-doc reads it (from the source, not imported)."""
    for node in _module_source(name).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    raise AssertionError("%s has no DOCUMENTATION" % name)


def spec_choices(name, option):
    """The source text of ``choices=`` in the argument spec entry ``option=dict(...)``."""
    found = [ast.unparse(kw.value) for node in ast.walk(_module_source(name))
             if isinstance(node, ast.keyword) and node.arg == option and isinstance(node.value, ast.Call)
             for kw in node.value.keywords if kw.arg == "choices"]
    assert found, "%s: no %s=dict(choices=...)" % (name, option)
    return found


# DH-HMAC-CHAP: nvmet/common.py's HASHES and DHGROUPS.

def test_dhchap_tables_are_defined_once():
    assert document.DHGROUPS is common.DHGROUPS and document.HASHES is common.HASHES
    assert common.DHGROUPS == ("null", "ffdhe2048", "ffdhe3072", "ffdhe4096", "ffdhe6144", "ffdhe8192")
    assert common.HASHES == ("hmac(sha256)", "hmac(sha384)", "hmac(sha512)")


def test_nvmet_host_documents_the_dhchap_tables():
    options = module_doc("nvmet_host")["options"]
    assert options["dhchap_dhgroup"]["choices"] == list(common.DHGROUPS)
    assert options["dhchap_hash"]["choices"] == list(common.HASHES)


def test_nvmet_host_takes_its_choices_from_the_tables():
    assert spec_choices("nvmet_host", "dhchap_dhgroup") == ["list(DHGROUPS)"]
    assert spec_choices("nvmet_host", "dhchap_hash") == ["list(HASHES)"]


# NVMe multipath I/O policies: nvme/multipath.py's IOPOLICIES.

def _load(path):
    with open(os.path.join(TOP, path)) as handle:
        return yaml.safe_load(handle)


def _task(tasks, name):
    found = [t for t in tasks if t.get("name") == name]
    assert len(found) == 1, "roles/nvmeof_initiator/tasks/main.yml: no task %r" % name
    return found[0]["ansible.builtin.assert"]


def _listed_in(condition, subject):
    """The Python list literal after ``<subject> in`` in a Jinja condition."""
    head = subject + " in "
    assert head in condition, "%r not in %r" % (head, condition)
    return ast.literal_eval(condition.split(head, 1)[1].strip())


def test_the_multipath_modules_document_the_iopolicies():
    assert module_doc("nvme_multipath")["options"]["iopolicy"]["choices"] == list(IOPOLICIES)
    connections = module_doc("nvme_connections")["options"]["subsystems"]["suboptions"]
    assert connections["iopolicy"]["choices"] == list(IOPOLICIES)


def test_the_multipath_modules_take_their_choices_from_the_table():
    assert spec_choices("nvme_multipath", "iopolicy") == ["list(IOPOLICIES)"]
    assert spec_choices("nvme_connections", "iopolicy") == ["list(IOPOLICIES)"]


def test_the_initiator_role_offers_the_iopolicies():
    spec = _load("roles/nvmeof_initiator/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    assert spec["nvmeof_initiator_iopolicy"]["choices"] == [""] + list(IOPOLICIES)
    assert spec["nvmeof_initiator_subsystems"]["options"]["iopolicy"]["choices"] == list(IOPOLICIES)


def test_the_initiator_role_asserts_check_the_iopolicies():
    """The asserts run also where argument_specs let a value through (a null iopolicy)."""
    tasks = _load("roles/nvmeof_initiator/tasks/main.yml")
    per_subsystem = _task(tasks, "Check the subsystems and their paths")
    condition = [c for c in per_subsystem["that"] if "item.iopolicy" in c]
    assert len(condition) == 1
    assert _listed_in(condition[0], "item.iopolicy | default('numa')") == list(IOPOLICIES)
    assert "an iopolicy (optional) of %s or %s;" % (", ".join(IOPOLICIES[:-1]), IOPOLICIES[-1]) \
        in " ".join(per_subsystem["fail_msg"].split())

    default = _task(tasks, "Check the multipath I/O policy")
    assert _listed_in(default["that"], "nvmeof_initiator_iopolicy") == [""] + list(IOPOLICIES)
    assert "is not one of %s (or empty)" % ", ".join(IOPOLICIES) in default["fail_msg"]


# ANA states as the kernel spells them: nvmet/canonical.py's ANA_STATES.

def test_the_ana_states_are_defined_once():
    assert topology.ANA_STATES is canonical.ANA_STATES
    assert canonical.ANA_STATES == ("optimized", "non-optimized", "inaccessible", "persistent-loss", "change")


def test_nvmet_port_takes_the_ana_states_from_the_table():
    assert "list(ANA_STATES)" in spec_choices("nvmet_port", "state")  # the port's own state is present/absent
    ana = module_doc("nvmet_port")["options"]["ana_groups"]["suboptions"]["state"]
    assert ana["choices"] == list(canonical.ANA_STATES)


def test_the_target_role_and_the_return_docs_name_the_ana_states():
    spec = _load("roles/nvmeof_target/meta/argument_specs.yml")["argument_specs"]["main"]["options"]
    groups = [o for o in _walk_options(spec) if set(o.get("choices") or []) & {"non-optimized"}]
    assert [g["choices"] for g in groups] == [list(canonical.ANA_STATES)]
    # A module documentation line that lists the ANA states (from C(optimized), C(non-optimized)
    # on, not cut short with "...") lists them all, in the table's order.
    lists = []
    for path in sorted(os.listdir(os.path.join(TOP, "plugins", "modules"))):
        with open(os.path.join(TOP, "plugins", "modules", path)) as handle:
            for line in handle:
                if "C(optimized), C(non-optimized)" in line and "..." not in line:
                    lists.append(path)
                    assert re.findall(r"C\(([a-z-]+)\)", line) == list(canonical.ANA_STATES), (path, line)
    assert lists == ["nvme_health.py", "nvmet_info.py", "nvmet_port.py"]


def _walk_options(options):
    for option in (options or {}).values():
        yield option
        for key in ("options", "suboptions"):
            yield from _walk_options(option.get(key))
