"""Tracing a combine written with ordinary torch operations into .scan combine text.

`trace_combine(combine_fn, spec, dtypes)` calls combine_fn once on `Tracer` objects (pytrees
shaped like the leaves, each knowing its leaf's dtype) and returns the combine's text plus the
tensors it met (closure tensors, tensors computed from them), which become the scan's captured
values in order of first use. Python numbers become literals. Operations follow torch's type
promotion and meaning (`/` of integers is true division, `%` rounds toward minus infinity,
fmax ignores NaN, ...): scanc promotes nothing and its `/` and `%` truncate, so the text
spells out the casts and the corrections.

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

import math
import struct

import torch

from . import pytrees
from .activations import softplus as _softplus_scaled
from .composites import _FLOATS, _LARGEST, _NARROW  # dtype facts defined once
from .dtypes import _CAN_CAST, _INT_RANGE, DTYPE_NAMES, _join, _promote
from .spellings import (ATEN_TABLE, CAST_METHODS, COMPOSITES, FLOAT_FUNCTIONS, INPLACE_AT,
                        OPTIONS, PARAMS, PY_TABLE, SAME_FUNCTIONS, TABLE)

# Tensor attributes that are data, not methods: only dtype has a meaning for a traced scalar.
_TENSOR_DATA = frozenset(n for n in dir(torch.Tensor)
                         if not n.startswith("_") and not callable(getattr(torch.Tensor, n, None)))


class _Recorder:
    """The statements and captured tensors of one trace."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.captured: list[torch.Tensor] = []
        self.numbers: list[tuple] = []  # (number, its zero-dim tensor): numbers captured
        # > 0 inside a torch kernel's formula on f16 or bf16 operands (composites._in_f32),
        # which torch computes in f32: numbers compared there are not rounded to the dtype.
        self.opmath = 0


class Tracer:
    """A stand-in for one scalar of a leaf while tracing; records every operation on it and
    knows its dtype, so that operations follow torch's type promotion (scanc has none: the
    text gets explicit casts)."""

    def __init__(self, rec: _Recorder, name: str, dtype: torch.dtype) -> None:
        self._rec = rec
        self._name = name
        self._dtype = dtype

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return _apply(func, args, kwargs or {})

    def __add__(self, o): return _binary("add", self, o)
    def __radd__(self, o): return _binary("add", o, self)
    def __sub__(self, o): return _binary("sub", self, o)
    def __rsub__(self, o): return _binary("sub", o, self)
    def __mul__(self, o): return _binary("mul", self, o)
    def __rmul__(self, o): return _binary("mul", o, self)
    def __truediv__(self, o): return _binary("truediv", self, o)
    def __rtruediv__(self, o): return _binary("truediv", o, self)
    def __floordiv__(self, o): return _binary("floordiv", self, o)
    def __rfloordiv__(self, o): return _binary("floordiv", o, self)
    def __mod__(self, o): return _binary("remainder", self, o)
    def __rmod__(self, o): return _binary("remainder", o, self)
    def __pow__(self, o): return _binary("pow", self, o)
    def __rpow__(self, o): return _binary("pow", o, self)
    def __and__(self, o): return _binary("bitwise_and", self, o)
    def __rand__(self, o): return _binary("bitwise_and", o, self)
    def __or__(self, o): return _binary("bitwise_or", self, o)
    def __ror__(self, o): return _binary("bitwise_or", o, self)
    def __xor__(self, o): return _binary("bitwise_xor", self, o)
    def __rxor__(self, o): return _binary("bitwise_xor", o, self)
    def __lshift__(self, o): return _binary("bitwise_left_shift", self, o)
    def __rlshift__(self, o): return _binary("bitwise_left_shift", o, self)
    def __rshift__(self, o): return _binary("bitwise_right_shift", self, o)
    def __rrshift__(self, o): return _binary("bitwise_right_shift", o, self)
    def __lt__(self, o): return _binary("lt", self, o)
    def __le__(self, o): return _binary("le", self, o)
    def __gt__(self, o): return _binary("gt", self, o)
    def __ge__(self, o): return _binary("ge", self, o)
    def __eq__(self, o): return _binary("eq", self, o)  # type: ignore[override]
    def __ne__(self, o): return _binary("ne", self, o)  # type: ignore[override]
    # In place, as torch's: the operand takes the result (cast back to its dtype), and so does
    # every name bound to it.
    def __iadd__(self, o): return _assign(self, _binary("add", self, o))
    def __isub__(self, o): return _assign(self, _binary("sub", self, o))
    def __imul__(self, o): return _assign(self, _binary("mul", self, o))
    def __itruediv__(self, o): return _assign(self, _binary("truediv", self, o))
    def __ifloordiv__(self, o): return _assign(self, _binary("floordiv", self, o))
    def __imod__(self, o): return _assign(self, _binary("remainder", self, o))
    def __ipow__(self, o): return _assign(self, _binary("pow", self, o))
    def __iand__(self, o): return _assign(self, _binary("bitwise_and", self, o))
    def __ior__(self, o): return _assign(self, _binary("bitwise_or", self, o))
    def __ixor__(self, o): return _assign(self, _binary("bitwise_xor", self, o))
    def __ilshift__(self, o): return _assign(self, _binary("bitwise_left_shift", self, o))
    def __irshift__(self, o): return _assign(self, _binary("bitwise_right_shift", self, o))
    def __neg__(self): return _unary("neg", self)
    def __pos__(self): return self
    def __invert__(self): return _unary("invert", self)
    def __abs__(self): return _function("abs", [self])

    __hash__ = object.__hash__

    def __bool__(self):
        raise ValueError("associative_scan: a combine cannot branch on the values of its "
                         "operands (Python `if`/`and`/`or`); use torch.where")

    def __getitem__(self, index):
        raise ValueError("associative_scan: indexing is not supported inside a combine; "
                         "it is a scalar function (pass the parts as separate leaves)")

    def __matmul__(self, o):
        raise ValueError("associative_scan: `@` is not supported inside a combine; it is a "
                         "scalar function (write the products out, one leaf per entry)")

    __rmatmul__ = __matmul__

    def __len__(self):
        raise ValueError("associative_scan: an operand inside a combine is one scalar of its "
                         "leaf: it has no len() (pass the parts as separate leaves)")

    def _to_python_number(self, *_):
        raise ValueError("associative_scan: a combine cannot turn its operands into Python "
                         "numbers (float(), int(), round(), math.*); use torch's functions "
                         "(torch.exp, torch.sqrt, torch.floor, ...)")

    __float__ = __int__ = __index__ = __complex__ = _to_python_number
    __round__ = __trunc__ = __floor__ = __ceil__ = _to_python_number

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        # A NumPy scalar meets a Tracer through its operator's ufunc: np.float32(2) * a.
        operator = _NUMPY_OPERATORS.get(ufunc.__name__)
        scalars = all(isinstance(x, Tracer) or getattr(x, "ndim", None) == 0 for x in inputs)
        if method == "__call__" and operator and len(inputs) == 2 and scalars and not kwargs:
            return _binary(operator, *inputs)
        return _refuse_numpy(ufunc.__name__)

    def __array_function__(self, func, types, args, kwargs):
        return _refuse_numpy(func.__name__)

    def __array__(self, *_, **__):
        return _refuse_numpy("asarray")

    @property
    def dtype(self) -> torch.dtype:
        return self._dtype

    def is_floating_point(self) -> bool:
        return self._dtype in _FLOATS

    def __getattr__(self, name):
        if name in _TENSOR_DATA:
            raise ValueError(f"associative_scan: `.{name}` of an operand is not available "
                             f"inside a combine (it sees one scalar of each leaf; only .dtype "
                             f"is known)")
        method = getattr(torch.Tensor, name, None)
        if method is None or name.startswith("__"):
            raise AttributeError(name)
        return lambda *args, **kwargs: _apply(method, (self,) + args, kwargs)


