# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Declarative model of the Linux kernel NVMe-oF target (nvmet) over configfs.

The pieces, in the order data flows through them:

* common.py    constants, NvmetError, Op (one configfs operation)
* validate.py  validate_* / normalize_*: user input checked before anything changes
* model.py     ConfigfsTree: reads <configfs>/nvmet into plain dicts, performs single
               operations, finds live connections; export_* views for module returns
* planner.py   plan_host / plan_subsystem / plan_port: pure, state + spec -> [Op]
* applier.py   apply_plan (kernel errors explained) and simulate (check mode's "after")
* savefile.py  nvmetcli's save-file schema, whole-document plan/restore/clear, save file
* backing.py   which file each namespace exports (inode and size), recorded in the save
               file and compared before a file is exported again
* restore.py   the boot-time restorer's command line (standard library only)
* result.py    the modules' shared apply-and-exit (the only file importing Ansible)
"""
