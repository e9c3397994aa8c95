"""torch.nn.functional's activations inside a combine, written with scanc's operations as
torch's CPU kernels write them (aten/src/ATen/native/cpu/Activation.cpp), so that NaN, the
infinities and signed zeros come out as torch's: which branch a NaN or a zero takes is each
kernel's comparison, kept here. Floats only where torch's are; f16 and bf16 compute in f32
(composites._in_f32), as torch's kernels do.

A parameter is compared through torch.gt and its kin, not `>`: under Dynamo with dynamic shapes
a float parameter may be symbolic, and Dynamo's own `>` of a traced operand and a symbolic float
fails, where torch.gt reaches the trace.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from .composites import (_FLOATS, _NARROW, _in_f32, _refuse_unless_float,
                         _refuse_unrepresentable)

# torch's selu constants (aten/src/ATen/native/Activation.cpp).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_GELU_TANH_BETA = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5  # sqrt(2 / pi)
_GELU_TANH_KAPPA = 0.044715


def _activation(name, formula, input, **parameters):
    """formula of a float input, in f32 for f16 and bf16; parameters that overflow the dtype
    torch computes in (f32 for f16 and bf16) refused as torch refuses them."""
    _refuse_unless_float(name, input)
    _refuse_unrepresentable(name, torch.float32 if input.dtype in _NARROW else input.dtype,
                            **parameters)
    return _in_f32(formula, input)


def silu(input):
    # x sigmoid(x), not torch's x / (1 + e^-x): the same value within an ulp or two, and a
    # gradient that does not overflow far left, where (1 + e^-x)^2 would.
    return _activation("silu", lambda x: x * torch.sigmoid(x), input)


def mish(input):
    # torch's log1p(exp(x)) as scanc's softplus, the same past its threshold (tanh of it is 1),
    # so that the gradient does not meet inf / inf.
    return _activation("mish", lambda x: x * torch.tanh(F.softplus(x)), input)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        def formula(x):
            inner = _GELU_TANH_BETA * (x + _GELU_TANH_KAPPA * (x * x * x))
            return 0.5 * x * (1.0 + torch.tanh(inner))
    elif approximate == "none":
        def formula(x):  # torch's: x / 2 (1 + erf(x / sqrt 2))
            return x * 0.5 * (1.0 + torch.erf(x * 0.7071067811865476))
    else:
        raise ValueError(f"associative_scan: gelu's approximate= is 'none' or 'tanh' (as in "
                         f"torch), got {approximate!r}")
    return _activation("gelu", formula, input)


def elu(input, alpha=1.0, scale=1.0, input_scale=1.0):
    # x <= 0 takes the exponential side, so -0 gives -0 and NaN takes x * scale.
    def formula(x):
        return torch.where(x <= 0, torch.expm1(x * input_scale) * (alpha * scale), x * scale)
    return _activation("elu", formula, input, alpha=alpha, scale=scale, input_scale=input_scale)


def selu(input):
    return elu(input, _SELU_ALPHA, _SELU_SCALE)


def celu(input, alpha=1.0):
    if alpha == 0:
        raise ValueError("associative_scan: ZeroDivisionError: alpha cannot be 0 for CELU (as "
                         "in torch)")
    return elu(input, alpha, 1.0, 1.0 / alpha)


def leaky_relu(input, negative_slope=0.01):
    return _activation("leaky_relu", lambda x: torch.where(x > 0, x, x * negative_slope), input,
                       negative_slope=negative_slope)


def _edge(x, bound, at_edge):
    """bound where at_edge, as a constant (no gradient, as torch's backward of hardtanh); where
    x is a zero equal to a zero bound, x * 0, which keeps x's sign as torch's clamp does."""
    return torch.where(at_edge & (bound == 0) & (x == bound), x * 0.0, bound)


def hardtanh(input, min_val=-1.0, max_val=1.0):
    if min_val > max_val:
        raise ValueError("associative_scan: hardtanh's max_val cannot be less than min_val (as "
                         "in torch)")
    if input.dtype == torch.bool:
        raise ValueError("associative_scan: torch.hardtanh of bool operands is not supported "
                         "(as in torch)")
    if input.dtype not in _FLOATS:
        if input.dtype == torch.uint8 and (min_val < 0 or max_val < 0):
            raise ValueError("associative_scan: cannot do hardtanh on an unsigned type with "
                             "negative limits (as in torch)")
        return torch.clamp(input, int(min_val), int(max_val))  # integer limits, cut as torch's
    # The limits in the input's dtype (rounded, an overflow refused), as torch's. Selected
    # rather than clamped: torch's gradient is 0 at a limit, where clamp's is 1; NaN stays.
    low, high = torch.full_like(input, min_val), torch.full_like(input, max_val)
    below, above = torch.le(input, low), torch.ge(input, high)
    inside = torch.gt(input, low) & torch.lt(input, high)
    return torch.where(inside | (input != input), input,
                       torch.where(below, _edge(input, low, below), _edge(input, high, above)))


def relu6(input):
    return hardtanh(input, 0.0, 6.0)


# hardsigmoid and hardswish by their pieces, each computing what torch's min(max(x + 3, 0), 6)
# computes there, so that the gradient at -3, 3, the infinities and NaN is torch's too.
def hardsigmoid(input):
    def formula(x):
        inside = torch.gt(x, -3.0) & torch.lt(x, 3.0)
        outside = torch.where(torch.ge(x, 3.0), 1.0, torch.where(x != x, x * 0.0, 0.0))
        return torch.where(inside, (x + 3.0) / 6.0, outside)
    return _activation("hardsigmoid", formula, input)


def hardswish(input):
    def formula(x):  # x * 0 / 6 at and below -3 (-0, NaN at -inf); x * 6 / 6 from 3 and NaN
        return torch.where(torch.le(x, -3.0), x * 0.0 / 6.0,
                           torch.where(torch.lt(x, 3.0), x * (x + 3.0) / 6.0, x * 6.0 / 6.0))
    return _activation("hardswish", formula, input)


def logsigmoid(input):
    # min(x, 0) - log(1 + e^-|x|): no overflow at either end.
    return _activation(
        "logsigmoid",
        lambda x: torch.minimum(x, torch.zeros_like(x)) - torch.log1p(torch.exp(-torch.abs(x))),
        input)


# softsign and tanhshrink are Python compositions in torch.nn.functional, of any dtype but
# bool (whose abs and `-` torch refuses).
def _refuse_bool(name, input):
    if input.dtype == torch.bool:
        raise ValueError(f"associative_scan: torch.{name} of bool operands is not supported (as "
                         f"in torch)")


def softsign(input):
    _refuse_bool("softsign", input)
    return input / (torch.abs(input) + 1)


def tanhshrink(input):
    _refuse_bool("tanhshrink", input)
    return input - torch.tanh(input)


def softshrink(input, lambd=0.5):
    _refuse_unless_float("softshrink", input)
    if not torch.compiler.is_compiling() and not 0 <= lambd <= torch.finfo(input.dtype).max:
        raise ValueError(f"associative_scan: softshrink's lambd must be in [0, the dtype's "
                         f"largest] (as in torch), got {lambd}")

    def formula(x):  # +0 in the middle, NaN stays, as torch's vector kernel
        middle = torch.where(x != x, x, torch.zeros_like(x))
        return torch.where(torch.gt(x, lambd), x - lambd,
                           torch.where(torch.lt(x, -lambd), x + lambd, middle))
    return _activation("softshrink", formula, input)


def hardshrink(input, lambd=0.5):
    # Compared in the input's dtype with lambd rounded to it (an overflow refused), as torch.
    _refuse_unless_float("hardshrink", input)
    high = torch.full_like(input, lambd)
    low = -high
    return torch.where(torch.ge(input, low) & torch.le(input, high), torch.zeros_like(input),
                       input)


def threshold(input, threshold, value):
    # Any dtype but bool, as in torch; value converted to it (an overflow refused), and the
    # threshold too except for f16 and bf16, which torch compares in f32. x <= threshold is false
    # for NaN, which stays.
    _refuse_bool("threshold", input)
    fill = torch.full_like(input, value)
    if input.dtype in _NARROW:
        return torch.where(torch.le(input.float(), threshold), fill, input)
    return torch.where(input <= torch.full_like(input, threshold), fill, input)


def softplus(input, beta=1.0, threshold=20.0):
    """softplus with any beta and threshold (scanc's own softplus is beta 1, threshold 20)."""
    def formula(x):
        scaled = x * beta
        return torch.where(torch.gt(scaled, threshold), x, torch.log1p(torch.exp(scaled)) / beta)
    return _activation("softplus", formula, input, beta=beta, threshold=threshold)


ACTIVATIONS = {
    "silu": silu, "mish": mish, "gelu": gelu, "elu": elu, "selu": selu, "celu": celu,
    "leaky_relu": leaky_relu, "hardtanh": hardtanh, "relu6": relu6, "hardsigmoid": hardsigmoid,
    "hardswish": hardswish, "logsigmoid": logsigmoid, "softsign": softsign,
    "tanhshrink": tanhshrink, "softshrink": softshrink, "hardshrink": hardshrink,
    "threshold": threshold,
}
