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
  - No secret is ever on a command line or in an environment, where other local users read it
    (C(/proc/PID/cmdline)). nvme-cli takes DH-HMAC-CHAP secrets and TLS keys only as command-line
    options, so a connect that carries O(dhchap_secret), O(dhchap_ctrl_secret) or O(tls_key) writes
    the kernel's option string to C(/dev/nvme-fabrics) itself, as nvme-cli does after reading its
    options, on every nvme-cli release (2.3, 2.13 and later alike); RV(operations) says so. Connects
    without a secret (TLS with the key looked up in the keyring included) run C(nvme connect).
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
version_added: "0.1.0"
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - nvme-cli 2.x on the managed host (Debian 12 ships 2.3, Debian 13 2.13); an nvme-cli whose C(connect) lists C(--tls) for TLS.
  - The nvme-fabrics module loaded (C(/dev/nvme-fabrics) present). The kernel loads the
    transport driver (nvme-tcp, nvme-rdma, nvme-fc) on connect when it is installed.
options:
  transport:
    description: NVMe-oF transport.
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
        to the target. Never logged or returned, never on a command line (written to
        C(/dev/nvme-fabrics) with the other connect options).
    type: str
  dhchap_ctrl_secret:
    description:
      - The controller's DH-HMAC-CHAP secret, for bidirectional authentication (the host
        also authenticates the target). Needs O(dhchap_secret). Never logged or returned,
        never on a command line.
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
      - The TLS key to use with O(tls=true) - a key serial in the keyring (decimal or C(0x)-hex),
        or a PSK in interchange format (C(NVMeTLSkey-1:01:...:)). Never logged or returned, never on
        a command line; the connect goes through C(/dev/nvme-fabrics) with the key's serial
        (C(tls_key=<serial>)).
      - A PSK is first put into the keyring (O(keyring), else C(.nvme)) as the aiinfra.fabric.nvme_tls_key
        module puts it there (identity version 0, C(NVMe0R<hash> <hostnqn> <subsysnqn>), the key the installed
        nvme-cli's C(check-tls-key --insert) derives), and it stays there. nvme-cli 2.13's own C(--tls-key) would
        insert it under an identity version 1 instead, which a target keyed by this collection does not hold.
      - Usually unset - the kernel then looks the PSK up in the keyring by this host's and the subsystem's
        identity, as loaded by the aiinfra.fabric.nvme_tls role.
    type: str
  keyring:
    description:
      - Keyring to look the TLS key up in, with O(tls=true) - a name (C(.nvme)) or a serial. Passed as
        C(--keyring) to nvme-cli, or as the keyring's serial to C(/dev/nvme-fabrics) when the connect carries
        a secret.
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
      - Both files hold the secrets, so they are written atomically with mode 0600 from their first byte. A file
        that holds this connection with another mode (C(0644), left by an older release or by hand) is a change the
        run fixes, C(chmod 0600 <file>) with the mode it had in RV(operations); check mode reports it, and
        RV(persistent_mode) and the diff show it.
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
  - aiinfra.fabric.nvme_transport
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
    second path; the module reports nvme-cli's message. A connect with a secret goes to the
    kernel, which refuses only a controller that matches in every address field, host address
    and interface included.
  - One machine can connect to one subsystem and address as several hosts (one controller
    per O(hostnqn)). nvme-cli before 2.6 refuses every identity after the first as
    C(already connected), whatever C(--hostnqn), C(--hostid) or C(--duplicate-connect) say;
    the kernel accepts it. So when another host NQN of this machine is connected to the
    same subsystem and address, the module connects by writing the kernel's option string
    to C(/dev/nvme-fabrics) itself, as nvme-cli does (a TLS connect without a secret stays
    with nvme-cli there). RV(operations) says so.
  - A host NQN other than C(/etc/nvme/hostnqn) given without O(hostid) gets its own host ID,
    not C(/etc/nvme/hostid) (the kernel refuses one host ID under two host NQNs); it is the UUID
    of a C(nqn.2014-08.org.nvmexpress:uuid:) NQN, else a UUID derived from the NQN.
  - While another path to the same subsystem is up, nvme-cli 2.3 reuses that
    controller's DH-HMAC-CHAP secret when O(dhchap_secret) is not given.
  - At boot (O(persistent=true)) C(nvme connect-all) reads the secrets from the saved file (mode 0600),
    never from its command line, and hands them to the kernel the same way.
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
  contains:
    name:
      description: The controller's name.
      type: str
    state:
      description: Its state (C(live), C(connecting), C(resetting), C(deleting) ...).
      type: str
    transport:
      description: C(tcp), C(rdma), C(fc) or C(loop).
      type: str
    traddr:
      description: The target's address.
      type: str
    trsvcid:
      description: The target's service id (port).
      type: str
    src_addr:
      description: The local address the connection uses (tcp).
      type: str
    host_traddr:
      description: The host address it was asked to use, if any.
      type: str
    host_iface:
      description: The host interface it was asked to use, if any.
      type: str
    subsysnqn:
      description: The subsystem's NQN.
      type: str
    hostnqn:
      description: The host NQN it connected as.
      type: str
    hostid:
      description: The host id it connected with.
      type: str
    cntlid:
      description: The controller id.
      type: int
    ctrl_loss_tmo:
      description: Seconds before a lost controller is given up (-1 - never).
      type: int
    fast_io_fail_tmo:
      description: Seconds before queued I/O fails over, as sysfs shows it (C(off) - never).
      type: str
    reconnect_delay:
      description: Seconds between reconnect attempts.
      type: int
    keep_alive_tmo:
      description: Keep-alive timeout, seconds.
      type: int
    nr_io_queues:
      description: I/O queues.
      type: int
    queue_size:
      description: Queue depth.
      type: int
    namespaces:
      description: The names of its namespace devices.
      type: list
      elements: str
    model:
      description: The target's model string.
      type: str
    serial:
      description: The target's serial number.
      type: str
    firmware_rev:
      description: The target's firmware revision.
      type: str
    tls:
      description: Whether the controller runs over TLS.
      type: bool
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
  contains:
    path:
      description: The block device's path.
      type: str
    name:
      description: Its kernel name.
      type: str
    nsid:
      description: The namespace id.
      type: int
    size_bytes:
      description: Its size in bytes.
      type: int
    uuid:
      description: The namespace UUID, if it has one.
      type: str
    nguid:
      description: The namespace NGUID, if it has one.
      type: str
    wwid:
      description: The kernel's C(wwid).
      type: str
    eui:
      description: The EUI-64, if it has one.
      type: str
    controller:
      description: The controller it was found under.
      type: str
drift:
  description:
    - Settings of the live connection that differ from the requested ones, by controller
      name. For secrets only whether one is set is shown.
  returned: when a live connection differs
  type: dict
  sample: {nvme1: {ctrl_loss_tmo: {current: 600, desired: 1200}, dhchap_secret: {current: unset, desired: set}}}
  contains:
    <controller>:
      description: The controller's differing settings, each with C(current) and C(desired).
      type: dict
      contains:
        <setting>:
          description: One setting that differs.
          type: dict
          contains:
            current:
              description: What the live connection has (for secrets C(set) or C(unset)).
              type: raw
            desired:
              description: What was asked for.
              type: raw
persistent:
  description: Whether C(/etc/nvme/config.json) lists this connection after the run.
  returned: always
  type: bool
  sample: true
persistent_mode:
  description:
    - The mode of the file that saves this connection (C(config.json) or the drop-in) after the run (in check mode,
      as it would be), V(0600); null when the connection is not saved.
  returned: always
  type: str
  sample: "0600"
operations:
  description:
    - What the module did (or would do in check mode), in order. C(connect) is a C(nvme connect); a connect
      with secrets reads C(connect through /dev/nvme-fabrics (its DH-HMAC-CHAP secrets and TLS key go to the
      kernel, never on a command line)).
  returned: always
  type: list
  elements: str
  sample: ["connect", "write /etc/nvme/config.json"]
diff:
  description: Connection state before and after (controllers, devices, persistent, persistent_mode).
  returned: when diff mode is on
  type: dict
  sample:
    before: {state: disconnected, controllers: [], devices: [], persistent: false, persistent_mode: null}
    after: {state: connected, controllers: [nvme1], devices: [/dev/nvme1n1], persistent: true, persistent_mode: "0600"}
  contains:
    before:
      description: The state before the run.
      type: dict
      contains:
        state:
          description: V(connected) or V(disconnected).
          type: str
        controllers:
          description: The names of the connection's controllers (C((new)) for one a connect would make).
          type: list
          elements: str
        devices:
          description: The paths of its namespace devices.
          type: list
          elements: str
        persistent:
          description: As RV(persistent).
          type: bool
        persistent_mode:
          description: As RV(persistent_mode).
          type: str
    after:
      description: The state after the run (in check mode, as it would be), the keys of C(before).
      type: dict
      contains:
        state:
          description: V(connected) or V(disconnected).
          type: str
        controllers:
          description: The names of the connection's controllers (C((new)) for one a connect would make).
          type: list
          elements: str
        devices:
          description: The paths of its namespace devices.
          type: list
          elements: str
        persistent:
          description: As RV(persistent).
          type: bool
        persistent_mode:
          description: As RV(persistent_mode).
          type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCli
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connect_run import (
    ConnectFailure, apply_connection, connection_settings_spec, prepare_connection,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError, address_spec, desired_from_params,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.sysfs import FabricsSysfs


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nqn=dict(type="str", required=True),
            generate_host_identity=dict(type="bool", default=False),
            tls=dict(type="bool", default=False),
            **dict(address_spec(), **connection_settings_spec())
        ),
        supports_check_mode=True,
    )
    params = module.params
    try:
        desired = desired_from_params(params)
    except ValidationError as exc:
        module.fail_json(msg=str(exc))
    if params["wait_timeout"] < 0:
        module.fail_json(msg="wait_timeout=%d must be >= 0" % params["wait_timeout"])

    sysfs = FabricsSysfs()
    cli = NvmeCli(module)
    try:
        plan = prepare_connection(params, desired, cli, sysfs, module.check_mode)
        result, warnings = apply_connection(module, params, plan, cli, sysfs)
    except ConnectFailure as exc:
        module.fail_json(msg=exc.msg, **exc.details)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
