"""pytest configuration shared by every molecule scenario's testinfra verifier.

pytest loads conftest files from the rootdir down to each test folder, so the te1/te2
fixtures defined here reach molecule/<scenario>/tests/ without a conftest per scenario.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "lab"))

from labhosts import te1, te2  # noqa: E402

__all__ = ["te1", "te2"]
