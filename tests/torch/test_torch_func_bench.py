"""bench/torch_func_cpu.py runs (small sizes) and prints its table: the script docs/python.md
quotes stays runnable."""

import os
import subprocess
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def test_the_derivative_cost_script_prints_a_row_of_milliseconds_per_case():
    result = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "torch_func_cpu.py"),
                             "2", "33", "1"], capture_output=True, text=True, timeout=300,
                            env=os.environ)
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row.split("|")[1].strip() for row in rows] == [
        "forward", "forward + backward (fused op)",
        "forward + backward, create_graph=True (differentiable ops)",
        "jvp (forward and the tangent scan)", "vmap over 2 rows of (1, 33)"]
    assert all(float(row.split("|")[2]) > 0 for row in rows)
