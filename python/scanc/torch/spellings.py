"""Which torch spelling means which operation inside a combine: every variant of an operation
(torch.X, torch.Tensor.X, torch._C.TensorBase.X, __X__/__rX__, torch.special.X,
torch.nn.functional.X, Python's operator module, aten overload packets, in-place X_) maps to one
entry (kind, op) that trace.py carries out. Built at import time, outside Dynamo: trace.py looks
functions up by identity while Dynamo traces it."""

from __future__ import annotations

import inspect
import operator
import types

import torch
import torch.nn.functional as F

from . import composites
from .activations import ACTIVATIONS
from .elementary import ELEMENTARY

# Every operation written as a composition of scanc's (composites.py and the modules beside it).
COMPOSITES = {**composites.COMPOSITES, **ACTIVATIONS, **ELEMENTARY}

# Every spelling of an operation maps to one entry (kind, op). Kinds: "bin" (a binary operation
# named by op, torch's type promotion applied, see _binary), "rbin" (the same, reflected),
# "fn" (a scanc function of promoted operands), "special" (_apply_special), "identity",
# "unary" (op: "neg", "not" (logical), "invert" (bitwise)), "composite" (composites.py's
# function op), "inplace" (torch.Tensor's op, its result written back into the first operand).
_BINARY = (
    "add", "sub", "mul", "truediv", "floordiv", "remainder", "fmod", "div", "pow", "lt", "le",
    "gt", "ge", "eq", "ne", "logical_and", "logical_or", "logical_xor", "bitwise_and",
    "bitwise_or", "bitwise_xor", "bitwise_left_shift", "bitwise_right_shift", "minimum",
    "maximum", "fmin", "fmax", "logaddexp")
_ALIASES = {  # torch name -> the operation it spells
    "subtract": "sub", "multiply": "mul", "true_divide": "truediv", "divide": "div",
    "floor_divide": "floordiv", "less": "lt", "less_equal": "le", "greater": "gt",
    "greater_equal": "ge", "not_equal": "ne", "float_power": "pow",
}
_DUNDERS = {  # __X__ / __rX__ of torch.Tensor -> the operation
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "truediv", "div": "truediv",
    "floordiv": "floordiv", "mod": "remainder", "pow": "pow", "and": "bitwise_and",
    "or": "bitwise_or", "xor": "bitwise_xor", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "eq": "eq", "ne": "ne", "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
}
FLOAT_FUNCTIONS = {  # torch name -> scanc function; integer operands become floats, as in torch
    "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "exp2": "exp2",
    "log2": "log2", "log10": "log10", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "tanh": "tanh", "sigmoid": "sigmoid", "expit": "sigmoid",
    "softplus": "softplus", "sin": "sin", "cos": "cos", "erf": "erf", "erfc": "erfc",
    "atan": "atan", "arctan": "atan", "atan2": "atan2", "arctan2": "atan2",
}
SAME_FUNCTIONS = {"abs": "abs", "absolute": "abs", "floor": "floor", "ceil": "ceil"}
_SPECIAL = ("square", "reciprocal", "clamp", "clip", "clamp_min", "clamp_max", "rsub", "max",
            "min", "to", "type", "float", "double", "half", "bfloat16", "int", "long", "bool",
            "where", "trunc", "fix", "zeros_like", "ones_like", "full_like", "type_as")
# The operand itself (op None: the same tensor, or a view of it) or a copy ("copy": a new
# tensor, which an in-place operation changes alone).
_IDENTITY = {"clone": "copy", "contiguous": None, "detach": None, "positive": None}
_UNARY = {"neg": "neg", "negative": "neg", "logical_not": "not", "bitwise_not": "invert"}

_OWNERS = (torch, torch.Tensor, torch._C.TensorBase, torch.special, F)


