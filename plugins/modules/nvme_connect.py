#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
---
module: nvme_connect
short_description: Connect an NVMe over Fabrics host to a subsystem, idempotently
description:
  - Connects this host (the initiator) to an NVMe-oF subsystem over TCP, RDMA, FC or loop
    with nvme-cli, or disconnects it.
  - The current state is read from the kernel, C(/sys/class/nvme-fabrics/ctl/nvme*/)
    (transport, subsystem NQN, the C(address) key=value pairs compared field by field,
    host NQN, state, timeouts, queues, DH-HMAC-CHAP secrets), not from nvme-cli, which
    fails on a repeated connect and cannot tell a connection made with other options.
  - A live connection whose settings differ from the requested ones is reported in RV(drift)
    and reconnected only when O(reconnect=true).
  - Returns the controller names and the namespace block devices of the subsystem, so
    playbooks never guess device names such as C(/dev/nvme1n1).
  - With O(persistent=true) the connection is written to nvme-cli's configuration so that
    C(nvmf-autoconnect.service) reconnects it at boot. See O(persistent) for the details.
version_added: 0.1.0
author:
  - aiinfra.fabric contributors (!UNKNOWN)
requirements:
  - nvme-cli 2.x on the managed host (Debian 12 ships 2.3, Debian 13 2.13); an nvme-cli whose C(connect) lists C(--tls) for TLS.
  - The nvme-fabrics module loaded (C(/dev/nvme-fabrics) present). The kernel loads the
    transport driver (nvme-tcp, nvme-rdma, nvme-fc) on connect when it is installed.
