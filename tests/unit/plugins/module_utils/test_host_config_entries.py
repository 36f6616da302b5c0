"""Unit tests of the host_config_entries filter (plugins/plugin_utils/host_config_entries.py),
which builds the directories and files a role gives host_config (the nvmeof_initiator
role's path healer: its folders, program, units and entry)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aiinfra.fabric.plugins.filter.host_config_state import host_config_entries

ROOT = "/usr/local/libexec/aiinfra-fabric/nvme-heal"


def test_directories():
    assert host_config_entries([ROOT, ROOT + "/lib"], "0755") == [
        {"path": ROOT, "mode": "0755", "owner": "root", "group": "root"},
        {"path": ROOT + "/lib", "mode": "0755", "owner": "root", "group": "root"},
    ]
    assert host_config_entries(iter(["/etc/nvme/aiinfra-fabric"]), "0700", owner="nvme", group="disk") == [
        {"path": "/etc/nvme/aiinfra-fabric", "mode": "0700", "owner": "nvme", "group": "disk"}]
    assert host_config_entries(None, "0755") == []


def test_files_pair_paths_and_contents_in_order():
    unit = "[Unit]\nDescription=Connect again the NVMe-oF paths that lost their controller\n"
    timer = "[Timer]\nOnBootSec=30s\nOnUnitActiveSec=10s\n"
    got = host_config_entries(["/etc/systemd/system/aiinfra-nvme-heal.service", "/etc/systemd/system/aiinfra-nvme-heal.timer"],
                              "0644", contents=[unit, timer])
    assert [e["content"] for e in got] == [unit, timer]
    assert list(got[0]) == ["path", "content", "mode", "owner", "group"]
    secret = host_config_entries(["/etc/nvme/aiinfra-fabric/heal/nvmeof_initiator-95601408c989.json"], "0600",
                                 contents=['{"dhchap_secret": "DHHC-1:00:..."}\n'], secret=True)
    assert secret[0]["secret"] is True and secret[0]["mode"] == "0600"


def test_contents_that_do_not_pair_up_are_an_error():
    with pytest.raises(AnsibleFilterError, match="2 paths but 1 contents"):
        host_config_entries(["/a", "/b"], "0644", contents=["x"])
