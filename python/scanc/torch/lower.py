"""lower_associative_scans: scans in an exported program rewritten as slice/cat/elementwise aten
ops, for ONNX, TensorRT and other runtimes that have no scan (DESIGN §6).

Replaced: PyTorch's higher-order op `torch.ops.higher_order.associative_scan(combine_graph, xs,
additional_inputs)` (what associative_scan's pointwise mode captures; it always scans dim 0,
forward; its combine is an aten graph, translated here into scanc's expression IR) and scanc's
`scanc::associative_scan` (the combine text travels in the op). Each becomes Hillis-Steele:
ceil(log2 M) levels, level k computing y = cat(y[:k], f(y[:-k], y[k:])) (reverse: the same on
the flipped sequence, flipped back).
No identity element and no padding (no ones_like/zeros_like). M is the length when it is static;
for a dynamic length it is the bound (`bounds`, else the exported range constraint): slices
clamp, so a level with k >= S is a no-op and one graph serves every S <= M.
"""

from __future__ import annotations

import copy
import math
import operator
from typing import Any

import torch
import torch.fx as fx

from . import ir

aten = torch.ops.aten
_INT_MAX = 2**63 - 1

# aten op (overload packet) -> scanc op, for combines captured by PyTorch's own op.
_FROM_ATEN = {
    aten.add: "+", aten.sub: "-", aten.mul: "*", aten.div: "/", aten.remainder: "%",
    aten.lt: "<", aten.le: "<=", aten.gt: ">", aten.ge: ">=", aten.eq: "==", aten.ne: "!=",
    aten.logical_and: "and", aten.logical_or: "or", aten.bitwise_and: "&",
    aten.bitwise_or: "|", aten.bitwise_xor: "^", aten.neg: "neg", aten.logical_not: "not",
    aten.exp: "exp", aten.log: "log", aten.log1p: "log1p", aten.expm1: "expm1",
    aten.sqrt: "sqrt", aten.rsqrt: "rsqrt", aten.abs: "abs", aten.tanh: "tanh",
    aten.sigmoid: "sigmoid", aten.softplus: "softplus", aten.sin: "sin", aten.cos: "cos",
    aten.floor: "floor", aten.ceil: "ceil", aten.pow: "pow", aten.minimum: "min",
    aten.maximum: "max", aten.logaddexp: "logaddexp", aten.where: "where",
}
_IDENTITY = {aten.clone, aten.alias, aten.detach, aten.contiguous, aten.view_as}
_DTYPES = {"bool": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
           "i64": torch.int64, "u8": torch.uint8, "f16": torch.float16,
           "bf16": torch.bfloat16, "f32": torch.float32, "f64": torch.float64}
_DTYPE_NAMES = {v: k for k, v in _DTYPES.items()}


