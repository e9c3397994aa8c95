"""scanc's dtypes as torch names them, and torch's type promotion over them (c10's
result_type), read at import time: tracing runs inside Dynamo, which folds these tables to
constants but would trace torch.promote_types calls."""

from __future__ import annotations

import torch

from .composites import _FLOATS

DTYPE_NAMES = {  # torch dtype -> scanc dtype name
    torch.bool: "bool", torch.int8: "i8", torch.int16: "i16", torch.int32: "i32",
    torch.int64: "i64", torch.uint8: "u8", torch.float16: "f16", torch.bfloat16: "bf16",
    torch.float32: "f32", torch.float64: "f64",
}

# torch's type promotion (c10's result_type) over scanc's dtypes, precomputed outside Dynamo.
_PROMOTE = {(a, b): torch.promote_types(a, b) for a in DTYPE_NAMES for b in DTYPE_NAMES}
_CAN_CAST = {(a, b): torch.can_cast(a, b) for a in DTYPE_NAMES for b in DTYPE_NAMES}
# The numbers torch converts to each integer dtype without an overflow error (c10's
# checked_convert: an unsigned dtype takes negatives down to minus its largest, wrapping them).
_INT_RANGE = {d: (torch.iinfo(d).min or -torch.iinfo(d).max, torch.iinfo(d).max)
              for d in DTYPE_NAMES if d not in _FLOATS and d != torch.bool}


def _promote(a: torch.dtype, b: torch.dtype) -> torch.dtype:
    promoted = _PROMOTE.get((a, b))
    if promoted is None:  # a captured tensor of a dtype scanc lacks (leaves are checked before)
        bad = a if a not in DTYPE_NAMES else b
        raise ValueError(f"associative_scan: dtype {bad} is not supported by scanc")
    return promoted


def _join(higher, lower):
    # c10's combine_categories: a lower rank decides only where its category is higher.
    if higher is None or lower is None:
        return lower if higher is None else higher
    if higher in _FLOATS:
        return higher
    if higher == torch.bool or lower in _FLOATS:
        return _promote(higher, lower)
    return higher
