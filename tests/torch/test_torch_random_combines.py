"""Random combines written in torch against the one-step-at-a-time loop: products of one or two
monoids (sums, max, min, integer products, affine maps, logaddexp, segmented sums, online
softmax, Welford's summaries, argmax with its index, a max clamped by a closure tensor), over
ranks 1-3 at awkward sizes, along any dim, forwards or reversed, in f32 and f64. Each scan's
values match the loop's, and so do the gradients of its float leaves; a few also run under
torch.compile(dynamic=True, fullgraph=True) at two shapes, and some are exported and lowered
into slice/cat/elementwise ops, at their length or for lengths from 0 to a bound (a few of
those exported on to ONNX and run by onnxruntime)."""
import random

import pytest
import torch
from torch.export import Dim

import scanc.torch as st
from lower_models import assert_primitive
from torch_scan_loops import affine, loop_scan

SIZES = [1, 2, 3, 5, 7, 16, 17, 33]


def monoid(rng: random.Random, cap):
    """(combine of k leaves given as tuples, the kinds of its leaves); `cap` is a closure tensor."""
    def segmented(l, r):
        return l[0] | r[0], torch.where(r[0], r[1], l[1] + r[1])

    def softmax(l, r):
        m = torch.maximum(l[0], r[0])
        return m, l[1] * torch.exp(l[0] - m) + r[1] * torch.exp(r[0] - m)

    def welford(l, r):
        n, d = l[0] + r[0], r[1] - l[1]
        return n, l[1] + d * r[0] / n, l[2] + r[2] + d * d * l[0] * r[0] / n

    def argmax(l, r):
        take = r[0] > l[0]
        return torch.where(take, r[0], l[0]), torch.where(take, r[1], l[1])

    return rng.choice([
        (lambda l, r: (l[0] + r[0],), ["x"]),
        (lambda l, r: (torch.maximum(l[0], r[0]),), ["x"]),
        (lambda l, r: (torch.minimum(l[0], r[0]),), ["x"]),
        (lambda l, r: (l[0] * r[0],), ["small_int"]),
        (affine, ["decay", "x"]),
        (lambda l, r: (torch.logaddexp(l[0], r[0]),), ["x"]),
        (segmented, ["flag", "x"]),
        (softmax, ["x", "positive"]),
        (welford, ["one", "x", "zero"]),
        (argmax, ["x", "index"]),
        (lambda l, r: (torch.minimum(torch.maximum(l[0], r[0]), cap),), ["x"]),
    ])


def leaf(kind, shape, dim, dtype, g: torch.Generator):
    if kind == "index":
        along = [-1 if i == dim else 1 for i in range(len(shape))]
        return torch.arange(shape[dim]).reshape(along).expand(shape).contiguous()
    makers = {
        "x": lambda: torch.randn(shape, generator=g, dtype=dtype),
        "decay": lambda: 0.5 + 0.5 * torch.rand(shape, generator=g, dtype=dtype),
        "positive": lambda: 0.1 + torch.rand(shape, generator=g, dtype=dtype),
        "one": lambda: torch.ones(shape, dtype=dtype),
        "zero": lambda: torch.zeros(shape, dtype=dtype),
        "flag": lambda: torch.rand(shape, generator=g) < 0.3,
        "small_int": lambda: torch.randint(-2, 3, shape, generator=g),
    }
    return makers[kind]()


class RandomScan:
    """A combine of one or two monoids side by side, its leaves' kinds, a dim and a direction."""

    def __init__(self, seed: int):
        rng = random.Random(seed)
        self.rng, self.generator = rng, torch.Generator().manual_seed(seed)
        self.dtype = rng.choice([torch.float32, torch.float64])
        self.rank = rng.randint(1, 3)
        self.dim, self.reverse = rng.randrange(self.rank), rng.random() < 0.4
        self.cap = torch.randn([1] * rng.randint(0, self.rank - 1), generator=self.generator,
                               dtype=self.dtype)
        self.parts, self.kinds = [], []
        for _ in range(rng.randint(1, 2)):
            combine, kinds = monoid(rng, self.cap)
            self.parts.append((combine, len(self.kinds), len(self.kinds) + len(kinds)))
            self.kinds += kinds

    def combine(self, left, right):
        return tuple(out for f, a, b in self.parts for out in f(left[a:b], right[a:b]))

    def shape(self):
        return [self.rng.choice(SIZES) for _ in range(self.rank)]

    def leaves(self, shape, length=None):
        """Leaves of `shape`, or of `shape` with the scan's dim `length` long."""
        if length is not None:
            shape = shape[:self.dim] + [length] + shape[self.dim + 1:]
        return tuple(leaf(k, shape, self.dim, self.dtype, self.generator) for k in self.kinds)

    def scan(self, xs):
        return st.associative_scan(self.combine, xs, self.dim, self.reverse)

    def loop(self, xs):
        return loop_scan(self.combine, xs, self.dim, self.reverse)


