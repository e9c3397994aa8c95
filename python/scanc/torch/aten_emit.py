"""Writing scanc's expression IR (ir.Node) as aten call_function nodes of an fx graph.

`Emitter(graph)(op, operands)` creates the aten node(s) for one ir operation; operands are fx
nodes or Python numbers, and operations on numbers only are folded. `apply_combine` applies a
whole combine to sequences of fx nodes elementwise (numpy broadcasting against the captured
values), which is what every lowering algorithm in lower_algorithms.py is built from.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx as fx

from . import ir
from .dtypes import DTYPE_NAMES

aten = torch.ops.aten
DTYPES = {name: dtype for dtype, name in DTYPE_NAMES.items()}  # scanc name -> torch dtype


class Emitter:
    """Creates aten call_function nodes in `graph` for ir operations; operands are fx nodes or
    Python numbers."""

    operand = fx.Node  # what a tensor operand is

    def __init__(self, graph: fx.Graph) -> None:
        self.graph = graph

    def call(self, target, *args, **kwargs) -> fx.Node:
        return self.graph.call_function(target, args, kwargs)

    def __call__(self, op: str, args: list) -> Any:
        tensors = [isinstance(a, self.operand) for a in args]
        if not any(tensors):
            if op == "where":
                return args[1] if args[0] else args[2]
            if op.startswith("cast:"):  # a typed constant: a zero-dim tensor keeps its dtype
                dtype = DTYPES[op[5:]]
                return self.call(aten.scalar_tensor.default, _cast_number(args[0], dtype),
                                 dtype=dtype)
            folded = ir.make(op, *[ir.const(a) for a in args])
            if folded.op == "const":
                return folded.value
            raise ValueError(f"lower_associative_scans: cannot evaluate `{op}` on constants")
        if op.startswith("cast:"):
            return self.call(aten._to_copy.default, args[0], dtype=DTYPES[op[5:]])
        if op in ("<<", ">>"):
            return self._shift(op, args[0], args[1], tensors)
        if op in BINARY:
            return self._binary(op, args[0], args[1], tensors)
        if op == "where":
            c, a, b = args
            if not tensors[0]:  # a condition known here
                return a if c else b
            if tensors[1] and tensors[2]:
                return self.call(aten.where.self, c, a, b)
            if tensors[2]:
                return self.call(aten.where.ScalarSelf, c, a, b)
            if tensors[1]:
                return self.call(aten.where.ScalarOther, c, a, b)
            return self.call(aten.where.Scalar, c, a, b)
        if op == "neg":
            return self.call(aten.neg.default, args[0])
        if op == "not":
            return self.call(aten.logical_not.default, args[0])
        if op == "softplus":
            return self.call(aten.softplus.default, args[0], 1, 20)
        if op == "pow":
            a, b = args
            if tensors[0] and tensors[1]:
                return self.call(aten.pow.Tensor_Tensor, a, b)
            if tensors[0]:
                return self.call(aten.pow.Tensor_Scalar, a, b)
            return self.call(aten.pow.Scalar, a, b)
        if op == "atan2" and not all(tensors):  # aten's takes tensors only
            dtype = _dtype_of(args[0] if tensors[0] else args[1])
            args = [a if t else self.call(aten.scalar_tensor.default, a, dtype=dtype)
                    for a, t in zip(args, tensors)]
            return self.call(aten.atan2.default, *args)
        if op in ("min", "max") and not all(tensors):
            t, c = (args[0], args[1]) if tensors[0] else (args[1], args[0])
            return self.call(aten.clamp_max.default if op == "min" else aten.clamp_min.default,
                             t, c)
        if op == "logaddexp":
            # max(a, b) + log1p(exp(-|a - b|)): exporters expand aten.logaddexp naively into
            # log(exp(a) + exp(b)), which overflows.
            # Equal operands take a gap of 0 (log 2 added), so that equal infinities are
            # themselves where inf - inf would be NaN, as scanc's and torch's logaddexp.
            a, b = args
            high = self("max", [a, b])
            gap = self("where", [self("==", [a, b]), 0.0,
                                 self.call(aten.neg.default,
                                           self.call(aten.abs.default, self("-", [a, b])))])
            return self("+", [high, self.call(aten.log1p.default,
                                              self.call(aten.exp.default, gap))])
        target = {"min": aten.minimum.default, "max": aten.maximum.default}.get(op)
        if target is None:
            target = getattr(aten, op).default
        return self.call(target, *args)

    def _binary(self, op: str, a, b, tensors: list[bool]) -> fx.Node:
        if not tensors[0]:  # a constant on the left
            flipped = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!=",
                       "+": "+", "*": "*", "&": "&", "|": "|", "^": "^", "and": "and",
                       "or": "or"}
            if op in flipped:
                return self._binary(flipped[op], b, a, [True, False])
            if op == "-":
                return self.call(aten.rsub.Scalar, b, a)
            # / and %: the constant as a zero-dim tensor of b's dtype (it broadcasts), so the
            # division rounds once; a tensor like b would be a pad (check_lowered).
            dtype = _dtype_of(b)
            if dtype is None:
                raise ValueError(f"lower_associative_scans: cannot tell the dtype of {b} for "
                                 f"`{a} {op} {b.name}`")
            return self._binary(op, self.call(aten.scalar_tensor.default, a, dtype=dtype), b,
                                [True, True])
        overload = "Tensor" if tensors[1] else "Scalar"
        if op in ("and", "or"):
            return self.call(BINARY[op].default, a, b)
        if op == "/" and _dtype_of(a) in INTEGERS:
            # scanc's integer division truncates; aten.div's default is true division.
            return self.call(getattr(aten.div, overload + "_mode"), a, b, rounding_mode="trunc")
        if op in ("+", "-", "*", "/") and not tensors[1]:
            overload = "Tensor"  # aten.add.Tensor takes a number as `other` in exported graphs
        packet = BINARY[op]
        return self.call(getattr(packet, overload), a, b)

    def _shift(self, op: str, a, b, tensors: list[bool]) -> fx.Node:
        # scanc takes the count modulo the bit width; aten shifts everything out past it.
        bits = torch.iinfo(_dtype_of(a if tensors[0] else b)).bits
        packet = aten.bitwise_left_shift if op == "<<" else aten.bitwise_right_shift
        if not tensors[1]:
            return self.call(packet.Tensor_Scalar, a, b % bits)
        count = self.call(aten.bitwise_and.Scalar, b, bits - 1)
        if not tensors[0]:
            return self.call(packet.Scalar_Tensor, a, count)
        return self.call(packet.Tensor, a, count)


class EagerEmitter(Emitter):
    """The same aten operations run on tensors as they are emitted (autograd records them):
    scanc's expression semantics in differentiable torch operations."""

    operand = torch.Tensor

    def __init__(self) -> None:
        super().__init__(None)

    def call(self, target, *args, **kwargs) -> torch.Tensor:
        return target(*args, **kwargs)


