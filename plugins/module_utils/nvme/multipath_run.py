# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Native multipath converged for some subsystems: the body of nvme_multipath.

Set the I/O policy where sysfs shows another one, then wait until every head device
has ``min_live_paths`` usable paths. nvme_multipath runs it for the subsystems it is
given; nvme_connections runs it per subsystem right after connecting its paths.
"""

from __future__ import annotations

import time

from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.multipath import (
    MultipathError, missing_subsystems, path_shortfall, plan_iopolicy,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nvme.errors import NvmeError

NATIVE_OFF = ("native NVMe multipath is off on this host (nvme_core multipath=%s): put 'options nvme_core "
              "multipath=Y' in /etc/modprobe.d/ and reboot (or reload nvme_core with no NVMe device in use), or set "
              "require_native_multipath=false")


class MultipathFailure(NvmeError):
    """The multipath step failed; ``result`` is what it had read so far."""

    def __init__(self, msg, result):
        super(MultipathFailure, self).__init__(msg)
        self.msg = msg
        self.result = result


def native_multipath_check(sysfs, require_native_multipath):
    """nvme_core's native multipath (True, False, or None when not loaded); raises
    MultipathFailure when it is required and off."""
    native = sysfs.native_multipath()
    if require_native_multipath and not native:
        raise MultipathFailure(NATIVE_OFF % {None: "<nvme_core not loaded or built without CONFIG_NVME_MULTIPATH>",
                                             False: "N"}[native], dict(native_multipath=native))
    return native


def converge_multipath(sysfs, nqns, iopolicy, native, min_live_paths, wait_timeout, check_mode, diff):
    """Set the policy of ``nqns`` (validated) and wait for their paths. Returns the result
    (operations, subsystems, waited_s, time_ms, changed, diff when asked); raises
    MultipathFailure with that result when a subsystem is missing, a write fails or the
    paths did not come in ``wait_timeout`` seconds."""
    result = dict(changed=False, native_multipath=native, operations=[], waited_s=0.0)
    subsystems = sysfs.subsystems(nqns)
    missing = missing_subsystems(subsystems, nqns)
    if missing:
        raise MultipathFailure("not connected to %s: no /sys/class/nvme-subsystem entry has that NQN (connect it "
                               "first with aiinfra.fabric.nvme_connect)" % ", ".join(missing), result)

    plan = plan_iopolicy(subsystems, iopolicy) if native else []
    result["operations"] = ["%s iopolicy %s -> %s" % (name, current, wanted) for name, _nqn, current, wanted in plan]
    before = dict((s["nqn"], s["iopolicy"]) for s in subsystems)
    if plan and not check_mode:
        for name, _nqn, _current, wanted in plan:
            try:
                sysfs.write_iopolicy(name, wanted)
            except MultipathError as exc:
                raise MultipathFailure(str(exc), result)

    # waited_s counts the time spent waiting for paths: 0.0 when the first look found
    # enough (reading sysfs is not waiting, however long a loaded host takes for it).
    started = time.time()
    slept = False
    while True:
        subsystems = sysfs.subsystems(nqns)
        problems = path_shortfall(subsystems, min_live_paths)
        if not problems or time.time() - started >= wait_timeout:
            break
        time.sleep(0.5)
        slept = True
    result["waited_s"] = round(time.time() - started, 1) if slept else 0.0
    result["time_ms"] = int(time.time() * 1000)
    if check_mode:
        for subsystem in subsystems:
            subsystem["iopolicy"] = dict((nqn, wanted) for _n, nqn, _c, wanted in plan).get(
                subsystem["nqn"], subsystem["iopolicy"])
    result.update(changed=bool(plan), subsystems=subsystems)
    if diff:
        result["diff"] = {"before": {"iopolicy": before},
                          "after": {"iopolicy": dict((s["nqn"], s["iopolicy"]) for s in subsystems)}}
    if problems:
        raise MultipathFailure("after %ds: %s" % (wait_timeout, "; ".join(problems)), result)
    return result
