"""The autograd.Functions behind eager calls of scanc.torch.associative_scan.

`Scan` takes the form torch.func transforms take (forward without ctx, setup_context, a jvp,
vmap through the ops' batching rules); `PlainScan`, the same forward and backward in the old
form, serves plain autograd, which torch applies faster. Each derivative is taken by the fused
op straight (plain autograd), through `Derived` (under torch.func or forward mode), or by
differentiable torch operations (differentiable.py) where it may itself be differentiated.
"""

from __future__ import annotations

import functools

import torch
from torch import Tensor
from torch._C import _functorch
from torch.autograd import forward_ad

from . import differentiable
from .ops import (backward, no_double_backward, run_scan, scan_backward_op, scan_jvp_op,
                  scan_op, setup_context)
from .tangents import mark_captured_tangents


class Scan(torch.autograd.Function):
    """scan_op's autograd without the dispatcher, in the form torch.func transforms take: the
    same forward, context and backward, the forward-mode derivative (scan_jvp_op), vmap
    through the ops' batching rules (batching.py), and derivatives that may be differentiated
    again taken by differentiable torch operations (differentiable.py)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(program, dim, reverse, n, *tensors):
        xs, captured = list(tensors[:n]), list(tensors[n:])
        if any(_functorch.is_functorch_wrapped_tensor(t) for t in tensors):  # vmap's batches
            return tuple(scan_op(program, xs, captured, dim, reverse))
        return tuple(run_scan(program, xs, captured, dim, reverse))

    @staticmethod
    def setup_context(ctx, inputs, output):
        program, dim, reverse, n, *tensors = inputs
        setup_context(ctx, (program, tensors[:n], tensors[n:], dim, reverse), output)
        ctx.save_for_forward(*tensors, *output)

    @staticmethod
    def backward(ctx, *grads):
        how = _derivative(scan_backward_op, differentiable.backward, ctx.saved_tensors + grads,
                          forward_mode=False)
        _, dxs, dcs, _, _ = backward(ctx, list(grads), how)
        return (None, None, None, None, *dxs, *dcs)

    @staticmethod
    def jvp(ctx, _program, _dim, _reverse, _n, *tangents):
        program, n, dim, reverse = ctx.meta
        saved = ctx.saved_tensors
        xs, captured, ys = saved[:n], saved[n:-n], saved[-n:]
        floats = [j for j, x in enumerate(xs) if x.is_floating_point()]
        dxs = [torch.zeros_like(xs[j]) if tangents[j] is None else tangents[j] for j in floats]
        with_tangent = [k for k, t in enumerate(tangents[n:]) if t is not None]
        text = mark_captured_tangents(program, with_tangent)
        _refuse_forward_over_forward(saved + tangents)
        how = _derivative(scan_jvp_op, differentiable.jvp, saved + tangents, forward_mode=True)
        dys = iter(how(text, xs, ys, captured, dxs + [tangents[n + k] for k in with_tangent],
                       dim, reverse))
        return tuple(next(dys) if x.is_floating_point() else None for x in xs)


class PlainScan(torch.autograd.Function):
    """Scan for plain autograd (no torch.func, no forward mode), in the old form: torch applies
    it without binding forward's default arguments through inspect.signature, which it does at
    every apply of a Function with setup_context (about 50 µs a forward and backward here, more
    than a small scan takes)."""

    @staticmethod
    def forward(ctx, program, dim, reverse, n, *tensors):
        out = Scan.forward(program, dim, reverse, n, *tensors)
        setup_context(ctx, (program, tensors[:n], tensors[n:], dim, reverse), out)
        return out

    @staticmethod
    def backward(ctx, *grads):
        return Scan.backward(ctx, *grads)


def scan_leaves(program: str, leaves: list[Tensor], dim: int, reverse: bool) -> list[Tensor]:
    """The differentiable scan of leaves without captured values (differentiable.py's)."""
    return list(Scan.apply(program, dim, reverse, len(leaves), *leaves))


def _derivative(op, composite, tensors, forward_mode: bool):
    """How Scan takes a derivative of `tensors`, as a function of op's arguments: the fused
    `op` straight (plain autograd, nothing to batch or differentiate further), through
    Derived (under torch.func or forward-mode AD), or by differentiable torch operations
    (`composite`, differentiable.py) where it may be differentiated again."""
    if _may_differentiate_again(tensors, forward_mode):
        return functools.partial(composite, scan_leaves)
    if _functorch.get_interpreter_stack() or forward_ad._current_level >= 0:
        return Derived.caller(op)
    return op


def _outer_levels(tensors) -> list:
    """The torch.func levels that differentiate (vmap's do not) other than the one taking the
    derivative of `tensors` (the saved ones and the incoming gradients or tangents):
    torch.func.grad keeps its own level on the stack during its backward, with the tensors
    living there; a vjp's level is gone by its backward."""
    own = {_functorch.maybe_get_level(t) for t in tensors if t is not None}
    return [i for i in _functorch.get_interpreter_stack() or []
            if i.key() != _functorch.TransformType.Vmap and i.level() not in own]


def _may_differentiate_again(tensors, forward_mode: bool) -> bool:
    """Whether the derivative being computed may itself be differentiated: then it is taken by
    differentiable torch operations instead of the fused op. That is so under an outer
    torch.func level that differentiates, under forward-mode AD over a backward, and, outside
    torch.func, in a backward that builds a graph (create_graph=True) or a tangent that
    autograd records."""
    if _outer_levels(tensors) or (not forward_mode and forward_ad._current_level >= 0):
        return True
    if _functorch.get_interpreter_stack() or not torch.is_grad_enabled():
        return False
    return not forward_mode or any(t is not None and t.requires_grad for t in tensors)


def _refuse_forward_over_forward(tensors) -> None:
    """Forward mode over forward mode: torch hands an autograd.Function's jvp tensors without
    their outer tangents (an x * x Function whose jvp returns 2 x t gets 0 as its second
    derivative), so the result would be wrong. Refused by name."""
    outer_jvp = any(i.key() == _functorch.TransformType.Jvp for i in _outer_levels(tensors))
    if outer_jvp or forward_ad._current_level >= 1:
        raise NotImplementedError(
            "associative_scan: forward mode over forward mode (jacfwd of jacfwd, jvp of jvp, "
            "jacfwd of hessian) is not supported: torch does not carry an outer tangent into "
            "an autograd.Function's jvp; take the outer derivative in reverse mode "
            "(jacrev(jacfwd(f))) or use torch.func.hessian (jacfwd of jacrev)")


class Derived(torch.autograd.Function):
    """scan_backward_op or scan_jvp_op in the form torch.func transforms take, for Scan's
    first derivatives: vmap through their batching rules; a derivative of theirs, where
    _may_differentiate_again did not foresee one, is refused by name."""

    generate_vmap_rule = True

    @staticmethod
    def forward(split_call, *tensors):
        return tuple(split_call(tensors))

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, *grads):
        no_double_backward(ctx)

    @staticmethod
    def jvp(ctx, *tangents):
        no_double_backward(ctx)

    @staticmethod
    def caller(op):
        """op's signature, (program, list, ..., list, dim, reverse) -> list, through Derived."""
        def call(program, *args):
            *lists, dim, reverse = args
            counts = [len(ts) for ts in lists]

            def split_call(tensors):  # a function: torch.func takes it whole, not as a pytree
                parts, start = [], 0
                for count in counts:
                    parts.append(list(tensors[start:start + count]))
                    start += count
                return op(program, *parts, dim, reverse)

            return list(Derived.apply(split_call, *(t for ts in lists for t in ts)))
        return call