def assert_close(got, want, dtype, what):
    for i, (g, w) in enumerate(zip(got, want)):
        if not w.is_floating_point():
            assert torch.equal(g, w), f"{what}, leaf {i}"
            continue
        tolerance = 1e-4 if dtype == torch.float32 else 1e-9
        torch.testing.assert_close(g, w, rtol=tolerance, atol=tolerance, equal_nan=True,
                                   msg=lambda m: f"{what}, leaf {i}: {m}")


@pytest.mark.parametrize("seed", range(60))
def test_random_combines_and_their_gradients_match_the_loop(seed):
    scan = RandomScan(seed)
    shape = scan.shape()
    xs = scan.leaves(shape)
    what = f"{scan.kinds} of {shape} along {scan.dim}{' reversed' if scan.reverse else ''}"
    assert_close(scan.scan(xs), scan.loop(xs), scan.dtype, what)
    # Gradients of the leaves that are free values (not counts or indices), of a weighted sum
    # of every float result.
    free = [i for i, k in enumerate(scan.kinds) if k in ("x", "decay", "positive")]

    def gradients(run):
        ins = [x.detach().clone().requires_grad_(i in free) for i, x in enumerate(xs)]
        total = sum((y.double() * (k + 1)).sum() for k, y in enumerate(run(tuple(ins)))
                    if y.is_floating_point())
        grads = torch.autograd.grad(total, [ins[i] for i in free], allow_unused=True)
        return [torch.zeros_like(ins[i]) if g is None else g for i, g in zip(free, grads)]
    if free:
        assert_close(gradients(scan.scan), gradients(scan.loop), scan.dtype, f"d {what}")


@pytest.mark.parametrize("seed", range(4))
def test_random_combines_under_dynamic_compile_match_the_loop_at_two_shapes(seed):
    torch._dynamo.reset()
    scan = RandomScan(1000 + seed)
    compiled = torch.compile(scan.scan, dynamic=True, fullgraph=True)
    for shape in (scan.shape(), scan.shape()):
        xs = scan.leaves(shape)
        assert_close(compiled(xs), scan.loop(xs), scan.dtype, f"{scan.kinds} of {shape}")


class Scanning(torch.nn.Module):
    def __init__(self, scan: RandomScan):
        super().__init__()
        self.scan = scan

    def forward(self, xs):
        return self.scan.scan(xs)


def lowered_export(scan: RandomScan, shape, dynamic: bool, algorithm="auto"):
    """scan exported at `shape` (its length dynamic, from 0 to 40, where `dynamic`) and lowered,
    and the inputs it was exported with."""
    xs = scan.leaves(shape)
    lengths_of = {scan.dim: Dim("L", min=0, max=40)}
    shapes = (tuple(lengths_of for _ in xs),) if dynamic else None
    exported = torch.export.export(Scanning(scan), (xs,), dynamic_shapes=shapes)
    lowered = st.lower_associative_scans(exported, algorithm=algorithm)
    assert_primitive(lowered)  # no scan left
    return lowered, xs


DYNAMIC_LENGTHS = [0, 1, 2, 3, 5, 16, 17, 33, 40]


@pytest.mark.parametrize("seed", range(24))
def test_random_combines_exported_and_lowered_match_the_loop(seed):
    scan = RandomScan(2000 + seed)
    shape, dynamic = scan.shape(), scan.rng.random() < 0.5
    algorithm = scan.rng.choice(["hillis-steele", "auto"] + ([] if dynamic else ["work-efficient"]))
    lengths = [shape[scan.dim]]
    if dynamic:  # exported at one length in [2, 40], run at lengths from 0 to the bound
        shape[scan.dim] = max(2, shape[scan.dim])
        lengths = DYNAMIC_LENGTHS + [shape[scan.dim]]
    lowered, _ = lowered_export(scan, shape, dynamic, algorithm)
    for n in lengths:
        xs = scan.leaves(shape, n)
        what = f"{scan.kinds} of length {n} ({algorithm}, {'dynamic' if dynamic else 'static'})"
        assert_close(lowered.module()(xs), scan.loop(xs), scan.dtype, what)


@pytest.mark.parametrize("seed", range(3))
def test_random_combines_lowered_for_a_bounded_length_run_in_onnxruntime(seed, tmp_path):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    scan = RandomScan(3000 + seed)
    shape = scan.shape()
    shape[scan.dim] = max(2, shape[scan.dim])
    lowered, xs = lowered_export(scan, shape, dynamic=True)
    path = tmp_path / "scan.onnx"
    torch.onnx.export(lowered, (xs,), dynamo=True).save(str(path))
    session = ort.InferenceSession(str(path))
    for n in DYNAMIC_LENGTHS:
        xs = scan.leaves(shape, n)
        got = session.run(None, {i.name: x.numpy() for i, x in zip(session.get_inputs(), xs)})
        assert_close([torch.from_numpy(g) for g in got], scan.loop(xs), scan.dtype,
                     f"{scan.kinds} of length {n} in onnxruntime")
