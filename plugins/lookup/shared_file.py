# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import annotations

DOCUMENTATION = r"""
name: shared_file
short_description: The text of a file several of the collection's roles use
version_added: 0.1.0
description:
  - Returns the content of files kept in the collection's C(files/) folder, the ones more than one role uses, so
    that no role reads another role's folder - the shell probes the roles run on hosts with C(ansible.builtin.raw)
    (C(host_state.sh), what an M(aiinfra.fabric.host_config) task would look at; C(missing_packages.sh), which of
    the named packages are not installed) and the expected-busbw catalog of nccl-tests (C(expected_busbw.yml)).
  - The content is returned as it is in the file (no trailing newline stripped).
options:
  _terms:
    description: File names, relative to the collection's C(files/) folder.
    type: list
    elements: str
    required: true
author:
  - aiinfra.fabric developers (@aiinfra)
"""

EXAMPLES = r"""
- name: Ask which packages are missing, in one shell command
  ansible.builtin.raw: "sh -c {{ lookup('aiinfra.fabric.shared_file', 'missing_packages.sh') | quote }} sh nvme-cli fio"
  register: missing
  changed_when: false

- name: Read the expected-busbw catalog
  ansible.builtin.set_fact:
    catalog: "{{ lookup('aiinfra.fabric.shared_file', 'expected_busbw.yml') | from_yaml }}"
"""

RETURN = r"""
_raw:
  description: The content of each named file.
  type: list
  elements: str
"""

import os

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.aiinfra.fabric.plugins.plugin_utils.collection_files import SHARED_FILES, inside, read_text


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if kwargs:
            raise AnsibleLookupError("aiinfra.fabric.shared_file takes no options, got %s" % ", ".join(sorted(kwargs)))
        out = []
        for name in terms:
            path = inside(SHARED_FILES, name)
            if path is None or not os.path.isfile(path):
                known = sorted(os.listdir(SHARED_FILES)) if os.path.isdir(SHARED_FILES) else []
                raise AnsibleLookupError("aiinfra.fabric.shared_file: %r is not a file of the collection's files/ "
                                         "folder (%s)" % (name, ", ".join(known) or "none"))
            out.append(read_text(path))
        return out