# NumPy's ufuncs for the operators a Tracer traces, by the names _binary knows them.
_NUMPY_OPERATORS = {"add": "add", "subtract": "sub", "multiply": "mul", "true_divide": "truediv",
                    "divide": "truediv", "floor_divide": "floordiv", "remainder": "remainder",
                    "power": "pow", "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or",
                    "bitwise_xor": "bitwise_xor", "less": "lt", "less_equal": "le",
                    "greater": "gt", "greater_equal": "ge", "equal": "eq", "not_equal": "ne"}


def _refuse_numpy(name: str):
    alternative = f"torch.{name}" if hasattr(torch, name) else "torch's functions"
    raise ValueError(f"associative_scan: NumPy's {name} cannot run inside a combine (it sees "
                     f"traced torch scalars); use {alternative}")


def _find_recorder(args) -> _Recorder:
    for a in args:
        if isinstance(a, Tracer):
            return a._rec
        if isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, Tracer):
                    return b._rec
    raise ValueError("associative_scan: internal error: no traced operand")


def _is_symbolic(v) -> bool:
    return isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _typeof(v) -> tuple[torch.dtype, int]:
    """v's dtype and its rank in torch's promotion: 2 a tensor with dims (a leaf), 1 a
    zero-dim tensor, 0 a Python number."""
    if isinstance(v, Tracer):
        return v._dtype, 2
    if isinstance(v, torch.Tensor):
        return v.dtype, 2 if v.ndim else 1
    if isinstance(v, (bool, torch.SymBool)):
        return torch.bool, 0
    if isinstance(v, (int, torch.SymInt)):
        return torch.int64, 0
    if isinstance(v, (float, torch.SymFloat)):
        return torch.get_default_dtype(), 0
    raise ValueError(f"associative_scan: a combine operand must be a tensor or a number, "
                     f"got {type(v)}")


