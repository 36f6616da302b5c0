# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One NVMe-oF connection converged: the body of nvme_connect, in two steps.

:func:`prepare_connection` reads the host (sysfs, nvme-cli's abilities, the host
identity) and plans; it raises :class:`ConnectFailure` for anything that would fail
(an ability the host lacks, a disconnect of a namespace in use) and changes nothing.
:func:`apply_connection` carries the plan out (or, in check mode, reports it). A
module that converges several connections (nvme_connections) prepares every one
before it applies the first, so a refusal anywhere changes nothing anywhere.

A connect that carries a secret (DH-HMAC-CHAP secrets, a TLS key) is written to the
kernel's /dev/nvme-fabrics on every nvme-cli release, never run as ``nvme connect`` with the
secret on its command line (fabrics_dev.py); nvme-cli makes only the connects without one.

nvme-cli's saved connections (config.json, or the INI drop-in) are read again when
a connection is applied, not when it is prepared: connections applied one after
another each add their own entry to what the one before wrote.
"""

from __future__ import annotations

import os

from ansible_collections.aiinfra.fabric.plugins.module_utils import transports
from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import (
    SECRET_MODE, file_mode, mode_text, write_atomically,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.cli import NvmeCliError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.connection import (
    ValidationError, controller_drift, controller_matches, matching_controllers, other_identities_at_address,
    plan_connection, public_controller,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.fabrics_dev import (
    FABRICS_DEV, carries_secret, connect_through_kernel,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.host import (
    host_identity, read_text, wait_for_connection, wait_for_connections, wait_gone,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.persist import (
    AUTOCONNECT_DROPIN, CONFIG_JSON, DROPIN, NVME_ETC, UNIT_PATHS, config_has_port, config_with_port,
    config_without_port, dump_config, parse_config, unit_context, unit_needs_condition_fix,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.persist_ini import (
    dropin_has_port, dropin_is_empty, dropin_path, dropin_with_port, dropin_without_port, parse_dropin, render_dropin,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.keyring import parse_serial
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.load import KeyringError
from ansible_collections.aiinfra.fabric.plugins.module_utils.tls.store import DEFAULT_KEYRING
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError

CONNECT_VIA_KERNEL = ("connect through %s (another host NQN of this machine is connected to this subsystem and "
                      "address, which nvme-cli before 2.6 refuses as already connected)" % FABRICS_DEV)
CONNECT_WITH_SECRETS = ("connect through %s (its DH-HMAC-CHAP secrets and TLS key go to the kernel, never on a "
                        "command line)" % FABRICS_DEV)


def connection_settings_spec():
    """The argument_spec entries of what every connection is made with (the state, timeouts,
    queues, secrets, TLS key, saving, guards): nvme_connect and nvme_connections take them
    alike, the latter once for all its paths."""
    return dict(
        state=dict(type="str", default="connected", choices=["connected", "disconnected"]),
        ctrl_loss_tmo=dict(type="int"),
        reconnect_delay=dict(type="int"),
        keep_alive_tmo=dict(type="int"),
        fast_io_fail_tmo=dict(type="int"),
        nr_io_queues=dict(type="int"),
        queue_size=dict(type="int"),
        dhchap_secret=dict(type="str", no_log=True),
        dhchap_ctrl_secret=dict(type="str", no_log=True),
        tls_key=dict(type="str", no_log=True),
        keyring=dict(type="str", no_log=False),
        concat=dict(type="bool", default=False),
        persistent=dict(type="bool", default=False),
        reconnect=dict(type="bool", default=False),
        force=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=30),
    )


def kernel_values(desired, cli):
    """``desired`` as the kernel's fabrics device takes it: the keyring and the TLS key as key
    serials. A keyring name is looked up in /proc/keys; a PSK in interchange format is put into
    the keyring (O(keyring), else .nvme) first, as the aiinfra.fabric.nvme_tls_key module puts it
    there - identity version 0, the one this collection's targets hold - and its serial taken."""
    values = dict(desired)
    if desired.get("keyring"):
        values["keyring"] = cli.key_loader().keyring_serial(desired["keyring"])
    if desired.get("tls_key"):
        serial = parse_serial(desired["tls_key"])
        if serial is None:
            key = {"hostnqn": desired["hostnqn"], "subsysnqn": desired["nqn"], "psk": desired["tls_key"]}
            serial = cli.key_loader().insert(desired.get("keyring") or DEFAULT_KEYRING, key)
        values["tls_key"] = serial
    return values


