# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""host_config's ``directories`` and ``files`` entries built from lists of paths (the
host_config_entries filter), so that a role's vars/main.yml names what it installs as data
instead of building the entries in Jinja loops."""

from __future__ import annotations


class EntriesError(ValueError):
    """Paths and contents that do not pair up."""


def entries(paths, mode, contents=None, owner="root", group="root", secret=False):
    """One entry per path: {path, mode, owner, group} for a directory, or with ``contents``
    (one text per path, in the same order) {path, content, mode, owner, group}, and
    ``secret: true`` when asked (host_config keeps the text out of diffs and logs)."""
    paths = list(paths or [])
    if contents is not None:
        contents = list(contents)
        if len(contents) != len(paths):
            raise EntriesError("%d paths but %d contents: each path needs its content" % (len(paths), len(contents)))
    out = []
    for i, path in enumerate(paths):
        entry = {"path": path}
        if contents is not None:
            entry["content"] = contents[i]
        entry.update(mode=mode, owner=owner, group=group)
        if secret:
            entry["secret"] = True
        out.append(entry)
    return out