def _is_scanc_op(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.scanc.associative_scan.default


def _is_torch_hop(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.higher_order.associative_scan


# ---- PyTorch's combine graph -> ir ----

def _combine_from_graph(gm: fx.GraphModule, num_leaves: int) -> ir.Combine:
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    values: dict[fx.Node, Any] = {}
    for i, p in enumerate(placeholders):
        if i < 2 * num_leaves:
            values[p] = ir.var("l" if i < num_leaves else "r", i % num_leaves)
        else:
            values[p] = ir.var("c", i - 2 * num_leaves)

    def arg(a):
        if isinstance(a, fx.Node):
            return values[a]
        if isinstance(a, (bool, int, float)):
            return ir.const(a)
        raise ValueError(f"lower_associative_scans: unsupported operand {a!r} in a combine")

    outputs: list[ir.Node] = []
    for n in gm.graph.nodes:
        if n.op == "output":
            outputs = [arg(a) for a in n.args[0]]
        elif n.op == "call_function":
            values[n] = _translate(n, [arg(a) if not isinstance(a, torch.dtype) else a
                                       for a in n.args])
    return ir.Combine(num_leaves, len(placeholders) - 2 * num_leaves, outputs)


def _translate(n: fx.Node, args: list) -> ir.Node:
    packet = getattr(n.target, "overloadpacket", None)
    kwargs = n.kwargs
    if packet in _IDENTITY:
        return args[0]
    if packet in (aten._to_copy, torch.ops.prims.convert_element_type):
        dtype = kwargs.get("dtype", args[1] if len(args) > 1 else None)
        return ir.make(f"cast:{_DTYPE_NAMES[dtype]}", args[0])
    if packet is aten.rsub:
        return ir.make("-", args[1], args[0])
    if packet is aten.reciprocal:
        return ir.make("/", ir.const(1.0), args[0])
    if packet is aten.clamp_min:
        return ir.make("max", args[0], args[1])
    if packet is aten.clamp_max:
        return ir.make("min", args[0], args[1])
    if packet is aten.clamp:
        x = args[0]
        lo = args[1] if len(args) > 1 else None
        hi = args[2] if len(args) > 2 else None
        x = ir.make("max", x, lo) if lo is not None else x
        return ir.make("min", x, hi) if hi is not None else x
    op = _FROM_ATEN.get(packet)
    if op is None or (kwargs.get("alpha", 1) != 1) or kwargs.get("rounding_mode"):
        raise ValueError(f"lower_associative_scans: the operation `{n.target}` inside a "
                         f"combine has no scalar equivalent in scanc")
    if op == "softplus":
        args = args[:1]
    return ir.make(op, *args)


# ---- ir -> aten nodes ----

class _Emitter:
    """Creates aten call_function nodes in `graph` for ir operations; operands are fx nodes or
    Python numbers."""

    def __init__(self, graph: fx.Graph) -> None:
        self.graph = graph

    def call(self, target, *args, **kwargs) -> fx.Node:
        return self.graph.call_function(target, args, kwargs)

    def __call__(self, op: str, args: list) -> Any:
        tensors = [isinstance(a, fx.Node) for a in args]
        if not any(tensors):
            folded = ir.make(op, *[ir.const(a) for a in args])
            if folded.op == "const":
                return folded.value
            raise ValueError(f"lower_associative_scans: cannot evaluate `{op}` on constants")
        if op.startswith("cast:"):
            return self.call(aten._to_copy.default, args[0], dtype=_DTYPES[op[5:]])
        if op in _BINARY:
            return self._binary(op, args[0], args[1], tensors)
        if op == "where":
            c, a, b = args
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
        if op in ("min", "max") and not all(tensors):
            t, c = (args[0], args[1]) if tensors[0] else (args[1], args[0])
            return self.call(aten.clamp_max.default if op == "min" else aten.clamp_min.default,
                             t, c)
        if op == "logaddexp":
            # max(a, b) + log1p(exp(-|a - b|)): exporters expand aten.logaddexp naively into
            # log(exp(a) + exp(b)), which overflows.
            a, b = args
            high = self("max", [a, b])
            gap = self.call(aten.neg.default, self.call(aten.abs.default, self("-", [a, b])))
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
            if op == "/":
                return self.call(aten.mul.Tensor, self.call(aten.reciprocal.default, b), a)
            if op == "%":
                return self.call(aten.remainder.Scalar_Tensor, a, b)
        overload = "Tensor" if tensors[1] else "Scalar"
        if op in ("+", "-", "*", "/") and not tensors[1]:
            overload = "Tensor"  # aten.add.Tensor takes a number as `other` in exported graphs
        packet = _BINARY[op]
        return self.call(getattr(packet, overload), a, b)


_BINARY = {
    "+": aten.add, "-": aten.sub, "*": aten.mul, "/": aten.div, "%": aten.remainder,
    "<": aten.lt, "<=": aten.le, ">": aten.gt, ">=": aten.ge, "==": aten.eq, "!=": aten.ne,
    "and": aten.logical_and, "or": aten.logical_or, "&": aten.bitwise_and,
    "|": aten.bitwise_or, "^": aten.bitwise_xor,
}


# ---- Hillis-Steele ----

def _levels(length, bounds) -> int:
    if isinstance(length, int):
        bound = length
    else:
        expr = length.node.expr
        bound = None
        if isinstance(bounds, int):
            bound = bounds
        elif bounds:
            bound = bounds.get(str(expr))
        if bound is None:
            upper = length.node.shape_env.bound_sympy(expr).upper
            try:
                bound = int(upper)
            except (TypeError, ValueError, OverflowError, AttributeError):
                bound = None  # unbounded (int_oo)
        if bound is None:
            raise ValueError(f"lower_associative_scans: the scan length {expr} is dynamic and "
                             f"unbounded; pass bounds={{'{expr}': M}} (or an int) or export with "
                             f"Dim(..., max=M)")
    return max(math.ceil(math.log2(bound)), 0) if bound > 1 else 0


def _hillis_steele(graph: fx.Graph, comb: ir.Combine, xs: list[fx.Node],
                   captured: list[fx.Node], dim: int, reverse: bool, levels: int):
    emit = _Emitter(graph)

    def slice_(t, start, stop):
        node = emit.call(aten.slice.Tensor, t, dim, start, stop)
        node.meta[_CLAMPED] = True
        return node

    def cat(parts):
        node = emit.call(aten.cat.default, parts, dim)
        node.meta[_SAME_SHAPE] = True
        return node

    # Reverse: flip, scan forward, flip back. In flipped order the earlier element is the
    # later one, which is the left operand either way. (A mirrored scan would slice from the
    # end, x[-k:], whose clamped length makes exporters' shape reasoning blow up.)
    y = [emit.call(aten.flip.default, t, [dim]) for t in xs] if reverse else list(xs)
    for level in range(levels):
        k = 1 << level
        head = [slice_(t, 0, k) for t in y]
        mixed = _apply(emit, comb, [slice_(t, 0, -k) for t in y],
                       [slice_(t, k, _INT_MAX) for t in y], captured)
        y = [cat([h, m]) for h, m in zip(head, mixed)]
    return [emit.call(aten.flip.default, t, [dim]) for t in y] if reverse else y


def _apply(emit: _Emitter, comb: ir.Combine, left, right, captured) -> list:
    def env(v: ir.Node):
        kind, i = v.value
        return {"l": left, "r": right, "c": captured}[kind][i]

    results = ir.evaluate(comb.outputs, env, emit)
    out = []
    for r, node, like in zip(results, comb.outputs, left):
        # A result that ignores the running values still covers every element.
        if not ir.depends_on(node, ("l", "r")):
            same = emit.call(aten.eq.Tensor, like, like)
            r = emit("where", [same, r, r])
        out.append(r)
    return out


# ---- the pass ----

def _rewrite(gm: fx.GraphModule, node: fx.Node, algorithm: str, bounds,
             renamed: dict[str, fx.Node]) -> None:
    if _is_torch_hop(node):
        combine_attr, xs, captured = node.args[0], list(node.args[1]), list(node.args[2])
        comb = _combine_from_graph(getattr(gm, combine_attr.target), len(xs))
        dim, reverse = 0, False
    else:
        program, xs, captured, dim, reverse = node.args[:5]
        xs, captured, combine_attr = list(xs), list(captured), None
        comb = ir.parse_combine(program)
    length = node.meta["val"][0].shape[dim]  # the scan's own (operands may be new nodes)
    with gm.graph.inserting_before(node):
        ys = _hillis_steele(gm.graph, comb, xs, captured, dim, reverse, _levels(length, bounds))
    for user in list(node.users):
        if user.op == "call_function" and user.target is operator.getitem:
            user.replace_all_uses_with(ys[user.args[1]])
            renamed[user.name] = ys[user.args[1]]
            gm.graph.erase_node(user)
        else:
            raise ValueError(f"lower_associative_scans: unexpected use {user} of {node}")
    gm.graph.erase_node(node)
    if combine_attr is not None and not combine_attr.users:
        gm.graph.erase_node(combine_attr)
        gm.delete_submodule(combine_attr.target)


def check_lowered(gm: fx.GraphModule) -> None:
    """RuntimeError unless `gm` is free of scans and identity pads."""
    banned = {aten.ones_like, aten.zeros_like, aten.full_like, aten.full, aten.zeros, aten.ones}
    for n in gm.graph.nodes:
        if _is_torch_hop(n) or _is_scanc_op(n):
            raise RuntimeError(f"lower_associative_scans left a scan: {n.format_node()}")
        if getattr(n.target, "overloadpacket", None) in banned:
            raise RuntimeError(f"lower_associative_scans introduced a pad: {n.format_node()}")


# Tags on the nodes the lowering creates, for _propagate_meta.
_CLAMPED = "scanc_clamped_slice"  # a slice by a constant that clamps: keep its length symbolic
_SAME_SHAPE = "scanc_same_shape"  # a level's cat: exactly the shape of the level's input


def _clamped_length(size, start: int, stop: int):
    """The length of x[start:stop] for a length `size` (an int or a SymInt), without guards:
    Max(0, S - k) for x[:-k] and x[k:], Min(k, S) for x[:k] and x[-k:]."""
    if isinstance(size, int):
        return len(range(size)[start:stop])
    import sympy

    expr = size.node.expr
    if stop == _INT_MAX:
        length = sympy.Max(0, expr - start) if start >= 0 else sympy.Min(-start, expr)
    else:
        length = sympy.Min(stop, expr) if stop >= 0 else sympy.Max(0, expr + stop)
    env = size.node.shape_env
    hint = env.size_hint(length, allow_none=True)
    return env.create_symintnode(length, hint=None if hint is None else int(hint))


def _propagate_meta(gm: fx.GraphModule) -> None:
    """Fills meta['val'] of the new nodes by running the graph on the placeholders' fake
    tensors (the exported program's symbolic sizes included)."""
    from torch._guards import detect_fake_mode
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp

    vals = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    mode = detect_fake_mode([v for v in vals if isinstance(v, torch.Tensor)])
    if mode is None:
        return
    class Propagate(FakeTensorProp):
        # torch's slice meta decides clamping from the size hint (the example length), which
        # would make a level with k > hint look empty to later passes; compute it instead.
        def run_node(self, n: fx.Node):
            if n.meta.get(_CLAMPED):
                x = n.args[0].meta["val"]
                dim, start, stop = n.args[1:4]
                shape = list(x.shape)
                shape[dim] = _clamped_length(shape[dim], start, stop)
                out = x.new_empty(shape)
            elif n.meta.get(_SAME_SHAPE):
                cut = next(p for p in n.args[0] if p.meta.get(_CLAMPED))
                like = cut.args[0].meta["val"]  # the level's input, which a part was cut from
                out = like.new_empty(like.shape)
            else:
                return super().run_node(n)
            n.meta["val"] = out
            return out

    # The program holds for every length: nothing here may add a guard.
    with mode, mode.shape_env.suppress_guards():
        Propagate(gm, mode).propagate_dont_convert_inputs(*vals)


def lower_associative_scans(program, algorithm: str = "hillis-steele",
                            bounds: int | dict[str, int] | None = None):
    """A copy of `program` (a torch.export ExportedProgram or an fx GraphModule) with every
    associative_scan (PyTorch's higher-order op or scanc's op) replaced by aten slice/cat/
    elementwise ops. bounds: the largest length of a dynamic scan, as an int for all or
    {size expression, e.g. "s27": M}; by default the exported upper bound of the size.
    ValueError for an unbounded dynamic length or a combine operation with no scalar form."""
    if algorithm not in ("hillis-steele", "auto"):
        raise ValueError(f"lower_associative_scans: algorithm={algorithm!r}; expected "
                         f"'hillis-steele' or 'auto'")
    exported = isinstance(program, torch.export.ExportedProgram)
    original = program.graph_module if exported else program
    gm = copy.deepcopy(original)
    for old, new in zip(original.graph.nodes, gm.graph.nodes):
        new.meta = dict(old.meta)  # the symbolic sizes of the exported program
    renamed: dict[str, fx.Node] = {}
    for node in list(gm.graph.nodes):
        if _is_torch_hop(node) or _is_scanc_op(node):
            _rewrite(gm, node, algorithm, bounds, renamed)
    gm.graph.lint()
    gm.recompile()
    _propagate_meta(gm)
    check_lowered(gm)
    if not exported:
        return gm
    signature = copy.deepcopy(program.graph_signature)
    for spec in signature.output_specs:
        name = getattr(spec.arg, "name", None)
        while name in renamed:  # an output that was a scan's result
            spec.arg.name = name = renamed[name].name
    return program._update(gm, signature)
