#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
module: nvme_mkfs
short_description: Make a file system on a namespace only when the device carries no other signature
version_added: "0.1.0"
description:
  - Lists every signature on the device with C(wipefs --json) (file systems, partition
    tables such as C(gpt), C(PMBR) and C(dos), LVM and RAID members, crypto headers) and
    makes the file system only on a blank device.
  - A device that carries the wanted file system and nothing else is left alone (no change),
    so a re-run keeps the data.
  - Any other signature is refused with a message that names each one found, its kind and
    its offset, and nothing is changed. Asking blkid only for a file-system C(TYPE), as
    M(community.general.filesystem) does before running C(mkfs -F), misses partition tables.
  - With O(force=true) the signatures are wiped (C(wipefs --all)) and the file system is made.
author:
  - aiinfra.fabric developers (@aiinfra)
requirements:
  - util-linux 2.29 or later (C(wipefs --json --output)), C(blkid), and C(mkfs.<fstype>).
options:
  dev:
    description: The block device, for example the RV(aiinfra.fabric.nvme_connect#module:devices[].path) a connection returned.
    type: path
    required: true
  fstype:
    description: File system type; C(mkfs.<fstype>) must exist on the host.
    type: str
    default: ext4
  force:
    description:
      - Wipe whatever signatures the device carries and make the file system. Destroys the data on it.
      - A device that already carries exactly the wanted file system is kept even so.
    type: bool
    default: false
  opts:
    description:
      - More arguments for C(mkfs.<fstype>), placed before the device.
      - For ext2/3/4, btrfs and xfs the module chooses the new file system's UUID and passes it (C(-U), or C(-m uuid=)
        for xfs) unless these arguments choose one; other file systems are probed with C(blkid -p) after mkfs.
    type: list
    elements: str
    default: []
extends_documentation_fragment:
  - aiinfra.fabric.attributes
attributes:
  check_mode:
    description: Lists the signatures and returns what it would do (RV(operations)); changes nothing.
    support: full
  diff_mode:
    description: Returns the device's signatures before and the file system after.
    support: full
  idempotent:
    description: A device that carries the wanted file system only is not touched.
    support: full
notes:
  - Run as root.
seealso:
  - module: aiinfra.fabric.nvme_connect
"""

EXAMPLES = r"""
- name: Connect the namespace
  aiinfra.fabric.nvme_connect:
    transport: tcp
    traddr: 10.99.0.1
    nqn: nqn.2024-01.io.aiinfra:lab-disk
  register: nvme

- name: Make ext4 on it only when it is blank
  aiinfra.fabric.nvme_mkfs:
    dev: "{{ nvme.devices[0].path }}"
    fstype: ext4
"""

RETURN = r"""
signatures:
  description: The signatures found on the device before the run.
  returned: always
  type: list
  elements: dict
  sample:
    - {type: gpt, usage: partition-table, offset: "0x200", uuid: null, label: null}
    - {type: PMBR, usage: partition-table, offset: "0x1fe", uuid: null, label: null}
  contains:
    type:
      description: What wipefs names the signature (C(ext4), C(gpt), C(LVM2_member) ...).
      type: str
    usage:
      description: What it is (C(filesystem), C(partition-table), C(raid), C(crypto) ...).
      type: str
    offset:
      description: Where it is on the device, as wipefs prints it.
      type: str
    uuid:
      description: Its UUID, if it has one.
      type: str
    label:
      description: Its label, if it has one.
      type: str
uuid:
  description: The UUID of the file system on the device after the run (null in check mode before mkfs).
  returned: always
  type: str
  sample: 6017cea8-3829-4b66-9839-d2a7a988ea0b
operations:
  description: What the module did (or would do in check mode), in order.
  returned: always
  type: list
  elements: str
  sample: ["wipefs --all /dev/nvme1n1", "mkfs.ext4 /dev/nvme1n1"]
"""

import os
import uuid as uuidlib

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.signatures import (
    WIPEFS_COLUMNS, SignatureError, filesystem_uuid, mkfs_uuid_args, parse_wipefs, plan_filesystem,
)

ENV = {"LC_ALL": "C"}


def run(module, argv, what):
    rc, out, err = module.run_command(argv, environ_update=ENV)
    if rc != 0:
        module.fail_json(msg="%s failed (rc=%d): %s" % (what, rc, (err or out).strip()), cmd=argv, rc=rc,
                         stdout=out, stderr=err)
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dev=dict(type="path", required=True),
            fstype=dict(type="str", default="ext4"),
            force=dict(type="bool", default=False),
            opts=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    dev = module.params["dev"]
    fstype = module.params["fstype"]
    if not os.path.exists(dev):
        module.fail_json(msg="dev=%s does not exist" % dev)
    if not fstype or "/" in fstype:
        module.fail_json(msg="fstype=%r is not a file system type" % fstype)
    wipefs = module.get_bin_path("wipefs", required=True)
    blkid = module.get_bin_path("blkid", required=True)
    mkfs = module.get_bin_path("mkfs.%s" % fstype, required=True)

    try:
        signatures = parse_wipefs(run(module, [wipefs, "--json", "--output", WIPEFS_COLUMNS, dev],
                                      "listing the signatures on %s" % dev))
    except SignatureError as exc:
        module.fail_json(msg=str(exc))
    plan = plan_filesystem(dev, signatures, fstype, module.params["force"])
    if plan["action"] == "refuse":
        module.fail_json(msg=plan["msg"], signatures=signatures)

    operations = []
    if plan["wipe"]:
        operations.append("wipefs --all %s" % dev)
    if plan["action"] == "mkfs":
        operations.append("mkfs.%s %s" % (fstype, dev))
    uuid = filesystem_uuid(signatures, fstype) if plan["action"] == "keep" else None

    if operations and not module.check_mode:
        if plan["wipe"]:
            run(module, [wipefs, "--all", dev], "wiping the signatures on %s" % dev)
        new_uuid = str(uuidlib.uuid4())
        uuid_args = mkfs_uuid_args(fstype, module.params["opts"], new_uuid)
        run(module, [mkfs] + module.params["opts"] + (uuid_args or []) + [dev], "mkfs.%s %s" % (fstype, dev))
        if uuid_args:
            uuid = new_uuid
        else:
            # Probe the device itself: udev may not have seen the new file system yet.
            uuid = run(module, [blkid, "-p", "-s", "UUID", "-o", "value", dev],
                       "reading the new file system's UUID").strip() or None

    result = dict(changed=bool(operations), signatures=signatures, uuid=uuid, operations=operations)
    if module._diff:
        result["diff"] = {
            "before": {"signatures": ["%s (%s)" % (s["type"], s["usage"]) for s in signatures]},
            "after": {"signatures": ["%s (filesystem)" % fstype] if plan["action"] in ("keep", "mkfs")
                      else []},
        }
    module.exit_json(**result)


if __name__ == "__main__":
    main()
