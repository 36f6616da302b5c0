# -*- coding: utf-8 -*-
"""The FAKE exit_json/fail_json harness of the in-process module glue tests: runs a
module's main() with its arguments and hands back the result it would have printed."""

from __future__ import annotations

import contextlib
import json
import os
import stat

import pytest

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core before 2.19 (scripts/test oldest runs these tests on 2.16)
    from ansible.module_utils import basic
    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args=None):
        """What ansible.module_utils.testing.patch_module_args does on 2.19: the module
        arguments AnsibleModule reads, for the duration of the block."""
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


class ModuleExit(Exception):
    """Raised by the fake exit_json/fail_json in place of the real sys.exit()."""


def run_main(monkeypatch, module, args):
    """Run module.main() with args; return the keywords of its exit_json, or of its fail_json
    with failed=True added. Patch anything else the module needs before calling this."""
    result = {}

    def exit_json(self, **kw):
        result.update(kw)
        raise ModuleExit()

    def fail_json(self, **kw):
        result.update(kw, failed=True)
        raise ModuleExit()

    monkeypatch.setattr(module.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(module.AnsibleModule, "fail_json", fail_json)
    with patch_module_args(args):
        with pytest.raises(ModuleExit):
            module.main()
    return result


def fake_bin_path(monkeypatch, module, bindir="/usr/bin/"):
    """Make the module find every tool at bindir + name without looking at the PATH."""
    monkeypatch.setattr(module.AnsibleModule, "get_bin_path", lambda self, name, required=False: bindir + name)


def tree_listing(top):
    """Every path below top with its mode and, for a regular file, its bytes: compare two
    listings to prove a run (check mode, a refusal) changed nothing on disk."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(str(top)):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            content = None
            if stat.S_ISREG(st.st_mode):
                with open(path, "rb") as fh:
                    content = fh.read()
            out[path] = (stat.S_IMODE(st.st_mode), content)
    return out
