# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Profile (not a test): the nvmet_target module's in-process pass, phase by phase.

Runs on the target, with the collection's nvmet package on sys.path (--lib), the steps
plugins/modules/nvmet_target.py's main() runs, in its order, against the real configfs:
check_configfs, read, check_document, plan_target, apply_plan, the after-state and the
save-file view of it. Prints each phase's seconds, the configfs syscalls each phase made
(files opened, directories listed, operations applied), and with --cprofile the top
functions by cumulative time.

    python3 nvmet_target_profile.py --lib DIR DOCUMENT.json [--cprofile N]
"""

from __future__ import annotations

import argparse
import builtins
import cProfile
import io
import json
import os
import pstats
import sys
import time


class Counter(object):
    """Counts files opened (open(), os.open()) and directories listed under a path prefix:
    the configfs reads and writes a phase makes."""

    def __init__(self, prefix):
        self.prefix = prefix
        self.opens = 0
        self.listdirs = 0
        self._open = builtins.open
        self._os_open = os.open
        self._listdir = os.listdir

    def _count(self, path):
        if isinstance(path, str) and path.startswith(self.prefix):
            self.opens += 1

    def __enter__(self):
        def counted_open(path, *a, **kw):
            self._count(path)
            return self._open(path, *a, **kw)

        def counted_os_open(path, *a, **kw):
            self._count(path)
            return self._os_open(path, *a, **kw)

        def counted_listdir(path="."):
            if isinstance(path, str) and path.startswith(self.prefix):
                self.listdirs += 1
            return self._listdir(path)

        builtins.open = counted_open
        os.open = counted_os_open
        os.listdir = counted_listdir
        return self

    def __exit__(self, *exc):
        builtins.open = self._open
        os.open = self._os_open
        os.listdir = self._listdir


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--root", default="/sys/kernel/config")
    ap.add_argument("--cprofile", type=int, default=0, help="print the top N functions by cumulative time")
    ap.add_argument("document")
    args = ap.parse_args(argv)

    t_import = time.monotonic()
    sys.path.insert(0, args.lib)
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.applier import apply_plan, simulate
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.target import (
        check_document, plan_target, target_view)
    from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.validate import check_configfs
    t_import = time.monotonic() - t_import

    with open(args.document) as f:
        doc = json.load(f)
    tree = ConfigfsTree(args.root)
    phases = [("import nvmet package", t_import, 0, 0, 0)]
    result = {}

    def phase(name, fn):
        with Counter(tree.nvmet) as c:
            t0 = time.monotonic()
            result[name] = fn()
            dt = time.monotonic() - t0
        ops = len(result[name]) if name == "apply_plan" else 0
        phases.append((name, dt, c.opens, c.listdirs, ops))
        return result[name]

    prof = cProfile.Profile() if args.cprofile else None
    if prof:
        prof.enable()
    phase("check_configfs", lambda: check_configfs(tree))
    state = phase("read", tree.read)
    phase("check_document", lambda: check_document(doc, state, "none", tree.sysfs_root, True))
    ops = phase("plan_target", lambda: plan_target(tree, state, doc, "none", False, False))
    if ops:
        phase("apply_plan", lambda: apply_plan(tree, ops))
        after = phase("after-state", lambda: tree.reread_changed(state, ops))
    else:
        after = phase("after-state", lambda: simulate(state, ops))
    phase("target_view", lambda: target_view(after))
    phase("result to JSON", lambda: json.dumps({"target": target_view(after), "operations": [o.text() for o in ops]}))
    if prof:
        prof.disable()

    total = sum(p[1] for p in phases)
    print("%-22s %8s %7s %8s %6s" % ("phase", "seconds", "opens", "listdirs", "ops"))
    for name, dt, opens, lists, nops in phases:
        print("%-22s %8.3f %7d %8d %6d" % (name, dt, opens, lists, nops))
    print("%-22s %8.3f" % ("total", total))
    if prof:
        out = io.StringIO()
        pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.cprofile)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
