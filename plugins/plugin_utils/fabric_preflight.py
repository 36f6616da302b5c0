# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric_preflight role's probe, read on the controller (the fabric_preflight_result
filter): the kernel release on the first line, then "module NAME FILE|-" (modinfo's file
name, - when modinfo does not know the module), "command NAME PATH|-" (command -v) and
"addr ADDRESS/PREFIX" (ip -o addr) lines."""

from __future__ import annotations


def read_preflight(lines, address=""):
    """fabric_preflight_result: kernel, modules (name -> module file, "" when modinfo knows
    none), missing_modules, missing_commands, address, address_present (always true when
    no address is asked for)."""
    lines = [line.rstrip("\r") for line in lines or []]
    modules, missing_modules, missing_commands, addrs = {}, [], [], []
    for line in lines[1:]:
        fields = line.split(" ")
        if fields[0] == "module" and len(fields) > 2:
            modules[fields[1]] = "" if fields[2] == "-" else fields[2]
            if fields[2] == "-":
                missing_modules.append(fields[1])
        elif fields[0] == "command" and len(fields) > 2 and fields[2] == "-":
            missing_commands.append(fields[1])
        elif fields[0] == "addr" and len(fields) > 1:
            addrs.append(fields[1].split("/", 1)[0])
    return {
        "kernel": lines[0] if lines else "",
        "modules": modules,
        "missing_modules": missing_modules,
        "missing_commands": missing_commands,
        "address": address,
        "address_present": not address or address in addrs,
    }