def _build_table() -> dict:
    table = {}

    def add(name, entry):
        for owner in _OWNERS:
            fn = getattr(owner, name, None)
            if fn is not None and fn not in table:
                table[fn] = entry

    for name in _BINARY:
        add(name, ("bin", name))
    for name, op in _ALIASES.items():
        add(name, ("bin", op))
    for name, op in {**FLOAT_FUNCTIONS, **SAME_FUNCTIONS}.items():
        add(name, ("fn", name))
    for name in _SPECIAL:
        add(name, ("special", name))
    for name, op in _IDENTITY.items():
        add(name, ("identity", op))
    for name, op in _UNARY.items():
        add(name, ("unary", op))
    for name in COMPOSITES:
        add(name, ("composite", name))
    # X_ of every X above that torch has in place (a.add_(b), torch.relu_(a), a.clamp_(0)).
    for name in (*_BINARY, *_ALIASES, *FLOAT_FUNCTIONS, *SAME_FUNCTIONS, *_SPECIAL, *_UNARY,
                 *COMPOSITES):
        for owner in (torch, torch.Tensor, torch._C.TensorBase, F):
            fn = getattr(owner, f"{name}_", None)
            if fn is not None and fn not in table:
                table[fn] = ("inplace", name)
    for owner in (torch.Tensor, torch._C.TensorBase):
        for name, op in _DUNDERS.items():
            for fn, kind in ((getattr(owner, f"__{name}__", None), "bin"),
                             (getattr(owner, f"__r{name}__", None), "rbin")):
                if fn is not None and fn not in table:
                    table[fn] = (kind, op)
        for name, entry in (("__neg__", ("unary", "neg")), ("__invert__", ("unary", "invert")),
                            ("__abs__", ("fn", "abs"))):
            fn = getattr(owner, name, None)
            if fn is not None:
                table.setdefault(fn, entry)
    # Strict torch.export hands Python's operators over as they are.
    for name, entry in (("add", ("bin", "add")), ("sub", ("bin", "sub")), ("mul", ("bin", "mul")),
                        ("truediv", ("bin", "truediv")), ("floordiv", ("bin", "floordiv")),
                        ("mod", ("bin", "remainder")), ("pow", ("bin", "pow")),
                        ("and_", ("bin", "bitwise_and")), ("or_", ("bin", "bitwise_or")),
                        ("xor", ("bin", "bitwise_xor")), ("lshift", ("bin", "bitwise_left_shift")),
                        ("rshift", ("bin", "bitwise_right_shift")), ("lt", ("bin", "lt")),
                        ("le", ("bin", "le")), ("gt", ("bin", "gt")), ("ge", ("bin", "ge")),
                        ("eq", ("bin", "eq")), ("ne", ("bin", "ne")), ("neg", ("unary", "neg")),
                        ("invert", ("unary", "invert")), ("abs", ("fn", "abs")),
                        ("pos", ("identity", None))):
        table.setdefault(getattr(operator, name), entry)
    # x.where(condition, y) is torch.where(condition, x, y): the method's operand comes first.
    for owner in (torch.Tensor, torch._C.TensorBase):
        table[owner.where] = ("special", "where_method")
    # Dynamo may hand over the undecorated function behind a Python-level Tensor method.
    for fn, entry in list(table.items()):
        while getattr(fn, "__wrapped__", None) is not None:
            fn = fn.__wrapped__
            table.setdefault(fn, entry)
    return table


def _build_aten_table() -> dict:
    """The same entries keyed by aten overload packets, for combine graphs of aten ops (the
    subgraph PyTorch's own associative_scan carries in an exported program)."""
    aten, table = torch.ops.aten, {}
    names = ([(n, ("bin", n)) for n in _BINARY] + [(n, ("bin", op)) for n, op in _ALIASES.items()]
             + [(n, ("fn", n)) for n in (*FLOAT_FUNCTIONS, *SAME_FUNCTIONS)]
             + [(n, ("special", n)) for n in _SPECIAL] + [(n, ("identity", op)) for n, op in _IDENTITY.items()]
             + [(n, ("unary", op)) for n, op in _UNARY.items()]
             + [(n, ("composite", n)) for n in COMPOSITES]
             + [("alias", ("identity", None)), ("view_as", ("identity", None)),
                ("special_xlog1py", ("composite", "xlog1py")),
                ("special_logit", ("composite", "logit")), ("special_sinc", ("composite", "sinc")),
                ("special_round", ("composite", "round")),
                ("log_sigmoid", ("composite", "logsigmoid")),
                ("_to_copy", ("special", "to"))]
             + [(f"__{n}__", ("bin", op)) for n, op in _DUNDERS.items()])
    for name, entry in names:
        packet = getattr(aten, name, None)
        if packet is not None:
            table.setdefault(packet, entry)
    table[torch.ops.prims.convert_element_type] = ("special", "to")
    return table


def _inplace_positions() -> list:
    """(function, index) of torch.nn.functional's composites whose `inplace` parameter may come
    by position (F.elu(x, 1.0, True)); Dynamo hands it over so even where the call named it."""
    positions = []
    for name in COMPOSITES:
        fn = getattr(F, name, None)
        if isinstance(fn, types.FunctionType):
            params = list(inspect.signature(fn).parameters)
            if "inplace" in params:
                positions.append((fn, params.index("inplace")))
    return positions


TABLE = _build_table()
INPLACE_AT = _inplace_positions()
ATEN_TABLE = _build_aten_table()
# Python-level functions (torch/_tensor.py's __rdiv__, ...) are looked up by identity in a list:
# under Dynamo a dict lookup keyed by one of them fails its own guard.
PY_TABLE = [(fn, entry) for fn, entry in TABLE.items() if isinstance(fn, types.FunctionType)]
for _fn, _ in PY_TABLE:
    del TABLE[_fn]
# Casting methods: target dtype per method name.
CAST_METHODS = {"float": torch.float32, "double": torch.float64, "half": torch.float16,
                "bfloat16": torch.bfloat16, "int": torch.int32, "long": torch.int64,
                "bool": torch.bool}
# Parameter names of the operations that take keywords in place of positions.
PARAMS = {"where": ("condition", "input", "other"), "where_method": ("input", "condition", "other"), "pow": ("input", "exponent"),
          "clamp": ("input", "min", "max"), "clip": ("input", "min", "max"),
          "clamp_min": ("input", "min"), "clamp_max": ("input", "max"),
          "softplus": ("input", "beta", "threshold"), "to": ("input", "dtype"),
          "type": ("input", "dtype"), "full_like": ("input", "fill_value"),
          "type_as": ("input", "other")}
OPTIONS = ("alpha", "rounding_mode", "beta", "threshold", "dtype", "min", "max",
           # what an aten _to_copy or a torch.X_like may carry besides the dtype; nothing for
           # a scalar
           "layout", "device", "pin_memory", "memory_format", "non_blocking", "requires_grad")
