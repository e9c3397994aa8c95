"""Independent references for the torch front-end tests: scans computed one step at a time
with ordinary torch indexing, and the combines the tests use, written once; and the values and
harness that compare one operation inside a combine with torch's own on special values."""

import math

import torch
from torch.utils import _pytree as pytree

import scanc.torch as st

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTEGERS = [torch.int32, torch.int64, torch.int8, torch.uint8]


def loop_scan(combine_fn, xs, dim, reverse=False):
    """y[t] = y[t-1] o x[t] (reverse: y[t] = y[t+1] o x[t]) by a Python loop over dim."""
    leaves, spec = pytree.tree_flatten(xs)
    moved = [x.movedim(dim, 0) for x in leaves]
    length = moved[0].shape[0]
    outs = [torch.empty_like(m) for m in moved]
    order = range(length - 1, -1, -1) if reverse else range(length)
    acc = None
    for t in order:
        cur = [m[t] for m in moved]
        if acc is None:
            acc = cur
        else:
            res = combine_fn(pytree.tree_unflatten(acc, spec), pytree.tree_unflatten(cur, spec))
            acc = pytree.tree_flatten(res)[0]
        for o, a in zip(outs, acc):
            o[t] = a
    return pytree.tree_unflatten([o.movedim(0, dim) for o in outs], spec)


def add(a, b):
    return a + b


def mul(a, b):
    return a * b


def maximum(a, b):
    return torch.maximum(a, b)


def logaddexp(a, b):
    return torch.logaddexp(a, b)


def affine(left, right):
    """h = a * h_prev + b as pairs (a, b); the left element is the earlier one."""
    a1, b1 = left
    a2, b2 = right
    return a1 * a2, a2 * b1 + b2


def matrix2x2(left, right):
    """The product right @ left of 2x2 matrices stored as four leaves (dict pytree)."""
    p, q = left, right
    return {"a": q["a"] * p["a"] + q["b"] * p["c"], "b": q["a"] * p["b"] + q["b"] * p["d"],
            "c": q["c"] * p["a"] + q["d"] * p["c"], "d": q["c"] * p["b"] + q["d"] * p["d"]}


def specials(dtype, n=61, seed=0):
    """n values of dtype: NaN, the infinities, both zeros, the extremes, then random ones, so
    that every pair of special values meets somewhere in two of these rows."""
    g = torch.Generator().manual_seed(seed)
    if dtype in FLOATS:
        info = torch.finfo(dtype)
        edge = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, info.max,
                -info.max, info.tiny, -info.tiny, 3.0, -2.0]
        rest = torch.randn(n - len(edge), generator=g, dtype=torch.float64) * 4
        return torch.cat([torch.tensor(edge, dtype=torch.float64), rest]).to(dtype)
    if dtype == torch.bool:
        return torch.rand(n, generator=g) < 0.5
    info = torch.iinfo(dtype)
    edge = torch.tensor([0, 1, info.max, info.min, info.max - 1, info.min + 1])
    rest = torch.randint(max(info.min, -50), min(info.max, 50), (n - len(edge),), generator=g)
    return torch.cat([edge, rest]).to(dtype)


def images(fn, *operands):
    """fn of each element but the first, by a scan: the combine keeps the latest operands and
    fn of them, which is associative whatever fn is."""
    def latest_and_image(earlier, later):
        return (*later[:-1], fn(*later[:-1]))

    image = torch.zeros_like(operands[0][None], dtype=fn(*operands).dtype)
    xs = tuple(x[None] for x in operands) + (image,)
    return st.associative_scan(latest_and_image, xs, 1)[-1][0, 1:]


def assert_same(got, want, exact):
    assert got.dtype == want.dtype
    if not exact:
        torch.testing.assert_close(got, want, equal_nan=True)
    elif not got.is_floating_point():
        assert torch.equal(got, want), (got, want)
    else:  # NaN where torch has NaN, and elsewhere the same bits (the sign of a zero too)
        assert torch.equal(got.isnan(), want.isnan()), (got, want)
        numbers = ~want.isnan()
        assert torch.equal(got[numbers], want[numbers]), (got, want)
        assert torch.equal(got[numbers].signbit(), want[numbers].signbit()), (got, want)
