"""onnxruntime CPU time of lowered scans: hillis-steele vs work-efficient vs native CumSum, and
scanc's own backend on the same program, for S in {1K, 64K, 1M}. Not a test.

    python bench/onnx_bench.py [--scanc build/tools/scanc/scanc] [--threads 1]
                               [--out docs/onnx_bench]   # writes .json, .md table and .svg plot

Each model is exported with `scanc lower --size SYM=S --emit onnx`, run on the same random
inputs, and timed as the median of repeated runs after a warm-up (about 1 s per point)."""
import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import onnxruntime as ort

from svg_plot import line_plot

REPO = Path(__file__).resolve().parents[1]
SIZES = [1024, 65536, 1048576]
# example, program symbol, fixed sizes of the other symbols, inputs for a length S
CASES = {
    "cumsum": ("T", {"N": 1}, lambda s, g: {"x": g.uniform(-1, 1, (1, s)).astype(np.float32)}),
    "mamba": ("L", {"B": 1, "D": 4},
              lambda s, g: {"x": g.uniform(-1, 1, (1, s, 4)).astype(np.float32),
                            "dt": g.uniform(0, 0.5, (1, s, 4)).astype(np.float32),
                            "A": g.uniform(-1, 0, (4,)).astype(np.float32)}),
}


def median_seconds(fn, budget=1.0):
    fn()  # warm-up
    times = []
    start = time.perf_counter()
    while len(times) < 3 or (time.perf_counter() - start < budget and len(times) < 200):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return float(np.median(times))


def onnx_time(scanc, example, sym, s, inputs, threads, *options):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.onnx"
        r = subprocess.run([scanc, "lower", REPO / "examples" / f"{example}.scan", "--size",
                            f"{sym}={s}", "--emit", "onnx", "-o", path, *options],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        session = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        return median_seconds(lambda: session.run(None, inputs))


def scanc_time(scanc, example, sym, s, others, backend):
    sizes = ",".join(f"{k}={v}" for k, v in {**others, sym: s}.items())
    r = subprocess.run([scanc, "bench", REPO / "examples" / f"{example}.scan", "--random", sizes,
                        "--backend", backend, "--json"], capture_output=True, text=True)
    try:  # a failed tolerance check still reports the time (exit 1); the check is bench's job
        report = json.loads(r.stdout)
    except json.JSONDecodeError:
        return None, backend
    return report["median_seconds"], report["backend"]


def svg_plot(rows, path):
    """Log-log lines of time vs S, one per (example, method)."""
    series = {}
    for r in rows:
        if r["seconds"]:
            series.setdefault(f'{r["example"]}: {r["method"]}', []).append((r["S"], r["seconds"]))
    line_plot(series, path, "onnxruntime CPU time of lowered scans (log-log; lower is better)", SIZES,
              lambda s: f"S={s}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scanc", default=str(REPO / "build/tools/scanc/scanc"))
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--backend", default="auto", help="scanc's own backend to compare")
    ap.add_argument("--out", default=str(REPO / "docs/onnx_bench"))
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = []
    for example, (sym, others, make) in CASES.items():
        for s in SIZES:
            inputs = make(s, rng)
            methods = [("hillis-steele", ["--algorithm", "hillis-steele"]),
                       ("work-efficient", ["--algorithm", "work-efficient"])]
            if example == "cumsum":
                methods.append(("native CumSum", ["--native-cumsum"]))
            for name, opts in methods:
                t = onnx_time(args.scanc, example, sym, s, inputs, args.threads, *opts)
                rows.append({"example": example, "S": s, "method": f"ORT {name}", "seconds": t})
            t, used = scanc_time(args.scanc, example, sym, s, others, args.backend)
            rows.append({"example": example, "S": s, "method": f"scanc {used}", "seconds": t})
            for r in rows[-len(methods) - 1:]:
                print(f'{example:8s} S={s:8d} {r["method"]:22s} '
                      f'{r["seconds"] * 1e3 if r["seconds"] else float("nan"):10.3f} ms')
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(rows, indent=1))
    lines = ["| example | S | method | time (ms) |", "|---|---:|---|---:|"]
    for r in rows:
        ms = f'{r["seconds"] * 1e3:.3f}' if r["seconds"] else "n/a"
        lines.append(f'| {r["example"]} | {r["S"]} | {r["method"]} | {ms} |')
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    svg_plot(rows, out.with_suffix(".svg"))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
