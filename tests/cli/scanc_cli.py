"""Runs the `scanc` binary for the pytest suites in tests/cli and tests/errors.

The binary is $SCANC_BIN, or build/tools/scanc/scanc under the repository root."""
import os
import subprocess
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def scanc_bin() -> Path:
    path = Path(os.environ.get("SCANC_BIN", "build/tools/scanc/scanc"))
    return path if path.is_absolute() else REPO / path


def scanc(*args, timeout=120) -> subprocess.CompletedProcess:
    """Runs `scanc ARGS...`; never raises on a nonzero exit code."""
    assert scanc_bin().exists(), f"no scanc binary at {scanc_bin()}; build it or set SCANC_BIN"
    return subprocess.run([str(scanc_bin()), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


def save_inputs(directory: Path, inputs: dict) -> list:
    """Writes each array to NAME.npy and returns the matching --input arguments."""
    args = []
    for name, array in inputs.items():
        path = directory / f"{name}.npy"
        np.save(path, array)
        args += ["--input", f"{name}={path}"]
    return args
