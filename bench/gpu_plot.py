#!/usr/bin/env python3
"""Draws the CUDA size sweep (`gpu_bench --sizes F.csv`, or `SIZES=1 scripts/gpu.sh OUT`): GB/s
against bytes moved, one line per case, with the device-to-device copy of the same bytes.

    python3 bench/gpu_plot.py OUT/sizes.csv docs/gpu_bench.png [GPU]    (GPU: default "H200")
"""
import csv
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    gpu = sys.argv[3] if len(sys.argv) == 4 else "H200"
    series = defaultdict(list)
    with open(sys.argv[1]) as f:
        for r in csv.DictReader(f):
            b, sec = float(r["bytes"]), float(r["seconds"])
            series[r["case"]].append((b, b / sec / 1e9))
    fig, ax = plt.subplots(figsize=(8, 5))
    for name, pts in sorted(series.items(), key=lambda kv: kv[0] != "copy"):
        pts.sort()
        style = dict(color="black", linestyle="--") if name == "copy" else \
            dict(linestyle=":" if name.startswith("CUB") else "-", marker="o", markersize=3)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], label=name, **style)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes moved (inputs read once + outputs written once)")
    ax.set_ylabel("GB/s")
    ax.set_title(f"scanc on one {gpu}, f32, against a device-to-device copy of the same bytes")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)


if __name__ == "__main__":
    main()