class ConnectFailure(NvmeError):
    """A connection that cannot (or did not) converge: the message, and what fail_json shows with it."""

    def __init__(self, msg, **details):
        super(ConnectFailure, self).__init__(msg)
        self.msg = msg
        self.details = details


def _saved_state(desired, hostnqn, hostid, state, persistent, saved_format):
    """nvme-cli's saved connections as they are and as this connection wants them."""
    config_text = read_text(CONFIG_JSON)
    try:
        config = parse_config(config_text, CONFIG_JSON)
    except ValidationError as exc:
        raise ConnectFailure(str(exc))
    default_hostnqn = (read_text(os.path.join(NVME_ETC, "hostnqn")) or "").strip()
    ini_path = dropin_path(hostnqn or default_hostnqn, default_hostnqn)
    ini_text = read_text(ini_path)
    try:
        ini = parse_dropin(ini_text, ini_path)
    except ValidationError as exc:
        raise ConnectFailure(str(exc))
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
    ops = []
    if new_config != config:
        ops.append("remove /etc/nvme/config.json" if not new_config and config_text is not None
                   else "write /etc/nvme/config.json")
    if new_ini != ini:
        ops.append("%s %s" % ("remove" if dropin_is_empty(new_ini) else "write", ini_path))
    # Both files hold secrets. One that keeps this connection without being rewritten (a
    # rewrite makes it 0600) gets a wider mode set back to 0600: a change of its own.
    saving = [  # (path, its mode, whether it holds this connection now, and after the run, rewritten)
        (CONFIG_JSON, file_mode(CONFIG_JSON) if config_text is not None else None,
         _config_holds(config, desired, hostnqn), _config_holds(new_config, desired, hostnqn), new_config != config),
        (ini_path, file_mode(ini_path) if ini_text is not None else None,
         dropin_has_port(ini, desired), dropin_has_port(new_ini, desired), new_ini != ini),
    ]
    mode_fixes = [(path, mode) for path, mode, now, after, rewritten in saving
                  if after and not rewritten and mode not in (None, SECRET_MODE)]
    ops.extend("chmod 0600 %s (was %s)" % (path, mode_text(mode)) for path, mode in mode_fixes)
    mode_before = next((mode_text(mode) for path, mode, now, after, rewritten in saving if now), None)
    dropin_needed = bool(state == "connected" and persistent and unit_needs_condition_fix(unit_text)
                         and read_text(DROPIN) != AUTOCONNECT_DROPIN)
    if dropin_needed:
        ops.append("write %s" % DROPIN)
    return dict(config_text=config_text, config=config, new_config=new_config, ini_path=ini_path, ini_text=ini_text,
                ini=ini, new_ini=new_ini, ops=ops, dropin_needed=dropin_needed,
                mode_fixes=[path for path, mode in mode_fixes], mode_before=mode_before)


def _config_holds(config, desired, hostnqn):
    return bool(hostnqn) and config_has_port(config, desired, hostnqn)


def _persisted(config, ini, desired, hostnqn):
    return _config_holds(config, desired, hostnqn) or dropin_has_port(ini, desired)


