"""Tracing a combine written with ordinary torch operations into .scan combine text.

`trace_combine(combine_fn, spec, n)` calls combine_fn once on `Tracer` objects (pytrees shaped
like the leaves) and returns the combine's text plus the tensors it met (closure tensors,
tensors computed from them), which become the scan's captured values in order of first use.
Python numbers become literals.

Written to run inside Dynamo (torch.compile, torch.export) as well as in eager Python, so it
uses only what Dynamo can trace and fold to constants: plain classes, lists, dicts keyed by
function objects built at import time, f-strings. In particular it never reads
`func.__name__` or calls `str` methods on a function while tracing; Dynamo routes `b * tau` to
`__torch_function__` as `torch._C.TensorBase.mul` rather than to the dunder, so every variant of
an operation (torch.X, torch.Tensor.X, torch._C.TensorBase.X, __X__/__rX__, torch.special.X,
torch.nn.functional.X) maps through one table.

The text is one line: `combine combine_fn(l0, .. | r0, .. [; c0, ..]) { S; S; ..; return .. }`
with one operation per statement S (`tK = a OP b`, `tK = - a`, `tK = fn(a, ..)`,
`tK = f32(a)`). One line because it travels as an argument of scanc's op, and Inductor's Triton
codegen copies every op node of a fused kernel's origins, arguments and all, into a one-line `#`
comment of the wrapper it generates: a newline there ends the comment and the rest of the text
becomes (mis-indented) code. ir.combine_text turns it into .scan text; ir.parse_combine reads
it.
"""

from __future__ import annotations

import types

import torch
import torch.nn.functional as F

from . import pytrees

DTYPE_NAMES = {  # torch dtype -> scanc dtype name
    torch.bool: "bool", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32",
    torch.int64: "i64", torch.uint8: "u8", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.float32: "f32", torch.float64: "f64",
}

# kind: "infix" (a OP b), "rinfix" (reflected: b OP a), "prefix", "fn" (fn(args)), "cast",
# "identity", "special" (handled in _apply_special).
_INFIX = {
    "add": "+", "sub": "-", "subtract": "-", "mul": "*", "multiply": "*", "div": "/",
    "true_divide": "/", "divide": "/", "remainder": "%", "fmod": "%", "lt": "<", "less": "<",
    "le": "<=", "less_equal": "<=", "gt": ">", "greater": ">", "ge": ">=",
    "greater_equal": ">=", "eq": "==", "ne": "!=", "not_equal": "!=", "logical_and": "and",
    "logical_or": "or", "bitwise_and": "&", "bitwise_or": "|", "bitwise_xor": "^",
}
_DUNDER_INFIX = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "mod": "%", "and": "&", "or": "|",
    "xor": "^", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!=",
}
_FUNCTIONS = {
    "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "abs": "abs", "absolute": "abs", "tanh": "tanh", "sigmoid": "sigmoid",
    "expit": "sigmoid", "softplus": "softplus", "sin": "sin", "cos": "cos", "floor": "floor",
    "ceil": "ceil", "pow": "pow", "float_power": "pow", "minimum": "min", "maximum": "max",
    "fmin": "min", "fmax": "max", "logaddexp": "logaddexp", "where": "where",
}
_SPECIAL = ("square", "reciprocal", "clamp", "clip", "clamp_min", "clamp_max", "rsub", "max",
            "min", "to", "type", "float", "double", "half", "bfloat16", "int", "long", "bool")
_IDENTITY = ("clone", "contiguous", "detach", "positive")

_OWNERS = (torch, torch.Tensor, torch._C.TensorBase, torch.special, F)


def _build_table() -> dict:
    table = {}

    def add(name, entry):
        for owner in _OWNERS:
            fn = getattr(owner, name, None)
            if fn is not None and fn not in table:
                table[fn] = entry

    for name, op in _INFIX.items():
        add(name, ("infix", op))
    for name, op in _FUNCTIONS.items():
        add(name, ("fn", op))
    for name in _SPECIAL:
        add(name, ("special", name))
    for name in _IDENTITY:
        add(name, ("identity", None))
    add("neg", ("prefix", "-"))
    add("negative", ("prefix", "-"))
    add("logical_not", ("prefix", "not"))
    for owner in (torch.Tensor, torch._C.TensorBase):
        for name, op in _DUNDER_INFIX.items():
            for fn, kind in ((getattr(owner, f"__{name}__", None), "infix"),
                             (getattr(owner, f"__r{name}__", None), "rinfix")):
                if fn is not None and fn not in table:
                    table[fn] = (kind, op)
        for name, entry in (("__neg__", ("prefix", "-")), ("__invert__", ("prefix", "not")),
                            ("__abs__", ("fn", "abs")), ("__pow__", ("fn", "pow")),
                            ("__rpow__", ("rfn", "pow")), ("__rdiv__", ("rinfix", "/")),
                            ("__div__", ("infix", "/"))):
            fn = getattr(owner, name, None)
            if fn is not None:
                table.setdefault(fn, entry)
    # Dynamo may hand over the undecorated function behind a Python-level Tensor method.
    for fn, entry in list(table.items()):
        while getattr(fn, "__wrapped__", None) is not None:
            fn = fn.__wrapped__
            table.setdefault(fn, entry)
    return table


