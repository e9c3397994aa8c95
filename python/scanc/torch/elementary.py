"""torch's elementwise functions that scanc has no operation for — hyperbolic functions, tan,
logit, rounding, frac, heaviside, sinc, angle conversions, xlog1py, ldexp — written with its
operations. Each keeps torch's answers at NaN, the infinities and signed zeros, and its result
dtypes (integers become the default float where torch's do); f16 and bf16 compute in f32
(composites._in_f32). The transcendental ones are within a few ulp of torch's (their parts are each
within 1 ulp), not bit for bit.
"""

from __future__ import annotations

import math

import torch

from .composites import (_FLOATS, _NARROW, _dtype, _float_of, _in_f32, _is_float, _refuse_mixed_dtypes,
                         _xlog)

# The constants below are literals in the functions: Dynamo makes a module's float a symbol
# under dynamic=True, which a comparison with a traced operand does not take.
# - 0.6931471805599453 is ln 2.
# - Above 20, e^-|x| is below half an ulp of e^|x| in f64 (and so in f32): sinh and cosh are
#   e^|x| / 2, taken as (e^(|x|/2) / 2) e^(|x|/2) so that it does not overflow first.
# - Above 2^28, asinh(x) and acosh(x) are log(2|x|) to within half an ulp, and x^2 would
#   overflow f32 not much further on.


def _float(formula, input):
    """formula of input as a float (an integer or bool operand becomes the default float
    dtype, as torch's unary float functions do)."""
    if not _is_float(input):
        input = input.to(_float_of(input))
    return _in_f32(formula, input)


def _half_exp(x):
    half = torch.exp(torch.abs(x) * 0.5)
    return half * 0.5 * half


def sinh(input):
    def formula(x):
        small = (torch.expm1(x) - torch.expm1(-x)) * 0.5  # no cancellation near 0
        large = torch.where(x < 0, -_half_exp(x), _half_exp(x))
        return torch.where(torch.abs(x) > 20.0, large, small)
    return _float(formula, input)


def cosh(input):
    def formula(x):
        small = (torch.exp(x) + torch.exp(-x)) * 0.5
        return torch.where(torch.abs(x) > 20.0, _half_exp(x), small)
    return _float(formula, input)


def tan(input):
    return _float(lambda x: torch.sin(x) / torch.cos(x), input)


def asinh(input):
    def formula(x):
        a = torch.abs(x)
        # log1p(a + a^2 / (1 + sqrt(1 + a^2))) = log(a + sqrt(1 + a^2)), accurate near 0.
        moderate = torch.log1p(a + a * a / (1.0 + torch.sqrt(1.0 + a * a)))
        magnitude = torch.where(a > 268435456.0, torch.log(a) + 0.6931471805599453, moderate)
        return torch.where(x < 0, -magnitude, torch.where(x == 0, x, magnitude))
    return _float(formula, input)


def acosh(input):
    def formula(x):
        t = x - 1.0
        moderate = torch.log1p(t + torch.sqrt(2.0 * t + t * t))
        value = torch.where(x > 268435456.0, torch.log(x) + 0.6931471805599453, moderate)
        return torch.where(x < 1, math.nan, value)
    return _float(formula, input)


def atanh(input):
    def formula(x):
        a = torch.abs(x)
        magnitude = 0.5 * torch.log1p(2.0 * a / (1.0 - a))
        value = torch.where(a > 1, math.nan, magnitude)
        return torch.where(x < 0, -value, torch.where(x == 0, x, value))
    return _float(formula, input)


def logit(input, eps=None):
    if not _is_float(input):
        input = input.to(_float_of(input))
    if eps is None or eps < 0:  # torch clamps for eps >= 0 only
        return _in_f32(lambda x: torch.log(x / (1.0 - x)), input)
    # torch's bounds are of the input's dtype: eps rounded to it, then 1 - eps rounded to it;
    # and torch's selection, not clamp, which differs where eps > 0.5 puts low above high (NaN
    # eps selects neither).
    low = torch.full_like(input, eps)
    high = (1.0 - low.float()).to(input.dtype) if input.dtype in _NARROW else 1.0 - low

    def formula(x, lo, hi):
        z = torch.where(x < lo, lo, torch.where(x > hi, hi, x))
        return torch.log(z / (1.0 - z))
    return _in_f32(formula, input, low, high)


def sinc(input):
    def formula(x):
        # Below |pi x| = 1e-8 sin(p) / p rounds to 1 in f32 and f64 (p^2 / 6 is below half an
        # ulp of 1), as 1 - p^2 / 6 does; the series also keeps the gradient finite where p^2
        # underflows.
        product = math.pi * x
        tiny = torch.abs(product) < 1e-8
        return torch.where(tiny, 1.0 - product * product / 6.0, torch.sin(product) / product)
    return _float(formula, input)