def prepare_connection(params, desired, cli, sysfs, check_mode):
    """Read and plan one connection (``desired`` from desired_from_params); change nothing.

    Returns the plan as a dict for :func:`apply_connection`; raises ConnectFailure with
    what the module would have failed with."""
    state = params["state"]
    secret = state == "connected" and carries_secret(desired)
    if (desired["tls"] or desired["concat"] or desired["fast_io_fail_tmo"] is not None) and state == "connected":
        # Read from nvme-cli's own help and the kernel's option list, not guessed from versions.
        caps = cli.connect_capabilities()
        missing = caps.missing(desired, through_kernel=secret)
        if missing:
            raise ConnectFailure("cannot connect with tls=%s concat=%s fast_io_fail_tmo=%s on this host: %s" % (
                desired["tls"], desired["concat"], desired["fast_io_fail_tmo"], "; ".join(missing)))
    if secret and desired["tls_key"] and parse_serial(desired["tls_key"]) is None:
        # A PSK goes into the keyring as this host's nvme-cli would insert it: it must be able to.
        try:
            cli.key_loader().derivation()
        except KeyringError as exc:
            raise ConnectFailure("tls_key holds a PSK, which goes into the kernel keyring before the connect: %s" % exc)
    # Where this nvme-cli keeps saved connections (config.json, or the INI nvme-fabrics.conf.d of
    # releases that replaced it), from what it can do; only that format is written.
    saved_format = cli.saved_connections_format() if params["persistent"] and state == "connected" else None
    if saved_format == "json" and "config" not in cli.help_options("connect-all"):
        # The boot-time connect (nvmf-autoconnect: nvme connect-all) must read the file this
        # module writes; an nvme-cli whose connect-all takes no JSON --config does not.
        raise ConnectFailure("persistent=true writes libnvme's JSON configuration (%s), but this nvme-cli's "
                             "'connect-all --help' lists no --config option, so it would not read it at boot; "
                             "nothing was changed" % CONFIG_JSON)
    if state == "connected" and not sysfs.fabrics_device_present():
        raise ConnectFailure("/dev/nvme-fabrics does not exist: the nvme-fabrics kernel module is not loaded "
                             "(modprobe nvme-fabrics, and %s for transport=%s)"
                             % (transports.module_word(transports.get(desired["transport"]).host_module),
                                desired["transport"]))

    try:
        hostnqn, hostid, identity_writes = host_identity(params, state, check_mode, cli.gen_hostnqn)
    except ValidationError as exc:
        raise ConnectFailure(str(exc))
    desired = dict(desired, hostnqn=hostnqn, hostid=hostid)

    # Only this subsystem's controllers matter here (this connection's, and other host
    # identities' at its address); those of other subsystems are not read in full.
    all_controllers = sysfs.controllers(match=lambda c: c.get("transport") == desired["transport"]
                                        and c.get("subsysnqn") == desired["nqn"])
    controllers = matching_controllers(all_controllers, desired)
    # A connect with a secret writes the kernel's fabrics device directly (fabrics_dev.py), and
    # so does a second host identity at one address, which nvme-cli before 2.6 refuses (the
    # kernel does not); a TLS connect without a secret stays with nvme-cli there, as before.
    second_identity = (not (desired["tls"] or desired["concat"])
                       and bool(other_identities_at_address(all_controllers, desired)))
    via_kernel = state == "connected" and (secret or second_identity)
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
        raise ConnectFailure(refusal, controllers=[public_controller(c) for c in controllers],
                             devices=devices_before, usage=usage)
    saved = _saved_state(desired, hostnqn, hostid, state, params["persistent"], saved_format)

    operations = ["%s %s" % op if op[1] else op[0] for op in ops]
    if via_kernel:
        label = CONNECT_VIA_KERNEL if second_identity else CONNECT_WITH_SECRETS
        operations = [label if item == "connect" else item for item in operations]
    operations = ["write /etc/nvme/%s" % item[0] for item in identity_writes] + operations + saved["ops"]
    warnings = []
    if drifts and not params["reconnect"]:
        warnings.append("live connection differs from the requested settings (%s); set reconnect=true to "
                        "disconnect and connect again" % "; ".join(
                            "%s: %s" % (n, ", ".join(sorted(d))) for n, d in sorted(drifts.items())))
    return dict(desired=desired, state=state, saved_format=saved_format,
                identity_writes=identity_writes, controllers=controllers, drifts=drifts, ops=ops,
                via_kernel=via_kernel, devices_before=devices_before, saved=saved, operations=operations,
                warnings=warnings, before={
                    "state": "connected" if controllers else "disconnected",
                    "controllers": [c["name"] for c in controllers],
                    "devices": [d["path"] for d in devices_before],
                    "persistent": _persisted(saved["config"], saved["ini"], desired, hostnqn),
                    "persistent_mode": saved["mode_before"],
                })