options:
  transport:
    description: NVMe-oF transport.
    type: str
    required: true
    choices: [tcp, rdma, fc, loop]
  traddr:
    description:
      - Target address. An IPv4 or IPv6 address for C(tcp) and C(rdma),
        C(nn-0x<16 hex>:pn-0x<16 hex>) for C(fc), nothing for C(loop).
    type: str
  trsvcid:
    description: Target port (service id) for C(tcp) and C(rdma).
    type: str
    default: "4420"
  nqn:
    description: NQN of the subsystem to connect to.
    type: str
    required: true
  host_traddr:
    description:
      - Source address on this host for the connection. When given, only controllers
        created with this host address are treated as this connection.
    type: str
  host_iface:
    description: Network interface to connect from (C(tcp) only).
    type: str
  hostnqn:
    description: Host NQN to connect as. Defaults to the content of C(/etc/nvme/hostnqn).
    type: str
  hostid:
    description:
      - Host ID (a UUID). Defaults to the content of C(/etc/nvme/hostid) when it exists and O(hostnqn) is
        this machine's own; another O(hostnqn) gets its own ID (see the notes).
    type: str
  generate_host_identity:
    description:
      - When C(/etc/nvme/hostnqn) is missing and O(hostnqn) is not given, create it with
        C(nvme gen-hostnqn), and C(/etc/nvme/hostid) from its UUID.
      - When false (the default) a missing host NQN is an error, because nvme-cli would
        otherwise make up an identity the target does not know.
    type: bool
    default: false
  state:
    description:
      - C(connected) makes sure a matching controller exists; C(disconnected) disconnects
        exactly the controllers of this subsystem NQN at this address (and host address
        or interface when given) and nothing else.
    type: str
    choices: [connected, disconnected]
    default: connected
  ctrl_loss_tmo:
    description:
      - Seconds to keep retrying a lost connection before giving up (-1 retries forever).
      - The kernel rounds it up to a multiple of the reconnect delay; drift is computed
        against the rounded value.
    type: int
  reconnect_delay:
    description: Seconds between reconnect attempts.
    type: int
  keep_alive_tmo:
    description: Keep-alive timeout in seconds.
    type: int
  fast_io_fail_tmo:
    description:
      - Seconds after a connection is lost before its queued I/O fails instead of waiting for the reconnect
        (nvme connect C(--fast_io_fail_tmo)); V(-1), the kernel default, waits until O(ctrl_loss_tmo) ends.
      - Without native multipath, or when every path of a namespace is down, it bounds how long I/O waits for the
        reconnect. With native multipath and another live path, I/O queued on a lost path already moves there
        when the controller resets.
      - Needs an nvme-cli whose C(nvme connect --help) lists C(--fast_io_fail_tmo) (2.3, as Debian 12 ships it,
        does not); otherwise the module fails before connecting.
    type: int
  nr_io_queues:
    description:
      - Number of I/O queues. The kernel creates at most one per online CPU, so drift is
        computed against C(min(nr_io_queues, online CPUs)).
    type: int
  queue_size:
    description:
      - I/O queue depth (16-1024). The target or transport may grant fewer (for example the
        RDMA transport's maximum); ask for a value they allow or the drift will persist.
    type: int
  dhchap_secret:
    description:
      - The host's DH-HMAC-CHAP secret (C(DHHC-1:...:)), for authentication of this host
        to the target. Never logged or returned.
    type: str
  dhchap_ctrl_secret:
    description:
      - The controller's DH-HMAC-CHAP secret, for bidirectional authentication (the host
        also authenticates the target). Needs O(dhchap_secret). Never logged or returned.
    type: str
  tls:
    description:
      - Use TLS on NVMe/TCP (C(nvme connect --tls)). The PSK is looked up in the kernel keyring
        (C(.nvme) unless O(keyring) says otherwise) under the identity of this host and subsystem;
        C(tlshd) (ktls-utils) must run on the host. The aiinfra.fabric.nvmeof_initiator role loads
        the keys and starts tlshd.
      - Whether nvme-cli and the kernel can do it is read from C(nvme connect --help) and
        C(/dev/nvme-fabrics), not from version numbers; nvme-cli 2.3 (Debian 12) has no TLS
        options, and the module then fails with a message that says which part lacks what,
        instead of connecting without TLS.
    type: bool
    default: false
  tls_key:
    description:
      - The TLS key to use with O(tls=true) - a key serial in the keyring, or for nvme-cli
        releases that take it, a PSK in interchange format. Passed as C(--tls-key) or C(--tls_key),
        whichever the installed nvme-cli lists. Never logged or returned.
    type: str
  keyring:
    description: Keyring to look the TLS key up in (C(--keyring)), with O(tls=true).
    type: str
  concat:
    description:
      - Secure concatenation (C(--concat)) - TLS keyed by the DH-HMAC-CHAP exchange. Needs O(tls=true)
        and O(dhchap_secret). The module fails before connecting when nvme-cli's help does not list
        C(--concat) or the kernel's C(/dev/nvme-fabrics) does not list C(concat), and says which.
    type: bool
    default: false
  persistent:
    description:
      - Write this connection into C(/etc/nvme/config.json) (libnvme's JSON configuration,
        mode 0600 because it holds the DH-HMAC-CHAP secrets), so that
        C(nvmf-autoconnect.service) (C(nvme connect-all)) connects it again at boot.
        Removed again by O(state=disconnected).
      - At boot nvme-cli 2.x connects to the discovery controller at each listed address
        and connects every subsystem it offers to this host, applying the listed port's
        settings and secrets to the subsystems that are listed.
      - nvme-cli 2.3 (Debian 12) ships the service with conditions that skip it when both
        C(config.json) and the packaged C(discovery.conf) exist; on such hosts the module
        also installs the drop-in
        C(/etc/systemd/system/nvmf-autoconnect.service.d/50-aiinfra-fabric.conf) that
        applies nvme-cli 2.5's fix (run when either file exists) and reloads systemd.
      - libnvme 1.3 (Debian 12) applies the listed C(dhchap_key), C(dhchap_ctrl_key),
        C(keep_alive_tmo), queue settings and C(reconnect_delay) at boot, but not
        C(ctrl_loss_tmo) (it keeps its default, 600 s); the next run then reports that as
        drift.
      - The module first checks that C(nvme connect-all --help) lists C(--config) (it reads
        libnvme's JSON file; nvme-cli 2.3 and 2.13 do) and fails without changing anything
        when it does not, instead of writing a file the boot-time connect would not read.
      - Which file is read from what the installed nvme-cli can do, not its version. Releases
        that replaced C(config.json) with the INI C(/etc/nvme/nvme-fabrics.conf) ship
        C(nvme config-convert) (2.3 and 2.13 answer "Invalid sub-command"); there the module
        writes its own drop-in instead, C(/etc/nvme/nvme-fabrics.conf.d/aiinfra-fabric.conf)
        (mode 0600; a host NQN other than C(/etc/nvme/hostnqn) gets its own file with a
        C([Host]) section), one C([Subsystem]) per subsystem and one C(controller =) line per
        path, and leaves C(config.json) untouched. O(state=disconnected) removes the path from
        whichever of the two this module wrote, and the drop-in when nothing is left in it.
      - With O(tls=true) the port entry gets C(tls) (and C(keyring)) but no key; the PSK stays in
        the kernel keyring, which the aiinfra.fabric.nvme_tls role fills again at boot. The
        address's discovery subsystem gets an entry with C(tls) too (removed with the last TLS
        subsystem saved on that address), because C(nvme connect-all) reaches the discovery controller
        first, and without it that connection goes out as plain TCP and a port that requires
        TLS resets it.
      - Where C(nvmf-autoconnect.service) runs C(nvme connect-all --context=NAME) (C(autoconnect)
        in nvme-cli 2.13), the subsystem entries written get C(application) NAME, since libnvme 1.13
        applies no saved entry of another or no application in that context.
      - false leaves the configuration as it is.
    type: bool
    default: false
  reconnect:
    description:
      - Allow disconnecting and connecting again when a live connection's settings differ
        from the requested ones (RV(drift)). When false, drift is reported with a warning.
    type: bool
    default: false
  force:
    description:
      - Disconnect (for O(state=disconnected) or O(reconnect)) even when a namespace of the
        subsystem is mounted, used as swap, or held by another device (LVM, md, dm).
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait after connecting for the controller to be live and its namespace
        block devices to appear. A controller that is not live in time is an error; a
        subsystem without namespaces only gives a warning.
    type: int
    default: 30
