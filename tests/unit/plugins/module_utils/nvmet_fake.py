"""A FAKE nvmet configfs tree for the unit tests of plugins/module_utils/nvmet/.

A temporary directory laid out like the nvmet configfs tree of Debian's 6.12.117 kernel
(file names and default values copied from the lab VM te1). A plain directory cannot
be configfs, so ``EmulatedTree`` adds by hand, and only for the operations the
planner issues, what the 6.12 kernel does (drivers/nvme/target/configfs.c, core.c,
tcp.c, rdma.c of Linux 6.12):

* mkdir of a subsystem/namespace/port/host/ANA group/referral creates the attribute
  files and default values the kernel shows;
* writes are shown the way the kernel shows them: attr_serial space-padded to 20,
  attr_version without a zero tertiary, attr_ieee_oui as 0x%06x, integers in decimal,
  booleans as 0/1;
* writes the kernel refuses raise its errno: identity attributes of a subsystem a
  host has identified (``discovered``), out-of-range values, cntlid_min above
  cntlid_max (and the reverse), addr_/param_ writes on an enabled port (EACCES),
  device_path/uuid/nguid of an enabled namespace (EBUSY), an unknown ANA state;
* linking the first subsystem enables the port, which replaces a negative
  inline_data_size by the transport's default (tcp: 4 pages, rdma: 1 page, else 0).

It is still a fake: the real semantics are proven on the real kernel by
molecule/nvmet_modules.
"""

import base64
import errno
import os
import re
import shutil
import zlib

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvmet.model import ConfigfsTree

SUB = "nqn.2024-04.io.aiinfra.lab:te1.modules"
HOST = "nqn.2014-08.org.nvmexpress:uuid:6d4104d1-02ff-4b25-86c0-e09cdeb71663"
HOST2 = "nqn.2014-08.org.nvmexpress:uuid:00000000-1111-2222-3333-444444444444"


def make_key(size=32, transform=1, corrupt=False):
    raw = bytes(range(size))
    crc = zlib.crc32(raw).to_bytes(4, "little")
    if corrupt:
        crc = bytes([crc[0] ^ 1]) + crc[1:]
    return "DHHC-1:%02d:%s:" % (transform, base64.b64encode(raw + crc).decode())


# --------------------------------------------------------------------------- fake tree


