# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Planning-time benchmark of the nvmet planner on a FAKE configfs tree (not a test).

Builds a plain-directory tree laid out like Debian 6.12's nvmet configfs (tmpfs under
/dev/shm when present) with N subsystems x 4 namespaces, all linked to one tcp port,
and times, per N:

  read        ConfigfsTree.read() of the whole tree
  boot        read the empty target and plan a save-file document of the whole tree
              against it (what the boot restorer plans after a reboot)
  noop        read the tree and plan the same document against it, which already
              matches (what every role run / restart plans)
  1-change    the same with one subsystem attribute changed (planning should
              stay proportional to the changes, not to the tree)

Run it against another revision (for a before/after table) with ``--collection DIR``,
where DIR contains ansible_collections/aiinfra/fabric, for example:

    mkdir -p /tmp/before/ansible_collections/aiinfra/fabric
    git archive <rev> plugins | tar -x -C /tmp/before/ansible_collections/aiinfra/fabric
    python3 benchmarks/nvmet_planner.py --collection /tmp/before
    python3 benchmarks/nvmet_planner.py --compare /tmp/before   # both, side by side, with ratios

Both the nvmet package (nvmet/planner.py ...) and the older single-file nvmet.py are
supported. Timings on a shared machine vary; compare runs made one after the other.

    python3 benchmarks/nvmet_planner.py                 # 100 400 1000
    python3 benchmarks/nvmet_planner.py --sizes 100 400