extends_documentation_fragment:
  - aiinfra.fabric.attributes
attributes:
  check_mode:
    description: Reads sysfs and reports what it would connect, disconnect or write (RV(operations)); changes nothing.
    support: full
  diff_mode:
    description: Returns the connection state before and after (controllers, devices, persistence), never secrets.
    support: full
  idempotent:
    description: The state is read from sysfs; a repeated run with the same parameters changes nothing.
    support: full
notes:
  - Run as root.
  - nvme-cli 2.x refuses a second connection to the same subsystem, transport and address
    (C(already connected)), so a different O(host_traddr) alone does not create a
    second path; the module reports nvme-cli's message.
  - One machine can connect to one subsystem and address as several hosts (one controller
    per O(hostnqn)). nvme-cli before 2.6 refuses every identity after the first as
    C(already connected), whatever C(--hostnqn), C(--hostid) or C(--duplicate-connect) say;
    the kernel accepts it. So when another host NQN of this machine is connected to the
    same subsystem and address, the module connects by writing the kernel's option string
    to C(/dev/nvme-fabrics) itself, as nvme-cli does (not with O(tls), whose key nvme-cli
    looks up). RV(operations) says so.
  - A host NQN other than C(/etc/nvme/hostnqn) given without O(hostid) gets its own host ID,
    not C(/etc/nvme/hostid) (the kernel refuses one host ID under two host NQNs); it is the UUID
    of a C(nqn.2014-08.org.nvmexpress:uuid:) NQN, else a UUID derived from the NQN.
  - While another path to the same subsystem is up, nvme-cli 2.3 reuses that
    controller's DH-HMAC-CHAP secret when O(dhchap_secret) is not given.
  - The discovery service port of the Linux kernel target is the port it listens on,
    usually 4420; use M(aiinfra.fabric.nvme_discover) to list what a target offers.
