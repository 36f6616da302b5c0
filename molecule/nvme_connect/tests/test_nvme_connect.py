"""What converge + side_effect left on te2, read straight from sysfs and /etc/nvme."""

import json
import os
import subprocess
import time

import pytest

AUTH = "nqn.2024-01.io.aiinfra.test:auth"
PLAIN = "nqn.2024-01.io.aiinfra.test:plain"
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def controllers(host):
    """{(transport, subsysnqn, traddr, trsvcid): name} from /sys/class/nvme-fabrics/ctl."""
    out = host.check_output(
        "for c in /sys/class/nvme-fabrics/ctl/nvme*; do [ -e $c/transport ] || continue; "
        "echo \"$(basename $c)|$(cat $c/transport)|$(cat $c/subsysnqn)|$(cat $c/address)|$(cat $c/state)\"; done")
    result = {}
    for line in out.splitlines():
        name, transport, nqn, address, state = line.split("|")
        fields = dict(p.split("=", 1) for p in address.split(",") if "=" in p)
        result[(transport, nqn, fields.get("traddr"), fields.get("trsvcid"))] = (name, state)
    return result


def secret_state(host, name, attr):
    # Only whether a secret is set: the values never leave te2.
    value = host.check_output("cat /sys/class/nvme-fabrics/ctl/%s/%s" % (name, attr))
    return "none" if value == "none" else "set"


def test_exactly_the_protected_paths_are_left(te2):
    found = controllers(te2)
    assert set(found) == {
        ("rdma", AUTH, "10.99.0.1", "4421"),
        ("tcp", AUTH, "10.99.0.1", "4420"),
    }, found
    assert all(name_state[1] == "live" for name_state in found.values())


def test_authentication_directions(te2):
    found = controllers(te2)
    rdma = found[("rdma", AUTH, "10.99.0.1", "4421")][0]
    tcp = found[("tcp", AUTH, "10.99.0.1", "4420")][0]
    assert secret_state(te2, rdma, "dhchap_secret") == "set"
    assert secret_state(te2, rdma, "dhchap_ctrl_secret") == "set"  # bidirectional
    assert secret_state(te2, tcp, "dhchap_secret") == "set"
    assert secret_state(te2, tcp, "dhchap_ctrl_secret") == "none"  # unidirectional
    assert te2.check_output("cat /sys/class/nvme-fabrics/ctl/%s/sqsize" % rdma) == "63"
    assert te2.check_output("cat /sys/class/nvme-fabrics/ctl/%s/kato" % tcp) == "10"


def test_one_multipath_block_device_for_both_paths(te2):
    heads = te2.check_output("ls /sys/class/nvme-subsystem/*/ -d | while read s; do "
                             "[ \"$(cat $s/subsysnqn)\" = %s ] && ls $s | grep -E '^nvme[0-9]+n[0-9]+$'; done" % AUTH)
    assert len(heads.split()) == 1, heads
    assert te2.block_device("/dev/" + heads.split()[0]).size == 268435456


def test_persisted_configuration(te2):
    config_file = te2.file("/etc/nvme/config.json")
    assert config_file.mode == 0o600 and config_file.user == "root"
    config = json.loads(config_file.content_string)
    hostnqn = te2.file("/etc/nvme/hostnqn").content_string.strip()
    assert [h["hostnqn"] for h in config] == [hostnqn]
    subsystems = config[0]["subsystems"]
    assert [s["nqn"] for s in subsystems] == [AUTH]
    ports = subsystems[0]["ports"]
    assert len(ports) == 1
    port = ports[0]
    assert (port["transport"], port["traddr"], port["trsvcid"], port["keep_alive_tmo"]) == ("tcp", "10.99.0.1", "4420", 10)
    assert port["dhchap_key"].startswith("DHHC-1:") and "dhchap_ctrl_key" not in port


def test_autoconnect_runs_with_config_json_and_discovery_conf(te2):
    # Debian's nvme-cli 2.3 unit is skipped when both files exist ("ConditionPathExists=|!..."):
    # the module adds a drop-in that fixes it. nvme-cli 2.13's unit (trixie) runs when either
    # exists, and gets no drop-in.
    assert te2.file("/etc/nvme/discovery.conf").exists
    packaged = te2.file("/usr/lib/systemd/system/nvmf-autoconnect.service").content_string
    dropins = te2.check_output("systemctl show -p DropInPaths nvmf-autoconnect.service")
    assert ("50-aiinfra-fabric.conf" in dropins) == ("ConditionPathExists=|!" in packaged), (dropins, packaged)
    te2.check_output("systemctl start nvmf-autoconnect.service")
    assert te2.check_output("systemctl show -p ConditionResult --value nvmf-autoconnect.service") == "yes"
    assert te2.check_output("systemctl show -p Result --value nvmf-autoconnect.service") == "success"
    # connect-all connected what the discovery controller at the listed port offers.
    assert ("tcp", PLAIN, "10.99.0.1", "4420") in controllers(te2)


@pytest.mark.skipif(os.environ.get("AIINFRA_LAB_REBOOT_TESTS") != "1",
                    reason="reboots te2 (minutes under TCG): set AIINFRA_LAB_REBOOT_TESTS=1")
def test_persistent_connection_survives_reboot(te2):
    labctl = os.path.join(REPO, "lab", "labctl")
    subprocess.run([labctl, "ssh", "te2", "systemctl reboot"], check=False)
    time.sleep(15)
    subprocess.run([labctl, "wait", "te2"], check=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        state = te2.check_output("systemctl show -p ActiveState --value nvmf-autoconnect.service")
        if state in ("inactive", "failed"):
            break
        time.sleep(5)
    found = controllers(te2)
    assert ("tcp", AUTH, "10.99.0.1", "4420") in found, found
    name, state = found[("tcp", AUTH, "10.99.0.1", "4420")]
    assert state == "live"
    assert secret_state(te2, name, "dhchap_secret") == "set"
