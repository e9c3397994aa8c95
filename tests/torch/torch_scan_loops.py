"""Independent references for the torch front-end tests: scans computed one step at a time
with ordinary torch indexing, and the combines the tests use, written once."""

import torch
from torch.utils import _pytree as pytree


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
