"""scanc.torch.associative_scan: torch's signature and semantics, a combine traced into scanc's
IR (trace.py), run through the custom ops of ops.py.

Plain eager calls (nothing recording a graph) skip the op's dispatch, which costs more than a
small scan, and call the same implementation directly, or functions.py's autograd.Function
where autograd, a torch.func transform or forward mode sees them.
"""

from __future__ import annotations

import operator

import torch
from torch import Tensor
from torch._C import _functorch
from torch.autograd import forward_ad
from torch.utils._python_dispatch import _get_current_dispatch_mode

from . import programs, pytrees
from .functions import PlainScan, Scan
from .ops import run_scan, scan_op
from .trace import trace_combine


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


def _function_for(tensors: list[Tensor]):
    """The autograd.Function of this eager call: Scan where a torch.func transform or forward
    mode sees it, PlainScan where autograd alone does, None where nothing differentiates."""
    if _functorch.get_interpreter_stack() or (forward_ad._current_level >= 0 and any(
            forward_ad.unpack_dual(t).tangent is not None for t in tensors)):
        return Scan
    if torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
        return PlainScan
    return None


def _call(program: str, xs: list[Tensor], captured: list[Tensor], dim: int,
          reverse: bool) -> list[Tensor]:
    """scan_op(...), straight to its implementation in plain eager calls; through
    functions.Scan where autograd, a torch.func transform or forward mode sees them."""
    if not _plain_eager(xs + captured):
        return scan_op(program, xs, captured, dim, reverse)
    function = _function_for(xs + captured)
    if function is not None:
        return list(function.apply(program, dim, reverse, len(xs), *xs, *captured))
    return run_scan(program, xs, captured, dim, reverse)


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
