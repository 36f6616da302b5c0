import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "lab"))

from labhosts import te1, te2  # noqa: E402,F401  (pytest fixtures)
