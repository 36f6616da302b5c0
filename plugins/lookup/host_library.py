# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: host_library
short_description: The module_utils sources a program the roles install on hosts carries
version_added: 0.1.0
description:
  - Returns the source of the named packages or modules of the collection's C(plugins/module_utils/) and of
    everything they import from it, transitively, with the C(__init__.py) of each package on the way - what a
    program that runs on a host outside Ansible needs beside it. The nvmeof_target role's boot-time restorer
    carries C(nvmet.restore) this way, the nvme_tls role's boot-time key loader the C(tls) package.
  - A package named here (C(tls)) stands for all of its modules; a module is named with dots
    (C(nvme.capabilities)). A package that an import names (C(from ...nvmet import backing)) brings its
    C(__init__.py) and the modules imported from it, not the rest of the package.
  - Only the collection's own imports are followed; those modules are standard library only.
options:
  _terms:
    description: Names of packages or modules under C(plugins/module_utils/), with dots.
    type: list
    elements: str
    required: true
author:
  - aiinfra.fabric developers (@aiinfra)
"""

EXAMPLES = r"""
- name: Install the tls package and what it imports under a lib folder
  ansible.builtin.copy:
    content: "{{ item.source }}"
    dest: /usr/local/lib/example/ansible_collections/aiinfra/fabric/plugins/module_utils/{{ item.path }}
    mode: "0644"
  loop: "{{ query('aiinfra.fabric.host_library', 'tls') }}"
  loop_control:
    label: "{{ item.path }}"
"""

RETURN = r"""
_list:
  description: One entry per source file, sorted by name.
  type: list
  elements: dict
  contains:
    name:
      description: The module's name under module_utils, with dots; a package's C(__init__.py) is the package's name
        (C(nvmet), C(nvmet.common), C(atomic_write)).
      type: str
    path:
      description: Its path under C(plugins/module_utils/) (C(nvmet/__init__.py), C(nvmet/common.py)).
      type: str
    source:
      description: The file's text.
      type: str
"""

import ast
import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.aiinfra.fabric.plugins.plugin_utils.collection_files import MODULE_UTILS, read_text

PREFIX = "ansible_collections.aiinfra.fabric.plugins.module_utils"


def _package_dir(name):
    path = os.path.join(MODULE_UTILS, *name.split("."))
    return path if os.path.isfile(os.path.join(path, "__init__.py")) else None


def _module_file(name):
    path = os.path.join(MODULE_UTILS, *name.split(".")) + ".py"
    return path if os.path.isfile(path) else None


def _name_of(path):
    rel = os.path.relpath(path, MODULE_UTILS)[:-len(".py")].split(os.sep)
    return ".".join(rel[:-1] if rel[-1] == "__init__" else rel)


def _files_of(name, whole=True):
    """The files ``name`` stands for, or None: a module's file; a package's modules, below
    too (``whole``: a name the caller asked for), or its ``__init__.py`` alone (an import:
    ``from <package> import <module>`` needs the package and that module, not the rest)."""
    package = _package_dir(name)
    if package and not whole:
        return [os.path.join(package, "__init__.py")]
    if package:
        found = []
        for dirpath, dirnames, filenames in os.walk(package):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            found.extend(os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))
        return found
    module = _module_file(name)
    return [module] if module else None


def _parents(name):
    """The __init__.py of each package above ``name`` (nvme.capabilities -> nvme)."""
    parts = name.split(".")
    return [os.path.join(_package_dir(".".join(parts[:i])), "__init__.py")
            for i in range(1, len(parts)) if _package_dir(".".join(parts[:i]))]


def _imports(source, path):
    """The names under module_utils that ``source`` imports (what exists of each)."""
    names = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == PREFIX:
                names.extend(alias.name for alias in node.names)
            elif node.module.startswith(PREFIX + "."):
                base = node.module[len(PREFIX) + 1:]
                names.append(base)
                # from <package> import <module>
                names.extend("%s.%s" % (base, alias.name) for alias in node.names
                             if _package_dir(base) and _files_of("%s.%s" % (base, alias.name)))
        elif isinstance(node, ast.Import):
            names.extend(alias.name[len(PREFIX) + 1:] for alias in node.names if alias.name.startswith(PREFIX + "."))
    return names


def library(names):
    """{path: source} of ``names`` and their imports; raises ValueError for a name not found.

    A package named here stands for all its modules; a package an import names, for its
    ``__init__.py`` (the modules imported from it are followed one by one)."""
    sources, todo = {}, [(name, True) for name in names]
    while todo:
        name, whole = todo.pop(0)
        files = _files_of(name, whole)
        if files is None:
            raise ValueError("%r is neither a package nor a module of the collection's plugins/module_utils" % name)
        for path in files + _parents(name):
            if path in sources:
                continue
            sources[path] = read_text(path)
            todo.extend((imported, False) for imported in _imports(sources[path], path))
    return sources


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if kwargs:
            raise AnsibleLookupError("aiinfra.fabric.host_library takes no options, got %s" % ", ".join(sorted(kwargs)))
        try:
            sources = library(terms)
        except ValueError as exc:
            raise AnsibleLookupError("aiinfra.fabric.host_library: %s" % exc)
        entries = [{"name": _name_of(path), "path": os.path.relpath(path, MODULE_UTILS).replace(os.sep, "/"),
                    "source": source} for path, source in sources.items()]
        return sorted(entries, key=lambda e: e["name"])
