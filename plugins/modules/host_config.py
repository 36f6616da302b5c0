#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: host_config
short_description: Converge a host's plain files, directories, kernel modules and systemd units in one task
version_added: "0.1.0"
description:
  - Takes what one phase of a role needs on a host (directories, files with their content and modes, files that must
    be gone, kernel modules loaded and loaded at boot, systemd units enabled and started), reads what the host has,
    and changes only what differs, in that order, in one module run.
  - It stands in for a dozen small tasks (M(ansible.builtin.file), M(ansible.builtin.copy),
    M(ansible.builtin.template) with C(lookup('template')), M(community.general.modprobe), C(systemctl enable/start),
    M(ansible.builtin.slurp)). Each task costs one module start on the host, about 2.8 seconds on the lab's emulated
    guests under the stock strategy, so the roles use this module where they would otherwise chain such tasks.
  - Every argument is checked before anything is read or changed; one error lists every problem.
  - Files are written atomically (a temporary file in the same directory, fsynced, renamed over the old one).
    Missing parent directories are created with mode 0755 unless O(directories) names them.
  - A changed or removed unit file is followed by one C(systemctl daemon-reload), and only when systemd has that unit
    loaded (a new unit nobody has asked about needs none).
  - Kernel modules are loaded with C(modprobe) when C(/sys/module/NAME) is missing. With O(persist_modules), a module
    that no C(/etc/modules-load.d/*.conf) file lists gets C(/etc/modules-load.d/NAME.conf), the file
    M(community.general.modprobe) writes, so either module's teardown finds it.
options:
  directories:
    description: Directories that must exist, created in order (parents first), with their mode and owner.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: str
        required: true
      mode:
        description: Octal mode as a string, for example V('0700').
        type: str
        default: '0755'
      owner:
        description: Owner name; V(null) leaves the owner as it is (new directories belong to the module's user).
        type: str
      group:
        description: Group name; V(null) leaves it as it is.
        type: str
  files:
    description: Regular files with exactly this content, mode and owner.
    type: list
    elements: dict
    default: []
    suboptions:
      path:
        description: Absolute path.
        type: str
        required: true
      content:
        description: The whole text of the file (render templates on the controller with C(lookup('ansible.builtin.template', ...))).
        type: str
        required: true
      mode:
        description: Octal mode as a string.
        type: str
        default: '0644'
      owner:
        description: Owner name; V(null) leaves it as it is.
        type: str
      group:
        description: Group name; V(null) leaves it as it is.
        type: str
      secret:
        description: The content is a secret; it is kept out of the diff, the result and the logs.
        type: bool
        default: false
  absent:
    description: Files that must not exist (directories are refused).
    type: list
    elements: str
    default: []
  remove_empty_dirs:
    description:
      - Directories removed when they are empty (after O(absent)), in the order given, so list the deepest first.
        A directory that still holds anything is left as it is.
    type: list
    elements: str
    default: []
  kernel_modules:
    description: Kernel modules that must be loaded.
    type: list
    elements: str
    default: []
  persist_modules:
    description: Also load O(kernel_modules) at boot (C(/etc/modules-load.d)).
    type: bool
    default: true
  units:
    description: Systemd units to enable or disable, start or stop, after the files are in place.
    type: list
    elements: dict
    default: []
    suboptions:
      name:
        description: Unit name, for example V(aiinfra-nvmet.service).
        type: str
        required: true
      enabled:
        description: Whether the unit starts at boot (C(systemctl --no-reload enable/disable)); V(null) leaves it.
        type: bool
      started:
        description: Whether the unit is active now (C(systemctl start/stop)); V(null) leaves it.
        type: bool
  read:
    description:
      - Text files to read after the changes and return in RV(read), for example a status file a unit writes.
        Never list a secret here.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - aiinfra.fabric.attributes
attributes:
  check_mode:
    description: Plans and reports what would change (operations, diff) without changing anything.
    support: full
  diff_mode:
    description:
      - Before and after per managed path, module and unit. Non-secret text files up to 16 KiB show their content,
        larger ones their size and SHA-256, secret ones neither.
    support: full
  idempotent:
    description: A second run with the same arguments reports no change and writes nothing.
    support: full
requirements:
  - systemd (C(systemctl)) when O(units) is given or a unit file changes; C(modprobe) when O(kernel_modules) is given.
author:
  - aiinfra.fabric developers (@aiinfra)
"""

EXAMPLES = r"""
- name: Install and start a boot unit, with its state directory and the modules it needs
  aiinfra.fabric.host_config:
    directories:
      - {path: /var/lib/aiinfra-fabric, mode: '0700'}
    files:
      - path: /etc/systemd/system/aiinfra-nvmet.service
        content: "{{ lookup('ansible.builtin.template', 'aiinfra-nvmet.service.j2') }}"
    kernel_modules: [nvmet, nvmet_tcp]
    units:
      - {name: aiinfra-nvmet.service, enabled: true, started: true}
    read: [/run/aiinfra-fabric/nvmet-restore.json]
"""

RETURN = r"""
operations:
  description: What was done (in check mode, what would be done), one line each, in order; never file content.
  returned: always
  type: list
  elements: str
  sample: ["mkdir /var/lib/aiinfra-fabric 0700", "create /etc/systemd/system/x.service 0644 (412 bytes)",
           "systemctl --no-reload enable x.service", "systemctl start x.service"]
changed_paths:
  description: The paths that were (or would be) created, changed or removed.
  returned: always
  type: list
  elements: str
  sample: [/var/lib/aiinfra-fabric, /etc/systemd/system/x.service]
kernel_modules:
  description: Per kernel module of O(kernel_modules) (the module's name is the key), whether it was loaded before
    this run.
  returned: always
  type: dict
  sample: {nvmet: {loaded_before: true}}
  contains:
    loaded_before:
      description: Whether the module was loaded before this run.
      type: bool
read:
  description: The text of each path of O(read) after the changes, the path being the key (V(null) when the file
    does not exist).
  returned: always
  type: dict
  sample: {/run/aiinfra-fabric/restore.status: "ok 3 subsystems\n"}
  contains:
    <path>:
      description: The file's text, or V(null) when it does not exist.
      type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.apply import SystemProbe, apply, read_files
from ansible_collections.aiinfra.fabric.plugins.module_utils.hostconfig.state import (
    HostConfigError,
    op_text,
    plan,
    unit_file_of,
    validate,
)

FILE_OPTIONS = dict(
    path=dict(type="str", required=True),
    # no_log: the invocation AnsibleModule logs on the host, and the result of an argument error,
    # come before main() knows which files are secret; main() lets non-secret content back in.
    content=dict(type="str", required=True, no_log=True),
    mode=dict(type="str", default="0644"),
    owner=dict(type="str"),
    group=dict(type="str"),
    secret=dict(type="bool", default=False),
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            directories=dict(type="list", elements="dict", default=[], options=dict(
                path=dict(type="str", required=True),
                mode=dict(type="str", default="0755"),
                owner=dict(type="str"),
                group=dict(type="str"),
            )),
            files=dict(type="list", elements="dict", default=[], options=FILE_OPTIONS),
            absent=dict(type="list", elements="str", default=[]),
            remove_empty_dirs=dict(type="list", elements="str", default=[]),
            kernel_modules=dict(type="list", elements="str", default=[]),
            persist_modules=dict(type="bool", default=True),
            units=dict(type="list", elements="dict", default=[], options=dict(
                name=dict(type="str", required=True),
                enabled=dict(type="bool"),
                started=dict(type="bool"),
            )),
            read=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    p = module.params
    secrets = set(f["content"] for f in p["files"] if f["secret"] and f["content"])
    module.no_log_values.difference_update(set(f["content"] for f in p["files"] if not f["secret"]) - secrets)
    try:
        desired = validate(p)
        # systemctl is asked about units, and about a unit file the plan writes or removes (daemon-reload).
        need_systemctl = bool(desired["units"]) or any(
            unit_file_of(path) for path in [f["path"] for f in desired["files"]] + desired["absent"])
        systemctl = module.get_bin_path("systemctl", required=need_systemctl) or "systemctl"
        modprobe = module.get_bin_path("modprobe", required=bool(desired["kernel_modules"]),
                                       opt_dirs=["/usr/sbin", "/sbin"]) or "modprobe"

        def run(argv):
            return module.run_command(argv, environ_update=dict(LC_ALL="C"))

        ops, before, after = plan(desired, "/", SystemProbe(run, systemctl))
        loaded_before = dict((name, dict(loaded_before=before["module " + name]["loaded"]))
                             for name in desired["kernel_modules"])
        if ops and not module.check_mode:
            done = apply(ops, "/", run, systemctl, modprobe)
        else:
            done = [op_text(op) for op in ops]
    except HostConfigError as exc:
        module.fail_json(msg=exc.msg, errors=exc.errors, operations=exc.done, changed=bool(exc.done))
    changed_paths = sorted(set(op["path"] for op in ops if "path" in op))
    result = dict(changed=bool(ops), operations=done, changed_paths=changed_paths, kernel_modules=loaded_before,
                  read=read_files("/", desired["read"]))
    if module._diff:
        result["diff"] = dict(before=before, after=after)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
