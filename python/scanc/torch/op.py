"""scanc.torch.associative_scan and the torch.library custom ops behind it.

    scanc::associative_scan(str program, Tensor[] xs, Tensor[] captured, int dim, bool reverse)
        -> Tensor[]
    scanc::associative_scan_backward(str program, Tensor[] xs, Tensor[] ys, Tensor[] captured,
        Tensor[] grads, int dim, bool reverse) -> Tensor[]     (dxs, then per captured value
        its gradient in the leaves' dtype and the captured value's shape; a program marked by
        programs.mark_unused_grads skips the outputs it names, whose grads are zeros)

`program` is the traced combine's text (a constant under Dynamo), so the ops are opaque,
shape-generic calls: fake implementations give the output shapes, eager ones compile the program
once per signature (programs.py) and run it with scanc on the tensors' device. That is what makes
them work in eager, under torch.compile (dynamic or static, no graph break, no recompilation
when sizes change) and in torch.export. Plain eager calls (nothing recording a graph) skip the
op's dispatch, which costs more than a small scan, and call the same implementation directly.
"""

from __future__ import annotations

import functools
import operator

import torch
from torch import Tensor
from torch._C import _functorch
from torch.autograd import forward_ad
from torch.utils._python_dispatch import _get_current_dispatch_mode

from . import batching, differentiable, programs, pytrees
from .tangents import jvp_program, mark_captured_tangents
from .trace import trace_combine