def deg2rad(input):
    return _float(lambda x: x * (math.pi / 180.0), input)


def rad2deg(input):
    return _float(lambda x: x * (180.0 / math.pi), input)


def frac(input):
    if not _is_float(input):
        raise ValueError("associative_scan: torch.frac needs a floating-point operand (as in "
                         "torch)")
    return input - torch.trunc(input)  # exact; inf - inf is NaN, as torch's


def _round_half_even(x):
    t = torch.trunc(x)
    gap = torch.abs(x - t)  # exact, and with t's sign the result keeps a zero's sign
    away = torch.where(x < 0, t - 1.0, t + 1.0)
    odd = torch.trunc(t * 0.5) != t * 0.5
    return torch.where((gap > 0.5) | ((gap == 0.5) & odd), away, t)


def round(input, decimals=None):
    if input.dtype == torch.bool or (decimals is not None and not _is_float(input)):
        raise ValueError(f"associative_scan: torch.round of {input.dtype} operands"
                         f"{' with decimals' if decimals is not None else ''} is not supported "
                         f"(as in torch)")
    if not _is_float(input):
        return input
    if not decimals:
        return _in_f32(_round_half_even, input)
    # torch's: scale by 10^|decimals|, round, scale back (a division for positive decimals); a
    # scale past the largest double is inf, as torch's, and the result NaN.
    ten_pow = 10.0 ** abs(decimals) if abs(decimals) < 309 else math.inf
    if decimals > 0:
        return _in_f32(lambda x: _round_half_even(x * ten_pow) / ten_pow, input)
    return _in_f32(lambda x: _round_half_even(x / ten_pow) * ten_pow, input)


def heaviside(input, values):
    _refuse_mixed_dtypes("heaviside", input, values)
    if _dtype(values) is None:
        raise ValueError("associative_scan: torch.heaviside takes `values` as a tensor (as in "
                         "torch)")
    step = (input > 0).to(input.dtype)
    return torch.where(input == 0, values, step)


def xlog1py(input, other):
    return _xlog(torch.log1p, input, other)


# ldexp by an integer exponent, as C's: x scaled by at most two steps of the largest power of
# two (up) or of 2^(min exponent + mantissa bits) (down, so that only the last step can round
# into the subnormals), then by 2^e with e clamped to the normal range, which changes nothing
# that was not already 0 or inf. The exponent is first clamped where that cannot change the
# result either. f16 and bf16 compute in f32 (their operations in a combine do), so they take
# f32's steps; the exponent stays an integer until it is in the normal range, where every
# dtype holds it exactly (bf16 would round 301).
_LDEXP_STEPS = {  # dtype computed in: (clamp, largest exponent, smallest normal exponent, step down)
    torch.float32: (400, 127, -126, -102), torch.float64: (2200, 1023, -1022, -969)}


def _times_power_of_two(x, e):
    limit, high, low, down = _LDEXP_STEPS[torch.float32 if x.dtype in _NARROW else x.dtype]
    e = torch.clamp(e.to(torch.int64), -limit, limit)
    for _ in range(2):
        up, dn = torch.gt(e, high), torch.lt(e, low)
        x = torch.where(up, x * 2.0 ** high, torch.where(dn, x * 2.0 ** down, x))
        e = torch.where(up, e - high, torch.where(dn, e - down, e))
    return x * torch.exp2(torch.clamp(e, low, high).to(x.dtype))


def ldexp(input, other):
    if _dtype(input) is None or _dtype(other) is None:
        raise ValueError("associative_scan: torch.ldexp takes two tensors (as in torch)")
    if not _is_float(other):  # exact, as torch's
        if not _is_float(input):
            input = input.to(torch.get_default_dtype())
        return _in_f32(_times_power_of_two, input, other)
    # torch's: input * 2^other, the power in other's dtype (rounded to it, where it may
    # underflow or overflow), then torch's promotion.
    scale = torch.exp2(other)
    if other.dtype in _NARROW and not isinstance(other, torch.Tensor):
        scale = scale.float().to(other.dtype)  # a traced narrow value is kept in f32: round it
    return input * scale


ELEMENTARY = {
    "sinh": sinh, "cosh": cosh, "tan": tan, "asinh": asinh, "arcsinh": asinh, "acosh": acosh,
    "arccosh": acosh, "atanh": atanh, "arctanh": atanh, "logit": logit, "sinc": sinc,
    "deg2rad": deg2rad, "rad2deg": rad2deg, "frac": frac, "round": round,
    "heaviside": heaviside, "xlog1py": xlog1py, "ldexp": ldexp,
}
