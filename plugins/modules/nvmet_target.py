#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvmet_target
short_description: Declare a whole Linux kernel NVMe-oF target (nvmet) in one task, in nvmetcli's save-file schema
version_added: "0.1.0"
description:
  - Takes the whole desired target (hosts with DH-HMAC-CHAP keys, subsystems with their namespaces and allowed
    hosts, ports with ANA groups and their subsystem links) as one document in the schema C(nvmetcli save) writes,
    either inline (O(document)) or as a JSON or YAML file on the target (O(src)).
  - The whole document is validated before anything changes. Every error is reported at once, each with its place
    in the document, for example C(subsystems[3].namespaces[7].device.path). A refused run leaves configfs as it was.
  - The difference between the document and configfs is planned by the same planner the boot-time restorer uses
    (C(nvmet-restore restore)) and applied in one call, in the order the kernel requires. A second run with the same
    document writes nothing and reports no change.
  - The guards of M(aiinfra.fabric.nvmet_subsystem) and M(aiinfra.fabric.nvmet_port) apply, per object. A change
    that disconnects hosts needs O(force), a port address change while subsystems are linked needs
    O(allow_reconfigure).
  - O(purge) says what the module owns. Nothing the document does not declare is removed unless O(purge) says so.
  - Referrals are planned with their port. With O(purge=listed) or O(purge=all), a port entry that has a C(referrals)
    key gets exactly those referrals; one without the key keeps the referrals configfs has.
  - "A passthru subsystem (C(passthru), a list of one C({device: {path: /dev/nvmeN}, enable: 1}), no namespaces) gets
    its controller after the subsystem is made and before any port links it. Changing or disabling an enabled one
    disconnects its hosts and needs O(force). C(admin_timeout), C(io_timeout) and C(clear_ids) are accepted only with
    the kernel's defaults that C(nvmetcli save) writes. The boot restorer does not restore passthru subsystems."
  - "The top-level C(discovery) group that C(nvmetcli save) writes (C({nqn: ...})) sets the target's discovery NQN
    (C(<configfs>/nvmet/discovery_nqn), Linux 6.6 and later), so an unedited nvmetcli save file is a valid document."
author:
  - aiinfra.fabric developers (@aiinfra)
extends_documentation_fragment:
  - aiinfra.fabric.attributes
  - aiinfra.fabric.attributes.declarative
  - aiinfra.fabric.nvmet
attributes:
  diff_mode:
    details: Before and after are the whole target in the save-file schema, with DH-HMAC-CHAP keys masked.