INTEGERS = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8)
_BOOL_RESULTS = ("lt", "le", "gt", "ge", "eq", "ne", "logical_and", "logical_or",
                 "logical_not", "logical_xor")


def _cast_number(value, dtype: torch.dtype):
    """A number cast to dtype as scanc casts it (docs/semantics.md): floats rounded to the
    dtype, float to integer truncated and saturated with NaN as 0, integers wrapped, nonzero
    as true."""
    if dtype == torch.bool:
        return bool(value != 0)
    if dtype.is_floating_point:
        return torch.tensor(float(value), dtype=torch.float64).to(dtype).item()
    if isinstance(value, float):
        info = torch.iinfo(dtype)
        if value != value:
            return 0
        return info.max if value >= info.max else info.min if value <= info.min else int(value)
    return torch.tensor(int(value), dtype=torch.int64).to(dtype).item()


def _dtype_of(node: fx.Node | torch.Tensor) -> torch.dtype | None:
    """The dtype of an fx node: from its fake value where it has one (the exported graph's
    nodes), else from the aten op that made it (scanc promotes nothing, so an operation's
    result has its tensor operands' dtype). A tensor's own, for EagerEmitter."""
    if isinstance(node, torch.Tensor):
        return node.dtype
    val = node.meta.get("val")
    if val is not None:
        return val.dtype
    if "dtype" in node.kwargs:
        return node.kwargs["dtype"]
    name = getattr(node.target, "__name__", "").split(".")[0]
    if name in _BOOL_RESULTS:
        return torch.bool
    for a in (node.args[1:] if name == "where" else node.args):
        for b in (a if isinstance(a, (list, tuple)) else [a]):  # cat: a list of nodes
            if isinstance(b, fx.Node):
                return _dtype_of(b)
    return None


BINARY = {
    "+": aten.add, "-": aten.sub, "*": aten.mul, "/": aten.div, "%": aten.fmod,
    "<": aten.lt, "<=": aten.le, ">": aten.gt, ">=": aten.ge, "==": aten.eq, "!=": aten.ne,
    "and": aten.logical_and, "or": aten.logical_or, "&": aten.bitwise_and,
    "|": aten.bitwise_or, "^": aten.bitwise_xor,
}



def apply_combine(emit: Emitter, comb: ir.Combine, left, right, captured) -> list:
    """comb applied to the sequences `left` and `right` (one fx node per leaf) and the
    captured fx nodes: one fx node per leaf, each covering every element."""
    def env(v: ir.Node):
        kind, i = v.value
        return {"l": left, "r": right, "c": captured}[kind][i]

    results = ir.evaluate(comb.outputs, env, emit)
    out = []
    for r, node, like in zip(results, comb.outputs, left):
        # A result that ignores the running values still covers every element.
        if not ir.depends_on(node, ("l", "r")):
            # A number: of the leaf's dtype, not torch's default.
            if not isinstance(r, emit.operand):
                r = emit.call(aten.scalar_tensor.default, r, dtype=_dtype_of(like))
            same = emit.call(aten.eq.Tensor, like, like)
            r = emit("where", [same, r, r])
        out.append(r)
    return out