seealso:
  - module: aiinfra.fabric.nvme_discover
"""

EXAMPLES = r"""
- name: Connect to the lab target over NVMe/TCP
  aiinfra.fabric.nvme_connect:
    transport: tcp
    traddr: 10.99.0.1
    trsvcid: "4420"
    nqn: nqn.2024-01.io.aiinfra:lab-disk
  register: nvme

- name: Format the namespace that the connection returned
  community.general.filesystem:
    dev: "{{ nvme.devices[0].path }}"
    fstype: ext4

- name: Connect over RDMA with bidirectional DH-HMAC-CHAP, kept across reboots
  aiinfra.fabric.nvme_connect:
    transport: rdma
    traddr: 10.99.0.1
    trsvcid: "4421"
    nqn: nqn.2024-01.io.aiinfra:lab-disk
    dhchap_secret: "{{ vault_nvme_host_key }}"
    dhchap_ctrl_secret: "{{ vault_nvme_ctrl_key }}"
    ctrl_loss_tmo: 600
    persistent: true

- name: Disconnect exactly that subsystem at that address
  aiinfra.fabric.nvme_connect:
    transport: rdma
    traddr: 10.99.0.1
    trsvcid: "4421"
    nqn: nqn.2024-01.io.aiinfra:lab-disk
    state: disconnected
"""

RETURN = r"""
controllers:
  description: The fabrics controllers of this connection after the run (read from sysfs).
  returned: always
  type: list
  elements: dict
  sample:
    - name: nvme1
      state: live
      transport: tcp
      traddr: 10.99.0.1
      trsvcid: "4420"
      src_addr: 10.99.0.2
      host_traddr: null
      host_iface: null
      subsysnqn: nqn.2024-01.io.aiinfra:lab-disk
      hostnqn: nqn.2014-08.org.nvmexpress:uuid:819aca5a-f59f-42a3-bc77-d440efb6a6b0
      hostid: 819aca5a-f59f-42a3-bc77-d440efb6a6b0
      cntlid: 1
      ctrl_loss_tmo: 600
      reconnect_delay: 10
      keep_alive_tmo: 5
      nr_io_queues: 2
      queue_size: 128
      namespaces: [nvme1n1]
devices:
  description: Namespace block devices of the connection's controllers.
  returned: always
  type: list
  elements: dict
  sample:
    - path: /dev/nvme1n1
      name: nvme1n1
      nsid: 1
      size_bytes: 1073741824
      uuid: 3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11
      nguid: 3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11
      wwid: uuid.3a2f4c55-8d2e-4c41-9b8d-3c1e0f6f0a11
      eui: null
      controller: nvme1
drift:
  description:
    - Settings of the live connection that differ from the requested ones, by controller
      name. For secrets only whether one is set is shown.
  returned: when a live connection differs
  type: dict
  sample: {nvme1: {ctrl_loss_tmo: {current: 600, desired: 1200}, dhchap_secret: {current: unset, desired: set}}}
persistent:
  description: Whether C(/etc/nvme/config.json) lists this connection after the run.
  returned: always
  type: bool