options:
  document:
    description:
      - The desired target in nvmetcli's save-file schema. Mutually exclusive with O(src).
      - "Each subsystem: C(nqn), C(attr) (C(allow_any_host), C(serial), C(model), C(version), C(firmware),
        C(ieee_oui), C(cntlid_min), C(cntlid_max), C(qid_max), C(pi_enable), ...), C(allowed_hosts),
        C(namespaces) (each C(nsid), C(enable), C(device) with C(path), C(uuid), C(nguid), C(ana_grpid),
        C(buffered_io))."
      - "Each port: C(portid), C(addr) (C(trtype), C(traddr), C(trsvcid), C(adrfam), C(treq), C(tsas)),
        C(param) (C(inline_data_size), ...), C(subsystems) (NQNs to link), C(ana_groups) (each C(grpid),
        C(ana.state))."
    type: dict
    suboptions:
      hosts:
        description: Host entries. C(dhchap.key) and C(dhchap.ctrl_key) are secrets (never logged or returned).
        type: list
        elements: dict
        suboptions:
          nqn:
            description: The host's NQN.
            type: str
          dhchap:
            description: DH-HMAC-CHAP settings of the host.
            type: dict
            suboptions:
              key:
                description: The host's secret (C(DHHC-1:0X:<base64>:)).
                type: str
              ctrl_key:
                description: The controller's secret, for bidirectional authentication.
                type: str
              hash:
                description: HMAC, one of C(hmac(sha256)), C(hmac(sha384)), C(hmac(sha512)).
                type: str
              dhgroup:
                description: Diffie-Hellman group, C(null) or C(ffdhe2048) .. C(ffdhe8192).
                type: str
      subsystems:
        description: Subsystems, as C(nvmetcli save) writes them.
        type: list
        elements: dict
      ports:
        description: Ports, as C(nvmetcli save) writes them, with their C(referrals) and C(ana_groups).
        type: list
        elements: dict
      discovery:
        description: The target's discovery service, as C(nvmetcli save) writes it.
        type: dict
        suboptions:
          nqn:
            description: The discovery subsystem's NQN.
            type: str
  src:
    description:
      - Path on the target of a JSON or YAML file holding the document (YAML needs PyYAML on the target).
        Keys it holds are kept out of the results like those of O(document).
      - Mutually exclusive with O(document).
    type: path
  purge:
    description:
      - What happens to what configfs holds and the document does not declare.
      - V(none) removes nothing undeclared. A listed subsystem keeps the namespaces and allowed hosts the document
        does not name, and a listed port keeps its other subsystem links. Unlisted objects are left alone.
      - V(listed) makes each listed subsystem and port exactly as declared. Their other namespaces, allowed hosts,
        subsystem links and ANA groups are removed. Unlisted objects are left alone.
      - V(all) is V(listed), and also removes the subsystems, ports and hosts the document does not list.
      - Removing something that hosts use needs O(force) like any other disconnecting change.
    type: str
    choices: [none, listed, all]
    default: none
  keep_port_links:
    description:
      - With O(purge=listed) or O(purge=all), a listed port keeps its links to subsystems that the document does not
        list and that stay in configfs (other users' subsystems on a shared port). Its other settings are still made
        exactly as declared.
      - Without it, such links are removed, as O(purge) says.
    type: bool
    default: false
  force:
    description:
      - Go ahead with changes that disconnect connected hosts, or when this host cannot tell whether any are.
      - With O(save_file), also export and save a namespace's backing file that is not the one the file recorded (see
        O(save_file)).
    type: bool
    default: false
  allow_reconfigure:
    description: Change the address or parameters of a port that has subsystems linked (unlinked, changed, relinked).
    type: bool
    default: false
  check_paths:
    description: Check that every namespace's C(device.path) exists and is a block device or regular file.
    type: bool
    default: true
  remove:
    description:
      - Remove exactly these objects instead of applying a document (mutually exclusive with O(document) and
        O(src)). First the subsystems with their namespaces, allowed-host links and port links, then the ports, then
        the host entries, with the same guards (live connections need O(force)). What configfs does not have is
        skipped, so a second run changes nothing.
      - With O(save_file), the file is written without these objects (removed when nothing is left) before any of
        them is removed, so a teardown stopped half way does not bring them back at the next boot.
    type: dict
    suboptions:
      subsystems:
        description: Subsystem NQNs.
        type: list
        elements: str
        default: []
      ports:
        description: Port IDs.
        type: list
        elements: int
        default: []
      hosts:
        description: Host NQNs (their entries under C(hosts/)).
        type: list
        elements: str
        default: []
  load_modules:
    description:
      - Load C(nvmet) and the transport module of each port of the document (for example C(nvmet_tcp) for tcp,
        C(nvme_loop) for loop) with C(modprobe) when C(/sys/module) does not list them, before configfs is read.
        Not in check mode. Loading them at boot is left to the caller.
    type: bool
    default: false
  save_file:
    description:
      - After the change, write the whole target, DH-HMAC-CHAP keys included, to this path in nvmetcli's save-file
        format (mode 0600 from its first byte, directory 0700, atomically), only when its content differs or its
        mode is not 0600 (a wider mode is a change the run fixes; RV(save_file_mode) and the diff show it); the
        boot restorer and C(nvmetcli restore) read it.
      - The keys never come back in the result; RV(save_file) says only what happened to the file.
      - Each enabled namespace's backing file is recorded with its identity (C(file_identity), inode and size, which
        nvmetcli ignores), that of the file the kernel opened. A namespace that stays enabled keeps the identity
        recorded before, even when another file has since been put at its path. The boot restorer exports a file
        only when it is still that one.
      - A document that would keep or make a namespace enabled on a file that is not the one the file recorded is
        refused before any change, naming the namespace, unless O(force). The image was deleted, replaced or resized
        after the save, and the kernel still serves the old one while the namespace stays enabled.
      - In check mode with planned changes the file is reported as V(would write) without comparing it.
      - With O(remove), see there.
    type: path
