# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Command-line entry of the boot-time restorer (standard library only).

The nvmeof_target role installs this module and what it imports from the collection,
transitively, as one file (roles/nvmeof_target/templates/nvmet-restore.j2, through the
host_library lookup) that calls :func:`main`. What this file imports is what the target
carries: nothing here may import the controller's modules (topology, record, snapshot,
tls_keys) or the nvmet_target module's (document, target).

    python3 nvmet-restore restore /etc/nvmet/config.json          # apply the file
    python3 nvmet-restore restore --check /etc/nvmet/config.json  # print the plan only
    python3 nvmet-restore clear /etc/nvmet/config.json            # take down what the file lists
    python3 nvmet-restore save                                    # print the current tree

The save-file format is nvmetcli's JSON schema (hosts, ports, subsystems). Unlike
``nvmetcli restore`` it does not wipe the target first: it plans the difference between
the file and configfs and applies only that, in the order the kernel requires, object
by object, best effort (bootrestore.py): every object it skips is reported on stderr
(the journal, under the boot unit) and with --status-file in a JSON file. Objects that
are not in the file are left alone.
"""

from __future__ import annotations

import json
import os
import sys

from ansible_collections.aiinfra.fabric.plugins.module_utils.atomic_write import write_atomically
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.bootrestore import clear_document, restore_best_effort
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.common import NvmetError
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.savefile import save_to_file, to_savefile
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs


def _write_status(path, report):
    if path:
        write_atomically(path, json.dumps(report, indent=2, sort_keys=True) + "\n", mode=0o644, dir_mode=0o755)


def _restore(args, tree):
    """The boot unit's start: best effort. Exit 0 when anything could be tried, even
    with objects skipped (a failed start would leave the unit inactive, and nothing
    would take the target down at shutdown); 1 when nothing was restored at all."""
    report = {"file": os.path.abspath(args.file), "status": "failed", "skipped": [], "not_restored": []}
    try:
        with open(args.file) as f:
            doc = json.load(f)
        result = restore_best_effort(doc, tree, check=args.check, force=args.force,
                                     allow_reconfigure=args.allow_reconfigure)
    except (NvmetError, OSError, ValueError) as exc:
        report["error"] = getattr(exc, "msg", None) or str(exc)
        sys.stderr.write("error: %s\n" % report["error"])
        if not args.check:
            _write_status(args.status_file, report)
        return 1
    prefix = "would " if args.check else ""
    for line in result["applied"]:
        sys.stdout.write(prefix + line + "\n")
    # Under systemd stdout is a pipe (block-buffered): flush, so the journal keeps the
    # operations before the skip report and the summary.
    sys.stdout.flush()
    for item in result["skipped"]:
        sys.stderr.write("skipped %s: %s\n" % (item["object"], item["reason"]))
    for item in result["not_restored"]:
        sys.stderr.write("not restored %s: %s\n" % (item["object"], item["reason"]))
    if result["status"] == "complete":
        sys.stderr.write("restore complete: %d operation(s)\n" % len(result["applied"]))
    else:
        sys.stderr.write("restore partial: %d object(s) skipped, %d item(s) not restored, %d operation(s) applied\n"
                         % (len(result["skipped"]), len(result["not_restored"]), len(result["applied"])))
    report.update(status=result["status"], skipped=result["skipped"], not_restored=result["not_restored"],
                  operations=len(result["applied"]))
    if not args.check:
        _write_status(args.status_file, report)
    return 2 if args.strict and result["status"] != "complete" else 0


def main(argv=None):
    import argparse
    parser = argparse.ArgumentParser(prog="nvmet-restore", description="Restore or save the kernel NVMe-oF target "
                                     "configuration (nvmetcli save-file JSON) declaratively.")
    parser.add_argument("--configfs-root", default="/sys/kernel/config")
    sub = parser.add_subparsers(dest="command")
    r = sub.add_parser("restore", help="make configfs match FILE, best effort: print each operation; report each "
                       "object skipped, and what the file holds that is not restored, on stderr")
    r.add_argument("file")
    r.add_argument("--status-file", metavar="PATH", help="also write the outcome there as JSON (status, skipped, "
                   "not_restored; no keys)")
    r.add_argument("--strict", action="store_true", help="exit 2 when the restore is only partial")
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
    s.add_argument("--without-subsystem", action="append", default=[], metavar="NQN",
                   help="with --output: leave out this subsystem and its port links (what a teardown is about to remove)")
    s.add_argument("--without-port", action="append", default=[], type=int, metavar="ID",
                   help="with --output: leave out this port")
    s.add_argument("--without-host", action="append", default=[], metavar="NQN",
                   help="with --output: leave out this host and the links allowing it")
    args = parser.parse_args(argv)
    tree = ConfigfsTree(args.configfs_root)
    try:
        if args.command == "restore":
            return _restore(args, tree)
        elif args.command == "clear":
            if not os.path.exists(args.file):
                return 0
            with open(args.file) as f:
                doc = json.load(f)
            for line in clear_document(doc, check=args.check, tree=tree):
                sys.stdout.write(("would " if args.check else "") + line + "\n")
        elif args.command == "save" and args.output:
            without = dict(subsystems=args.without_subsystem, ports=args.without_port, hosts=args.without_host)
            sys.stdout.write(save_to_file(tree, args.output, check=args.check, remove_when_empty=args.remove_when_empty,
                                          without=without if any(without.values()) else None) + "\n")
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
