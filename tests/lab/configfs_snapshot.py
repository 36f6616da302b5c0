"""Print one SHA-256 over every path under <configfs>/nvmet with its content or link
target (attributes that cannot be read count as their error): two equal outputs mean a
byte-identical tree. Used by tests/lab/nvmet_target.yml."""
import hashlib
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "/sys/kernel/config/nvmet"
digest = hashlib.sha256()
count = 0
for top, dirs, files in os.walk(root):
    dirs.sort()
    for name in sorted(dirs + files):
        path = os.path.join(top, name)
        if os.path.islink(path):
            value = "-> " + os.readlink(path)
        elif os.path.isdir(path):
            value = "dir"
        else:
            try:
                with open(path, "rb") as f:
                    value = f.read().hex()
            except OSError as exc:
                value = "error %d" % exc.errno
        digest.update(("%s\0%s\n" % (path, value)).encode())
        count += 1
print("%s %d" % (digest.hexdigest(), count))