notes:
  - The nvmet module and the transport modules of the document's ports must be loaded (community.general.modprobe).
seealso:
  - module: aiinfra.fabric.nvmet_subsystem
  - module: aiinfra.fabric.nvmet_port
  - module: aiinfra.fabric.nvmet_host
  - module: aiinfra.fabric.nvmet_info
"""

EXAMPLES = r"""
- name: Export two file-backed namespaces over NVMe/TCP to one host
  aiinfra.fabric.nvmet_target:
    document:
      hosts:
        - nqn: "{{ te2_hostnqn }}"
      subsystems:
        - nqn: nqn.2024-04.io.aiinfra.lab:te1.data
          attr:
            allow_any_host: "0"
            serial: abc123
          allowed_hosts: ["{{ te2_hostnqn }}"]
          namespaces:
            - nsid: 1
              enable: 1
              device: {path: /srv/nvmet/disk1.img}
            - nsid: 2
              enable: 1
              device: {path: /srv/nvmet/disk2.img}
      ports:
        - portid: 1
          addr: {trtype: tcp, adrfam: ipv4, traddr: 10.99.0.1, trsvcid: "4420"}
          subsystems: [nqn.2024-04.io.aiinfra.lab:te1.data]

- name: Make the target exactly what a saved file says, removing everything else
  aiinfra.fabric.nvmet_target:
    src: /etc/nvmet/config.json
    purge: all
    force: true
