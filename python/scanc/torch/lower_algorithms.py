"""The scan lowerings lower_associative_scans writes into an fx graph (DESIGN §6): a scan of the
fx nodes `xs` along `dim` as aten slice/cat/elementwise nodes, with the combine inlined by
aten_emit.apply_combine. No identity element and no padding in either.

hillis-steele:  ceil(log2 M) levels, level k computing y = cat(y[:k], f(y[:-k], y[k:])); M is
                the length, or its bound when it is dynamic: slices clamp, so a level with
                k >= S is a no-op and one graph serves every S <= M. S*log2(S) combines.
work-efficient: JAX's odd/even recursion for a static length S: combine neighbours pairwise,
                scan the S//2 pairs (giving the outputs at odd positions), then each even output
                is the odd output before it combined with its own element; interleave. About
                2*S combines, depth about 2*log2(S). The interleave is a stack along a new dim
                after `dim` flattened into `dim` (a reshape, so the length must be static).

A reverse scan runs forward on the flipped sequence and flips back: in flipped order the earlier
element is the later one, which is the left operand either way. (A mirrored scan would slice
from the end, x[-k:], whose clamped length makes exporters' shape reasoning blow up.)
"""

from __future__ import annotations

import math

import torch
import torch.fx as fx

from . import ir
from .aten_emit import Emitter, _dtype_of, apply_combine

aten = torch.ops.aten
NARROW = (torch.float16, torch.bfloat16)
INT_MAX = 2**63 - 1
# Below this static length "auto" keeps Hillis-Steele: fewer nodes and half the depth (the same
# rule as the C++ lowering, src/passes/lower_scans.cpp).
AUTO_WORK_EFFICIENT_ABOVE = 64
ALGORITHMS = ("hillis-steele", "work-efficient", "auto")

# Tags on the nodes Hillis-Steele creates, for lower.py's shape propagation.
CLAMPED = "scanc_clamped_slice"  # a slice by a constant that clamps: keep its length symbolic
SAME_SHAPE = "scanc_same_shape"  # a level's cat: exactly the shape of the level's input


def _exported_upper(length) -> int | None:
    """The largest value of the dynamic `length` (a SymInt) its shape environment allows; None
    where it is unbounded."""
    try:
        return int(length.node.shape_env.bound_sympy(length.node.expr).upper)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None  # unbounded (int_oo)


def _bound(length, bounds) -> int:
    """The largest length a scan of `length` (an int or a SymInt) must serve."""
    if isinstance(length, int):
        return length
    expr = length.node.expr
    bound = None
    if isinstance(bounds, int):
        bound = bounds
    elif bounds:
        bound = bounds.get(str(expr))
    if bound is None:
        bound = _exported_upper(length)
    if bound is None:
        raise ValueError(f"lower_associative_scans: the scan length {expr} is dynamic and "
                         f"unbounded; pass bounds={{'{expr}': M}} (or an int) or export with "
                         f"Dim(..., max=M)")
    lower = length.node.shape_env.bound_sympy(expr).lower
    if lower.is_number and bound < int(lower):
        raise ValueError(f"lower_associative_scans: bound {bound} for the scan length {expr} is "
                         f"below its smallest value, {int(lower)}")
    return bound


def choose(algorithm: str, length) -> str:
    """The algorithm that lowers a scan of `length` (an int when static): "auto" takes
    work-efficient for static lengths above AUTO_WORK_EFFICIENT_ABOVE. ValueError for
    work-efficient on a dynamic length."""
    static = isinstance(length, int)
    if algorithm == "auto":
        return ("work-efficient" if static and length > AUTO_WORK_EFFICIENT_ABOVE
                else "hillis-steele")
    if algorithm == "work-efficient" and not static:
        raise ValueError(f"lower_associative_scans: algorithm='work-efficient' needs a static "
                         f"scan length, but the length {length.node.expr} is dynamic; use "
                         f"'hillis-steele' or 'auto' (which lower a bounded dynamic length)")
    return algorithm


