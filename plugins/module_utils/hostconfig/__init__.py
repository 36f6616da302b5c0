# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Plain host state in one pass: directories, files, kernel modules and systemd units.

A role phase that would otherwise be a dozen small tasks (file, copy, template,
modprobe, systemctl enable/start, slurp) describes what it wants once; ``state``
reads what the host has and plans the difference as data, ``apply`` carries it out.
Under emulation, and under Ansible's stock strategy anywhere, each task costs a
module start on the host: one task instead of twelve is the saving.
"""
