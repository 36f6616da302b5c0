# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations


class ModuleDocFragment(object):
    """The launcher options of the job modules (mpi_run, nccl_test, fabric_sweep).

    The argument spec is plugins/module_utils/mpi/launch_options.py; a unit test keeps
    the two the same. Each module documents O(launcher) (its choices) and O(timeout)
    (its default) itself. Ansible merges a module's own entry for an option over the
    fragment's key by key, so a module may refine one key (a description) and keep the rest.
    """

    DOCUMENTATION = r"""
options:
  mpirun_path:
    description:
      - The mpirun to use, for O(launcher=mpirun) - a command name, looked up on the PATH of the launching host,
        or a path (another MPI prefix, for example C(/opt/openmpi-5/bin/mpirun)).
      - The task fails before anything runs when it is not there.
    type: path
    default: mpirun
    aliases: [mpirun]
  srun_path:
    description: The srun to use, for O(launcher=srun) - a command name looked up on the PATH, or a path.
    type: path
    default: srun
    aliases: [srun]
  implementation:
    description:
      - Which MPI O(mpirun_path) is - C(auto) runs C(mpirun --version) (also in check mode, as it changes
        nothing) and speaks the flags of the MPI it names (Open MPI fully; MPICH and Intel MPI, whose mpirun
        is Hydra, where they differ).
      - Only with O(launcher=mpirun).
    type: str
    choices: [auto, openmpi, mpich, intelmpi]
    default: auto
  mca:
    description:
      - Open MPI MCA parameters, passed as C(--mca NAME VALUE) (sorted by name), for example C(btl=tcp,self),
        C(btl_tcp_if_include=10.99.0.0/24) and C(oob_tcp_if_include=10.99.0.0/24) to keep MPI traffic and
        mpirun's own on one network.
      - Only with O(launcher=mpirun) and Open MPI - an error with MPICH/Intel MPI (no MCA flags) and with the
        other launchers; set C(OMPI_MCA_<name>) in O(environment) instead.
    type: dict
    default: {}
  environment:
    description:
      - Environment variables for the ranks. A value exports it with that value; C(null) passes the launching
        host's own value. Open MPI C(-x NAME[=VALUE]), Hydra C(-genv NAME VALUE)/C(-genvlist), srun
        C(--export=ALL,NAME=VALUE); a program run without a launcher gets them in its own environment.
    type: dict
    default: {}
    aliases: [env]
  allow_run_as_root:
    description: Pass C(--allow-run-as-root) to Open MPI's mpirun. Only when the job really runs as root; Hydra needs nothing.
    type: bool
    default: false
  launcher_args:
    description: Further launcher arguments (mpirun, srun), passed verbatim before the program.
    type: list
    elements: str
    default: []
  srun_mpi:
    description: srun C(--mpi) plugin, for example C(pmix) or C(pmi2).
    type: str
"""

    # launcher_args under its old name extra_args, in the modules where extra_args were the
    # launcher's (mpi_run, fabric_sweep); nccl_test's extra_args are nccl-tests' own.
    EXTRA_ARGS_ALIAS = r"""
options:
  launcher_args:
    aliases: [extra_args]
"""
