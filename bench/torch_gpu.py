"""scanc.torch on CUDA (issue 6): the CPU tests' checks on CUDA tensors, then the issue's
reproducers and the DESIGN §7 shapes timed against torch.compile of PyTorch's own
associative_scan (static; pointwise mode) and torch.cumsum, then the per-call overhead of small
calls. Needs scanc built with CUDA and a CUDA build of torch. GB/s counts inputs read once +
outputs written once.

usage: python3 bench/torch_gpu.py [OUT.md] [--checks-only] [--overhead-only] [--device cpu]
  --checks-only    the checks, no timings
  --overhead-only  only the per-call overhead table (with --device cpu: no GPU needed)
"""
import os
import sys
import time

import torch
import torch._dynamo.testing
from torch._higher_order_ops.associative_scan import associative_scan as torch_scan

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "torch"))
sys.path.insert(0, os.path.dirname(__file__))
import scanc  # noqa: E402
import scanc.torch as st  # noqa: E402
import torch_scan_loops as loops  # noqa: E402
from gpu_peers import median_time  # noqa: E402  (bench/: CUDA-event median)

DEV = sys.argv[sys.argv.index("--device") + 1] if "--device" in sys.argv else "cuda"


def check(name, ok):
    print(f"{'PASS' if ok else 'FAIL'} {name}", flush=True)
    return ok


def close(a, b, **kw):
    return torch.allclose(a, b, **kw)


def reproducers() -> bool:
    ok = True
    x = torch.randn(4, 8, device=DEV)
    f = torch.compile(lambda v: st.associative_scan(loops.add, v, 0), dynamic=True, fullgraph=True)
    ok &= check("4x8 sum dim 0, compile(dynamic=True) == eager == cumsum",
                close(f(x), st.associative_scan(loops.add, x, 0)) and close(f(x), x.cumsum(0)))
    x = torch.rand(2, 64, 65, device=DEV, dtype=torch.float64) * 0.1 + 1
    g = torch.compile(lambda v: st.associative_scan(loops.mul, v, 1), dynamic=True, fullgraph=True)
    ok &= check("(2,64,65) f64 prod dim 1, compile(dynamic=True) == eager == cumprod",
                close(g(x), st.associative_scan(loops.mul, x, 1)) and close(g(x), x.cumprod(1)))
    x = torch.randn(3, 300, device=DEV)
    x[:, ::7] = float("nan")

    def skipping_nan(a, b):  # a base-2 logcumsumexp of the values that are not NaN
        return torch.where(torch.isnan(b), a,
                           torch.where(torch.isnan(a), b, torch.logaddexp2(a, b)))

    ok &= check("log2/exp2 NaN-skipping logcumsumexp (composites): device == CPU",
                close(st.associative_scan(skipping_nan, x, 1).cpu(),
                      st.associative_scan(skipping_nan, x.cpu(), 1), atol=1e-5, equal_nan=True))
    return ok


def closure_model() -> bool:
    ok = True

    def model(v, tau):
        t = tau.exp()
        return st.associative_scan(lambda a, b: t * torch.logaddexp(a / t, b / t), v, 1,
                                   reverse=True)

    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    h = torch.compile(model, dynamic=True, fullgraph=True, backend=counter)
    same = True
    for shape in [(3, 5), (4, 9), (2, 17), (6, 33), (5, 100)]:
        v, tau = torch.randn(shape, device=DEV), torch.rand(shape[0], device=DEV)
        same &= close(h(v, tau), model(v, tau), atol=1e-5)
    ok &= check(f"5 shapes, one compile (frames={counter.frame_count})",
                same and counter.frame_count == 1)
    x, tau = torch.randn(3, 40, device=DEV), torch.rand(3, device=DEV)
    ok &= check("closure model: compiled == eager == loop",
                close(h(x, tau), model(x, tau), atol=1e-5) and
                close(model(x, tau), loops.loop_scan(
                    lambda a, b: tau.exp() * torch.logaddexp(a / tau.exp(), b / tau.exp()),
                    x, 1, True), atol=1e-5))
    return ok