def _result_type(*values) -> torch.dtype:
    ranks = [None, None, None]
    for v in values:
        dtype, rank = _typeof(v)
        ranks[rank] = dtype if ranks[rank] is None else _promote(ranks[rank], dtype)
    return _join(ranks[2], _join(ranks[1], ranks[0]))


def _same_value(c: torch.Tensor, v: torch.Tensor) -> bool:
    """c and v hold the same values, signs of zero included (and dtype, shape, device), where
    that is known without waiting on a device: views of the same elements, or plain CPU tensors
    outside Dynamo compared (fake and traced tensors have no values, and comparing CUDA ones
    would synchronize every call). NaN equals nothing, so captures holding one stay apart."""
    plain = (torch.Tensor, torch.nn.Parameter)
    if (type(c) not in plain or type(v) not in plain or torch.compiler.is_compiling()
            or c.dtype != v.dtype or c.shape != v.shape or c.device != v.device):
        return False
    try:
        if c.data_ptr() == v.data_ptr() and c.stride() == v.stride():
            return True
        if v.device.type != "cpu" or not torch.equal(c, v):
            return False
        return not v.is_floating_point() or torch.equal(torch.signbit(c), torch.signbit(v))
    except RuntimeError:  # a tensor whose data a mode does not hand out
        return False


def _operand(rec: _Recorder, v, dtype: torch.dtype | None = None) -> str:
    """v's name in the text, as `dtype` where given (casts for tensors, literals spelled for
    it; a symbolic number under Dynamo is captured as a zero-dim tensor of that dtype)."""
    if isinstance(v, Tracer):
        if dtype is None or v._dtype == dtype:
            return v._name
        return _cast(rec, v, dtype)._name
    if isinstance(v, torch.Tensor):
        # One captured value per tensor: the associativity check must see them equal. Also one
        # per view of the same elements (`t[:, 0]` at each use) and, on the CPU, per value
        # (`t.exp()` inside the combine is a new tensor at each use).
        # The first match is the only one: equal captures were never added twice.
        index = next((i for i, c in enumerate(rec.captured) if c is v or _same_value(c, v)), None)
        if index is None:
            rec.captured.append(v)
            index = len(rec.captured) - 1
        name = f"c{index}"
        if dtype is None or v.dtype == dtype:
            return name
        return _emit(rec, f"{DTYPE_NAMES[dtype]}({name})", dtype)._name
    # A symbolic number has no text: it is captured as a zero-dim tensor of it instead. Under
    # Dynamo a closure's float may be symbolic though isinstance says float (an int too: a size
    # of a tensor under dynamic shapes), and nothing that Dynamo traces tells the two apart, so
    # there every number but a bool is captured; where it runs, and where lowering finds its
    # value, it becomes a literal again (programs.pin_numbers).
    if _is_symbolic(v) or (isinstance(v, (int, float)) and not isinstance(v, bool)
                           and torch.compiler.is_compiling()):
        want = dtype if dtype is not None else _typeof(v)[0]
        tensor = None
        for number, t in rec.numbers:  # one captured value per number and dtype
            if number is v and t.dtype == want:
                tensor = t
        if tensor is None:
            if want in (*_FLOATS, torch.bool, torch.int64):
                tensor = torch.scalar_tensor(v, dtype=want)
            else:  # wrapped to `want` as torch wraps a number beside an integer tensor
                tensor = torch.scalar_tensor(v, dtype=torch.int64).to(want)
            rec.numbers.append((v, tensor))
        return _operand(rec, tensor, want)
    if not isinstance(v, (bool, int, float)):
        _typeof(v)  # raises
    if dtype in _FLOATS:
        v = float(v)
    elif dtype is not None and dtype != torch.bool:
        v = int(v)
    if isinstance(v, bool):
        return "1" if v else "0"
    text = repr(v)
    return f"({text})" if v < 0 else text


def _emit(rec: _Recorder, expr: str, dtype: torch.dtype) -> Tracer:
    name = f"t{len(rec.lines)}"
    rec.lines.append(f"{name} = {expr}")
    return Tracer(rec, name, dtype)


def _cast(rec: _Recorder, x, dtype) -> Tracer:
    name = DTYPE_NAMES.get(dtype)
    if name is None:
        raise ValueError(f"associative_scan: casting to {dtype} inside a combine is not "
                         f"supported")
    return _emit(rec, f"{name}({_operand(rec, x)})", dtype)


def _infix(rec: _Recorder, a, op: str, b, dtype: torch.dtype, result: torch.dtype) -> Tracer:
    return _emit(rec, f"{_operand(rec, a, dtype)} {op} {_operand(rec, b, dtype)}", result)


def _call(rec: _Recorder, fn: str, args, dtype: torch.dtype, result: torch.dtype) -> Tracer:
    parts = [_operand(rec, a, dtype) for a in args]
    return _emit(rec, f"{fn}({', '.join(parts)})", result)


def _where(rec: _Recorder, cond, a, b) -> Tracer:
    dtype = _result_type(a, b)
    return _emit(rec, f"where({_operand(rec, cond, torch.bool)}, {_operand(rec, a, dtype)}, "
                      f"{_operand(rec, b, dtype)})", dtype)


