# Shared by the torch front-end tests: torch_scan_loops.py (independent sequential scans) is
# importable from here; everything skips when torch is missing.
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
pytest.importorskip("torch")
