# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """Shared attribute declarations for the collection's modules."""

    # Modules that change state declare this and state their check/diff support.
    DOCUMENTATION = r"""
options: {}
attributes:
  platform:
    description: Target OS/families that can be operated against.
    support: N/A
    platforms: posix
"""

    # Declarative modules that change state: full check mode, diff and idempotence.
    DECLARATIVE = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode and predict the result (changed, operations, diff) without changing configfs.
    support: full
  diff_mode:
    description: Returns the object before and after the change (or the predicted change in check mode).
    support: full
  idempotent:
    description: A second run with the same arguments reports no change and writes nothing.
    support: full
"""

    # For modules that only read (nvme_health, nvmet_info): they change nothing, so check mode is complete.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check mode.
    support: full
    details: This module only reads; it behaves the same in check mode.
  diff_mode:
    description: Would return the change as a diff.
    support: N/A
    details: This module changes nothing, so it has no diff.
"""

    # Action plugins that run on the controller only (the module file carries the docs).
    CONTROLLER_ACTION = r"""
options: {}
attributes:
  action:
    description: Runs on the controller as an action plugin; no connection to a managed host is made.
    support: full
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
"""

    # Modules that run a job (mpi_run, nccl_test, fabric_sweep): a job measures and changes
    # nothing on the hosts, so they report changed=false, also in check mode.
    JOB_MODULE = r"""
options: {}
attributes:
  check_mode:
    description: Can run in check_mode and return changed status prediction without modifying target.
    support: partial
    details: In check mode the job is not run; the module validates the input and returns the command it would run.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in check_mode), when in diff mode.
    support: none
    details: A job changes no configuration, so there is no diff.
  idempotent:
    description: When run twice in a row outside check mode, with the same arguments, the second invocation indicates no change.
    support: full
    details:
      - Running a job changes nothing on the hosts, so every run reports C(changed=false); each run measures again.
"""