def streams_and_gradients() -> bool:
    ok = True
    # The stream: a side stream's work is ordered with scanc's.
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        big = torch.randn(64, 1 << 16, device=DEV)
        ys = st.associative_scan(loops.add, big * 2, 1)
    torch.cuda.current_stream().wait_stream(s)
    ok &= check("runs on the current (side) stream", close(ys, (big * 2).cumsum(1), atol=1e-2,
                                                          rtol=1e-4))
    combines = {"sum": (loops.add, False), "prod": (loops.mul, True),
                "max": (loops.maximum, False), "logaddexp": (loops.logaddexp, False)}
    for name, (fn, positive) in combines.items():
        for reverse in (False, True):
            v = torch.randn(3, 7, device=DEV, dtype=torch.float64)
            v = (v.abs() + 0.5 if positive else v).requires_grad_()
            ok &= check(f"gradcheck {name} reverse={reverse}", torch.autograd.gradcheck(
                lambda u: st.associative_scan(fn, u, 1, reverse=reverse), (v,)))
    a = torch.rand(2, 9, device=DEV, dtype=torch.float64, requires_grad=True)
    b = torch.randn(2, 9, device=DEV, dtype=torch.float64, requires_grad=True)
    ok &= check("gradcheck affine", torch.autograd.gradcheck(
        lambda u, w: st.associative_scan(loops.affine, (u, w), 1), (a, b)))
    m = [torch.randn(2, 6, device=DEV, dtype=torch.float64, requires_grad=True) for _ in "abcd"]
    ok &= check("gradcheck 2x2 matrix", torch.autograd.gradcheck(
        lambda *q: tuple(st.associative_scan(loops.matrix2x2, dict(zip("abcd", q)), 1).values()),
        tuple(m)))
    x = torch.randn(3, 8, device=DEV, dtype=torch.float64, requires_grad=True)
    t = (torch.rand(3, device=DEV, dtype=torch.float64) + 0.5).requires_grad_()
    ok &= check("gradcheck captured", torch.autograd.gradcheck(
        lambda u, w: st.associative_scan(lambda p, q: w * torch.logaddexp(p / w, q / w), u, 1),
        (x, t)))
    return ok


def torch_func() -> bool:
    """vmap, jvp, jacfwd and per-sample gradients on CUDA equal the same transforms of the loop."""
    ok = True
    x = torch.randn(4, 9, 3, device=DEV, dtype=torch.float64)
    t = torch.rand(4, 3, device=DEV, dtype=torch.float64) + 0.5

    def scan(v, w):
        return st.associative_scan(lambda p, q: w * torch.logaddexp(p / w, q / w), v, 0)

    def loop(v, w):
        return loops.loop_scan(lambda p, q: w * torch.logaddexp(p / w, q / w), v, 0)

    ok &= check("vmap with a batched captured value", close(
        torch.func.vmap(scan)(x, t), torch.func.vmap(loop)(x, t)))
    got, want = (torch.func.jvp(f, (x[0], t[0]), (x[1], t[1]))[1] for f in (scan, loop))
    ok &= check("jvp through leaves and a captured value", close(got, want))
    a, b = torch.rand(2, 7, device=DEV, dtype=torch.float64), torch.randn(2, 7, device=DEV,
                                                                           dtype=torch.float64)
    got, want = (torch.func.jacfwd(lambda u, w: f(loops.affine, (u, w), 1)[1], (0, 1))(a, b)
                 for f in (st.associative_scan, loops.loop_scan))
    ok &= check("jacfwd of the affine scan", all(close(g, w) for g, w in zip(got, want)))
    got, want = (torch.func.vmap(torch.func.grad(lambda v, w: f(v, w).sin().sum(), (0, 1)),
                                 (0, None))(x, t[0]) for f in (scan, loop))
    ok &= check("per-sample gradients (vmap of grad)", all(close(g, w) for g, w in zip(got, want)))
    got, want = (torch.func.hessian(lambda v, w: f(v, w).sin().sum(), (0, 1))(x[0], t[0])
                 for f in (scan, loop))
    ok &= check("hessian through a captured value",
                all(close(g, w) for g, w in zip(torch.utils._pytree.tree_leaves(got),
                                                torch.utils._pytree.tree_leaves(want))))
    return ok


def torch_op_lowering() -> bool:
    ok = True
    # torch's own op in pointwise mode (CUDA only) exports as the HOP; lower it and run.

    class TorchModel(torch.nn.Module):
        def forward(self, v):
            return torch_scan(loops.affine, (torch.sigmoid(v), v), 1)[1]

    v = torch.randn(3, 20, device=DEV)
    ep = torch.export.export(TorchModel(), (v,),
                             dynamic_shapes={"v": {1: torch.export.Dim("L", min=2, max=64)}})
    low = st.lower_associative_scans(ep)
    w = torch.randn(3, 50, device=DEV)
    ok &= check("torch's pointwise op exported on CUDA, lowered, runs",
                close(low.module()(w), TorchModel()(w), atol=1e-5))
    v = torch.randn(3, 67, device=DEV)  # a static length: work-efficient (odd/even)
    low = st.lower_associative_scans(torch.export.export(TorchModel(), (v,)),
                                     algorithm="work-efficient")
    ok &= check("the same, static length 67, work-efficient lowering",
                close(low.module()(v), TorchModel()(v), atol=1e-5))
    return ok