"""

import argparse
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_api(collection_dir):
    sys.path.insert(0, collection_dir)
    base = "ansible_collections.aiinfra.fabric.plugins.module_utils"
    try:
        savefile = importlib.import_module(base + ".nvmet.savefile")
        model = importlib.import_module(base + ".nvmet.model")
        if hasattr(savefile, "plan_document"):
            plan_document = savefile.plan_document
        else:
            # Since issue 36 a document is planned in one place, nvmet_target's (purge
            # listed: what savefile.plan_document planned, each listed object as declared).
            target = importlib.import_module(base + ".nvmet.target")

            def plan_document(tree, state, doc):
                return target.plan_target(tree, state, doc, purge="listed")
        return {"ConfigfsTree": model.ConfigfsTree, "plan_document": plan_document,
                "to_savefile": savefile.to_savefile, "layout": "nvmet/ package"}
    except ImportError:
        single = importlib.import_module(base + ".nvmet")
        return {"ConfigfsTree": single.ConfigfsTree, "plan_document": single.plan_document,
                "to_savefile": single.to_savefile, "layout": "single nvmet.py"}


def write(path, value):
    with open(path, "w") as f:
        f.write(value + "\n")


def build_tree(root, n_subsystems, backing):
    nvmet = os.path.join(root, "nvmet")
    for d in ("hosts", "ports", "subsystems"):
        os.makedirs(os.path.join(nvmet, d))
    for mod in ("nvmet", "nvmet_tcp"):
        os.makedirs(os.path.join(root, "sys", "module", mod))
    os.makedirs(os.path.join(root, "proc", "net"))
    write(os.path.join(root, "proc", "net", "tcp"), "  sl  local_address rem_address   st")
    port = os.path.join(nvmet, "ports", "1")
    os.makedirs(os.path.join(port, "subsystems"))
    os.makedirs(os.path.join(port, "referrals"))
    os.makedirs(os.path.join(port, "ana_groups", "1"))
    write(os.path.join(port, "ana_groups", "1", "ana_state"), "optimized")
    for name, value in (("adrfam", "ipv4"), ("traddr", "10.99.0.1"), ("treq", "not specified"),
                        ("trsvcid", "4420"), ("trtype", "tcp"), ("tsas", "none")):
        write(os.path.join(port, "addr_" + name), value)
    for name, value in (("inline_data_size", "16384"), ("max_queue_size", "-1"), ("pi_enable", "0")):
        write(os.path.join(port, "param_" + name), value)
    for i in range(n_subsystems):
        nqn = "nqn.2024-04.io.aiinfra.bench:s%05d" % i
        sub = os.path.join(nvmet, "subsystems", nqn)
        os.makedirs(os.path.join(sub, "allowed_hosts"))
        os.makedirs(os.path.join(sub, "passthru"))
        for name, value in (("allow_any_host", "1"), ("cntlid_max", "65519"), ("cntlid_min", "1"),
                            ("firmware", "6.12.117"), ("ieee_oui", "0x000000"), ("model", "Linux"),
                            ("pi_enable", "0"), ("qid_max", "128"), ("serial", "%020x" % i), ("version", "1.3")):
            write(os.path.join(sub, "attr_" + name), value)
        for nsid in range(1, 5):
            ns = os.path.join(sub, "namespaces", str(nsid))
            os.makedirs(ns)
            for name, value in (("ana_grpid", "1"), ("buffered_io", "0"),
                                ("device_nguid", "00000000-0000-0000-0000-000000000000"),
                                ("device_path", backing), ("device_uuid", "c1dcff13-cbcf-44e6-997c-%012x" % (i * 4 + nsid)),
                                ("enable", "1")):
                write(os.path.join(ns, name), value)
        os.symlink(sub, os.path.join(port, "subsystems", nqn))


def empty_tree(root):
    nvmet = os.path.join(root, "nvmet")
    for d in ("hosts", "ports", "subsystems"):
        os.makedirs(os.path.join(nvmet, d))
    for mod in ("nvmet", "nvmet_tcp"):
        os.makedirs(os.path.join(root, "sys", "module", mod))
    os.makedirs(os.path.join(root, "proc", "net"))
    write(os.path.join(root, "proc", "net", "tcp"), "  sl  local_address rem_address   st")


def make_tree(api, root):
    return api["ConfigfsTree"](root, sysfs_root=os.path.join(root, "sys"), proc_root=os.path.join(root, "proc"),
                               debugfs_root=os.path.join(root, "debug"), run_command=lambda argv: "[]")


def timed(fn):
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def compare(before_dir, after_dir, sizes):
    """Run the two revisions one after the other for each size; print times and before/after."""
    print("nvmet planner, before = %s, after = %s (seconds; ratio = before / after)" % (before_dir, after_dir))
    print("%6s %-10s %9s %9s %8s" % ("subsys", "step", "before", "after", "ratio"))
    for n in sizes:
        rows = {}
        for label, directory in (("before", before_dir), ("after", after_dir)):
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--json", "--sizes", str(n),
                                  "--collection", directory], stdout=subprocess.PIPE, check=True).stdout
            rows[label] = json.loads(out.decode().strip().splitlines()[-1])
        for step in ("read", "boot", "noop", "one"):
            b, a = rows["before"][step], rows["after"][step]
            print("%6d %-10s %9.3f %9.3f %7.1fx" % (n, {"one": "1-change"}.get(step, step), b, a, b / a if a else 0))
        sys.stdout.flush()
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 400, 1000])
    parser.add_argument("--collection", default=os.path.normpath(os.path.join(HERE, "..", ".cache", "collections")),
                        help="directory holding ansible_collections/aiinfra/fabric (default: this checkout's "
                        ".cache/collections, made by scripts/setup)")
    parser.add_argument("--compare", metavar="DIR",
                        help="also run DIR (an older revision laid out like --collection), size by size in fresh "
                        "processes, and print both with the before/after ratio")
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.compare:
        return compare(args.compare, args.collection, args.sizes)
    api = load_api(args.collection)
    scratch_parent = "/dev/shm" if os.path.isdir("/dev/shm") else None
    if not args.json:
        print("nvmet planner benchmark (%s, %s), fake tree on %s" % (api["layout"], args.collection,
                                                                     scratch_parent or tempfile.gettempdir()))
        print("%6s %6s %9s %9s %9s %11s %8s" % ("subsys", "ns", "read s", "boot s", "noop s", "1-change s", "boot ops"))
    for n in args.sizes:
        scratch = tempfile.mkdtemp(prefix="nvmet-bench-", dir=scratch_parent)
        try:
            backing = os.path.join(scratch, "disk.img")
            write(backing, "")
            full = os.path.join(scratch, "full")
            build_tree(full, n, backing)
            tree = make_tree(api, full)
            t_read, state = timed(tree.read)
            doc = api["to_savefile"](state, mask_keys=False)
            empty = os.path.join(scratch, "empty")
            empty_tree(empty)
            etree = make_tree(api, empty)
            t_boot, ops = timed(lambda: api["plan_document"](etree, etree.read(), doc))
            t_noop, noop = timed(lambda: api["plan_document"](tree, tree.read(), doc))
            assert noop == [], "a matching tree must plan nothing, got %d ops" % len(noop)
            doc["subsystems"][n // 2]["attr"]["model"] = "bench"
            t_one, one = timed(lambda: api["plan_document"](tree, tree.read(), doc))
            assert len(one) == 1, one
            if args.json:
                print(json.dumps({"n": n, "read": t_read, "boot": t_boot, "noop": t_noop, "one": t_one}))
            else:
                print("%6d %6d %9.3f %9.3f %9.3f %11.3f %8d" % (n, 4 * n, t_read, t_boot, t_noop, t_one, len(ops)))
            sys.stdout.flush()
        finally:
            shutil.rmtree(scratch)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