def _scan(program: str, xs: list[Tensor], captured: list[Tensor], dim: int,
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
    return _scan(program, xs, captured, dim, reverse)


@scan_op.register_fake
def _scan_fake(program, xs, captured, dim, reverse):
    # The check an eager call makes (cached per signature), so that torch.export and
    # torch.compile refuse a non-associative combine too, before any run or lowering. A
    # combine with captured Python numbers (floats under Dynamo) may be associative for their
    # values only, which are unknown here: it is checked where they are known, at its runs
    # (_scan) and when lowered (lower.py).
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
    if xs[0].is_cuda:  # as in _scan: dxs, then the contributions it computes
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
    outputs = [x.new_empty(x.shape) for x in floats] if xs[0].is_cuda else None  # as in _scan
    outs = programs.run(compiled, list(xs) + list(ys) + list(captured) + list(tangents), outputs)
    return [o.contiguous() for o in outs]


@scan_jvp_op.register_fake
def _scan_jvp_fake(program, xs, ys, captured, tangents, dim, reverse):
    return [x.new_empty(x.shape) for x in xs if x.is_floating_point()]


def _setup_context(ctx, inputs, output):
    program, xs, captured, dim, reverse = inputs
    ctx.save_for_backward(*xs, *output, *captured)
    ctx.meta = (program, len(xs), dim, reverse)
    ctx.set_materialize_grads(False)  # an unused output's gradient stays None: _backward skips it


def _backward(ctx, grads, backward_op=scan_backward_op):
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


scan_op.register_autograd(_backward, setup_context=_setup_context)


def _no_double_backward(ctx, *grads):
    raise NotImplementedError(
        "associative_scan: this derivative was taken by a fused op that has no derivative of "
        "its own (a second derivative inside torch.compile, or torch.autograd.grad with "
        "create_graph=True inside torch.func.grad); take second derivatives in eager calls, "
        "with nested torch.func transforms or with create_graph=True outside torch.func")


for _op in (scan_backward_op, scan_jvp_op):
    _op.register_autograd(_no_double_backward, setup_context=lambda ctx, inputs, output: None)
batching.register(scan_op, (batching.EXPAND, batching.BROADCAST))
batching.register(scan_backward_op, (batching.EXPAND,) * 4)
batching.register(scan_jvp_op, (batching.EXPAND, batching.EXPAND, batching.BROADCAST,
                                batching.EXPAND))


class _Scan(torch.autograd.Function):
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
        return tuple(_scan(program, xs, captured, dim, reverse))

    @staticmethod
    def setup_context(ctx, inputs, output):
        program, dim, reverse, n, *tensors = inputs
        _setup_context(ctx, (program, tensors[:n], tensors[n:], dim, reverse), output)
        ctx.save_for_forward(*tensors, *output)

    @staticmethod
    def backward(ctx, *grads):
        how = _derivative(scan_backward_op, differentiable.backward, ctx.saved_tensors + grads,
                          forward_mode=False)
        _, dxs, dcs, _, _ = _backward(ctx, list(grads), how)
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


def _scan_leaves(program: str, leaves: list[Tensor], dim: int, reverse: bool) -> list[Tensor]:
    """The differentiable scan of leaves without captured values (differentiable.py's)."""
    return list(_Scan.apply(program, dim, reverse, len(leaves), *leaves))


def _derivative(op, composite, tensors, forward_mode: bool):
    """How _Scan takes a derivative of `tensors`, as a function of op's arguments: the fused
    `op` straight (plain autograd, nothing to batch or differentiate further), through
    _Derived (under torch.func or forward-mode AD), or by differentiable torch operations
    (`composite`, differentiable.py) where it may be differentiated again."""
    if _may_differentiate_again(tensors, forward_mode):
        return functools.partial(composite, _scan_leaves)
    if _functorch.get_interpreter_stack() or forward_ad._current_level >= 0:
        return _Derived.caller(op)
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


class _Derived(torch.autograd.Function):
    """scan_backward_op or scan_jvp_op in the form torch.func transforms take, for _Scan's
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
        _no_double_backward(ctx)

    @staticmethod
    def jvp(ctx, *tangents):
        _no_double_backward(ctx)

    @staticmethod
    def caller(op):
        """op's signature, (program, list, ..., list, dim, reverse) -> list, through _Derived."""
        def call(program, *args):
            *lists, dim, reverse = args
            counts = [len(ts) for ts in lists]

            def split_call(tensors):  # a function: torch.func takes it whole, not as a pytree
                parts, start = [], 0
                for count in counts:
                    parts.append(list(tensors[start:start + count]))
                    start += count
                return op(program, *parts, dim, reverse)

            return list(_Derived.apply(split_call, *(t for ts in lists for t in ts)))
        return call


def _plain_eager(tensors: list[Tensor]) -> bool:
    """Whether nothing records this call: no Dynamo or TorchScript tracing, no torch function
    or dispatch mode (export, make_fx, FakeTensor), no tensor subclass. Only then may the op's
    dispatch be skipped, which costs more than a small scan: anything that records a graph must
    see scanc's op."""
    if (torch.compiler.is_compiling() or torch.jit.is_tracing()
            or torch._C._is_torch_function_mode_enabled()
            or _get_current_dispatch_mode() is not None):
        return False
    return all(type(t) is Tensor for t in tensors)


def _differentiated(tensors: list[Tensor]) -> bool:
    """Whether autograd, a torch.func transform or forward-mode AD sees this call."""
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return True
    if _functorch.get_interpreter_stack():
        return True
    return forward_ad._current_level >= 0 and any(
        forward_ad.unpack_dual(t).tangent is not None for t in tensors)


def _call(program: str, xs: list[Tensor], captured: list[Tensor], dim: int,
          reverse: bool) -> list[Tensor]:
    """scan_op(...), straight to its implementation in plain eager calls; through _Scan where
    autograd or a torch.func transform sees them."""
    if not _plain_eager(xs + captured):
        return scan_op(program, xs, captured, dim, reverse)
    if _differentiated(xs + captured):
        return list(_Scan.apply(program, dim, reverse, len(xs), *xs, *captured))
    return _scan(program, xs, captured, dim, reverse)


def _refuse_batched_grads(grads: list[Tensor | None]) -> None:
    """Batched gradients (autograd.grad's is_grads_batched, jacobian's vectorize) run the
    backward under torch's legacy vmap, which has no rule for scan_backward_op: refused with a
    message instead of torch's "Batching rule not implemented"."""
    if any(g is not None and torch._C._functorch.is_legacy_batchedtensor(g) for g in grads):
        raise NotImplementedError(
            "associative_scan: batched gradients (torch.autograd.grad with is_grads_batched=True, "
            "jacobian or hessian with vectorize=True) are not supported; take one gradient at a "
            "time")


def _align_captured(c: Tensor, x: Tensor, dim: int) -> Tensor:
    """A closure tensor broadcasts against a slice of the leaves (the leaves' shape without
    `dim`, as torch's combine_fn sees it); scanc wants the leaves' rank with size 1 at dim."""
    rank = x.ndim - 1
    if c.ndim > rank:
        raise ValueError(f"associative_scan: a tensor captured by combine_fn has shape "
                         f"{tuple(c.shape)}, which does not broadcast to the shape "
                         f"{tuple(x.shape[:dim] + x.shape[dim + 1:])} of one slice of xs")
    slice_shape = list(x.shape[:dim]) + list(x.shape[dim + 1:])
    for size, want in zip(c.shape, slice_shape[rank - c.ndim:]):
        if size != 1 and size != want:
            raise ValueError(f"associative_scan: a tensor captured by combine_fn has shape "
                             f"{tuple(c.shape)}, which does not broadcast to the shape "
                             f"{tuple(slice_shape)} of one slice of xs")
    if c.device != x.device:
        c = c.to(x.device)
    shape = [1] * (rank - c.ndim) + list(c.shape)
    shape.insert(dim, 1)
    return c.reshape(shape)


def associative_scan(combine_fn, xs, dim: int, reverse: bool = False,
                     combine_mode: str = "pointwise"):
    """An inclusive scan of the pytree of tensors `xs` along `dim` with the associative
    `combine_fn`, exactly like torch._higher_order_ops.associative_scan (reverse: the later
    element is the left operand). combine_fn is traced once per call with ordinary torch
    operations into scanc's IR; tensors it closes over are captured values (they broadcast
    against one slice of the leaves). Differentiable, for leaves and captured tensors.

    ValueError for a non-associative combine (with a counterexample), an operation scanc does
    not support inside a combine (named), or leaves of different shapes or devices.
    combine_mode is accepted for compatibility and ignored: every combine is compiled whole.
    """
    del combine_mode
    leaves, spec = pytrees.flatten(xs)
    if not leaves:
        raise ValueError("associative_scan: xs has no leaves; expected at least one tensor")
    if not all(isinstance(x, Tensor) for x in leaves):
        raise ValueError("associative_scan: every leaf of xs must be a tensor")
    for i, x in enumerate(leaves):
        if x.layout != torch.strided:
            raise ValueError(f"associative_scan: leaf {i} of xs is a {x.layout} tensor; scanc "
                             f"scans dense (strided) tensors: call .to_dense() first")
    for x in leaves:
        programs.dtype_name(x)  # ValueError for a dtype scanc lacks, before tracing meets it
    first = leaves[0]
    for i, x in enumerate(leaves):
        if x.shape != first.shape:
            raise ValueError(f"associative_scan: the leaves of xs must have one shape; leaf 0 "
                             f"is {tuple(first.shape)}, leaf {i} is {tuple(x.shape)}")
        if x.device != first.device:
            raise ValueError(f"associative_scan: the leaves of xs must be on one device; leaf "
                             f"0 is on {first.device}, leaf {i} on {x.device}")
    if first.ndim == 0:
        raise ValueError("associative_scan: the leaves of xs must have at least one dim")
    if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
        raise TypeError(f"associative_scan: dim must be an int, not {type(dim).__name__} "
                        f"{dim!r}")
    dim = operator.index(dim)
    if not -first.ndim <= dim < first.ndim:
        raise ValueError(f"associative_scan: dim {dim} is out of range for leaves of "
                         f"{first.ndim} dims")
    dim = dim % first.ndim
    text, captured = trace_combine(combine_fn, spec, [x.dtype for x in leaves])
    captured = [_align_captured(c, first, dim) for c in captured]
    out = _call(text, leaves, captured, dim, bool(reverse))
    return pytrees.unflatten(out, spec)