operations:
  description: What the module did (or would do in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["connect", "write /etc/nvme/config.json"]
diff:
  description: Connection state before and after (controllers, devices, persistent).
  returned: when diff mode is on
  type: dict
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import (
    NvmeCli, NvmeCliError,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError, controller_drift, desired_from_params, matching_controllers, other_identities_at_address,
    plan_connection, public_controller,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fabrics_dev import FABRICS_DEV, connect_through_kernel
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.host import (
    host_identity, read_text, wait_for_connection, wait_gone, write_atomic,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.persist import (
    AUTOCONNECT_DROPIN, CONFIG_JSON, DROPIN, NVME_ETC, UNIT_PATHS, config_has_port, config_with_port,
    config_without_port, dump_config, parse_config, unit_context, unit_needs_condition_fix,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.persist_ini import (
    dropin_has_port, dropin_is_empty, dropin_path, dropin_with_port, dropin_without_port, parse_dropin, render_dropin,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs


CONNECT_VIA_KERNEL = ("connect through %s (another host NQN of this machine is connected to this subsystem and "
                      "address, which nvme-cli before 2.6 refuses as already connected)" % FABRICS_DEV)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            transport=dict(type="str", required=True, choices=["tcp", "rdma", "fc", "loop"]),
            traddr=dict(type="str"),
            trsvcid=dict(type="str", default="4420"),
            nqn=dict(type="str", required=True),
            host_traddr=dict(type="str"),
            host_iface=dict(type="str"),
            hostnqn=dict(type="str"),
            hostid=dict(type="str"),
            generate_host_identity=dict(type="bool", default=False),
            state=dict(type="str", default="connected", choices=["connected", "disconnected"]),
            ctrl_loss_tmo=dict(type="int"),
            reconnect_delay=dict(type="int"),
            keep_alive_tmo=dict(type="int"),
            fast_io_fail_tmo=dict(type="int"),
            nr_io_queues=dict(type="int"),
            queue_size=dict(type="int"),
            dhchap_secret=dict(type="str", no_log=True),
            dhchap_ctrl_secret=dict(type="str", no_log=True),
            tls=dict(type="bool", default=False),
            tls_key=dict(type="str", no_log=True),
            keyring=dict(type="str", no_log=False),
            concat=dict(type="bool", default=False),
            persistent=dict(type="bool", default=False),
            reconnect=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
            wait_timeout=dict(type="int", default=30),
        ),
        supports_check_mode=True,
    )
    params = module.params
    state = params["state"]
    try:
        desired = desired_from_params(params)
    except ValidationError as exc:
        module.fail_json(msg=str(exc))
    if params["wait_timeout"] < 0:
        module.fail_json(msg="wait_timeout=%d must be >= 0" % params["wait_timeout"])

    sysfs = FabricsSysfs()
    cli = NvmeCli(module)
    tls_key_flag = "--tls_key"
    if (desired["tls"] or desired["concat"] or desired["fast_io_fail_tmo"] is not None) and state == "connected":
        # Read from nvme-cli's own help and the kernel's option list, not guessed from versions.
        caps = cli.connect_capabilities()
        missing = caps.missing(desired)
        if missing:
            module.fail_json(msg="cannot connect with tls=%s concat=%s fast_io_fail_tmo=%s on this host: %s" % (
                desired["tls"], desired["concat"], desired["fast_io_fail_tmo"], "; ".join(missing)))
        tls_key_flag = caps.tls_key_flag or tls_key_flag
    # Where this nvme-cli keeps saved connections (config.json, or the INI nvme-fabrics.conf.d of
    # releases that replaced it), from what it can do; only that format is written.
    saved_format = cli.saved_connections_format() if params["persistent"] and state == "connected" else None
    if saved_format == "json" and "config" not in cli.help_options("connect-all"):
        # The boot-time connect (nvmf-autoconnect: nvme connect-all) must read the file this
        # module writes; an nvme-cli whose connect-all takes no JSON --config does not.
        module.fail_json(msg="persistent=true writes libnvme's JSON configuration (%s), but this nvme-cli's "
                             "'connect-all --help' lists no --config option, so it would not read it at boot; "
                             "nothing was changed" % CONFIG_JSON)
    if state == "connected" and not sysfs.fabrics_device_present():
        module.fail_json(msg="/dev/nvme-fabrics does not exist: the nvme-fabrics kernel module is not loaded "
                             "(modprobe nvme-fabrics, and nvme-%s for transport=%s)" % (desired["transport"], desired["transport"]))

    try:
        hostnqn, hostid, identity_writes = host_identity(params, state, module.check_mode, cli.gen_hostnqn)
    except ValidationError as exc:
        module.fail_json(msg=str(exc))
    desired["hostnqn"] = hostnqn
    desired["hostid"] = hostid

    all_controllers = sysfs.controllers()
    controllers = matching_controllers(all_controllers, desired)
    # nvme-cli before 2.6 refuses a second host identity at one address (fabrics_dev.py);
    # the kernel does not, so that connect writes the kernel's fabrics device directly.
    # TLS keys are looked up by nvme-cli, so a TLS connect always goes through it.
    via_kernel = (state == "connected" and not (desired["tls"] or desired["concat"])
                  and bool(other_identities_at_address(all_controllers, desired)))
    drifts = {}
    if state == "connected":
        cpus = sysfs.online_cpus()
        for ctrl in controllers:
            found = controller_drift(ctrl, sysfs.read_secrets(ctrl["name"]), desired, cpus)
            if found:
                drifts[ctrl["name"]] = found
    devices_before = sysfs.devices_of(controllers)
    usage = sysfs.usage([d["name"] for d in devices_before]) if controllers else []
    ops, refusal = plan_connection(controllers, drifts, desired, state, params["reconnect"], params["force"], usage)
    if refusal:
        module.fail_json(msg=refusal, controllers=[public_controller(c) for c in controllers],
                         devices=devices_before, usage=usage)

    # nvme-cli's persistent configuration.
    config_text = read_text(CONFIG_JSON)
    try:
        config = parse_config(config_text, CONFIG_JSON)
    except ValidationError as exc:
        module.fail_json(msg=str(exc))
    default_hostnqn = (read_text(os.path.join(NVME_ETC, "hostnqn")) or "").strip()
    ini_path = dropin_path(hostnqn or default_hostnqn, default_hostnqn)
    ini_text = read_text(ini_path)
    try:
        ini = parse_dropin(ini_text, ini_path)
    except ValidationError as exc:
        module.fail_json(msg=str(exc))
    persisted_before = bool((config_has_port(config, desired, hostnqn) if hostnqn else False) or dropin_has_port(ini, desired))
    new_config, new_ini = config, ini
    unit_text = next((t for t in (read_text(p) for p in UNIT_PATHS) if t), None) if saved_format else None
    if saved_format == "json":
        new_config = config_with_port(config, desired, hostnqn, hostid, unit_context(unit_text))
    elif saved_format == "ini":
        new_ini = dropin_with_port(ini, desired, hostnqn, hostid, default_hostnqn)
    elif state == "disconnected":
        # Removed from wherever this module wrote it (the entry holds secrets).
        new_config = config_without_port(config, desired, hostnqn)
        new_ini = dropin_without_port(ini, desired)
    config_ops = []
    if new_config != config:
        config_ops.append("remove /etc/nvme/config.json" if not new_config and config_text is not None
                          else "write /etc/nvme/config.json")
    if new_ini != ini:
        config_ops.append("%s %s" % ("remove" if dropin_is_empty(new_ini) else "write", ini_path))
    dropin_needed = False
    if state == "connected" and params["persistent"]:
        if unit_needs_condition_fix(unit_text) and read_text(DROPIN) != AUTOCONNECT_DROPIN:
            dropin_needed = True
            config_ops.append("write %s" % DROPIN)

    operations = ["%s %s" % op if op[1] else op[0] for op in ops]
    if via_kernel:
        operations = [CONNECT_VIA_KERNEL if item == "connect" else item for item in operations]
    operations = ["write /etc/nvme/%s" % item[0] for item in identity_writes] + operations + config_ops
    changed = bool(operations)

    warnings = []
    if drifts and not params["reconnect"]:
        warnings.append("live connection differs from the requested settings (%s); set reconnect=true to "
                        "disconnect and connect again" % "; ".join(
                            "%s: %s" % (n, ", ".join(sorted(d))) for n, d in sorted(drifts.items())))

    before = {
        "state": "connected" if controllers else "disconnected",
        "controllers": [c["name"] for c in controllers],
        "devices": [d["path"] for d in devices_before],
        "persistent": persisted_before,
    }
    result = dict(changed=changed, operations=operations)
    if drifts:
        result["drift"] = drifts

    if module.check_mode:
        after_ctrls = [] if any(op[0] == "disconnect" for op in ops) else controllers
        after = {
            "state": state,
            "controllers": [c["name"] for c in after_ctrls] + (["(new)"] if ("connect", None) in ops else []),
            "devices": [d["path"] for d in sysfs.devices_of(after_ctrls)],
            "persistent": bool((config_has_port(new_config, desired, hostnqn) if hostnqn else False)
                               or dropin_has_port(new_ini, desired)),
        }
        result.update(controllers=[public_controller(c) for c in after_ctrls],
                      devices=sysfs.devices_of(after_ctrls), persistent=after["persistent"])
        if module._diff:
            result["diff"] = {"before": before, "after": after}
        for warning in warnings:
            module.warn(warning)
        module.exit_json(**result)

    try:
        for name, value in identity_writes:
            write_atomic(module, os.path.join(NVME_ETC, name), value + "\n", 0o644)
        for op, name in ops:
            if op == "disconnect":
                cli.disconnect(name)
            else:
                wait_gone(sysfs, desired, params["wait_timeout"])
                connect_values = dict(desired)
                connect_values["hostnqn"] = hostnqn
                connect_values["hostid"] = hostid
                if via_kernel:
                    connect_through_kernel(connect_values)
                else:
                    cli.connect(connect_values, tls_key_flag)
    except NvmeCliError as exc:
        details = exc.details()
        if exc.kind == "command" and not sysfs.transport_module_loaded(desired["transport"]):
            details["error_kind"] = "transport_module"
            exc.msg = ("nvme connect failed and the nvme-%s kernel module is not loaded (no /sys/module/nvme_%s): "
                       "install/load it. nvme-cli said: %s" % (desired["transport"], desired["transport"],
                                                               (exc.stderr or exc.stdout).strip()))
        module.fail_json(msg=exc.msg, **details)

    if ("connect", None) in ops:
        controllers, devices, wait_warning = wait_for_connection(sysfs, desired, params["wait_timeout"])
        if wait_warning:
            if not controllers or any(c.get("state") != "live" for c in controllers):
                module.fail_json(msg=wait_warning, controllers=[public_controller(c) for c in controllers])
            warnings.append(wait_warning)
    else:
        controllers = matching_controllers(sysfs.controllers(), desired)
        devices = sysfs.devices_of(controllers)

    if new_config != config:
        if not new_config and config_text is not None:
            os.unlink(CONFIG_JSON)
        else:
            write_atomic(module, CONFIG_JSON, dump_config(new_config), 0o600)
    if new_ini != ini:
        if dropin_is_empty(new_ini):
            if ini_text is not None:
                os.unlink(ini_path)
        else:
            write_atomic(module, ini_path, render_dropin(new_ini), 0o600)
    if dropin_needed:
        write_atomic(module, DROPIN, AUTOCONNECT_DROPIN, 0o644)
        systemctl = module.get_bin_path("systemctl", required=True)
        rc, out, err = module.run_command([systemctl, "daemon-reload"], environ_update={"LC_ALL": "C"})
        if rc != 0:
            module.fail_json(msg="systemctl daemon-reload failed after writing %s" % DROPIN, rc=rc, stdout=out, stderr=err)

    persisted_after = bool((config_has_port(new_config, desired, hostnqn) if hostnqn else False)
                           or dropin_has_port(new_ini, desired))
    result.update(controllers=[public_controller(c) for c in controllers], devices=devices,
                  persistent=persisted_after)
    if module._diff:
        result["diff"] = {"before": before, "after": {
            "state": "connected" if controllers else "disconnected",
            "controllers": [c["name"] for c in controllers],
            "devices": [d["path"] for d in devices],
            "persistent": persisted_after,
        }}
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
