import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "lab"))

# The te1/te2 pytest fixtures of the lab VMs.
from labhosts import te1, te2  # noqa: E402,F401  pylint: disable=unused-import
