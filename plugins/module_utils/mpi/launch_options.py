# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""The launcher options every job module takes (mpi_run, nccl_test, fabric_sweep): one
argument spec fragment, merged into each module's ``argument_spec``, documented once in
``plugins/doc_fragments/launcher.py``.

``LAUNCHER_OPTIONS``
    The options with the same name, type, default and meaning in every job module.
    The names are the ones that say what they hold (``mpirun_path`` - ``mpirun`` is a
    value of ``launcher``; ``launcher_args`` - in nccl_test ``extra_args`` are the
    benchmark's own arguments). The names the modules used before stay as ``aliases``.
``launcher_argument_spec(launchers, default_launcher, timeout, extra_args_alias=True) -> dict``
    A fresh copy of those options plus ``launcher`` (the module's choices and default)
    and ``timeout`` (the module's default). ``extra_args_alias=False`` for nccl_test,
    whose ``extra_args`` is another option.
``SBATCH_PATH_OPTION``
    ``sbatch_path`` (alias ``sbatch``), for the module that offers ``launcher=sbatch``.
``with_canonical_names(params) -> dict``
    A copy of a parameter dict in which every alias given is under its option's name,
    as AnsibleModule does it: module_utils entry points that take mpi_run-shaped
    parameters (:func:`mpi.job.plan_job`, the sweep's per-job parameters) accept the
    same spellings as the modules.
"""

from __future__ import annotations

import copy

IMPLEMENTATION_CHOICES = ["auto", "openmpi", "mpich", "intelmpi"]

LAUNCHER_OPTIONS = dict(
    mpirun_path=dict(type="path", default="mpirun", aliases=["mpirun"]),
    srun_path=dict(type="path", default="srun", aliases=["srun"]),
    implementation=dict(type="str", choices=IMPLEMENTATION_CHOICES, default="auto"),
    mca=dict(type="dict", default={}),
    environment=dict(type="dict", default={}, aliases=["env"]),
    allow_run_as_root=dict(type="bool", default=False),
    launcher_args=dict(type="list", elements="str", default=[], aliases=["extra_args"]),
    srun_mpi=dict(type="str"),
)

SBATCH_PATH_OPTION = dict(sbatch_path=dict(type="path", default="sbatch", aliases=["sbatch"]))


def launcher_argument_spec(launchers, default_launcher, timeout, extra_args_alias=True):
    """The shared launcher options for one module, ready to merge into its argument_spec."""
    spec = copy.deepcopy(LAUNCHER_OPTIONS)
    if not extra_args_alias:
        del spec["launcher_args"]["aliases"]
    spec["launcher"] = dict(type="str", choices=list(launchers), default=default_launcher)
    spec["timeout"] = dict(type="int", default=timeout)
    return spec


def _aliases():
    table = {}
    for name, option in list(LAUNCHER_OPTIONS.items()) + list(SBATCH_PATH_OPTION.items()):
        for alias in option.get("aliases", []):
            table[alias] = name
    return table


ALIASES = _aliases()


def with_canonical_names(params):
    """``params`` with each alias moved to its option's name (a value under the name wins)."""
    result = dict(params or {})
    for alias, name in ALIASES.items():
        if alias in result:
            value = result.pop(alias)
            if result.get(name) is None:
                result[name] = value
    return result
