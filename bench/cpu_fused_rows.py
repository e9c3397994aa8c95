#!/usr/bin/env python3
"""Row scans with an elementwise prologue or epilogue, or narrow floats, on the CPU backend:
FusedRows (src/backends/cpu/fused_rows.h) against Worker's path (SCANC_CPU_FUSED_ROWS=0) and the
plain f32 sum, in one run, through `scanc bench` (each result checked against the reference).

    python3 bench/cpu_fused_rows.py [--scanc build/tools/scanc/scanc] [--threads 2] [--plot F.svg]

Prints a markdown table of GB/s (inputs read once + outputs written once, best run); --plot
also sweeps the row length at 2^24 elements (`x * 2.0` summed, `+ 1.0` after, f32 and f16, and
the plain f32 sum) and draws GB/s against it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from svg_plot import line_plot  # noqa: E402

SUM = "combine add(a | b) {\n  return a + b\n}\n"
AFFINE = "combine affine(a1, b1 | a2, b2) {\n  return a1 * a2, a2 * b1 + b2\n}\n"

# name, program text[, --range]
CASES = [
    ("f32 `scan add(x)` (plain)", SUM + "program p(x: f32[N, T]) {\n  y = scan add(x) dim=1\n  return y\n}\n"),
    ("f32 `scan add(x * 2.0)`", SUM + "program p(x: f32[N, T]) {\n  y = scan add(x * 2.0) dim=1\n  return y\n}\n"),
    ("f32 `scan add(x)`, then `+ 1.0`", SUM + "program p(x: f32[N, T]) {\n  y = scan add(x) dim=1\n  return y + 1.0\n}\n"),
    ("f32 both", SUM + "program p(x: f32[N, T]) {\n  y = scan add(x * 2.0) dim=1\n  return y + 1.0\n}\n"),
    ("f32 both, reverse", SUM + "program p(x: f32[N, T]) {\n  y = scan add(x * 2.0) dim=1 reverse\n  return y + 1.0\n}\n"),
    ("f16 `scan add(x)`", SUM + "program p(x: f16[N, T]) {\n  y = scan add(x) dim=1\n  return y\n}\n"),
    ("bf16 `scan add(x)`", SUM + "program p(x: bf16[N, T]) {\n  y = scan add(x) dim=1\n  return y\n}\n"),
    ("u8 both", SUM + "program p(x: u8[N, T]) {\n  y = scan add(x * 2) dim=1\n  return y + 1\n}\n"),
    ("Mamba along rows: `exp(dt * A)`, `dt * x`",
     AFFINE + "program p(x: f32[N, T], dt: f32[N, T], A: f32[N, 1]) {\n  (_, h) = scan affine(exp(dt * A), dt * x) dim=1\n  return h\n}\n",
     "A=-0.1:0", "dt=0:1"),  # a decaying state: random A in [-1, 1) overflows f32 (the bench says so)
]
SHAPES = ["N=4096,T=4096", "N=3,T=16777216"]


def bench(scanc, path, sizes, ranges, threads, fused):
    env = dict(os.environ, SCANC_CPU_FUSED_ROWS="1" if fused else "0")
    cmd = [scanc, "bench", path, "--random", sizes, "--backend", "cpu", "--threads", str(threads), "--json"]
    for r in ranges:
        cmd += ["--range", r]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    try:
        r = json.loads(out.stdout)
    except json.JSONDecodeError:
        return "error"
    return f"{r['best_gbps']:.1f}" + ("" if r["ok"] else " (FAILED)")


def gbps(cell):
    return float(cell.split()[0]) if cell[0].isdigit() else None


def sweep(scanc, tmp, threads, path):
    """GB/s against the row length at 2^24 elements, Worker and FusedRows."""
    both = "program p(x: {t}[N, T]) {{\n  y = scan add(x * 2.0) dim=1\n  return y + 1.0\n}}\n"
    programs = [("f32 plain sum", SUM + CASES[0][1][len(SUM):], [True]),
                ("f32 x * 2 summed, + 1", SUM + both.format(t="f32"), [False, True]),
                ("f16 x * 2 summed, + 1", SUM + both.format(t="f16"), [False, True])]
    lengths = [16, 64, 256, 1024, 4096, 1 << 16, 1 << 20, 1 << 24]
    series = {}
    for name, text, modes in programs:
        file = os.path.join(tmp, "sweep.scan")
        with open(file, "w") as f:
            f.write(text)
        for fused in modes:
            label = name + ("" if len(modes) == 1 else (": FusedRows" if fused else ": Worker"))
            for t in lengths:
                cell = bench(scanc, file, f"N={(1 << 24) // t},T={t}", [], threads, fused)
                if gbps(cell):
                    series.setdefault(label, []).append((t, gbps(cell)))
                print(f"  {label} T={t}: {cell}", file=sys.stderr, flush=True)
    line_plot(series, path, f"CPU rows of 2^24 elements, {threads} threads: GB/s against row length",
              lengths, xlabel=lambda t: f"2^{t.bit_length() - 1}", yunit="GB/s")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scanc", default="build/tools/scanc/scanc")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--plot", help="also sweep the row length and draw it here (SVG)")
    args = ap.parse_args()
    print("| program | " + " | ".join(f"{s}: Worker | {s}: FusedRows" for s in SHAPES) + " |")
    print("|---|" + "---|---|" * len(SHAPES))
    with tempfile.TemporaryDirectory() as tmp:
        for name, text, *ranges in CASES:
            path = os.path.join(tmp, "p.scan")
            with open(path, "w") as f:
                f.write(text)
            cells = []
            for sizes in SHAPES:
                for fused in (False, True):
                    cells.append(bench(args.scanc, path, sizes, ranges, args.threads, fused))
            print(f"| {name} | " + " | ".join(cells) + " |", flush=True)
        if args.plot:
            sweep(args.scanc, tmp, args.threads, args.plot)


if __name__ == "__main__":
    main()