def _no_float(op: str, dtype: torch.dtype) -> None:
    if dtype in _FLOATS:
        raise ValueError(f"associative_scan: {op} of floating-point operands is not supported "
                         f"inside a combine (scanc has no exact floating-point remainder)")


_SYMBOLS = {"add": "+", "sub": "-", "mul": "*", "bitwise_and": "&", "bitwise_or": "|",
            "bitwise_xor": "^", "lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==",
            "ne": "!="}


def _python_number(v):
    """A NumPy scalar as the Python number torch takes it for; anything else as it is."""
    return v.item() if type(v).__module__ == "numpy" and getattr(v, "ndim", None) == 0 else v


def _round_number(v, dtype: torch.dtype):
    """A Python float v rounded to f16 or bf16 (as torch converts it: to f32, then to bf16 to
    nearest even); anything else as it is. Under Dynamo a number is captured as a zero-dim tensor
    of the dtype, which rounds it (and Dynamo cannot trace struct's overflow)."""
    if not isinstance(v, float) or v != v or torch.compiler.is_compiling():
        return v
    try:
        if dtype == torch.float16:
            return struct.unpack("<e", struct.pack("<e", v))[0]
        bits = struct.unpack("<I", struct.pack("<f", v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _refuse_overflow(name: str, v, dtype: torch.dtype, what: str = "bound") -> None:
    """ValueError, as torch's, where a Python number v (a bound, a fill value) does not fit
    dtype."""
    if not isinstance(v, (int, float)) or isinstance(v, bool) or _is_symbolic(v):
        return
    if dtype in _FLOATS:
        fits = v != v or abs(v) == math.inf or abs(v) <= _LARGEST[dtype]
    else:
        # c10's checked_convert wraps a negative int into an unsigned dtype, not a float, and
        # compares a float with the limits as floats (2.0 ** 63 fits int64).
        low, high = _INT_RANGE.get(dtype, (0, 1))
        if isinstance(v, float):
            low, high = (0.0 if dtype == torch.uint8 else float(low)), float(high)
        fits = dtype == torch.bool or low <= v <= high
    if not fits:
        raise ValueError(f"associative_scan: {name}'s {what} {v!r} cannot be converted to "
                         f"{dtype} without overflow (torch refuses it too)")


def _binary(op: str, a, b, rounding_mode=None) -> Tracer:
    """a OP b with torch's semantics: operands promoted to their result type, then scanc ops
    that compute what torch computes (true division, floor remainder, ...)."""
    a, b = _python_number(a), _python_number(b)
    rec = _find_recorder((a, b))
    dtype = _result_type(a, b)
    if op in ("lt", "le", "gt", "ge", "eq", "ne"):
        if dtype in _NARROW and not rec.opmath:  # as torch: the number is first rounded to
            a, b = (_round_number(v, dtype) for v in (a, b))  # the operands' dtype
        return _infix(rec, a, _SYMBOLS[op], b, dtype, torch.bool)
    if dtype == torch.bool and op in ("add", "mul", "sub"):
        if op == "sub":  # torch's own refusal
            raise ValueError("associative_scan: subtraction of bool operands is not supported "
                             "(as in torch); use `^` or torch.logical_xor instead")
        return _infix(rec, a, "|" if op == "add" else "&", b, dtype, dtype)  # torch's bool + and *
    if op in _SYMBOLS:
        return _infix(rec, a, _SYMBOLS[op], b, dtype, dtype)
    if op in ("logical_and", "logical_or", "logical_xor"):
        x, y = _truth(rec, a), _truth(rec, b)
        word = {"logical_and": "and", "logical_or": "or", "logical_xor": "^"}[op]
        return _emit(rec, f"{x._name} {word} {y._name}", torch.bool)
    if op == "div" and rounding_mode is not None:
        op = {"trunc": "truncdiv", "floor": "floordiv"}.get(rounding_mode, rounding_mode)
        if op not in ("truncdiv", "floordiv"):
            raise ValueError(f"associative_scan: div's rounding_mode must be None, 'trunc' or "
                             f"'floor', got {rounding_mode!r}")
    if op in ("truediv", "div"):
        if dtype not in _FLOATS:
            dtype = torch.get_default_dtype()
        return _infix(rec, a, "/", b, dtype, dtype)
    if op == "truncdiv":
        if dtype not in _FLOATS:
            return _infix(rec, a, "/", b, dtype, dtype)  # scanc's integer / truncates
        return _trunc(rec, _infix(rec, a, "/", b, dtype, dtype))
    if op in ("floordiv", "remainder"):
        _no_float("floor division" if op == "floordiv" else "torch.remainder (%)", dtype)
        # Round toward minus infinity: one step down where the truncated result's remainder
        # is nonzero and of the other sign than the divisor.
        x, y = _operand(rec, a, dtype), _operand(rec, b, dtype)
        r = _emit(rec, f"{x} % {y}", dtype)
        nonzero = _emit(rec, f"{r._name} != 0", torch.bool)
        r_negative = _emit(rec, f"{r._name} < 0", torch.bool)
        y_negative = _emit(rec, f"{y} < 0", torch.bool)
        signs = _emit(rec, f"{r_negative._name} ^ {y_negative._name}", torch.bool)
        fix = _emit(rec, f"{nonzero._name} and {signs._name}", torch.bool)
        if op == "remainder":
            return _where(rec, fix, _emit(rec, f"{r._name} + {y}", dtype), r)
        q = _emit(rec, f"{x} / {y}", dtype)
        return _where(rec, fix, _emit(rec, f"{q._name} - 1", dtype), q)
    if op == "fmod":
        _no_float("torch.fmod", dtype)
        return _infix(rec, a, "%", b, dtype, dtype)
    if op in ("minimum", "maximum"):
        return _call(rec, "min" if op == "minimum" else "max", [a, b], dtype, dtype)
    if op in ("fmin", "fmax"):
        if dtype not in _FLOATS:
            return _call(rec, "min" if op == "fmin" else "max", [a, b], dtype, dtype)
        # As torch computes and differentiates them: the first operand where it is at least
        # (fmin: at most) the second or the second is NaN, so ties (and -0 against +0) take
        # the first, and NaN only where both are. Operands cast once, used twice.
        x, y = (Tracer(rec, _operand(rec, v, dtype), dtype) for v in (a, b))
        cmp = ">=" if op == "fmax" else "<="
        first = _emit(rec, f"{x._name} {cmp} {y._name}", torch.bool)
        y_nan = _emit(rec, f"{y._name} != {y._name}", torch.bool)
        keep = _emit(rec, f"{first._name} or {y_nan._name}", torch.bool)
        return _where(rec, keep, x, y)
    if op == "logaddexp":
        if dtype not in _FLOATS:
            dtype = torch.get_default_dtype()
        return _call(rec, "logaddexp", [a, b], dtype, dtype)
    if op in ("bitwise_left_shift", "bitwise_right_shift"):
        return _shift(rec, op == "bitwise_left_shift", a, b, dtype)
    if op == "pow":
        if dtype in _FLOATS:
            special = _power_as_torch(rec, a, b, dtype)
            return special if special is not None else _call(rec, "pow", [a, b], dtype, dtype)
        return _integer_power(rec, a, b, dtype)
    raise ValueError(f"associative_scan: internal error: unknown operation {op}")


def _shift(rec: _Recorder, left: bool, a, b, dtype: torch.dtype) -> Tracer:
    """a << b or a >> b as torch computes them: a count outside [0, bits) shifts everything
    out (scanc takes counts modulo the bit width), leaving 0, or the sign for `>>`."""
    if dtype in _FLOATS or dtype == torch.bool:
        raise ValueError(f"associative_scan: `{'<<' if left else '>>'}` needs integer operands "
                         f"inside a combine (as in torch), got {dtype}")
    bits, op = torch.iinfo(dtype).bits, "<<" if left else ">>"
    x = _as_tracer(rec, a, dtype)
    if isinstance(b, int):  # a constant count (a bool is an int too)
        count = int(b)
        if 0 <= count < bits:
            return _emit(rec, f"{x._name} {op} {count}", dtype)
        return _emit(rec, f"{x._name} * 0" if left else f"{x._name} >> {bits - 1}", dtype)
    y = Tracer(rec, _operand(rec, b, dtype), dtype)
    shifted = _emit(rec, f"{x._name} {op} {y._name}", dtype)
    low = _emit(rec, f"{y._name} >= 0", torch.bool)
    high = _emit(rec, f"{y._name} < {bits}", torch.bool)
    in_range = _emit(rec, f"{low._name} and {high._name}", torch.bool)
    out = _emit(rec, f"{x._name} * 0" if left else f"{x._name} >> {bits - 1}", dtype)
    return _emit(rec, f"where({in_range._name}, {shifted._name}, {out._name})", dtype)


def _as_tracer(rec: _Recorder, v, dtype: torch.dtype) -> Tracer:
    """v as a value of `dtype` in the text: a literal operand becomes a cast, so that every
    expression built on it is typed."""
    name = _operand(rec, v, dtype)
    if not (name[0].isdigit() or name[0] == "("):  # a value's name, not a literal's digits
        return Tracer(rec, name, dtype)
    return _emit(rec, f"{DTYPE_NAMES[dtype]}({name})", dtype)


# torch's pow of a tensor by these constant exponents computes the forms on the right (its CPU
# and CUDA kernels), which differ from pow at signed zeros and infinities (sqrt(-0) is -0 and
# sqrt(-inf) NaN, where pow gives +0 and inf) and in rounding (x x x rounds twice).
_POWER_FORMS = {0.5: "sqrt({x})", -0.5: "rsqrt({x})", 2: "{x} * {x}", 3: "{x} * {x} * {x}",
                -1: "1 / {x}", -2: "1 / ({x} * {x})"}


def _power_as_torch(rec: _Recorder, a, b, dtype: torch.dtype) -> Tracer | None:
    """a ** b as torch computes it for a traced float a and a constant exponent b it treats
    specially; None for any other."""
    if (not isinstance(a, Tracer) or isinstance(b, bool) or not isinstance(b, (int, float))
            or _is_symbolic(b) or b not in _POWER_FORMS):
        return None
    x = _as_tracer(rec, a, dtype)
    return _emit(rec, _POWER_FORMS[b].format(x=x._name), dtype)


def _integer_power(rec: _Recorder, a, b, dtype: torch.dtype) -> Tracer:
    """a ** b of integers for a constant exponent b >= 0, by squaring (wrapping as torch's
    does); scanc's pow takes floating-point operands only."""
    b = _python_number(b)
    if isinstance(b, bool) or not isinstance(b, int) or b < 0 or dtype == torch.bool:
        raise ValueError(f"associative_scan: `**` (torch.pow) of {dtype} operands inside a "
                         f"combine needs a constant exponent that is a Python int >= 0, got "
                         f"{b!r}; cast to a floating-point dtype for any other")
    result, square = None, _as_tracer(rec, a, dtype)
    while True:
        if b & 1:
            result = square if result is None else _emit(rec, f"{result._name} * {square._name}", dtype)
        b >>= 1
        if not b:
            return result if result is not None else _emit(rec, f"{DTYPE_NAMES[dtype]}(1)", dtype)
        square = _emit(rec, f"{square._name} * {square._name}", dtype)


def _truth(rec: _Recorder, v) -> Tracer:
    """v as bool, nonzero meaning true (torch's logical ops take any dtype)."""
    if _typeof(v)[0] == torch.bool:
        return Tracer(rec, _operand(rec, v, torch.bool), torch.bool)
    return _emit(rec, f"{_operand(rec, v)} != 0", torch.bool)


def _trunc(rec: _Recorder, x: Tracer) -> Tracer:
    neg = _emit(rec, f"{x._name} < 0", torch.bool)
    return _where(rec, neg, _function("ceil", [x]), _function("floor", [x]))


def _unary(op: str, x) -> Tracer:
    rec = _find_recorder((x,))
    dtype = _typeof(x)[0]
    if op == "neg":
        return _emit(rec, f"- {_operand(rec, x)}", dtype)
    if op == "not":
        return _emit(rec, f"not {_truth(rec, x)._name}", torch.bool)
    if dtype == torch.bool:  # invert
        return _emit(rec, f"not {_operand(rec, x)}", dtype)
    if dtype in _FLOATS:
        raise ValueError("associative_scan: `~` (bitwise not) needs integer or bool operands")
    return _emit(rec, f"{_operand(rec, x)} ^ (-1)", dtype)


def _function(name: str, args) -> Tracer:
    rec = _find_recorder(args)
    dtype = _result_type(*args)
    if name in FLOAT_FUNCTIONS and dtype not in _FLOATS:
        dtype = torch.get_default_dtype()
    return _call(rec, FLOAT_FUNCTIONS.get(name) or SAME_FUNCTIONS[name], args, dtype, dtype)


def _positional(op, args, kwargs) -> tuple[list, dict]:
    """args with the keywords that name parameters moved to their positions; the options
    (alpha, rounding_mode, ...) stay keywords; any other keyword is an error."""
    args, kwargs = list(args), dict(kwargs)
    if "self" in kwargs:
        kwargs["input"] = kwargs.pop("self")
    names = PARAMS.get(op, ("input", "other"))
    for name in names[len(args):]:
        if name not in kwargs:
            break
        args.append(kwargs.pop(name))
    for name in kwargs:
        if name not in OPTIONS:
            raise ValueError(f"associative_scan: the keyword `{name}=` of `{op}` is not "
                             f"supported inside a combine")
    return args, kwargs


def _apply(func, args, kwargs) -> Tracer:
    entry = None
    for fn, e in PY_TABLE:
        if fn is func:
            entry = e
    if entry is None:
        entry = TABLE.get(func)
    if entry is None and isinstance(func, torch._ops.OpOverload):
        entry = ATEN_TABLE.get(func.overloadpacket)
    if entry is None:
        raise ValueError(f"associative_scan: the operation `{_describe(func)}` is not "
                         f"supported inside a combine (supported: elementwise arithmetic, "
                         f"comparisons, where, min/max, exp/log family, NaN and infinity "
                         f"tests, casts; docs/python.md lists them)")
    kind, op = entry
    if kind == "inplace":  # torch.nn.functional's X_ may have no Tensor.X: call the composite
        method = getattr(torch.Tensor, op, None)
        result = _apply(method, args, kwargs) if method else COMPOSITES[op](*args, **kwargs)
        return _assign(args[0], result)
    if kind == "composite":
        args, kwargs = list(args), dict(kwargs)
        if "self" in kwargs:
            kwargs["input"] = kwargs.pop("self")
        in_place = kwargs.pop("inplace", False)  # torch.nn.functional's, by name or position
        for fn, at in INPLACE_AT:
            if fn is func and len(args) > at:
                in_place = args.pop(at)
        result = COMPOSITES[op](*args, **kwargs)
        return _assign(args[0] if args else kwargs["input"], result) if in_place else result
    args, kwargs = _positional(op, args, kwargs)
    rec = _find_recorder([*args, *kwargs.values()])  # c.clamp(max=b): only a keyword is traced
    if kind == "special":
        return _apply_special(rec, op, args, kwargs)
    if kind == "identity":
        x = args[0]
        return Tracer(rec, x._name, x._dtype) if op == "copy" and isinstance(x, Tracer) else x
    if kind == "unary":
        return _unary(op, args[0])
    if kind == "rbin":
        return _binary(op, args[1], args[0])
    if kind == "bin":
        a, b = args[0], args[1]
        alpha = args[2] if len(args) > 2 else kwargs.get("alpha", 1)
        if alpha != 1:
            if isinstance(b, torch.Tensor):  # a captured tensor: scaled by torch, captured so
                b = b * alpha
            else:
                if not isinstance(b, Tracer):  # torch multiplies in the result dtype
                    b = _cast(rec, _python_number(b), _result_type(a, b))
                b = _binary("mul", b, alpha)
        return _binary(op, a, b, kwargs.get("rounding_mode"))
    if op == "softplus":
        if _typeof(args[0])[0] not in _FLOATS:
            raise ValueError("associative_scan: softplus of integer or bool operands is not "
                             "supported (as in torch)")
        beta = args[1] if len(args) > 1 else kwargs.get("beta", 1)
        threshold = args[2] if len(args) > 2 else kwargs.get("threshold", 20)
        # scanc's softplus is torch's default one but for its threshold, which only f64 sees
        # (past 20 the correction is below half an f32 ulp of x)
        if beta != 1 or threshold != 20 or _typeof(args[0])[0] == torch.float64:
            return _softplus_scaled(args[0], beta, threshold)
        args = args[:1]
    return _function(op, args)


def _apply_special(rec: _Recorder, name: str, args, kwargs) -> Tracer:
    x = args[0]
    if name == "square":
        return _binary("mul", x, x)
    if name == "reciprocal":
        return _binary("truediv", 1.0, x)
    if name == "rsub":
        return _binary("sub", args[1], x)
    if name in ("trunc", "fix"):
        if _typeof(x)[0] not in _FLOATS:
            return x
        return _trunc(rec, Tracer(rec, _operand(rec, x), _typeof(x)[0]))
    if name == "where":
        return _where(rec, x, args[1], args[2])
    if name == "where_method":
        return _where(rec, args[1], x, args[2])
    if name in ("clamp", "clip", "clamp_min", "clamp_max"):
        lo = args[1] if len(args) > 1 else kwargs.get("min")
        hi = args[2] if len(args) > 2 else kwargs.get("max")
        if name == "clamp_max":
            lo, hi = None, lo
        # torch.clamp's semantics, gradient included: a value on a bound keeps its gradient.
        # A NaN bound makes the result NaN.
        dtype = _result_type(*[v for v in (x, lo, hi) if v is not None])
        x = Tracer(rec, _operand(rec, x, dtype), dtype)
        for bound, cmp in ((lo, "<"), (hi, ">")):
            if bound is None:
                continue
            _refuse_overflow("clamp", bound, dtype)
            if not isinstance(bound, (Tracer, torch.Tensor)):
                if dtype in _FLOATS and bound != bound:
                    x = _cast(rec, bound, dtype)
                    continue
            else:  # cast once, used by the comparison, the NaN test and the where
                bound = Tracer(rec, _operand(rec, bound, dtype), dtype)
            beyond = _infix(rec, x, cmp, bound, dtype, torch.bool)
            if dtype in _FLOATS and isinstance(bound, Tracer):
                nan = _emit(rec, f"{bound._name} != {bound._name}", torch.bool)
                beyond = _emit(rec, f"{beyond._name} or {nan._name}", torch.bool)
            x = _where(rec, beyond, bound, x)
        return x
    if name in ("max", "min"):
        other = args[1] if len(args) > 1 else kwargs.get("other")
        if other is None or not isinstance(other, (Tracer, torch.Tensor)):
            raise ValueError(f"associative_scan: torch.{name} inside a combine needs two "
                             f"operands (elementwise); reductions are not supported")
        return _binary("minimum" if name == "min" else "maximum", x, other)
    if name in ("zeros_like", "ones_like", "full_like"):
        fill = {"zeros_like": 0, "ones_like": 1}.get(name)
        if fill is None:
            fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
        dtype = kwargs.get("dtype") or _typeof(x)[0]
        _refuse_overflow(name, fill, dtype, "value")
        return _cast(rec, _python_number(fill), dtype)
    if name in ("to", "type", "type_as"):
        dtype = args[1] if len(args) > 1 else kwargs.get("dtype")
        if isinstance(dtype, (Tracer, torch.Tensor)):  # x.to(y), x.type_as(y): y's dtype
            dtype = _typeof(dtype)[0]
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"associative_scan: .{name}() inside a combine takes a dtype or a "
                             f"tensor only")
    else:
        dtype = CAST_METHODS[name]
    # To its own dtype, torch returns the tensor itself (an in-place operation on one changes
    # the other).
    return x if isinstance(x, Tracer) and x._dtype == dtype else _cast(rec, x, dtype)


def _assign(target, result) -> Tracer:
    """target, now holding result, as after torch's in-place operations: cast back to target's
    dtype where torch would, refused where torch refuses (a float result into an int)."""
    if not isinstance(target, Tracer):
        raise ValueError("associative_scan: a combine cannot modify a captured tensor in place, "
                         "nor one computed from captured tensors only (it cannot hold traced "
                         "values); use the operation's out-of-place form")
    dtype = _typeof(result)[0]
    if dtype != target._dtype:
        if not _CAN_CAST.get((dtype, target._dtype), False):
            raise ValueError(f"associative_scan: an in-place operation on a {target._dtype} "
                             f"operand gives {dtype}, which torch does not cast back into it")
        result = _cast(target._rec, result, target._dtype)
    target._name = _operand(target._rec, result)
    return target


def _describe(func) -> str:
    # Only reached on the error path, in eager Python.
    owner = getattr(func, "__module__", None) or getattr(func, "__objclass__", None)
    name = getattr(func, "__name__", None) or repr(func)
    return f"{owner}.{name}" if isinstance(owner, str) and owner else str(name)


def trace_combine(combine_fn, spec, dtypes: list[torch.dtype]) -> tuple[str, list[torch.Tensor]]:
    """combine_fn's text and captured tensors, for leaves of `dtypes`. ValueError when it
    returns a different number or structure of leaves, or uses an operation scanc lacks (the
    message names it)."""
    rec = _Recorder()
    left = [Tracer(rec, f"l{i}", d) for i, d in enumerate(dtypes)]
    right = [Tracer(rec, f"r{i}", d) for i, d in enumerate(dtypes)]
    out = combine_fn(pytrees.unflatten(left, spec), pytrees.unflatten(right, spec))
    out_leaves, out_spec = pytrees.flatten(out, (Tracer,))
    if len(out_leaves) != len(dtypes):
        raise ValueError(f"associative_scan: combine_fn returned {len(out_leaves)} leaves for "
                         f"{len(dtypes)} inputs; it must return the same pytree structure as xs")
    if out_spec != spec:
        raise ValueError(f"associative_scan: combine_fn returned a pytree of structure "
                         f"{out_spec}, but xs has {spec}")
    return _text(rec, len(dtypes), None, out_leaves), rec.captured


def trace_graph(graph_fn, dtypes: list[torch.dtype], captured: list[torch.dtype]) -> str:
    """The text of a combine given as a function of aten ops (left leaves, right leaves, then
    the captured values, each of `dtypes` / `captured`) returning the combined leaves: the same
    translation, and the same meaning, as a traced torch combine."""
    rec = _Recorder()
    args = ([Tracer(rec, f"l{i}", d) for i, d in enumerate(dtypes)]
            + [Tracer(rec, f"r{i}", d) for i, d in enumerate(dtypes)]
            + [Tracer(rec, f"c{i}", d) for i, d in enumerate(captured)])
    out = graph_fn(*args)
    if rec.captured:
        raise ValueError("lower_associative_scans: a combine graph holds a tensor constant")
    return _text(rec, len(dtypes), len(captured), list(out))


def _text(rec: _Recorder, num_leaves: int, num_captured: int | None, out_leaves: list) -> str:
    """num_captured None: the recorder's, counted after the results (one may be a captured
    tensor that nothing before the return used)."""
    results = [_operand(rec, v) for v in out_leaves]
    if num_captured is None:
        num_captured = len(rec.captured)
    lnames = ", ".join([f"l{i}" for i in range(num_leaves)])
    rnames = ", ".join([f"r{i}" for i in range(num_leaves)])
    cnames = ", ".join([f"c{i}" for i in range(num_captured)])
    tail = f"; {cnames}" if num_captured else ""
    body = "; ".join(rec.lines + [f"return {', '.join(results)}"])
    # Which captured values are Python numbers (programs.pin_numbers writes them back as
    # literals where their values are known); a comment after the combine, which is all scanc
    # and ir.parse_combine read.
    numbers = [f"c{i}" for i, c in enumerate(rec.captured) if any(c is t for _, t in rec.numbers)]
    marker = f" # numbers {' '.join(numbers)}" if numbers else ""
    return f"combine combine_fn({lnames} | {rnames}{tail}) {{ {body} }}{marker}"
