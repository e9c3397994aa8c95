"""torch operations a combine may use that scanc has no operation for, written as compositions
of those it has, the way torch's own decompositions write them. Each keeps torch's meaning where
it matters to a scan: NaN and the infinities, signed zeros, result dtypes, which operand a
branch takes, and (for f16 and bf16) one rounding at the end, since torch computes these in f32.

They call torch's functions on traced operands (trace.Tracer), which trace.py translates like
any other operation of a combine; spellings.py maps every torch spelling of each name (torch.X,
Tensor.X, torch.special.X, torch.nn.functional.X, aten.X, and X_ in place) to it. Written to be
traced by Dynamo too: plain functions, constants built at import time.
"""

from __future__ import annotations

import math

import torch

_INF = math.inf
_NARROW = (torch.float16, torch.bfloat16)
_FLOATS = (*_NARROW, torch.float32, torch.float64)
_LARGEST = {d: torch.finfo(d).max for d in _FLOATS}  # read outside Dynamo


_NUMBERS = (bool, int, float, torch.SymBool, torch.SymInt, torch.SymFloat)


def _dtype(v) -> torch.dtype | None:
    # A traced operand's or a captured tensor's; None for a number (no hasattr on a symbolic
    # one: Dynamo cannot trace it).
    return None if isinstance(v, _NUMBERS) else v.dtype


def _constant(like, number, dtype):
    """number as a constant of dtype beside `like`, converted as torch converts a number that
    meets a tensor: rounded, to an infinity if it overflows a float (full_like refuses that)."""
    wide = torch.float32 if dtype in _NARROW else dtype
    return (torch.zeros_like(like, dtype=wide) + number).to(dtype)


def _refuse_unrepresentable(name: str, dtype: torch.dtype, **parameters) -> None:
    """ValueError, as torch's, for a finite float parameter beyond dtype's largest value (torch
    converts a kernel's parameters to the dtype it computes in)."""
    if torch.compiler.is_compiling():
        return  # a parameter may be symbolic there; eager calls have checked the same code
    for what, v in parameters.items():
        if isinstance(v, float) and math.isfinite(v) and abs(v) > _LARGEST[dtype]:
            raise ValueError(f"associative_scan: {name}'s {what} {v!r} cannot be converted to "
                             f"{dtype} without overflow (torch refuses it too)")


def _float_of(v) -> torch.dtype:
    return v.dtype if v.dtype in _FLOATS else torch.get_default_dtype()


def _is_float(v) -> bool:
    return _dtype(v) in _FLOATS or isinstance(v, float)


def _narrow(*operands) -> torch.dtype | None:
    """The f16 or bf16 dtype of the result when every float operand is that dtype (torch then
    computes in f32 and rounds once), else None."""
    dtypes = {_dtype(v) for v in operands if _dtype(v) in _FLOATS}
    return dtypes.pop() if len(dtypes) == 1 and dtypes <= set(_NARROW) else None


def _in_f32(fn, *operands):
    """fn of the operands computed in f32 where they are f16 or bf16, as torch's kernels
    compute (their opmath type). Inside a combine f16 and bf16 operations compute in f32 and
    round only where the combine's results are stored, so fn runs on traced operands as they
    are, its numbers compared at f32 precision (the recorder's opmath): a rounding at fn's end
    would round the scan's carry at every step, and the result then depends on how the scan
    associates (bf16 hypot over 1025 ones: 16, 31.6 or 32 by the number of columns). Anything
    else (constants computed by torch) rounds once, as torch's kernels do."""
    narrow = _narrow(*operands)
    if narrow is None:
        return fn(*operands)
    rec = next((v._rec for v in operands if hasattr(v, "_rec")), None)  # a trace.Tracer's
    if rec is not None:
        rec.opmath += 1
        try:
            return fn(*operands)
        finally:
            rec.opmath -= 1
    wide = [v.float() if _dtype(v) == narrow else v for v in operands]
    return fn(*wide).to(narrow)


def _refuse_mixed_dtypes(name: str, *operands) -> None:
    """ValueError where the tensor operands differ in dtype: torch multiplies them in their
    promoted dtype, which these compositions do not reproduce."""
    dtypes = {_dtype(v) for v in operands if _dtype(v) is not None}
    if len(dtypes) > 1:
        raise ValueError(f"associative_scan: torch.{name} of operands of different dtypes "
                         f"({', '.join(sorted(map(str, dtypes)))}) is not supported inside a "
                         f"combine; cast them to one dtype")


def _refuse_unless_float(name: str, *operands) -> None:
    if not any(_is_float(v) for v in operands):
        dtypes = ", ".join(str(_dtype(v) or type(v).__name__) for v in operands)
        raise ValueError(f"associative_scan: torch.{name} needs a floating-point operand (as in "
                         f"torch), got {dtypes}")


def isnan(input):
    return input != input


def isinf(input):
    return torch.abs(input) == _INF if _is_float(input) else input != input


def isposinf(input):
    return input == _INF if _is_float(input) else input != input


def isneginf(input):
    return input == -_INF if _is_float(input) else input != input


