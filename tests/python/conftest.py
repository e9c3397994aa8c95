# Shared by the Python tests: scan_loops.py (the independent NumPy loops) is importable from here.
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
