"""CPU time of scans along rows against the number of rows, the total fixed: two or more scanc
builds side by side (before / after a change), alternating at every point. Not a test.

    python bench/cpu_rows_sweep.py --scanc before=/tmp/base/scanc --scanc after=build-cpu/tools/scanc/scanc \\
        [--threads 2] [--elements 4194304] [--out docs/cpu_rows_sweep]   # writes .md and .svg

Each point is `scanc bench --json`'s median time (about --seconds of runs); its check against
the reference executor must pass."""
import argparse
import json
import subprocess
from pathlib import Path

from svg_plot import line_plot

REPO = Path(__file__).resolve().parents[1]
ROWS = [16, 32, 48, 63, 64, 65, 96, 127, 128, 130, 192, 256]
# name: (example, sizes for R rows of T steps, extra options). Mamba with D = 1 scans each of
# B rows along L: strided lanes, as the rows of the others.
CASES = {
    "mamba (B=R, L=T, D=1)": ("mamba", "B={R},L={T},D=1", ["--range", "dt=0.001:0.1", "--range", "A=-16:-1"]),
    "logcumsumexp f64": ("logcumsumexp", "N={R},T={T}", []),
    "welford": ("welford", "N={R},T={T}", []),
}


def median_ms(scanc, example, sizes, options, threads, seconds):
    r = subprocess.run([scanc, "bench", REPO / "examples" / f"{example}.scan", "--backend", "cpu",
                        "--random", sizes, "--threads", str(threads), "--seconds", str(seconds),
                        "--json", *options], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{scanc} {example} {sizes}: {r.stderr or r.stdout}")
    return json.loads(r.stdout)["median_seconds"] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scanc", action="append", required=True, help="LABEL=PATH, two or more")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--elements", type=int, default=1 << 22)
    ap.add_argument("--seconds", type=float, default=1.0)
    ap.add_argument("--out", default=str(REPO / "docs/cpu_rows_sweep"))
    args = ap.parse_args()
    builds = [tuple(s.split("=", 1)) for s in args.scanc]
    times = {}  # (case, label) -> [ms per row count]
    for case, (example, sizes, options) in CASES.items():
        for rows in ROWS:
            s = sizes.format(R=rows, T=args.elements // rows)
            for label, path in builds:
                ms = median_ms(path, example, s, options, args.threads, args.seconds)
                times.setdefault((case, label), []).append(ms)
            print(case, rows, " ".join(f"{label} {times[(case, label)][-1]:.2f} ms" for label, _ in builds))
    write_outputs(times, [label for label, _ in builds], args.elements, args.threads, Path(args.out))


def write_outputs(times, labels, elements, threads, out):
    """The .md table and the .svg plot of {(case, label): [ms per row count]}."""
    lines = [f"| case | rows | {' | '.join(f'{label} (ms)' for label in labels)} |",
             "|---|---:|" + "---:|" * len(labels)]
    for case in CASES:
        for i, rows in enumerate(ROWS):
            lines.append(f"| {case} | {rows} | " + " | ".join(f"{times[(case, label)][i]:.2f}" for label in labels) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    series = {f"{case}: {label}": list(zip(ROWS, times[(case, label)])) for case in CASES for label in labels}
    dashes = ["5,3", "2,2", "8,2,2,2"][:len(labels) - 1] + [""]  # a colour per case; the last build solid

    def style(name):
        case, label = name.rsplit(": ", 1)
        return list(CASES).index(case), dashes[labels.index(label) % len(dashes)]
    line_plot(series, out.with_suffix(".svg"),
              f"CPU median time, {elements} elements as R rows, {threads} threads (lower is better)",
              [16, 32, 64, 128, 256], lambda r: f"R={r}", "ms", style)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
