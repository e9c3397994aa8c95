"""What scanc.torch's derivatives cost on the CPU, against the forward scan (docs/python.md):
a fused backward, the differentiable-ops backward that create_graph=True takes, forward mode,
and vmap against the same rows scanned as one batch. Best of 5 after a warm-up.

usage: PYTHONPATH=build/test/python python3 bench/torch_func_cpu.py [ROWS LENGTH THREADS]
"""

import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "torch"))
import scanc.torch as st  # noqa: E402
import torch_scan_loops as loops  # noqa: E402
from cpu_online_softmax import best_seconds  # noqa: E402  (bench/: least of runs after one)


def main():
    rows, length, threads = (int(a) for a in (sys.argv[1:4] if len(sys.argv) > 3
                                               else (64, 16384, 2)))
    torch.set_num_threads(threads)
    x = torch.randn(rows, length)
    xg = x.clone().requires_grad_()

    def scan(v):
        return st.associative_scan(loops.logaddexp, v, 1)

    cases = {
        "forward": lambda: scan(x),
        "forward + backward (fused op)": lambda: torch.autograd.grad(scan(xg).sum(), xg),
        "forward + backward, create_graph=True (differentiable ops)":
            lambda: torch.autograd.grad(scan(xg).sum(), xg, create_graph=True),
        "jvp (forward and the tangent scan)": lambda: torch.func.jvp(scan, (x,), (x,)),
        f"vmap over {rows} rows of (1, {length})": lambda: torch.func.vmap(scan)(x.unsqueeze(1)),
    }
    print(f"f32 logaddexp scan of {rows}x{length} along the last dim, {threads} threads, "
          f"torch {torch.__version__}")
    print("| case | ms |\n|---|---|")
    for name, fn in cases.items():
        print(f"| {name} | {best_seconds(fn, runs=5) * 1e3:.2f} |")


if __name__ == "__main__":
    main()