_TABLE = _build_table()
# Python-level functions (torch/_tensor.py's __rdiv__, ...) are looked up by identity in a list:
# under Dynamo a dict lookup keyed by one of them fails its own guard.
_PY_TABLE = [(fn, entry) for fn, entry in _TABLE.items() if isinstance(fn, types.FunctionType)]
for _fn, _ in _PY_TABLE:
    del _TABLE[_fn]
# Casting methods: target dtype per method name.
_CAST_METHODS = {"float": "f32", "double": "f64", "half": "f16", "bfloat16": "bf16",
                 "int": "i32", "long": "i64", "bool": "bool"}


class _Recorder:
    """The statements and captured tensors of one trace."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.captured: list[torch.Tensor] = []


class Tracer:
    """A stand-in for one scalar of a leaf while tracing; records every operation on it."""

    def __init__(self, rec: _Recorder, name: str) -> None:
        self._rec = rec
        self._name = name

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _apply(func, args, kwargs or {})

    def __add__(self, o): return _infix(self, "+", o)
    def __radd__(self, o): return _infix(o, "+", self)
    def __sub__(self, o): return _infix(self, "-", o)
    def __rsub__(self, o): return _infix(o, "-", self)
    def __mul__(self, o): return _infix(self, "*", o)
    def __rmul__(self, o): return _infix(o, "*", self)
    def __truediv__(self, o): return _infix(self, "/", o)
    def __rtruediv__(self, o): return _infix(o, "/", self)
    def __mod__(self, o): return _infix(self, "%", o)
    def __rmod__(self, o): return _infix(o, "%", self)
    def __and__(self, o): return _infix(self, "&", o)
    def __rand__(self, o): return _infix(o, "&", self)
    def __or__(self, o): return _infix(self, "|", o)
    def __ror__(self, o): return _infix(o, "|", self)
    def __xor__(self, o): return _infix(self, "^", o)
    def __rxor__(self, o): return _infix(o, "^", self)
    def __lt__(self, o): return _infix(self, "<", o)
    def __le__(self, o): return _infix(self, "<=", o)
    def __gt__(self, o): return _infix(self, ">", o)
    def __ge__(self, o): return _infix(self, ">=", o)
    def __eq__(self, o): return _infix(self, "==", o)  # type: ignore[override]
    def __ne__(self, o): return _infix(self, "!=", o)  # type: ignore[override]
    def __neg__(self): return _emit(self._rec, f"- {self._name}")
    def __pos__(self): return self
    def __invert__(self): return _emit(self._rec, f"not {self._name}")
    def __abs__(self): return _call(self._rec, "abs", [self])
    def __pow__(self, o): return _call(self._rec, "pow", [self, o])
    def __rpow__(self, o): return _call(self._rec, "pow", [o, self])

    __hash__ = object.__hash__

    def __bool__(self):
        raise ValueError("associative_scan: a combine cannot branch on the values of its "
                         "operands (Python `if`/`and`/`or`); use torch.where")

    def __getitem__(self, index):
        raise ValueError("associative_scan: indexing is not supported inside a combine; "
                         "it is a scalar function (pass the parts as separate leaves)")

    def __getattr__(self, name):
        method = getattr(torch.Tensor, name, None)
        if method is None or name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: _apply(method, (self,) + args, kwargs)


def _find_recorder(args) -> _Recorder:
    for a in args:
        if isinstance(a, Tracer):
            return a._rec
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tracer):
                    return b._rec
    raise ValueError("associative_scan: internal error: no traced operand")


def _operand(rec: _Recorder, v) -> str:
    if isinstance(v, Tracer):
        return v._name
    if isinstance(v, torch.Tensor):
        # One captured value per tensor: the associativity check must see them equal.
        for i, c in enumerate(rec.captured):
            if c is v:
                return f"c{i}"
        rec.captured.append(v)
        return f"c{len(rec.captured) - 1}"
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        text = repr(v)
        if v < 0:
            return f"({text})"
        return text
    raise ValueError(f"associative_scan: a combine operand must be a tensor or a number, "
                     f"got {type(v)}")


def _emit(rec: _Recorder, expr: str) -> Tracer:
    name = f"t{len(rec.lines)}"
    rec.lines.append(f"{name} = {expr}")
    return Tracer(rec, name)


def _infix(a, op: str, b) -> Tracer:
    rec = _find_recorder((a, b))
    return _emit(rec, f"{_operand(rec, a)} {op} {_operand(rec, b)}")


def _call(rec: _Recorder, fn: str, args) -> Tracer:
    parts = [_operand(rec, a) for a in args]
    return _emit(rec, f"{fn}({', '.join(parts)})")


def _cast(rec: _Recorder, x, dtype) -> Tracer:
    name = DTYPE_NAMES.get(dtype)
    if name is None:
        raise ValueError(f"associative_scan: casting to {dtype} inside a combine is not "
                         f"supported")
    return _emit(rec, f"{name}({_operand(rec, x)})")


def _apply(func, args, kwargs) -> Tracer:
    entry = None
    for fn, e in _PY_TABLE:
        if fn is func:
            entry = e
    if entry is None:
        entry = _TABLE.get(func)
    if entry is None:
        raise ValueError(f"associative_scan: the operation `{_describe(func)}` is not "
                         f"supported inside a combine (supported: elementwise arithmetic, "
                         f"comparisons, where, min/max, exp/log family, casts)")
    rec = _find_recorder(args)
    kind, op = entry
    if kind == "special":
        return _apply_special(rec, op, args, kwargs)
    if kind == "identity":
        return args[0]
    if kind == "prefix":
        return _emit(rec, f"{op} {_operand(rec, args[0])}")
    if kind == "infix":
        a, b = args[0], args[1] if len(args) > 1 else kwargs["other"]
        alpha = kwargs.get("alpha", 1)
        if len(args) > 2:
            alpha = args[2]
        if alpha != 1:
            b = _infix(b, "*", alpha)
        return _infix(a, op, b)
    if kind == "rinfix":
        return _infix(args[1], op, args[0])
    if kind == "rfn":
        return _call(rec, op, [args[1], args[0]])
    if op == "softplus" and (kwargs.get("beta", 1) != 1 or len(args) > 1):
        raise ValueError("associative_scan: softplus inside a combine supports beta=1 only")
    return _call(rec, op, list(args) + list(kwargs.values()))


def _apply_special(rec: _Recorder, name: str, args, kwargs) -> Tracer:
    x = args[0]
    if name == "square":
        return _infix(x, "*", x)
    if name == "reciprocal":
        return _infix(1.0, "/", x)
    if name == "rsub":
        return _infix(args[1], "-", x)
    if name in ("clamp", "clip", "clamp_min", "clamp_max"):
        lo = args[1] if len(args) > 1 else kwargs.get("min")
        hi = args[2] if len(args) > 2 else kwargs.get("max")
        if name == "clamp_max":
            lo, hi = None, lo
        if lo is not None:
            x = _call(rec, "max", [x, lo])
        if hi is not None:
            x = _call(rec, "min", [x, hi])
        return x
    if name in ("max", "min"):
        other = args[1] if len(args) > 1 else kwargs.get("other")
        if other is None or not isinstance(other, (Tracer, torch.Tensor)):
            raise ValueError(f"associative_scan: torch.{name} inside a combine needs two "
                             f"operands (elementwise); reductions are not supported")
        return _call(rec, name, [x, other])
    if name in ("to", "type"):
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        if not isinstance(dtype, torch.dtype):
            raise ValueError("associative_scan: .to() inside a combine takes a dtype only")
        return _cast(rec, x, dtype)
    return _emit(rec, f"{_CAST_METHODS[name]}({_operand(rec, x)})")


def _describe(func) -> str:
    # Only reached on the error path, in eager Python.
    owner = getattr(func, "__module__", None) or getattr(func, "__objclass__", None)
    name = getattr(func, "__name__", None) or repr(func)
    return f"{owner}.{name}" if isinstance(owner, str) and owner else str(name)


def trace_combine(combine_fn, spec, num_leaves: int) -> tuple[str, list[torch.Tensor]]:
    """combine_fn's text and captured tensors. ValueError when it returns a different number
    or structure of leaves, or uses an operation scanc lacks (the message names it)."""
    rec = _Recorder()
    left = [Tracer(rec, f"l{i}") for i in range(num_leaves)]
    right = [Tracer(rec, f"r{i}") for i in range(num_leaves)]
    out = combine_fn(pytrees.unflatten(left, spec), pytrees.unflatten(right, spec))
    out_leaves, out_spec = pytrees.flatten(out, (Tracer,))
    if len(out_leaves) != num_leaves:
        raise ValueError(f"associative_scan: combine_fn returned {len(out_leaves)} leaves for "
                         f"{num_leaves} inputs; it must return the same pytree structure as xs")
    if out_spec != spec:
        raise ValueError(f"associative_scan: combine_fn returned a pytree of structure "
                         f"{out_spec}, but xs has {spec}")
    results = [_operand(rec, v) for v in out_leaves]
    lnames = ", ".join([f"l{i}" for i in range(num_leaves)])
    rnames = ", ".join([f"r{i}" for i in range(num_leaves)])
    cnames = ", ".join([f"c{i}" for i in range(len(rec.captured))])
    tail = f"; {cnames}" if rec.captured else ""
    body = "; ".join(rec.lines + [f"return {', '.join(results)}"])
    text = f"combine combine_fn({lnames} | {rnames}{tail}) {{ {body} }}"
    return text, rec.captured
