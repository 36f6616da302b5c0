# -*- coding: utf-8 -*-
# Copyright: aiinfra.fabric contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

"""Former home of the MPI output parsers, now module_utils/mpi/parsers.py.

Kept so code written against the old path (the report's test fixtures) still imports;
new code imports from the mpi package.
"""

from __future__ import annotations

from ansible_collections.aiinfra.fabric.plugins.module_utils.mpi.parsers import (  # noqa: F401
    PARSE_KINDS, parse_imb, parse_osu, parse_output, parse_seed,
)

__all__ = ["PARSE_KINDS", "parse_imb", "parse_osu", "parse_output", "parse_seed"]