def _check_result(plan, sysfs, diff):
    """What a check-mode run returns: the plan, and the state it would leave."""
    desired, ops, saved = plan["desired"], plan["ops"], plan["saved"]
    after_ctrls = [] if any(op[0] == "disconnect" for op in ops) else plan["controllers"]
    persistent = _persisted(saved["new_config"], saved["new_ini"], desired, desired["hostnqn"])
    result = dict(changed=bool(plan["operations"]), operations=plan["operations"],
                  controllers=[public_controller(c) for c in after_ctrls],
                  devices=sysfs.devices_of(after_ctrls), persistent=persistent,
                  persistent_mode=mode_text(SECRET_MODE) if persistent else None)
    if plan["drifts"]:
        result["drift"] = plan["drifts"]
    if diff:
        result["diff"] = {"before": plan["before"], "after": {
            "state": plan["state"],
            "controllers": [c["name"] for c in after_ctrls] + (["(new)"] if ("connect", None) in ops else []),
            "devices": [d["path"] for d in result["devices"]],
            "persistent": persistent,
            "persistent_mode": result["persistent_mode"],
        }}
    return result


def _write_saved(module, desired, hostnqn, hostid, state, persistent, saved_format):
    """Write nvme-cli's saved connections as this connection wants them, read afresh (files
    with secrets: mode 0600 from their first byte, and set back to 0600 where found wider).
    Returns whether the connection is saved afterwards, and the mode of the file saving it."""
    saved = _saved_state(desired, hostnqn, hostid, state, persistent, saved_format)
    if saved["new_config"] != saved["config"]:
        if not saved["new_config"] and saved["config_text"] is not None:
            os.unlink(CONFIG_JSON)
        else:
            write_atomically(CONFIG_JSON, dump_config(saved["new_config"]), SECRET_MODE, dir_mode=0o755)
    if saved["new_ini"] != saved["ini"]:
        if dropin_is_empty(saved["new_ini"]):
            if saved["ini_text"] is not None:
                os.unlink(saved["ini_path"])
        else:
            write_atomically(saved["ini_path"], render_dropin(saved["new_ini"]), SECRET_MODE, dir_mode=0o755)
    for path in saved["mode_fixes"]:
        os.chmod(path, SECRET_MODE)
    if saved["dropin_needed"]:
        write_atomically(DROPIN, AUTOCONNECT_DROPIN, 0o644, dir_mode=0o755)
        systemctl = module.get_bin_path("systemctl", required=True)
        rc, out, err = module.run_command([systemctl, "daemon-reload"], environ_update={"LC_ALL": "C"})
        if rc != 0:
            raise ConnectFailure("systemctl daemon-reload failed after writing %s" % DROPIN, rc=rc, stdout=out,
                                 stderr=err)
    if _config_holds(saved["new_config"], desired, hostnqn):
        return True, mode_text(file_mode(CONFIG_JSON))
    if dropin_has_port(saved["new_ini"], desired):
        return True, mode_text(file_mode(saved["ini_path"]))
    return False, None


def apply_connection(module, params, plan, cli, sysfs):
    """Carry out a plan from :func:`prepare_connection` (in check mode: only report it).

    Returns (result, warnings); raises ConnectFailure when the host refuses."""
    if module.check_mode:
        return _check_result(plan, sysfs, module._diff), list(plan["warnings"])
    start_connection(module, params, plan, cli, sysfs)
    waited = None
    if ("connect", None) in plan["ops"]:
        waited = wait_for_connection(sysfs, plan["desired"], params["wait_timeout"])
    return finish_connection(module, params, plan, sysfs, waited)


def start_connection(module, params, plan, cli, sysfs):
    """The changes of a plan: identity files, disconnect, connect (nvme connect returns once
    the controller is live; its namespaces appear after). Raises ConnectFailure."""
    desired, ops = plan["desired"], plan["ops"]
    try:
        for name, value in plan["identity_writes"]:
            write_atomically(os.path.join(NVME_ETC, name), value + "\n", 0o644, dir_mode=0o755)
        for op, name in ops:
            if op == "disconnect":
                cli.disconnect(name)
            else:
                wait_gone(sysfs, desired, params["wait_timeout"])
                if plan["via_kernel"]:
                    connect_through_kernel(kernel_values(desired, cli))
                else:
                    cli.connect(desired)
    except KeyringError as exc:
        raise ConnectFailure("cannot give the kernel the TLS keyring or key of this connect: %s" % exc)
    except NvmeCliError as exc:
        if exc.kind == "already_connected" and matching_controllers(sysfs.controllers(), desired):
            # Connected meanwhile by another hand - the nvmeof_initiator role's path healer
            # (nvme/heal.py) reconnecting a path this run also found missing: converged.
            return
        details = exc.details()
        msg = exc.msg
        if exc.kind == "command" and not sysfs.transport_module_loaded(desired["transport"]):
            details["error_kind"] = "transport_module"
            module = transports.get(desired["transport"]).host_module
            msg = ("nvme connect failed and the %s kernel module is not loaded (no /sys/module/%s): "
                   "install/load it. nvme-cli said: %s" % (transports.module_word(module), module,
                                                           (exc.stderr or exc.stdout).strip()))
        raise ConnectFailure(msg, **details)


