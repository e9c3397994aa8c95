"""The torch.library custom ops behind scanc.torch.associative_scan.

    scanc::associative_scan(str program, Tensor[] xs, Tensor[] captured, int dim, bool reverse)
        -> Tensor[]
    scanc::associative_scan_backward(str program, Tensor[] xs, Tensor[] ys, Tensor[] captured,
        Tensor[] grads, int dim, bool reverse) -> Tensor[]     (dxs, then per captured value
        its gradient in the leaves' dtype and the captured value's shape; a program marked by
        programs.mark_unused_grads skips the outputs it names, whose grads are zeros)
    scanc::associative_scan_jvp(str program, Tensor[] xs, Tensor[] ys, Tensor[] captured,
        Tensor[] tangents, int dim, bool reverse) -> Tensor[]  (the tangent of each floating-
        point leaf; tangents: one per floating-point leaf, then one per captured value that
        tangents.mark_captured_tangents names)

`program` is the traced combine's text (a constant under Dynamo), so the ops are opaque,
shape-generic calls: fake implementations give the output shapes, eager ones compile the program
once per signature (programs.py) and run it with scanc on the tensors' device. That is what makes
them work in eager, under torch.compile (dynamic or static, no graph break, no recompilation
when sizes change) and in torch.export. scan_op's autograd is registered here (what graphs
record); eager calls take functions.py's autograd.Function instead. Each op has a vmap rule
(batching.py).
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import batching, programs
from .tangents import jvp_program

def run_scan(program: str, xs: list[Tensor], captured: list[Tensor], dim: int,
          reverse: bool) -> list[Tensor]:
    program, captured = programs.pin_numbers(program, captured)
    compiled = programs.forward(program, xs, captured, dim, reverse)
    # On CUDA the results go into tensors of torch's allocator: torch.compile's CUDA graphs
    # (reduce-overhead) want every output in their memory pool, in warm-up runs and captures.
    outputs = [x.new_empty(x.shape) for x in xs] if xs[0].is_cuda else None
    return [o.contiguous() for o in programs.run(compiled, list(xs) + list(captured), outputs)]


@torch.library.custom_op("scanc::associative_scan", mutates_args=())
def scan_op(program: str, xs: list[Tensor], captured: list[Tensor], dim: int,
            reverse: bool) -> list[Tensor]:
    return run_scan(program, xs, captured, dim, reverse)


@scan_op.register_fake
def _scan_fake(program, xs, captured, dim, reverse):
    # The check an eager call makes (cached per signature), so that torch.export and
    # torch.compile refuse a non-associative combine too, before any run or lowering. A
    # combine with captured Python numbers (floats under Dynamo) may be associative for their
    # values only, which are unknown here: it is checked where they are known, at its runs
    # (run_scan) and when lowered (lower.py).
    # dim may come as a SymInt: a graph break in the combine resumes Dynamo inside
    # associative_scan with dim as a frame input, which dynamic shapes make symbolic.
    if not programs.number_captures(program):
        programs.forward(program, xs, captured, int(dim), reverse)
    return [x.new_empty(x.shape) for x in xs]


def _contribution_shape(x: Tensor, dim: int) -> list:
    """The backward program's per-element contributions to a captured value: the leaves'
    shape with S - 1 along dim (one per combine)."""
    shape = list(x.shape)
    shape[dim] = max(shape[dim] - 1, 0)
    return shape


@torch.library.custom_op("scanc::associative_scan_backward", mutates_args=())
def scan_backward_op(program: str, xs: list[Tensor], ys: list[Tensor], captured: list[Tensor],
                     grads: list[Tensor], dim: int, reverse: bool) -> list[Tensor]:
    compiled = programs.backward(program, xs, captured, dim, reverse)
    # The program computes dx of the floating-point leaves only (programs._backward_text).
    floats = [x for x in xs if x.is_floating_point()]
    outputs = None
    if xs[0].is_cuda:  # as in run_scan: dxs, then the contributions it computes
        outputs = [x.new_empty(x.shape) for x in floats]
        contribution = _contribution_shape(xs[0], dim)
        outputs += [floats[0].new_empty(contribution) for _ in compiled.captured_outputs]
    outs = programs.run(compiled, list(xs) + list(ys) + list(captured) + list(grads), outputs)
    m = len(floats)
    contributions = dict(zip(compiled.captured_outputs, outs[m:]))
    dxs = iter(outs[:m])
    result = [next(dxs).contiguous() if x.is_floating_point() else x.new_zeros(x.shape)
              for x in xs]  # contiguous, as the fake implementation says
    for k, c in enumerate(captured):
        # Summed here to the captured value's shape, so that no output has the size
        # max(S - 1, 0), whose 0/1 cases would make torch.compile guard on S.
        part = contributions.get(k)
        if part is None:  # the combine does not depend on this captured value
            result.append(floats[0].new_zeros(c.shape))
        else:
            result.append(part.sum_to_size(c.shape).contiguous())
    return result


@scan_backward_op.register_fake
def _scan_backward_fake(program, xs, ys, captured, grads, dim, reverse):
    floats = [x for x in xs if x.is_floating_point()] or xs
    return [x.new_empty(x.shape) for x in xs] + [floats[0].new_empty(c.shape) for c in captured]


@torch.library.custom_op("scanc::associative_scan_jvp", mutates_args=())
def scan_jvp_op(program: str, xs: list[Tensor], ys: list[Tensor], captured: list[Tensor],
                tangents: list[Tensor], dim: int, reverse: bool) -> list[Tensor]:
    floats = [x for x in xs if x.is_floating_point()]
    compiled = jvp_program(program, xs, captured, tangents[len(floats):], dim, reverse)
    outputs = [x.new_empty(x.shape) for x in floats] if xs[0].is_cuda else None  # as in run_scan
    outs = programs.run(compiled, list(xs) + list(ys) + list(captured) + list(tangents), outputs)
    return [o.contiguous() for o in outs]


@scan_jvp_op.register_fake
def _scan_jvp_fake(program, xs, ys, captured, tangents, dim, reverse):
    return [x.new_empty(x.shape) for x in xs if x.is_floating_point()]


def setup_context(ctx, inputs, output):
    program, xs, captured, dim, reverse = inputs
    ctx.save_for_backward(*xs, *output, *captured)
    ctx.meta = (program, len(xs), dim, reverse)
    ctx.set_materialize_grads(False)  # an unused output's gradient stays None: backward skips it


def backward(ctx, grads, backward_op=scan_backward_op):
    _refuse_batched_grads(grads)
    program, n, dim, reverse = ctx.meta
    saved = ctx.saved_tensors
    xs, ys, captured = list(saved[:n]), list(saved[n:2 * n]), list(saved[2 * n:])
    if all(g is None for g in grads):
        return None, [None] * n, [None] * len(captured), None, None
    # Integer and bool outputs carry no gradient either way.
    live = [g is not None or not y.is_floating_point() for g, y in zip(grads, ys)]
    grads = [torch.zeros_like(y) if g is None else g for g, y in zip(grads, ys)]
    # The outputs without a gradient ride in the program text, so that the op's schema stays
    # (graphs that earlier versions cached, with the plain text, still run: every output live).
    program = programs.mark_unused_grads(program, live)
    outs = backward_op(program, xs, ys, captured, grads, dim, reverse)
    dcs = [contribution.to(c.dtype) if c.is_floating_point() else None
           for contribution, c in zip(outs[n:], captured)]
    dxs = [dx if x.is_floating_point() else None for dx, x in zip(outs[:n], xs)]
    return None, dxs, dcs, None, None


scan_op.register_autograd(backward, setup_context=setup_context)


def no_double_backward(ctx, *grads):
    raise NotImplementedError(
        "associative_scan: this derivative was taken by a fused op that has no derivative of "
        "its own (a second derivative inside torch.compile, or torch.autograd.grad with "
        "create_graph=True inside torch.func.grad); take second derivatives in eager calls, "
        "with nested torch.func transforms or with create_graph=True outside torch.func")


for _op in (scan_backward_op, scan_jvp_op):
    _op.register_autograd(no_double_backward, setup_context=lambda ctx, inputs, output: None)
batching.register(scan_op, (batching.EXPAND, batching.BROADCAST))
batching.register(scan_backward_op, (batching.EXPAND,) * 4)
batching.register(scan_jvp_op, (batching.EXPAND, batching.EXPAND, batching.BROADCAST,
                                batching.EXPAND))


def _refuse_batched_grads(grads: list[Tensor | None]) -> None:
    """Batched gradients (autograd.grad's is_grads_batched, jacobian's vectorize) run the
    backward under torch's legacy vmap, which has no rule for scan_backward_op: refused with a
    message instead of torch's "Batching rule not implemented"."""
    if any(g is not None and torch._C._functorch.is_legacy_batchedtensor(g) for g in grads):
        raise NotImplementedError(
            "associative_scan: batched gradients (torch.autograd.grad with is_grads_batched=True, "
            "jacobian or hessian with vectorize=True) are not supported: they run under torch's "
            "legacy vmap; use torch.func.vmap of torch.func.vjp, or torch.func.jacrev / "
            "jacfwd / hessian")
