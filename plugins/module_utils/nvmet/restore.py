# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command-line entry of the boot-time restorer (standard library only).

The nvmeof_target role copies this package to the target under
<libexec>/lib/ansible_collections/aiinfra/fabric/plugins/module_utils/nvmet/ and a small
entry script (roles/nvmeof_target/files/nvmet-restore) puts <libexec>/lib on sys.path
and calls :func:`main`:

    python3 nvmet-restore restore /etc/nvmet/config.json          # apply the file
    python3 nvmet-restore restore --check /etc/nvmet/config.json  # print the plan only
    python3 nvmet-restore clear /etc/nvmet/config.json            # take down what the file lists
    python3 nvmet-restore save                                    # print the current tree

The save-file format is nvmetcli's JSON schema (hosts, ports, subsystems). Unlike
``nvmetcli restore`` it does not wipe the target first: it plans the difference between
the file and configfs, applies only that, in the order the kernel requires, and exits
non-zero on the first kernel error. Objects that are not in the file are left alone.
"""

from __future__ import annotations

import json
import os
import sys

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import clear_document, restore_document, save_to_file, to_savefile
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(prog="nvmet-restore", description="Restore or save the kernel NVMe-oF target "
                                     "configuration (nvmetcli save-file JSON) declaratively.")
    parser.add_argument("--configfs-root", default="/sys/kernel/config")
    sub = parser.add_subparsers(dest="command")
    r = sub.add_parser("restore", help="make configfs match FILE; print each operation")
    r.add_argument("file")
    r.add_argument("--check", action="store_true", help="print the plan, change nothing")
    r.add_argument("--force", action="store_true", help="proceed even when hosts are connected")
    r.add_argument("--allow-reconfigure", action="store_true", help="unlink/change/relink ports whose address differs")
    c = sub.add_parser("clear", help="remove the ports, subsystems and hosts FILE lists (ports first), even with "
                       "hosts connected; a missing FILE or an unloaded nvmet is nothing to do")
    c.add_argument("file")
    c.add_argument("--check", action="store_true", help="print the plan, change nothing")
    s = sub.add_parser("save", help="print the current configuration (keys in clear with --keys)")
    s.add_argument("--keys", action="store_true")
    s.add_argument("--output", metavar="FILE", help="write to FILE (keys included, mode 0600) when it differs, "
                   "print unchanged/written instead of the configuration")
    s.add_argument("--remove-when-empty", action="store_true",
                   help="with --output: delete FILE when no host, port or subsystem is left (print removed/absent)")
    s.add_argument("--check", action="store_true", help="with --output: report what would happen, write nothing")
    args = parser.parse_args(argv)
    tree = ConfigfsTree(args.configfs_root)
    try:
        if args.command == "restore":
            with open(args.file) as f:
                doc = json.load(f)
            for line in restore_document(doc, check=args.check, force=args.force,
                                         allow_reconfigure=args.allow_reconfigure, tree=tree):
                sys.stdout.write(("would " if args.check else "") + line + "\n")
        elif args.command == "clear":
            if not os.path.exists(args.file):
                return 0
            with open(args.file) as f:
                doc = json.load(f)
            for line in clear_document(doc, check=args.check, tree=tree):
                sys.stdout.write(("would " if args.check else "") + line + "\n")
        elif args.command == "save" and args.output:
            sys.stdout.write(save_to_file(tree, args.output, check=args.check,
                                          remove_when_empty=args.remove_when_empty) + "\n")
        elif args.command == "save":
            check_configfs(tree)
            sys.stdout.write(json.dumps(to_savefile(tree.read(), mask_keys=not args.keys), indent=2, sort_keys=True) + "\n")
        else:
            parser.print_help()
            return 2
    except NvmetError as exc:
        for line in exc.applied:
            sys.stdout.write(line + "\n")
        sys.stderr.write("error: %s\n" % exc.msg)
        return 1
    except (OSError, ValueError) as exc:
        sys.stderr.write("error: %s\n" % exc)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