def write(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(value + "\n")


def empty_target(root, modules=("nvmet", "nvmet_tcp")):
    """An empty nvmet tree under ``root``: its three folders, the kernel modules loaded
    (<root>/sys/module), and no TCP connection (<root>/proc/net/tcp, header only)."""
    for name in ("subsystems", "ports", "hosts"):
        os.makedirs(os.path.join(root, "nvmet", name), exist_ok=True)
    for mod in modules:
        os.makedirs(os.path.join(root, "sys", "module", mod), exist_ok=True)
    write(os.path.join(root, "proc", "net", "tcp"), "  sl  local_address rem_address   st")
    return root


def fake_subsystem(root, nqn, allow_any="0", serial="7261cd9a61165179a56a"):
    base = os.path.join(root, "nvmet", "subsystems", nqn)
    for name, value in (("allow_any_host", allow_any), ("cntlid_max", "65519"), ("cntlid_min", "1"),
                        ("firmware", "6.12.117"), ("ieee_oui", "0x000000"), ("model", "Linux"),
                        ("pi_enable", "0"), ("qid_max", "128"), ("serial", serial), ("version", "1.3")):
        write(os.path.join(base, "attr_" + name), value)
    os.makedirs(os.path.join(base, "allowed_hosts"), exist_ok=True)
    os.makedirs(os.path.join(base, "namespaces"), exist_ok=True)
    os.makedirs(os.path.join(base, "passthru"), exist_ok=True)
    return base


def fake_namespace(root, nqn, nsid, path="(null)", enable="0", uuid="c1dcff13-cbcf-44e6-997c-ee94dc0b42e3"):
    base = os.path.join(root, "nvmet", "subsystems", nqn, "namespaces", str(nsid))
    for name, value in (("ana_grpid", "1"), ("buffered_io", "0"),
                        ("device_nguid", "00000000-0000-0000-0000-000000000000"), ("device_path", path),
                        ("device_uuid", uuid), ("enable", enable)):
        write(os.path.join(base, name), value)
    return base


def fake_port(root, pid, trtype="", traddr="", trsvcid="", adrfam="", tsas=""):
    base = os.path.join(root, "nvmet", "ports", str(pid))
    for name, value in (("addr_adrfam", adrfam), ("addr_traddr", traddr), ("addr_treq", "not specified"),
                        ("addr_trsvcid", trsvcid), ("addr_trtype", trtype), ("addr_tsas", tsas),
                        ("param_inline_data_size", "-1"), ("param_max_queue_size", "-1"), ("param_pi_enable", "0")):
        write(os.path.join(base, name), value)
    write(os.path.join(base, "ana_groups", "1", "ana_state"), "optimized")
    os.makedirs(os.path.join(base, "subsystems"), exist_ok=True)
    os.makedirs(os.path.join(base, "referrals"), exist_ok=True)
    return base


def fake_host(root, nqn, key=""):
    base = os.path.join(root, "nvmet", "hosts", nqn)
    for name, value in (("dhchap_ctrl_key", ""), ("dhchap_dhgroup", "null"), ("dhchap_hash", "hmac(sha256)"),
                        ("dhchap_key", key)):
        write(os.path.join(base, name), value)
    return base


def link(root, src_rel, dst_rel):
    os.symlink(os.path.join(root, "nvmet", src_rel), os.path.join(root, "nvmet", dst_rel))


PAGE = 4096  # x86-64, like the lab VMs
ANA_STATES = ("optimized", "non-optimized", "inaccessible", "persistent-loss", "change")


def _kstrtou(text, bits):
    text = text.strip()
    if not re.match(r"^(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)$", text):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
    value = int(text, 0) if not re.match(r"^0[0-7]+$", text) else int(text[1:], 8)
    if value >= 1 << bits:
        raise OSError(errno.ERANGE, os.strerror(errno.ERANGE))
    return value


def _einval():
    return OSError(errno.EINVAL, os.strerror(errno.EINVAL))


class EmulatedTree(ConfigfsTree):
    """FAKE configfs with the 6.12 kernel's forms and refusals (see the module docstring).
    ``refuse={relpath or "kind relpath": errno}`` adds a refusal; ``discovered`` lists subsystems a host
    has identified (their serial/model/version/firmware/ieee_oui are frozen)."""

    def __init__(self, root, refuse=None, discovered=(), **kw):
        kw.setdefault("sysfs_root", os.path.join(root, "sys"))
        kw.setdefault("proc_root", os.path.join(root, "proc"))
        kw.setdefault("debugfs_root", os.path.join(root, "debug"))
        kw.setdefault("run_command", lambda argv: "[]")
        super().__init__(root, **kw)
        self.refuse = refuse or {}
        self.discovered = set(discovered)
        self.done = []

    def _current(self, rel):
        with open(self.path(rel)) as f:
            return f.read().rstrip("\n")

    def do(self, op):
        for key in (op.path, "%s %s" % (op.kind, op.path)):
            if key in self.refuse:
                raise OSError(self.refuse[key], os.strerror(self.refuse[key]))
        parts = op.path.split("/")
        if op.kind == "mkdir":
            if parts[0] == "subsystems" and len(parts) == 2:
                fake_subsystem(self.root, parts[1])
            elif parts[0] == "subsystems" and parts[2] == "namespaces":
                fake_namespace(self.root, parts[1], parts[3])
            elif parts[0] == "ports" and len(parts) == 2:
                fake_port(self.root, parts[1])
            elif parts[0] == "ports" and parts[2] == "ana_groups":
                if not 2 <= _kstrtou(parts[3], 32) <= 128:
                    raise _einval()
                write(self.path(op.path + "/ana_state"), "inaccessible")
            elif parts[0] == "ports" and parts[2] == "referrals":
                fake_referral(self.root, parts[1], parts[3])
            elif parts[0] == "hosts":
                fake_host(self.root, parts[1])
            else:
                super().do(op)
        elif op.kind == "rmdir":
            shutil.rmtree(self.path(op.path))
        elif op.kind == "write":
            write(self.path(op.path), self._shown(parts, str(op.value)))
        elif op.kind == "link" and parts[0] == "ports" and parts[2] == "subsystems":
            enabling = not os.listdir(self.path("/".join(parts[:3])))
            super().do(op)
            if enabling:
                self._enable_port(parts[1])
        else:
            super().do(op)
        self.done.append(op.text())

    def _enable_port(self, pid):
        base = "ports/%s/" % pid
        size = int(self._current(base + "param_inline_data_size"))
        if size < 0:
            trtype = self._current(base + "addr_trtype")
            size = {"tcp": 4 * PAGE, "rdma": PAGE}.get(trtype, 0)
        write(self.path(base + "param_inline_data_size"), str(size))

    def _shown(self, parts, value):
        """The value as the kernel shows it after this write, or the errno it refuses with."""
        text = value.split("\n")[0]
        name = parts[-1]
        if parts[0] == "subsystems" and len(parts) == 3:
            nqn = parts[1]
            attr = name[5:]
            if attr in ("serial", "model", "version", "firmware", "ieee_oui") and nqn in self.discovered:
                raise _einval()
            if attr == "serial":
                if not 1 <= len(text) <= 20 or not re.match(r"^[\x20-\x7e]+$", text):
                    raise _einval()
                return text.ljust(20)
            if attr in ("model", "firmware"):
                if not 1 <= len(text) <= {"model": 40, "firmware": 8}[attr] or not re.match(r"^[\x20-\x7e]+$", text):
                    raise _einval()
                return text
            if attr == "version":
                m = re.match(r"^(\d+)\.(\d+)(?:\.(\d+))?", text)
                if not m:
                    raise _einval()
                major, minor, ter = int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)
                return "%d.%d.%d" % (major, minor, ter) if ter else "%d.%d" % (major, minor)
            if attr == "ieee_oui":
                number = _kstrtou(text, 32)
                if number >= 0x1000000:
                    raise _einval()
                return "0x%06x" % number
            if attr in ("cntlid_min", "cntlid_max"):
                number = _kstrtou(text, 16)
                base = "/".join(parts[:2]) + "/attr_"
                if number == 0 or (attr == "cntlid_min" and number > int(self._current(base + "cntlid_max"))) or (
                        attr == "cntlid_max" and number < int(self._current(base + "cntlid_min"))):
                    raise _einval()
                return str(number)
            if attr == "qid_max":
                number = _kstrtou(text, 16)
                if not 1 <= number <= 128:
                    raise _einval()
                return str(number)
            if attr in ("pi_enable", "allow_any_host"):
                if text[:1].lower() not in ("1", "0", "y", "n"):
                    raise _einval()
                if attr == "allow_any_host" and text[:1] in "1yY" and os.listdir(
                        self.path("/".join(parts[:2]) + "/allowed_hosts")):
                    raise _einval()
                return "1" if text[:1] in "1yY" else "0"
            return text
        if parts[0] == "subsystems" and parts[2] == "namespaces":
            base = "/".join(parts[:4]) + "/"
            enabled = self._current(base + "enable") == "1"
            if name in ("device_path", "device_uuid", "device_nguid") and enabled:
                raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))
            if name == "buffered_io" and enabled:
                raise _einval()
            if name == "ana_grpid" and not 1 <= _kstrtou(text, 32) <= 128:
                raise _einval()
            if name == "enable" and text == "1":
                device = self._current(base + "device_path")
                if not os.path.exists(device):
                    raise OSError(errno.ENOENT, os.strerror(errno.ENOENT))
            return text
        if parts[0] == "ports" and len(parts) == 3:
            if os.listdir(self.path("/".join(parts[:2]) + "/subsystems")):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES))
            if name in ("param_inline_data_size", "param_max_queue_size"):
                number = int(text, 0)
                return str(number)
            return text
        if parts[0] == "ports" and parts[2] == "ana_groups":
            if text not in ANA_STATES:
                raise _einval()
            return text
        return text


def fake_referral(root, pid, name):
    base = os.path.join(root, "nvmet", "ports", str(pid), "referrals", name)
    for attr, value in (("addr_adrfam", ""), ("addr_portid", "0"), ("addr_traddr", ""), ("addr_treq", "not specified"),
                        ("addr_trsvcid", ""), ("addr_trtype", ""), ("enable", "0")):
        write(os.path.join(base, attr), value)
    return base
