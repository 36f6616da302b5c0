# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the collection's own files are, for the controller-side plugins that serve them to
roles (lookups shared_file and host_library, the validate_role_inputs action).

The one place that knows the collection's layout, so that no role reads another role's folder
or ../../plugins: ``files/`` (what several roles share: the host probes, the expected-busbw
catalog), ``plugins/module_utils/`` (the packages host-side programs carry) and ``roles/``.
All three ship in the built collection (galaxy.yml's build_ignore leaves them in;
tests/unit/plugins/lookup/test_collection_files.py checks that).
"""

from __future__ import annotations

import os

# plugins/plugin_utils/collection_files.py -> the collection's root.
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHARED_FILES = os.path.join(ROOT, "files")
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
ROLES = os.path.join(ROOT, "roles")


def inside(base, name):
    """``base``/``name`` when ``name`` is a relative path that stays under ``base``, else None."""
    if not isinstance(name, str) or not name or os.path.isabs(name):
        return None
    path = os.path.normpath(os.path.join(base, name))
    return path if path.startswith(base + os.sep) else None


def read_text(path):
    with open(path) as handle:
        return handle.read()
