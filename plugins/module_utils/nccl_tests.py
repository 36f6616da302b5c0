# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Former home of the nccl-tests code, now module_utils/nccl/ (command, parse, gates).

Kept so code written against the old path (the report's test fixtures) still imports;
new code imports from the nccl package.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.command import (  # noqa: F401
    OPS, TESTS, NcclTestsError, binary_name, build_test_args, size_to_bytes, supports_json,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.gates import (  # noqa: F401
    bound_for, check_gates, describe_devices, no_mpi_processes, summarize,
)
from ansible_collections.aiinfra.fabric.plugins.module_utils.nccl.parse import (  # noqa: F401
    parse_json, parse_text, strip_launcher_prefix,
)

__all__ = [
    "OPS", "TESTS", "NcclTestsError", "binary_name", "build_test_args", "size_to_bytes", "supports_json",
    "bound_for", "check_gates", "describe_devices", "no_mpi_processes", "summarize",
    "parse_json", "parse_text", "strip_launcher_prefix",
]
