"""lower_associative_scans: scans in an exported program rewritten as slice/cat/elementwise aten
ops, for ONNX, TensorRT and other runtimes that have no scan (DESIGN §6).

Replaced: PyTorch's higher-order op `torch.ops.higher_order.associative_scan(combine_graph, xs,
additional_inputs)` (what associative_scan's pointwise mode captures; it always scans dim 0,
forward; its combine is an aten graph, translated here into scanc's expression IR) and scanc's
`scanc::associative_scan` (the combine text travels in the op). Each becomes Hillis-Steele or
work-efficient odd/even (lower_algorithms.py; "auto": work-efficient for static lengths above
64). No identity element and no padding (no ones_like/zeros_like). A dynamic length lowers with
Hillis-Steele up to its bound (`bounds`, else the exported range constraint): slices clamp, so
one graph serves every S <= M.
"""

from __future__ import annotations

import contextlib
import copy
import operator

import torch
import torch.fx as fx

from . import ir, programs
from .lower_algorithms import ALGORITHMS, CLAMPED, INT_MAX, SAME_SHAPE, lower_scan
from .trace import trace_graph

aten = torch.ops.aten

def _is_scanc_op(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.scanc.associative_scan.default


def _is_torch_hop(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.higher_order.associative_scan


# ---- PyTorch's combine graph -> ir ----

def _combine_from_graph(gm: fx.GraphModule, num_leaves: int) -> ir.Combine:
    """PyTorch's combine graph (aten ops on left leaves, right leaves, captured values) read by
    the tracer, so that its ops mean what they mean in torch (promotion, true division, ...)."""
    dtypes = [n.meta["val"].dtype for n in gm.graph.nodes if n.op == "placeholder"]
    leaves, captured = dtypes[:num_leaves], dtypes[2 * num_leaves:]
    return ir.parse_combine(trace_graph(gm, leaves, captured))


# ---- the pass ----

def _rewrite(gm: fx.GraphModule, node: fx.Node, algorithm: str, bounds,
             renamed: dict[str, fx.Node]) -> str | None:
    """Replaces the scan `node` by its lowered ops; returns its length's size expression where
    the length is dynamic."""
    if _is_torch_hop(node):
        combine_attr, xs, captured = node.args[0], list(node.args[1]), list(node.args[2])
        comb = _combine_from_graph(getattr(gm, combine_attr.target), len(xs))
        dim, reverse = 0, False
    else:
        program, xs, given, dim, reverse = node.args[:5]
        xs, captured, combine_attr = list(xs), list(given), None
        if programs.number_captures(program):
            program, captured = _pinned(program, xs, captured, dim, reverse)
        comb = ir.parse_combine(program)
    length = node.meta["val"][0].shape[dim]  # the scan's own (operands may be new nodes)
    dynamic = None if isinstance(length, int) else str(length.node.expr)
    with gm.graph.inserting_before(node):
        ys = lower_scan(gm.graph, comb, xs, captured, dim, reverse, length, algorithm, bounds)
    for user in list(node.users):
        if user.op == "call_function" and user.target is operator.getitem:
            # The lowered result stands for the scan's: a later scan's lowering reads its value
            # (_pinned checks a combine on its operands' fake values).
            if "val" in user.meta:
                ys[user.args[1]].meta.setdefault("val", user.meta["val"])
            user.replace_all_uses_with(ys[user.args[1]])
            renamed[user.name] = ys[user.args[1]]
            gm.graph.erase_node(user)
        else:
            raise ValueError(f"lower_associative_scans: unexpected use {user} of {node}")
    gm.graph.erase_node(node)
    if combine_attr is not None and not combine_attr.users:
        gm.graph.erase_node(combine_attr)
        gm.delete_submodule(combine_attr.target)
    if combine_attr is None:
        _erase_unused_numbers(gm.graph, given)
    return dynamic


def _erase_unused_numbers(graph: fx.Graph, nodes) -> None:
    """Erases the nodes of captured numbers that became literals and are used no more: the
    aten.scalar_tensor and the reshapes over it that _number walked (pure ops, nothing else)."""
    for node in nodes:
        while (isinstance(node, fx.Node) and not node.users and node.op == "call_function"
               and (node.target in _CARRY_VALUE or node.target in _CONVERSIONS
                    or node.target is aten.scalar_tensor.default)):
            source = node.args[0]
            graph.erase_node(node)
            node = source


_CARRY_VALUE = {aten.reshape.default, aten.view.default, aten.expand.default,
                aten.unsqueeze.default, aten.clone.default}
_CONVERSIONS = {aten._to_copy.default, aten.to.dtype}


def _number(node):
    """The zero-dim tensor a captured number's node computes, where the graph holds its value
    (aten.scalar_tensor of a constant, reshaped), else None (a symbolic number)."""
    while isinstance(node, fx.Node) and node.op == "call_function" and node.target in _CARRY_VALUE:
        node = node.args[0]
    if not isinstance(node, fx.Node):
        return None
    if node.target in _CONVERSIONS:  # an integer number, wrapped to its dtype (trace.py)
        number = _number(node.args[0])
        dtype = node.kwargs.get("dtype", node.args[1] if len(node.args) > 1 else None)
        return None if number is None or not isinstance(dtype, torch.dtype) else number.to(dtype)
    if node.target is aten.scalar_tensor.default and isinstance(node.args[0], (bool, int, float)):
        return torch.scalar_tensor(node.args[0], dtype=node.kwargs.get("dtype"))
    return None


def _pinned(program: str, xs: list[fx.Node], captured: list[fx.Node], dim: int, reverse: bool):
    """A scanc op's combine with its captured numbers written as literals where the graph holds
    their values, and the captured nodes that remain, after the associativity check the op's
    fake implementation leaves to where the numbers are known (op.py): a combine with a number
    the graph does not hold (symbolic) must be associative for every value."""
    numbers = {k: _number(captured[k]) for k in programs.number_captures(program)}
    if all(v is not None for v in numbers.values()):
        program, captured = programs.pin_numbers(
            program, [numbers.get(k, c) for k, c in enumerate(captured)])
    programs.forward(program, [x.meta["val"] for x in xs], [c.meta["val"] for c in captured],
                     dim, reverse)
    return program, captured


def check_lowered(gm: fx.GraphModule, given: frozenset[str] = frozenset()) -> None:
    """RuntimeError unless `gm` is free of scans and of identity pads other than the program's
    own (the nodes named `given`: a combine's zeros_like that torch's export inlined)."""
    banned = {aten.ones_like, aten.zeros_like, aten.full_like, aten.full, aten.zeros, aten.ones}
    for n in gm.graph.nodes:
        if _is_torch_hop(n) or _is_scanc_op(n):
            raise RuntimeError(f"lower_associative_scans left a scan: {n.format_node()}")
        if getattr(n.target, "overloadpacket", None) in banned and n.name not in given:
            raise RuntimeError(f"lower_associative_scans introduced a pad: {n.format_node()}")


def _clamped_length(size, start: int, stop: int):
    """The length of x[start:stop] for a length `size` (an int or a SymInt), without guards:
    Max(0, S - k) for x[:-k] and x[k:], Min(k, S) for x[:k] and x[-k:]."""
    if isinstance(size, int):
        return len(range(size)[start:stop])
    import sympy

    expr = size.node.expr
    if stop == INT_MAX:
        length = sympy.Max(0, expr - start) if start >= 0 else sympy.Min(-start, expr)
    else:
        length = sympy.Min(stop, expr) if stop >= 0 else sympy.Max(0, expr + stop)
    env = size.node.shape_env
    if hasattr(env, "has_guarding_hint"):  # torch 2.13 (size_hint, deprecated there, before)
        hint = env.guarding_hint_or_throw(length) if env.has_guarding_hint(length) else None
    else:
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
            if n.meta.get(CLAMPED):
                x = n.args[0].meta["val"]
                dim, start, stop = n.args[1:4]
                shape = list(x.shape)
                shape[dim] = _clamped_length(shape[dim], start, stop)
                out = x.new_empty(shape)
            elif n.meta.get(SAME_SHAPE):
                cut = next(p for p in n.args[0] if p.meta.get(CLAMPED))
                like = cut.args[0].meta["val"]  # the level's input, which a part was cut from
                out = like.new_empty(like.shape)
            else:
                return super().run_node(n)
            n.meta["val"] = out
            return out

    # The program holds for every length: nothing here may add a guard (a graph traced with
    # real sizes has no shape environment, so nothing to guard).
    no_guards = mode.shape_env.suppress_guards() if mode.shape_env else contextlib.nullcontext()
    with mode, no_guards:
        Propagate(gm, mode).propagate_dont_convert_inputs(*vals)


def _check_bounds(bounds) -> None:
    """TypeError or ValueError unless `bounds` is None, a length of at least 1, or such lengths
    by size expression."""
    def check(value, what: str) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"lower_associative_scans: {what} must be an int, got {value!r}")
        if value < 1:
            raise ValueError(f"lower_associative_scans: {what} must be 1 or more, got {value}")

    if bounds is None:
        return
    if isinstance(bounds, dict):
        for name, value in bounds.items():
            check(value, f"bounds[{name!r}]")
    else:
        check(bounds, "bounds (an int for every dynamic length, or a dict by size)")


def lower_associative_scans(program, algorithm: str = "auto",
                            bounds: int | dict[str, int] | None = None):
    """A copy of `program` (a torch.export ExportedProgram or an fx GraphModule) with every
    associative_scan (PyTorch's higher-order op or scanc's op) replaced by aten slice/cat/
    elementwise ops. bounds: the largest length of a dynamic scan, as an int for all or
    {size expression, e.g. "s27": M}; by default the exported upper bound of the size.
    ValueError for an unbounded dynamic length or a combine operation with no scalar form."""
    if algorithm not in ALGORITHMS:
        raise ValueError(f"lower_associative_scans: algorithm={algorithm!r}; expected one of "
                         f"{', '.join(repr(a) for a in ALGORITHMS)}")
    _check_bounds(bounds)
    exported = isinstance(program, torch.export.ExportedProgram)
    original = program.graph_module if exported else program
    gm = copy.deepcopy(original)
    for old, new in zip(original.graph.nodes, gm.graph.nodes):
        new.meta = dict(old.meta)  # the symbolic sizes of the exported program
    renamed: dict[str, fx.Node] = {}
    lengths = set()
    for node in list(gm.graph.nodes):
        if _is_torch_hop(node) or _is_scanc_op(node):
            lengths.add(_rewrite(gm, node, algorithm, bounds, renamed))
    unknown = sorted(set(bounds) - lengths) if isinstance(bounds, dict) else []
    if unknown:
        named = ", ".join(sorted(n for n in lengths if n is not None)) or "none"
        raise ValueError(f"lower_associative_scans: bounds names {', '.join(map(repr, unknown))}, "
                         f"which is no dynamic scan length of the program (its dynamic scan "
                         f"lengths: {named})")
    gm.graph.lint()
    gm.recompile()
    _propagate_meta(gm)
    check_lowered(gm, frozenset(n.name for n in original.graph.nodes))
    if not exported:
        return gm
    signature = copy.deepcopy(program.graph_signature)
    for spec in signature.output_specs:
        name = getattr(spec.arg, "name", None)
        while name in renamed:  # an output that was a scan's result
            spec.arg.name = name = renamed[name].name
    return program._update(gm, signature)