def isfinite(input):
    return torch.abs(input) < _INF if _is_float(input) else input == input


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    if not _is_float(input):
        return input
    largest = _LARGEST[input.dtype]
    # Each test on the operand itself, so that a replacement is never replaced again.
    x = torch.where(input == -_INF, -largest if neginf is None else neginf, input)
    x = torch.where(input == _INF, largest if posinf is None else posinf, x)
    return torch.where(input != input, 0.0 if nan is None else nan, x)


def sign(input):
    # 0 for NaN and both zeros, as torch's sign.
    if input.dtype == torch.bool:
        return input
    return (input > 0).to(input.dtype) - (input < 0).to(input.dtype)


def relu(input):
    if input.dtype == torch.bool:
        raise ValueError("associative_scan: torch.relu of bool operands is not supported (as in "
                         "torch)")
    return torch.clamp_min(input, 0)  # NaN stays NaN, -0 stays -0


def masked_fill(input, mask, value):
    # The value cast to input's dtype first, so that input itself is never cast.
    value = value.to(input.dtype) if _dtype(value) else torch.full_like(input, value)
    return torch.where(mask, value, input)


def addcmul(input, tensor1, tensor2, *, value=1):
    _refuse_mixed_dtypes("addcmul", input, tensor1, tensor2)
    if isinstance(value, float) and not any(_is_float(v) for v in (input, tensor1, tensor2)):
        raise ValueError("associative_scan: torch.addcmul of integer operands takes an integer "
                         "value= (as in torch)")
    return _in_f32(lambda x, a, b: x + (a * b if value == 1 else value * a * b),
                   input, tensor1, tensor2)


def addcdiv(input, tensor1, tensor2, *, value=1):
    _refuse_unless_float("addcdiv", input, tensor1, tensor2)
    _refuse_mixed_dtypes("addcdiv", input, tensor1, tensor2)
    return _in_f32(lambda x, a, b: x + (a / b if value == 1 else value * a / b),
                   input, tensor1, tensor2)


def lerp(input, end, weight):
    _refuse_unless_float("lerp", input)
    for name, v in (("end", end), ("weight", weight)):
        if _dtype(v) not in (None, input.dtype):
            raise ValueError(f"associative_scan: torch.lerp expects `{name}` of the input's dtype "
                             f"{input.dtype} (as torch does), got {_dtype(v)}")

    def formula(start, end, weight):
        # torch's: from the nearer end, so that weight 1 gives `end` exactly.
        diff = end - start
        if isinstance(weight, (int, float)):
            return start + weight * diff if abs(weight) < 0.5 else end - diff * (1 - weight)
        return torch.where(torch.abs(weight) < 0.5, start + weight * diff,
                           end - diff * (1 - weight))

    return _in_f32(formula, input, end, weight)


def logaddexp2(input, other):
    _refuse_unless_float("logaddexp2", input, other)

    def formula(a, b):
        # torch's: equal infinities are themselves, otherwise the larger plus log2(1 + 2^-gap).
        soft = (torch.maximum(a, b)
                + torch.log1p(torch.exp2(-torch.abs(a - b))) * (1 / math.log(2.0)))
        return torch.where(torch.isinf(a) & (a == b), a, soft)

    return _in_f32(formula, input, other)


def hypot(input, other):
    _refuse_unless_float("hypot", input, other)

    def formula(x, y):
        # The larger magnitude times sqrt(1 + ratio^2), so that no square overflows; an
        # infinite operand gives inf even beside NaN, as C's hypot.
        a, b = torch.abs(x), torch.abs(y)
        high, low = torch.maximum(a, b), torch.minimum(a, b)
        ratio = torch.where(high == 0, 0.0, low / high)
        return torch.where((a == _INF) | (b == _INF), _INF,
                           high * torch.sqrt(1.0 + ratio * ratio))

    return _in_f32(formula, input, other)


def _xlog(log, input, other):
    """x * log(y) for xlogy (log) and xlog1py (log1p): 0 where x is 0 (even for y 0 or inf),
    NaN wherever y is NaN, as torch's."""
    # A number operand becomes a constant of the float dtype the result has, as in torch.
    if _dtype(input) is None:
        input = _constant(other, input, _float_of(other))
    if _dtype(other) is None:
        other = _constant(input, other, _float_of(input))

    def formula(x, y):
        # At x == 0: +0 (0 + -0 is +0), and torch's gradient log(y) where that is finite.
        logs = log(y)
        finite_logs = torch.where(torch.abs(logs) < _INF, logs, 0.0)
        return torch.where(y != y, math.nan,
                           torch.where(x == 0, 0.0 + x * finite_logs, x * logs))

    return _in_f32(formula, input, other)


def xlogy(input, other):
    return _xlog(torch.log, input, other)


COMPOSITES = {
    "isnan": isnan, "isinf": isinf, "isposinf": isposinf, "isneginf": isneginf,
    "isfinite": isfinite, "nan_to_num": nan_to_num, "masked_fill": masked_fill, "sign": sign,
    "sgn": sign, "relu": relu,
    "addcmul": addcmul, "addcdiv": addcdiv, "lerp": lerp, "logaddexp2": logaddexp2,
    "hypot": hypot, "xlogy": xlogy,
}