def lower_scan(graph: fx.Graph, comb: ir.Combine, xs: list[fx.Node], captured: list[fx.Node],
               dim: int, reverse: bool, length, algorithm: str, bounds) -> list[fx.Node]:
    """The scan's outputs, one fx node per leaf, created at the graph's insertion point."""
    emit = Emitter(graph)
    # f16 and bf16 leaves and captured values compute in f32 and each output rounds once, as
    # the op computes them (the carry in f32; a cast inside the combine still rounds there):
    # aten's f16 operations would round after each.
    dtypes = [_dtype_of(x) for x in xs]
    widen = (lambda t: emit.call(aten._to_copy.default, t, dtype=torch.float32)
             if _dtype_of(t) in NARROW else t)
    xs, captured = [widen(x) for x in xs], [widen(c) for c in captured]
    y = [emit.call(aten.flip.default, t, [dim]) for t in xs] if reverse else list(xs)
    if choose(algorithm, length) == "work-efficient":
        y = _work_efficient(emit, comb, y, captured, dim, length)
    else:
        bound = _bound(length, bounds)
        _check_length(emit, xs[0], dim, length, bound)
        levels = max(math.ceil(math.log2(bound)), 0) if bound > 1 else 0
        y = _hillis_steele(emit, comb, y, captured, dim, levels)
    y = [emit.call(aten.flip.default, t, [dim]) for t in y] if reverse else y
    return [emit.call(aten._to_copy.default, t, dtype=d) if d in NARROW else t
            for t, d in zip(y, dtypes)]


def _check_length(emit: Emitter, x: fx.Node, dim: int, length, bound: int) -> None:
    """Nodes that fail when the graph runs on a length above `bound`, where the program admits
    one (a bound below the exported maximum, or an unbounded length): the lowering is right only
    up to its bound, and a longer input would give wrong values silently."""
    if isinstance(length, int):
        return
    upper = _exported_upper(length)
    if upper is not None and upper <= bound:
        return
    # A tensor-level check: an _assert_scalar of the size itself would, when torch traces the
    # lowered program again (run_decompositions, torch.onnx), refine the length's range in the
    # shape environment the exported program shares, and so cut every later lowering of it.
    size = emit.call(aten.scalar_tensor.default, emit.call(aten.sym_size.int, x, dim),
                     dtype=torch.int64)
    within = emit.call(aten.le.Scalar, size, bound)
    emit.call(aten._assert_async.msg, within,
              f"the scan length {length.node.expr} exceeds {bound}, the bound "
              f"lower_associative_scans lowered it for")


def _hillis_steele(emit: Emitter, comb: ir.Combine, y: list[fx.Node], captured, dim: int,
                   levels: int) -> list[fx.Node]:
    def slice_(t, start, stop):
        node = emit.call(aten.slice.Tensor, t, dim, start, stop)
        node.meta[CLAMPED] = True
        return node

    def cat(parts):
        node = emit.call(aten.cat.default, parts, dim)
        node.meta[SAME_SHAPE] = True
        return node

    for level in range(levels):
        k = 1 << level
        head = [slice_(t, 0, k) for t in y]
        mixed = apply_combine(emit, comb, [slice_(t, 0, -k) for t in y],
                              [slice_(t, k, INT_MAX) for t in y], captured)
        y = [cat([h, m]) for h, m in zip(head, mixed)]
    return y


def _work_efficient(emit: Emitter, comb: ir.Combine, x: list[fx.Node], captured, dim: int,
                    n: int) -> list[fx.Node]:
    """The forward scan of the sequences `x` (one per leaf) of static length n."""
    def slice_(seq, start, stop, step=1):
        return [emit.call(aten.slice.Tensor, t, dim, start, stop, step) for t in seq]

    def cat(a, b):
        return [emit.call(aten.cat.default, [p, q], dim) for p, q in zip(a, b)]

    def combine(left, right):
        return apply_combine(emit, comb, left, right, captured)

    def interleave(evens, odds, n):  # evens has (n + 1) // 2 elements, odds n // 2
        m = n // 2
        head = evens if n % 2 == 0 else slice_(evens, 0, m)
        pairs = [emit.call(aten.flatten.using_ints,
                           emit.call(aten.stack.default, [e, o], dim + 1), dim, dim + 1)
                 for e, o in zip(head, odds)]
        return pairs if n % 2 == 0 else cat(pairs, slice_(evens, m, m + 1))

    def scan(x, n):
        if n < 2:
            return x
        odds = scan(combine(slice_(x, 0, n - 1, 2), slice_(x, 1, n, 2)), n // 2)
        evens = slice_(x, 0, 1)
        rest = (n - 1) // 2  # x[2], x[4], ...: the evens after the first
        if rest:
            before = odds if rest == n // 2 else slice_(odds, 0, rest)
            evens = cat(evens, combine(before, slice_(x, 2, n, 2)))
        return interleave(evens, odds, n)

    return scan(x, n)