def median_ms(fn):
    fn()  # compiles; its first runs launch quick builds (scanc.finish_compiles)
    scanc.finish_compiles()  # so that the timed runs launch the full builds
    return median_time(fn, reps=20) * 1e3


CASES = [  # name, combine, shape, dim, dtype
    ("repro sum 4x8 dim 0", "sum", (4, 8), 0, torch.float32),
    ("repro prod (2,64,65) f64 dim 1", "prod", (2, 64, 65), 1, torch.float64),
    ("sum 1-D 2^24", "sum", (1 << 24,), 0, torch.float32),
    ("sum rows 8192x4096 dim 1", "sum", (8192, 4096), 1, torch.float32),
    ("sum 4096x8192 dim 0", "sum", (4096, 8192), 0, torch.float32),
    ("affine rows 8192x4096 dim 1", "affine", (8192, 4096), 1, torch.float32),
    ("affine (2,4096,1024) dim 1", "affine", (2, 4096, 1024), 1, torch.float32),
]


def timing() -> list[str]:
    rows = ["| case | scanc eager | scanc compile(dynamic) | torch.compile static | cumsum |",
            "| --- | --- | --- | --- | --- |"]
    print("\n".join(rows), flush=True)
    fns = {"sum": loops.add, "prod": loops.mul, "affine": loops.affine}
    for name, kind, shape, dim, dtype in CASES:
        n = 2 if kind == "affine" else 1
        xs = tuple(torch.rand(shape, device=DEV, dtype=dtype) * 0.5 + 0.5 for _ in range(n))
        arg = xs if n == 2 else xs[0]
        gb = (2 * n * xs[0].numel() * xs[0].element_size()) / 1e9
        fn = fns[kind]
        ours = lambda: st.associative_scan(fn, arg, dim)  # noqa: E731
        ours_c = torch.compile(lambda a: st.associative_scan(fn, a, dim), dynamic=True)
        peer = torch.compile(lambda a: torch_scan(fn, a, dim), dynamic=False)
        cells = []
        for f in (ours, lambda: ours_c(arg), lambda: peer(arg),
                  (lambda: xs[0].cumsum(dim)) if kind == "sum" else None):
            if f is None:
                cells.append("-")
                continue
            try:
                ms = median_ms(f)
                cells.append(f"{ms:.3f} ms ({gb / ms * 1e3:.0f} GB/s)")
            except Exception as e:  # a peer that fails is a result too
                cells.append(f"error: {type(e).__name__}")
        rows.append(f"| {name} | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    return rows


def cuda_graphs() -> bool:
    """Captured scans replay on the inputs they find: torch.cuda.graph by hand, and
    torch.compile(mode="reduce-overhead"), whose CUDA graphs take the ops in, forward and
    backward."""
    ok = True
    x = torch.randn(4, 100_003, device=DEV)  # rows long enough for the look-back kernels
    a, b = torch.rand(2, 1000, 16, device=DEV), torch.randn(2, 1000, 16, device=DEV)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up (compile) outside the capture, as torch advises
        st.associative_scan(loops.add, x, 1)
        st.associative_scan(loops.affine, (a, b), 1)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = st.associative_scan(loops.add, x, 1)
        _, h = st.associative_scan(loops.affine, (a, b), 1)
    same = True
    for _ in range(3):
        x.copy_(torch.randn_like(x))
        a.copy_(torch.rand_like(a))
        b.copy_(torch.randn_like(b))
        graph.replay()
        same &= close(y, x.cumsum(1), atol=1e-2, rtol=1e-4)
        same &= close(h, loops.loop_scan(loops.affine, (a, b), 1)[1], atol=1e-4, rtol=1e-4)
    ok &= check("torch.cuda.graph: 3 replays on new inputs == cumsum / loop (sum, affine)", same)

    def step(v, w):
        return st.associative_scan(loops.affine, (torch.sigmoid(v), w), 1)[1].square().sum()

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    f = torch.compile(step, mode="reduce-overhead")
    same = True
    for _ in range(4):  # cudagraph trees record on a later call, then replay
        v = torch.randn(2, 3000, device=DEV, requires_grad=True)
        w = (torch.randn(2, 3000, device=DEV) * 0.1).requires_grad_()
        loss, want_loss = f(v, w), step(v, w)
        same &= close(loss, want_loss, rtol=1e-4)
        got = torch.autograd.grad(loss, (v, w))  # the compiled backward, in its own graph
        want = torch.autograd.grad(want_loss, (v, w))
        same &= all(close(g, e, rtol=1e-4, atol=1e-5) for g, e in zip(got, want))
    skips = dict(torch._dynamo.utils.counters["inductor"])
    skips = {k: n for k, n in skips.items() if "cudagraph_skip" in k}
    ok &= check(f"torch.compile reduce-overhead, forward and grad: 4 calls == eager, "
                f"no CUDA graph skipped ({skips or 'none'})", same and not skips)
    return ok


def correctness() -> bool:
    ok = True
    for section in (reproducers, closure_model, streams_and_gradients, torch_func,
                    torch_op_lowering, cuda_graphs):
        try:
            ok &= section()
        except Exception as e:  # report and go on: one failure must not hide the rest
            ok = check(f"{section.__name__}: {type(e).__name__}: {str(e).splitlines()[-1][:200]}",
                       False)
    return ok


def per_call_us(fn, calls=400, batches=9):
    """Microseconds per call of fn() in a loop: the least over batches (interference only adds
    time). CPU: this thread's CPU time, which other processes on a shared machine do not
    inflate (overhead() runs torch and scanc on this one thread); CUDA: wall time to the end of
    the batch's GPU work."""
    for _ in range(50):
        fn()
    cuda = DEV == "cuda"
    clock = time.perf_counter_ns if cuda else time.thread_time_ns
    best = float("inf")
    for _ in range(batches):
        if cuda:
            torch.cuda.synchronize()
        start = clock()
        for _ in range(calls):
            fn()
        if cuda:
            torch.cuda.synchronize()
        best = min(best, (clock() - start) / calls / 1e3)
    return best


def overhead() -> list[str]:
    """Per-call time of small scans (4x8 f32), where the call's fixed cost is everything."""
    if DEV == "cpu":
        torch.set_num_threads(1)  # scanc takes torch's thread count: both run on this thread
    gen = torch.Generator().manual_seed(0)
    x, a = torch.randn(4, 8, generator=gen).to(DEV), torch.rand(4, 8, generator=gen).to(DEV)
    tau = (torch.rand(4, generator=gen) + 0.5).to(DEV)
    xg = x.clone().requires_grad_()

    def closure(v, t):
        return st.associative_scan(lambda p, q: t * torch.logaddexp(p / t, q / t), v, 1,
                                   reverse=True)

    def compiled(fn):
        return torch.compile(fn, dynamic=True, fullgraph=True)

    sum_c = compiled(lambda v: st.associative_scan(loops.add, v, 0))
    closure_c = compiled(closure)
    cumsum_c = compiled(lambda v: v.cumsum(0))
    calls = [
        ("torch.cumsum (floor)", lambda: x.cumsum(0)),
        ("sum dim 0", lambda: st.associative_scan(loops.add, x, 0)),
        ("affine dim 1 (2 leaves)", lambda: st.associative_scan(loops.affine, (a, x), 1)),
        ("smooth max dim 1 reverse (captured tau)", lambda: closure(x, tau)),
        ("sum dim 0, forward + backward",
         lambda: st.associative_scan(loops.add, xg, 0).sum().backward()),
        ("torch.compile(dynamic) of cumsum (floor)", lambda: cumsum_c(x)),
        ("sum dim 0, compile(dynamic)", lambda: sum_c(x)),
        ("smooth max, compile(dynamic)", lambda: closure_c(x, tau)),
    ]
    rows = [f"| 4x8 f32 on {DEV} | us per call |", "| --- | --- |"]
    print("\n".join(rows), flush=True)
    for name, fn in calls:
        rows.append(f"| {name} | {per_call_us(fn):.1f} |")
        print(rows[-1], flush=True)
    return rows


if __name__ == "__main__":
    ok = True
    table = []
    if "--overhead-only" not in sys.argv:
        ok = correctness()
        if "--checks-only" not in sys.argv:
            table = timing()
    if "--checks-only" not in sys.argv:
        table += [""] + overhead()
    out = [a for a in sys.argv[1:] if a.endswith(".md")]
    if out:
        with open(out[0], "w") as f:
            f.write("\n".join(table) + "\n")
    sys.exit(0 if ok else 1)
