"""A scan's backward and forward-mode derivative as differentiable torch operations, for
derivatives of derivatives (a gradient of a gradient, torch.func.hessian, jacfwd of jacfwd).

The fused ops (scan_backward_op, scan_jvp_op) run each derivative as one scanc program, which
torch cannot differentiate again. Here the same computation (programs.backward_plan,
tangents.jvp_plan) runs as aten operations on tensors (aten_emit.EagerEmitter: scanc's
expression semantics, f16 and bf16 rounding after each operation as torch does) around one scan
of affine maps taken through the differentiable scan itself, so that autograd, forward mode and
torch.func see every step and can take the next derivative, to any order. Each Jacobian entry
becomes a tensor, so this runs only where a further derivative may be taken.

`scan(text, leaves, dim, reverse) -> list[Tensor]` is the differentiable scan (op.py's).
Both functions return what the fused op returns for the same arguments.
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import ir, programs, tangents
from .aten_emit import EagerEmitter


class _Steps:
    """Slices of tensors along the scan dim, in scan order (reverse: from the end)."""

    def __init__(self, dim: int, length: int, reverse: bool) -> None:
        self.dim, self.length, self.reverse = dim, length, reverse

    def first(self, t: Tensor) -> Tensor:
        return t.narrow(self.dim, self.length - 1 if self.reverse else 0, 1)

    def last(self, t: Tensor) -> Tensor:
        return t.narrow(self.dim, 0 if self.reverse else self.length - 1, 1)

    def but_first(self, t: Tensor) -> Tensor:
        return t.narrow(self.dim, 0 if self.reverse else 1, self.length - 1)

    def but_last(self, t: Tensor) -> Tensor:
        return t.narrow(self.dim, 1 if self.reverse else 0, self.length - 1)

    def join(self, before: Tensor, after: Tensor) -> Tensor:
        """The steps of `before`, then those of `after`, in scan order."""
        return torch.cat([after, before] if self.reverse else [before, after], self.dim)


def _evaluate(nodes: list[ir.Node], env: dict[str, list]) -> list:
    """The nodes' values, vars read from env[kind][index]: tensors, or numbers for constants."""
    return ir.evaluate(nodes, lambda v: env[v.value[0]][v.value[1]], EagerEmitter())


def _full(value, like: Tensor, dtype: torch.dtype) -> Tensor:
    """value (a tensor that broadcasts to like, or a number) as a tensor of like's shape."""
    if not isinstance(value, Tensor):
        return torch.full_like(like, value, dtype=dtype)
    return value.to(dtype).expand(like.shape)


def _weighted_sum(pairs: list[tuple], like: Tensor, dtype: torch.dtype) -> Tensor:
    """The sum of value * weight over (value, weight) pairs, zeros like `like` for none."""
    total = None
    for value, weight in pairs:
        term = value * weight
        total = term if total is None else total + term
    return torch.zeros_like(like, dtype=dtype) if total is None else _full(total, like, dtype)


def _affine_text(n: int, entries) -> str:
    return ir.print_combine(programs.affine_combine(n, entries))


