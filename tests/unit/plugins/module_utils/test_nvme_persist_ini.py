"""Saved connections that follow the installed nvme-cli: the INI drop-in of releases that
replaced config.json (module_utils/nvme/persist_ini.py), and the capability check that
chooses between the two (capabilities.saved_connections_format).

The 2.3 answer to 'nvme config-convert --help' is real (nvme-cli 2.4+really2.3-3 from the
lab's deb cache, run on the build host); the INI layout follows nvme-cli's
libnvme/design/CONFIG.md ([Host], [Subsystem] with nqn and 'controller =' lines)."""

import os

import pytest

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.capabilities import saved_connections_format
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import ValidationError, desired_from_params
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.persist_ini import (
    DROPIN_DIR, dropin_has_port, dropin_is_empty, dropin_path, dropin_with_port, dropin_without_port, parse_dropin,
    render_dropin,
)
from nvme_params import NQN, connect_params  # tests/unit/plugins/module_utils/nvme_params.py

HOSTNQN = "nqn.2014-08.org.nvmexpress:uuid:819aca5a-f59f-42a3-bc77-d440efb6a6b0"
OTHER = "nqn.2014-08.org.nvmexpress:uuid:11111111-2222-3333-4444-555555555555"
KEY = "DHHC-1:00:ZmFrZS1ob3N0LWtleS1mb3ItdW5pdC10ZXN0cy0wMDA=:"
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "nvme_cli")
EMPTY = {"host": [], "subsystems": []}


def params(**over):
    return desired_from_params(connect_params(**over))


def test_nvme_cli_2_3_and_2_13_keep_config_json_and_an_ini_release_the_drop_in():
    with open(os.path.join(FIXTURES, "config-convert-help-nvme-cli-2.3.txt")) as handle:
        text = handle.read()
    assert saved_connections_format(1, text) == "json"
    assert saved_connections_format(0, "Usage: nvme config-convert [OPTIONS]\n  [ --config=<FILE> ]\n") == "ini"
    # A help printer that exits 0 for an unknown command does not count.
    assert saved_connections_format(0, text) == "json"


def test_default_identity_has_one_file_without_host_and_others_their_own():
    assert dropin_path(HOSTNQN, HOSTNQN) == DROPIN_DIR + "/aiinfra-fabric.conf"
    other = dropin_path(OTHER, HOSTNQN)
    assert other.startswith(DROPIN_DIR + "/aiinfra-fabric-") and other.endswith(".conf") and other != dropin_path(
        HOSTNQN, OTHER)


def test_tls_path_roundtrip_writes_section_keys_and_no_psk():
    desired = params(tls=True, keyring=".nvme", ctrl_loss_tmo=1800, reconnect_delay=5)
    doc = dropin_with_port(EMPTY, desired, HOSTNQN, None, HOSTNQN)
    text = render_dropin(doc)
    assert "[Host]" not in text
    assert ("\n[Subsystem]\nnqn = %s\ntls = true\nkeyring = .nvme\n"
            "controller = transport=tcp;traddr=10.99.0.1;trsvcid=4420;ctrl-loss-tmo=1800;reconnect-delay=5\n" % NQN) in text
    assert "NVMeTLSkey" not in text
    again = parse_dropin(text, "x.conf")
    assert again == doc and dropin_has_port(again, desired)
    # Idempotent: the same path again changes nothing.
    assert dropin_with_port(again, desired, HOSTNQN, None, HOSTNQN) == again


def test_another_host_nqn_gets_a_host_section_and_dhchap_stays_on_the_section():
    desired = params(dhchap_secret=KEY)
    doc = dropin_with_port(EMPTY, desired, OTHER, "11111111-2222-3333-4444-555555555555", HOSTNQN)
    text = render_dropin(doc)
    assert "[Host]\nhostnqn = %s\nhostid = 11111111-2222-3333-4444-555555555555\n" % OTHER in text
    assert "dhchap-secret = %s\n" % KEY in text and "dhchap" not in text.split("controller =")[1]


def test_paths_multipath_and_exact_removal():
    a = params()
    b = params(traddr="10.99.1.1", host_iface="eth2")
    other = params(nqn=NQN + "2")
    doc = EMPTY
    for item in (a, b, other):
        doc = dropin_with_port(doc, item, HOSTNQN, None, HOSTNQN)
    assert [len(s["controllers"]) for s in doc["subsystems"]] == [2, 1]
    left = dropin_without_port(doc, a)
    assert not dropin_has_port(left, a) and dropin_has_port(left, b) and dropin_has_port(left, other)
    left = dropin_without_port(dropin_without_port(left, b), other)
    assert dropin_is_empty(left)


def test_a_changed_setting_replaces_the_path_line():
    doc = dropin_with_port(EMPTY, params(ctrl_loss_tmo=600), HOSTNQN, None, HOSTNQN)
    doc = dropin_with_port(doc, params(ctrl_loss_tmo=60), HOSTNQN, None, HOSTNQN)
    assert doc["subsystems"][0]["controllers"] == [[("transport", "tcp"), ("traddr", "10.99.0.1"), ("trsvcid", "4420"),
                                                    ("ctrl-loss-tmo", "60")]]


def test_a_file_edited_into_something_else_is_refused_naming_the_line():
    assert parse_dropin(None, "x.conf") == EMPTY
    with pytest.raises(ValidationError, match=r"x.conf:2: section \[I/O Controller Defaults\] is not one"):
        parse_dropin("# c\n[I/O Controller Defaults]\n", "x.conf")
    with pytest.raises(ValidationError, match="x.conf:1: expected 'key = value' inside a section"):
        parse_dropin("nqn = x\n", "x.conf")
