"""GPU peers of bench/gpu_bench.cu on the same cases (f32), in one run: torch.cumsum,
torch.compile of associative_scan (static, and dynamic where it does not crash), JAX
(jnp.cumsum / lax.associative_scan), and a device-to-device copy measured here as the ceiling.
Prints a markdown table; GB/s counts inputs read once + outputs written once.

usage: python3 bench/gpu_peers.py [OUT.md] [--budget SECONDS]
"""
import os
import sys
import time

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import torch  # noqa: E402

BUDGET = float(sys.argv[sys.argv.index("--budget") + 1]) if "--budget" in sys.argv else 240.0
START = time.time()


def median_time(fn, reps=10):
    """Median seconds of fn() between CUDA events, after a warm-up call."""
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1e-3)
    return sorted(times)[len(times) // 2]


def wall_median(fn, reps=10):
    fn()
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def affine(l, r):
    return (l[0] * r[0], r[0] * l[1] + r[1])


def add(l, r):
    return l + r


def peer_function(kind, dim, associative_scan):
    """What torch.compile compiles for `kind`, taking the case's inputs as positional arguments:
    the main job (examples/mamba.scan) is h of the affine scan of (exp(dt A), dt x)."""
    if kind == "sum":
        return lambda a: associative_scan(add, a, dim)
    if kind == "affine":
        return lambda a, b: associative_scan(affine, (a, b), dim)
    return lambda x, dt, A: associative_scan(affine, (torch.exp(dt * A), dt * x), dim)[1]


CASES = [  # name, kind, shape, dim
    ("sum 1-D 2^28", "sum", (1 << 28,), 0),
    ("sum rows 8192x4096 dim 1", "sum", (8192, 4096), 1),
    ("sum 4096x8192 dim 0", "sum", (4096, 8192), 0),
    ("sum 16x2^22 dim 1", "sum", (16, 1 << 22), 1),
    ("affine rows 8192x4096 dim 1", "affine", (8192, 4096), 1),
    ("affine (2,4096,1024) dim 1", "affine", (2, 4096, 1024), 1),
    ("affine 1-D 2^28", "affine", (1 << 28,), 0),
    ("mamba (4,4096,256) (main job)", "mamba", (4, 4096, 256), 1),
    ("mamba (8,4096,1024)", "mamba", (8, 4096, 1024), 1),
]


def main():
    out_path = sys.argv[1] if len(sys.argv) > 1 and not sys.argv[1].startswith("--") else None
    n = 1 << 28
    src = torch.rand(n, device="cuda")
    dst = torch.empty_like(src)
    copy_bw = 2 * 4 * n / median_time(lambda: dst.copy_(src))
    del src, dst
    print(f"device-to-device copy (torch): {copy_bw / 1e9:.0f} GB/s", flush=True)
    from torch._higher_order_ops.associative_scan import associative_scan

    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:  # noqa: BLE001
        jax = None
        print("jax unavailable:", e)

    rows = []
    for name, kind, shape, dim in CASES:
        leaves = 1 if kind == "sum" else 2
        bytes_moved = 4 * (leaves + 1) * torch.Size(shape).numel()
        if kind == "mamba":  # x in [-1, 1], dt in [0, 1], A (D floats) in [-1, -0.1]
            xs = [torch.rand(shape, device="cuda") * 2 - 1, torch.rand(shape, device="cuda"),
                  -0.1 - 0.9 * torch.rand(shape[-1:], device="cuda")]
        else:
            xs = [torch.rand(shape, device="cuda") * (0.5 if (kind == "affine" and i == 0) else 2) +
                  (0.5 if (kind == "affine" and i == 0) else -1) for i in range(leaves)]
        res = {}

        def record(key, fn, timer=median_time):
            if time.time() - START > BUDGET:
                res[key] = "skipped (time budget)"
                return
            try:
                res[key] = bytes_moved / timer(fn) / 1e9
            except Exception as e:  # noqa: BLE001
                res[key] = "crash: " + type(e).__name__
            print(f"  {name}: {key}: {res[key] if isinstance(res[key], str) else f'{res[key]:.0f} GB/s'}", flush=True)

        if kind == "sum":
            record("torch.cumsum", lambda: torch.cumsum(xs[0], dim))
        for dynamic in (False, True):
            torch._dynamo.reset()
            f = torch.compile(peer_function(kind, dim, associative_scan), dynamic=dynamic)
            record(f"torch.compile {'dynamic' if dynamic else 'static'}", lambda f=f: f(*xs))
        if jax is not None:
            ja = [jnp.asarray(x.cpu().numpy()) for x in xs]
            if kind == "sum":
                jf = jax.jit(lambda a, d=dim: jnp.cumsum(a, axis=d))
                record("jax", lambda: jf(ja[0]).block_until_ready(), wall_median)
            elif kind == "mamba":
                jf = jax.jit(lambda x, dt, A, d=dim: jax.lax.associative_scan(
                    affine, (jnp.exp(dt * A), dt * x), axis=d)[1])
                record("jax", lambda: jax.block_until_ready(jf(*ja)), wall_median)
            else:
                jf = jax.jit(lambda a, b, d=dim: jax.lax.associative_scan(affine, (a, b), axis=d))
                record("jax", lambda: jax.block_until_ready(jf(ja[0], ja[1])), wall_median)
            del ja
        rows.append((name, res))
        del xs
        torch.cuda.empty_cache()

    keys = ["torch.cumsum", "torch.compile static", "torch.compile dynamic", "jax"]
    table = f"peers: copy ceiling {copy_bw / 1e9:.0f} GB/s (torch); cells GB/s (% of copy)\n\n"
    table += "| case | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys) + "\n"
    for name, res in rows:
        cells = []
        for k in keys:
            v = res.get(k, "-")
            cells.append(v if isinstance(v, str) else f"{v:.0f} ({100 * v * 1e9 / copy_bw:.0f}%)")
        table += f"| {name} | " + " | ".join(cells) + " |\n"
    print("\n" + table)
    if out_path:
        with open(out_path, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
