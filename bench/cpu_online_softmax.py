"""examples/online_softmax.scan on the CPU backend against torch on the same inputs.

usage: PYTHONPATH=build/release/python python3 bench/cpu_online_softmax.py [--threads 2]

Both results (the softmax-weighted running average of v and the running log-sum-exp of x), f32,
scores and values uniform in [-3, 3). torch has no online softmax; its peer is the usual
two-pass formula (subtract each row's maximum, exp, two cumulative sums), and torch.logcumsumexp
alone for the second result. GB/s count 16 bytes an element (two inputs, two results) for every
line; each time is the least of 20 runs after one unmeasured run, and scanc's results are checked
against torch's.
"""

import argparse
import time
from pathlib import Path

import numpy as np
import torch

import scanc

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "online_softmax.scan"


def best_seconds(fn, runs=20):
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def torch_two_pass(x, v):
    top = x.max(1, keepdim=True).values
    e = torch.exp(x - top)
    s = torch.cumsum(e, 1)
    return torch.cumsum(e * v, 1) / s, torch.log(s) + top


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--threads", type=int, default=2)
    threads = parser.parse_args().threads
    torch.set_num_threads(threads)
    module = scanc.load(str(EXAMPLE))
    rng = np.random.default_rng(0)
    print(f"| shape | scanc, {threads} threads | torch two-pass formula | torch.logcumsumexp alone |")
    print("|---|---|---|---|")
    for n, t in ((64, 65536), (4096, 1024)):
        x = rng.uniform(-3, 3, (n, t)).astype(np.float32)
        v = rng.uniform(-3, 3, (n, t)).astype(np.float32)
        tx, tv = torch.from_numpy(x), torch.from_numpy(v)
        y, lse = module.run("causal_softmax", x, v, backend="cpu", num_threads=threads)
        want_y, want_lse = torch_two_pass(tx, tv)
        np.testing.assert_allclose(y, want_y.numpy(), rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(lse, want_lse.numpy(), rtol=1e-5, atol=1e-4)
        cells = []
        for fn in (lambda: module.run("causal_softmax", x, v, backend="cpu", num_threads=threads),
                   lambda: torch_two_pass(tx, tv),
                   lambda: torch.logcumsumexp(tx, 1)):
            seconds = best_seconds(fn)
            cells.append(f"{n * t * 16 / seconds / 1e9:.2f} GB/s ({seconds * 1e3:.1f} ms)")
        print(f"| {n} x {t} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