def finish_connection(module, params, plan, sysfs, waited):
    """After :func:`start_connection` (and, for a connect, ``waited``: what
    wait_for_connection(s) returned for it): the saved connections, and the result.

    Returns (result, warnings); raises ConnectFailure when the connection did not come up."""
    warnings = list(plan["warnings"])
    desired = plan["desired"]
    hostnqn, hostid = desired["hostnqn"], desired["hostid"]
    if waited is not None:
        controllers, devices, wait_warning = waited
        if wait_warning:
            if not controllers or any(c.get("state") != "live" for c in controllers):
                raise ConnectFailure(wait_warning, controllers=[public_controller(c) for c in controllers])
            warnings.append(wait_warning)
    else:
        controllers = sysfs.controllers(match=lambda c: controller_matches(c, desired))
        devices = sysfs.devices_of(controllers)

    persisted_after, mode_after = _write_saved(module, desired, hostnqn, hostid, plan["state"], params["persistent"],
                                               plan["saved_format"])
    result = dict(changed=bool(plan["operations"]), operations=plan["operations"],
                  controllers=[public_controller(c) for c in controllers], devices=devices, persistent=persisted_after,
                  persistent_mode=mode_after)
    if plan["drifts"]:
        result["drift"] = plan["drifts"]
    if module._diff:
        result["diff"] = {"before": plan["before"], "after": {
            "state": "connected" if controllers else "disconnected",
            "controllers": [c["name"] for c in controllers],
            "devices": [d["path"] for d in devices],
            "persistent": persisted_after,
            "persistent_mode": mode_after,
        }}
    return result, warnings


def apply_connections(module, plans, cli, sysfs, wait_timeout):
    """:func:`apply_connection` for each (where, params, plan) of one host: every change
    first, one path after the other, then one wait for all the new connections together
    (a sysfs read and a sleep a round for all of them, not for each in turn), then each
    path's saved connections and result, in order.

    Returns (done, failure): done holds (where, params, plan, result, warnings) for each
    path carried out; failure is {where, plan, error (the ConnectFailure)} for the first
    path, in order, that failed, else None. A path after a failed change is not touched."""
    if module.check_mode:
        return [(where, params, plan) + apply_connection(module, params, plan, cli, sysfs)
                for where, params, plan in plans], None
    started, failures = [], []
    for where, params, plan in plans:
        if plan["ops"]:
            sysfs.release()  # what sysfs shows changes from here; the waits poll it
        try:
            start_connection(module, params, plan, cli, sysfs)
        except ConnectFailure as exc:
            failures.append((len(started), where, plan, exc))
            break
        started.append((where, params, plan))
    connecting = [i for i, item in enumerate(started) if ("connect", None) in item[2]["ops"]]
    waited = {}
    if any(item[2]["ops"] for item in started) or failures:
        sysfs.release()
        waits = wait_for_connections(sysfs, [started[i][2]["desired"] for i in connecting], wait_timeout)
        waited = dict(zip(connecting, waits))
        sysfs.hold()  # the paths that were in place report from one read made after the changes
    done = []
    for i, (where, params, plan) in enumerate(started):
        try:
            result, warnings = finish_connection(module, params, plan, sysfs, waited.get(i))
        except ConnectFailure as exc:
            failures.append((i, where, plan, exc))
            continue
        done.append((where, params, plan, result, warnings))
    first = min(failures, key=lambda f: f[0]) if failures else None
    return done, (dict(where=first[1], plan=first[2], error=first[3]) if first else None)
