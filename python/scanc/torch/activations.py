"""torch.nn.functional's activations inside a combine, written with scanc's operations as
torch's CPU kernels write them (aten/src/ATen/native/cpu/Activation.cpp), so that NaN, the
infinities and signed zeros come out as torch's: which branch a NaN or a zero takes is each
kernel's comparison, kept here. Floats only where torch's are; f16 and bf16 compute in f32 and
round once (composites._in_f32), as torch's kernels do.

A parameter is compared through torch.gt and its kin, not `>`: under Dynamo with dynamic shapes
a float parameter may be symbolic, and Dynamo's own `>` of a traced operand and a symbolic float
fails, where torch.gt reaches the trace.
"""

from __future__ import annotations

import math

import torch

from .composites import _FLOATS, _in_f32, _refuse_unless_float

# torch's selu constants (aten/src/ATen/native/Activation.cpp).
_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946
_GELU_TANH_BETA = math.sqrt(2.0) * (2.0 / math.sqrt(math.pi)) * 0.5  # sqrt(2 / pi)
_GELU_TANH_KAPPA = 0.044715


def _activation(name, formula, input):
    _refuse_unless_float(name, input)
    return _in_f32(formula, input)


def silu(input):
    return _activation("silu", lambda x: x / (1.0 + torch.exp(-x)), input)


def mish(input):
    # torch's: no softplus threshold, log1p(exp(x)) whole.
    return _activation("mish", lambda x: x * torch.tanh(torch.log1p(torch.exp(x))), input)


def gelu(input, approximate="none"):
    if approximate == "tanh":
        def formula(x):
            inner = _GELU_TANH_BETA * (x + _GELU_TANH_KAPPA * (x * x * x))
            return 0.5 * x * (1.0 + torch.tanh(inner))
    elif approximate == "none":
        raise ValueError("associative_scan: exact gelu needs erf, which scanc does not have "
                         "yet; gelu(approximate='tanh') is supported")
    else:
        raise ValueError(f"associative_scan: gelu's approximate= is 'none' or 'tanh' (as in "
                         f"torch), got {approximate!r}")
    return _activation("gelu", formula, input)


def elu(input, alpha=1.0, scale=1.0, input_scale=1.0):
    # x <= 0 takes the exponential side, so -0 gives -0 and NaN takes x * scale.
    def formula(x):
        return torch.where(x <= 0, torch.expm1(x * input_scale) * (alpha * scale), x * scale)
    return _activation("elu", formula, input)


def selu(input):
    return elu(input, _SELU_ALPHA, _SELU_SCALE)


def celu(input, alpha=1.0):
    if alpha == 0:
        raise ValueError("associative_scan: ZeroDivisionError: alpha cannot be 0 for CELU (as "
                         "in torch)")
    return elu(input, alpha, 1.0, 1.0 / alpha)


def leaky_relu(input, negative_slope=0.01):
    return _activation("leaky_relu",
                       lambda x: torch.where(x > 0, x, x * negative_slope), input)


def hardtanh(input, min_val=-1.0, max_val=1.0):
    if min_val > max_val:
        raise ValueError("associative_scan: hardtanh's max_val cannot be less than min_val (as "
                         "in torch)")
    if input.dtype in _FLOATS:
        return _in_f32(lambda x: torch.clamp(x, min_val, max_val), input)
    if input.dtype == torch.bool:
        raise ValueError("associative_scan: torch.hardtanh of bool operands is not supported "
                         "(as in torch)")
    if input.dtype == torch.uint8 and (min_val < 0 or max_val < 0):
        raise ValueError("associative_scan: cannot do hardtanh on an unsigned type with "
                         "negative limits (as in torch)")
    return torch.clamp(input, int(min_val), int(max_val))  # integer limits, cut as torch's


def relu6(input):
    return hardtanh(input, 0.0, 6.0)


def hardsigmoid(input):
    return _activation("hardsigmoid", lambda x: torch.clamp(x + 3.0, 0.0, 6.0) / 6.0, input)


def hardswish(input):
    return _activation("hardswish",
                       lambda x: x * torch.clamp(x + 3.0, 0.0, 6.0) / 6.0, input)


def logsigmoid(input):
    # min(x, 0) - log(1 + e^-|x|): no overflow at either end.
    return _activation(
        "logsigmoid",
        lambda x: torch.minimum(x, torch.zeros_like(x)) - torch.log1p(torch.exp(-torch.abs(x))),
        input)


# softsign and tanhshrink are Python compositions in torch.nn.functional, of any dtype.
def softsign(input):
    return input / (torch.abs(input) + 1)


def tanhshrink(input):
    return input - torch.tanh(input)


def softshrink(input, lambd=0.5):
    if lambd < 0:
        raise ValueError(f"associative_scan: softshrink's lambd must be at least 0 (as in "
                         f"torch), got {lambd}")

    def formula(x):  # +0 in the middle, NaN stays, as torch's vector kernel
        middle = torch.where(x != x, x, torch.zeros_like(x))
        return torch.where(torch.gt(x, lambd), x - lambd,
                           torch.where(torch.lt(x, -lambd), x + lambd, middle))
    return _activation("softshrink", formula, input)


def hardshrink(input, lambd=0.5):
    return _activation(
        "hardshrink",
        lambda x: torch.where(torch.ge(x, -lambd) & torch.le(x, lambd), torch.zeros_like(x), x),
        input)


def threshold(input, threshold, value):
    # Any dtype, as in torch, both numbers converted to it first (an overflow refused); x <=
    # threshold is false for NaN, which stays.
    limit = torch.full_like(input, threshold)
    return torch.where(input <= limit, torch.full_like(input, value), input)


def softplus(input, beta=1.0, threshold=20.0):
    """softplus with any beta and threshold (scanc's own softplus is beta 1, threshold 20)."""
    def formula(x):
        scaled = x * beta
        return torch.where(torch.gt(scaled, threshold), x, torch.log1p(torch.exp(scaled)) / beta)
    return _activation("softplus", formula, input)


ACTIVATIONS = {
    "silu": silu, "mish": mish, "gelu": gelu, "elu": elu, "selu": selu, "celu": celu,
    "leaky_relu": leaky_relu, "hardtanh": hardtanh, "relu6": relu6, "hardsigmoid": hardsigmoid,
    "hardswish": hardswish, "logsigmoid": logsigmoid, "softsign": softsign,
    "tanhshrink": tanhshrink, "softshrink": softshrink, "hardshrink": hardshrink,
    "threshold": threshold,
}