"""

RETURN = r"""
target:
  description:
    - The whole target after the run (predicted in check mode), keys masked.
    - In nvmetcli's save-file schema, the shape that M(aiinfra.fabric.nvmet_info) returns as
      RV(aiinfra.fabric.nvmet_info#module:nvmet), where its C(hosts), C(ports) and C(subsystems) are described.
  returned: always
  type: dict
  sample:
    hosts: []
    ports:
      - portid: 1
        addr: {adrfam: ipv4, traddr: 10.99.0.1, treq: not specified, trsvcid: "4420", trtype: tcp, tsas: none}
        param: {inline_data_size: "16384"}
        subsystems: [nqn.2024-04.io.aiinfra.lab:te1.data]
        referrals: []
        ana_groups: [{grpid: 1, ana: {state: optimized}}]
    subsystems:
      - nqn: nqn.2024-04.io.aiinfra.lab:te1.data
        attr: {allow_any_host: "1", serial: abc123}
        allowed_hosts: []
        namespaces:
          - {nsid: 1, enable: 1, device: {path: /srv/nvmet/disk1.img}, ana_grpid: 1, buffered_io: 0}
save_file:
  description:
    - What happened to O(save_file), V(unchanged), V(written) or V(would write) (check mode); with O(remove) also
      V(removed), V(would remove) or V(absent). Empty without O(save_file). A written or removed file alone makes
      the run changed.
  returned: always
  type: str
  sample: unchanged
save_file_mode:
  description:
    - The mode of O(save_file) after the run (in check mode, as it would be), V(0600); null without O(save_file) or
      when the file is (or would be) removed. With O(save_file) the diff carries it too, before and after.
  returned: always
  type: str
  sample: "0600"
operations:
  description: The operations applied (planned, in check mode) in order, key values masked.
  returned: always
  type: list
  elements: str
  sample: ["mkdir subsystems/nqn.2024-04.io.aiinfra.lab:te1.data", "write ports/1/addr_trtype = tcp"]
changed_keys:
  description: The host key files written (or to be written), as C(hosts/<nqn>/<field>); never the values.
  returned: always
  type: list
  elements: str
  sample: ["hosts/nqn.2014-08.org.nvmexpress:uuid:2bd0d2b2-5c8b-4c5a-9a6f-0e7d0b7a3f11/dhchap_key"]
errors:
  description: Every error found in the document, each starting with its place in it. Only when the document is refused.
  returned: failure
  type: list
  elements: str
  sample: ["subsystems[3].namespaces[7].device.path: '/srv/x.img' does not exist or cannot be read (No such file or directory)"]
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import file_mode, mode_text
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import simulate
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.document import DocumentError, validate_document
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.backing import (
    identities_to_record,
    refusal,
    reopened_by,
    replaced_files,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.planner import plan_removal
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.result import apply_or_fail, exit_with_plan
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import read_saved, save_to_file
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.target import (
    PURGE_CHOICES,
    changed_keys,
    drop_unset,
    load_document,
    read_and_plan,
    secrets_of,
    transport_modules,
    target_view,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs

HOST_OPTIONS = dict(
    nqn=dict(type="str"),
    dhchap=dict(type="dict", options=dict(
        key=dict(type="str", no_log=True),
        ctrl_key=dict(type="str", no_log=True),
        hash=dict(type="str"),
        dhgroup=dict(type="str"),
    )),
)


# What save_file reports when the file was (or would be) written or removed: the run changed.
SAVE_FILE_CHANGED = ("written", "would write", "removed", "would remove")


def make_tree(params):
    """The configfs tree to work on (a seam for the unit tests' fake tree)."""
    return ConfigfsTree(params["configfs_root"])


def main():
    module = AnsibleModule(
        argument_spec=dict(
            document=dict(type="dict", options=dict(
                hosts=dict(type="list", elements="dict", options=HOST_OPTIONS),
                subsystems=dict(type="list", elements="dict"),
                ports=dict(type="list", elements="dict"),
                discovery=dict(type="dict", options=dict(nqn=dict(type="str"))),
            )),
            src=dict(type="path"),
            purge=dict(type="str", default="none", choices=list(PURGE_CHOICES)),
            keep_port_links=dict(type="bool", default=False),
            force=dict(type="bool", default=False),
            allow_reconfigure=dict(type="bool", default=False),
            check_paths=dict(type="bool", default=True),
            save_file=dict(type="path"),
            remove=dict(type="dict", options=dict(
                subsystems=dict(type="list", elements="str", default=[]),
                ports=dict(type="list", elements="int", default=[]),
                hosts=dict(type="list", elements="str", default=[]),
            )),
            load_modules=dict(type="bool", default=False),
            configfs_root=dict(type="path", default="/sys/kernel/config"),
        ),
        mutually_exclusive=[("document", "src", "remove")],
        required_one_of=[("document", "src", "remove")],
        supports_check_mode=True,
    )
    p = module.params
    tree = make_tree(p)
    if p["remove"] is not None:
        remove_and_exit(module, tree, p)
    try:
        doc = drop_unset(p["document"]) if p["document"] is not None else load_document(p["src"])
        module.no_log_values.update(secrets_of(doc))
        if p["load_modules"] and not module.check_mode:
            load_kernel_modules(module, tree, doc, p["check_paths"])
        state, ops = read_and_plan(tree, doc, p["purge"], p["force"], p["allow_reconfigure"], p["keep_port_links"],
                                   p["check_paths"])
    except DocumentError as exc:
        module.fail_json(msg=exc.msg, errors=exc.errors, changed=False, operations=[])
    except NvmetError as exc:
        module.fail_json(msg=exc.msg, changed=False, operations=[])

    previous = read_saved(p["save_file"]) if p["save_file"] else None
    if previous is not None and not p["force"]:
        replaced = replaced_files(simulate(state, ops), previous)
        if replaced:
            module.fail_json(msg=refusal(replaced, p["save_file"]), changed=False, operations=[])
    mode_before = save_file_mode(p["save_file"])
    after = apply_ops(module, tree, state, ops)
    saved = save_target(tree, p["save_file"], after, ops, module,
                        None if p["force"] else previous)
    exit_with(module, state, after, ops, saved, changed_keys(ops), (mode_before, save_file_mode(p["save_file"], saved)))


def apply_ops(module, tree, state, ops, saved=None):
    """Apply the plan unless in check mode (nvmet/result.py, the modules' one path); the target
    after it. A kernel refusal part way fails with what was applied, and with what happened
    to the save file when it was written first (``saved``)."""
    extra = {} if saved is None else dict(save_file=saved)
    return apply_or_fail(module, tree, state, ops, changed=saved in SAVE_FILE_CHANGED, extra=extra)


def save_file_mode(path, saved=None):
    """The save file's mode as results show it ("0600"), or None: as it is, or after ``saved``,
    the outcome of a check-mode run (a file written then has 0600; a removed one none)."""
    if not path or saved in ("would remove", "removed", "absent"):
        return None
    if saved == "would write":
        return "0600"
    return mode_text(file_mode(path))


def exit_with(module, state, after, ops, saved, keys, modes=(None, None)):
    target = target_view(after)

    def diff():
        before, after_view = target_view(state), dict(target)
        if saved:
            before["save_file_mode"], after_view["save_file_mode"] = modes
        return before, after_view

    exit_with_plan(module, ops, "target", target, diff, changed=saved in SAVE_FILE_CHANGED,
                   extra=dict(changed_keys=keys, save_file=saved, save_file_mode=modes[1]))


def load_kernel_modules(module, tree, doc, check_paths):
    """Load what the document's ports need, once the document itself is known to be sound:
    a refused document loads nothing. Whether each transport is loaded is checked later."""
    missing = [n for n in transport_modules(doc) if not os.path.isdir(os.path.join(tree.sysfs_root, "module", n))]
    if not missing:
        return
    kept = tree.read()["subsystems"] if os.path.isdir(tree.nvmet) else ()
    errors = validate_document(doc, kept, None, check_paths)
    if errors:
        raise DocumentError(errors)
    modprobe = module.get_bin_path("modprobe", required=True, opt_dirs=["/usr/sbin", "/sbin"])
    for name in missing:
        rc, out, err = module.run_command([modprobe, name], environ_update=dict(LC_ALL="C"))
        if rc != 0:
            module.fail_json(msg="modprobe %s failed: %s; the document needs it (nvmet and one module per port "
                             "transport)" % (name, (err or out).strip()), rc=rc, stdout=out, stderr=err, changed=False)


def remove_and_exit(module, tree, p):
    """remove: plan the removals, save the file without those objects, then remove them."""
    want = p["remove"]
    try:
        check_configfs(tree)
        state = tree.read()
        ops = plan_removal(state, tree.connections(state), want["subsystems"], want["ports"], want["hosts"], p["force"])
        saved = ""
        mode_before = save_file_mode(p["save_file"])
        if p["save_file"]:
            saved = save_to_file(tree, p["save_file"], check=module.check_mode, remove_when_empty=True,
                                 state=simulate(state, ops))
    except NvmetError as exc:
        module.fail_json(msg=exc.msg, changed=False, operations=[])
    except OSError as exc:
        module.fail_json(msg="saving the target without the removed objects to %s failed, nothing was removed: %s"
                         % (p["save_file"], exc), changed=False, operations=[])
    after = apply_ops(module, tree, state, ops, saved)
    exit_with(module, state, after, ops, saved, [], (mode_before, save_file_mode(p["save_file"], saved)))


def save_target(tree, path, after, ops, module, previous):
    """Persist the target as configfs now has it (``after``: the state just read when nothing
    changed, the objects the plan touched read again after changes); in check mode with
    changes the file would differ. Backing files: the identities ``previous`` (the file as it
    was; None with force) recorded, except for namespaces this plan enabled, read now."""
    if not path:
        return ""
    if ops and module.check_mode:
        return "would write"
    try:
        files = identities_to_record(after, previous, reopened_by(ops))
        return save_to_file(tree, path, check=module.check_mode, state=after, files=files)
    except (OSError, NvmetError) as exc:
        module.fail_json(msg="the target was configured, but saving it to %s failed: %s" % (path, exc),
                         changed=bool(ops), operations=[op.text() for op in ops])


if __name__ == "__main__":
    main()