def backward(scan, program: str, xs, ys, captured, grads, dim: int, reverse: bool) -> list:
    """scan_backward_op's results (programs.py's derivation), differentiable."""
    combine, live = programs.unmark_unused_grads(program, len(xs))
    plan = programs.backward_plan(ir.parse_combine(combine), xs, len(captured), live)
    fl, alive = plan.fl, plan.alive
    dtype = xs[fl[0]].dtype
    length = xs[0].shape[dim]
    zeros = [torch.zeros_like(x) for x in xs] + [xs[fl[0]].new_zeros(c.shape) for c in captured]
    if length == 0:
        return zeros
    steps = _Steps(dim, length, reverse)
    # The A of step t at (y_t, x_{t+1}) (reverse: x_{t-1}); the last step's never used.
    following = [steps.join(steps.but_first(x), steps.last(x)) for x in xs]
    env = {"l": list(ys), "r": following, "c": list(captured)}
    a_nodes = [plan.A[alive[i]][alive[j]] for i, j in plan.entries]
    like = xs[fl[0]]
    a_values = [_full(v, like, dtype) for v in _evaluate(a_nodes, env)]
    h = scan(_affine_text(len(alive), plan.entries), a_values + [grads[fl[p]] for p in alive],
             dim, not reverse)[len(plan.entries):]
    h_of = dict(zip(alive, h))
    # dx_t = R^T h_t and captured contributions, at (y_{t-1}, x_t) for t past the first step.
    env = {"l": [steps.but_last(y) for y in ys], "r": [steps.but_first(x) for x in xs],
           "c": list(captured)}
    h_rest = {p: steps.but_first(t) for p, t in h_of.items()}
    r_nodes = [[plan.R[p][q] for p in alive] for q in range(len(fl))]
    c_nodes = [[plan.C[p][k] for p in alive] for k in range(len(captured))]
    values = iter(_evaluate([n for group in r_nodes + c_nodes for n in group], env))
    results = list(zeros)
    for q, j in enumerate(fl):
        pairs = [(v, h_rest[p]) for p, v in zip(alive, (next(values) for _ in alive))
                 if plan.R[p][q] is not ir.ZERO]
        rest = _weighted_sum(pairs, steps.but_first(xs[j]), dtype)
        first = steps.first(h_of[q]) if q in h_of else torch.zeros_like(steps.first(xs[j]))
        results[j] = steps.join(first, rest)
    for k, c in enumerate(captured):
        pairs = [(v, h_rest[p]) for p, v in zip(alive, (next(values) for _ in alive))
                 if plan.C[p][k] is not ir.ZERO]
        if pairs:
            part = _weighted_sum(pairs, steps.but_first(like), dtype)
            results[len(xs) + k] = part.sum_to_size(c.shape)
    return results


def jvp(scan, program: str, xs, ys, captured, tangent_values, dim: int, reverse: bool) -> list:
    """scan_jvp_op's results (tangents.py's derivation), differentiable."""
    combine, with_tangent = tangents.unmark(program)
    plan = tangents.jvp_plan(ir.parse_combine(combine), xs, with_tangent)
    fl, m = plan.fl, len(plan.fl)
    dxs, dcs = tangent_values[:m], tangent_values[m:]
    length = xs[0].shape[dim]
    if length == 0:
        return [torch.zeros_like(xs[j]) for j in fl]
    dtype = xs[fl[0]].dtype
    steps = _Steps(dim, length, reverse)
    # The left operand of each step: the previous y, and x's own at the first step.
    previous = [steps.join(steps.first(x), steps.but_last(y)) for x, y in zip(xs, ys)]
    dc_of = dict(zip(with_tangent, dcs))
    env = {"l": previous, "r": list(xs), "c": list(captured)}
    a_nodes = [plan.L[p][q] for p, q in plan.entries]
    r_nodes = [plan.R[p][q] for p in range(m) for q in range(m)]
    c_nodes = [plan.C[p][i] for p in range(m) for i in range(len(with_tangent))]
    values = iter(_evaluate(a_nodes + r_nodes + c_nodes, env))
    like = xs[fl[0]]
    a_values = [_full(next(values), like, dtype) for _ in a_nodes]
    r_values = [[next(values) for _ in range(m)] for _ in range(m)]
    c_values = [[next(values) for _ in with_tangent] for _ in range(m)]
    b = []
    for p in range(m):
        pairs = [(r_values[p][q], dxs[q]) for q in range(m) if plan.R[p][q] is not ir.ZERO]
        pairs += [(c_values[p][i], dc_of[k]) for i, k in enumerate(with_tangent)
                  if plan.C[p][i] is not ir.ZERO]
        changes = _weighted_sum(pairs, like, dtype)
        b.append(steps.join(steps.first(dxs[p]), steps.but_first(changes)))
    return scan(_affine_text(m, plan.entries), a_values + b, dim, reverse)[len(plan.entries):]
