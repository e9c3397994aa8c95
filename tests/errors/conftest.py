"""Makes tests/cli/scanc_cli.py importable."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "cli"))

