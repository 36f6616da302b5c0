"""nvmetcli compatibility both ways, on the live target (run on te1 by
tests/lab/nvmetcli_both_ways.yml; it asserts on the JSON this prints).

    python3 nvmetcli_roundtrip.py NVMETCLI_DIR WORK_DIR

NVMETCLI_DIR holds nvmetcli's own ``nvmet`` package (not ours); the target is the one
the nvmeof_target role set up. Steps, each on the real configfs:
  1. the tree as set up (``baseline``), our save file of it (ours.json, keys in clear, as
     the role writes it) and nvmetcli's save of it (theirs.json, Root.save_to_file);
  2. clear, then our restore of ours.json (``ours_from_ours``);
  3. clear, then nvmetcli's Root.restore_from_file(ours.json) (direction A);
  4. clear, then our restore of theirs.json with its status file (direction B).
Each tree is a sorted dump of every file under /sys/kernel/config/nvmet (value, link
target, or the read error; DH-HMAC-CHAP keys as a SHA-256, never in clear), so any
attribute either tool loses or changes shows as a differing line. The target is left
as our restorer made it from theirs.json.
"""
import hashlib
import json
import os
import subprocess
import sys

NVMET = "/sys/kernel/config/nvmet"
RESTORER = "/usr/local/libexec/aiinfra-fabric/nvmet-restore"
NVMETCLI = ("import json, sys; sys.path.insert(0, sys.argv[1]); import nvmet; "
            "print(json.dumps(nvmet.Root().{call}))")


def dump():
    lines = []
    for top, dirs, files in os.walk(NVMET):
        dirs.sort()
        for name in sorted(dirs + files):
            path = os.path.join(top, name)
            rel = os.path.relpath(path, NVMET)
            if os.path.islink(path):
                value = "-> " + os.path.relpath(os.path.realpath(path), NVMET)
            elif os.path.isdir(path):
                value = "<dir>"
            else:
                try:
                    with open(path, "rb") as f:
                        raw = f.read()
                    value = raw.decode("utf-8", "replace").rstrip("\n")
                    if name.startswith("dhchap_") and name.endswith("key") and value:
                        value = "sha256:" + hashlib.sha256(raw).hexdigest()
                except OSError as exc:
                    value = "<error %s>" % os.strerror(exc.errno)
            lines.append("%s = %s" % (rel, value))
    return lines


def run(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    return {"argv": argv, "rc": proc.returncode, "stdout": proc.stdout.strip(), "stderr": proc.stderr.strip()}


def restorer(*args):
    return run(["python3", RESTORER] + list(args))


def nvmetcli(nvmetcli_dir, call, path):
    return run(["python3", "-c", NVMETCLI.format(call=call), nvmetcli_dir, path])


def objects():
    return dict((d, sorted(os.listdir(os.path.join(NVMET, d)))) for d in ("hosts", "ports", "subsystems"))


def masked_save():
    return json.loads(restorer("save")["stdout"])


def main():
    nvmetcli_dir, work = sys.argv[1], sys.argv[2]
    ours, theirs, status = (os.path.join(work, n) for n in ("ours.json", "theirs.json", "status.json"))
    out = {"steps": []}

    def step(name, result):
        out["steps"].append(dict(result, name=name))
        return result

    out["baseline"] = dump()
    out["baseline_save"] = masked_save()
    step("our save", restorer("save", "--output", ours))
    step("nvmetcli save", nvmetcli(nvmetcli_dir, "save_to_file(sys.argv[2])", theirs))
    with open(theirs) as f:
        doc = json.load(f)
    out["theirs_top_keys"] = sorted(doc)
    out["theirs_discovery"] = doc.get("discovery")
    out["theirs_ports"] = [dict((k, v) for k, v in p.items()) for p in doc.get("ports", [])]
    out["theirs_hosts_dhchap_keys"] = sorted(k for h in doc.get("hosts", []) for k in (h.get("dhchap") or {}))

    step("clear", restorer("clear", ours))
    out["cleared_1"] = objects()
    step("our restore of ours.json", restorer("restore", ours))
    out["ours_from_ours"] = dump()

    step("clear", restorer("clear", ours))
    out["cleared_2"] = objects()
    res = step("nvmetcli restore of ours.json", nvmetcli(nvmetcli_dir, "restore_from_file(sys.argv[2])", ours))
    out["nvmetcli_errors"] = json.loads(res["stdout"]) if res["rc"] == 0 else None
    out["direction_a"] = dump()
    out["direction_a_save"] = masked_save()

    step("clear", restorer("clear", ours))
    out["cleared_3"] = objects()
    step("our restore of theirs.json", restorer("restore", "--status-file", status, theirs))
    with open(status) as f:
        out["direction_b_status"] = json.load(f)
    out["direction_b"] = dump()
    out["direction_b_save"] = masked_save()
    print(json.dumps(out, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
