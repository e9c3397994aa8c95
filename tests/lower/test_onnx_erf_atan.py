"""erf, erfc, atan and atan2 exported to ONNX (docs/semantics.md): ONNX's Erf and Atan, whose
f64 kernels onnxruntime lacks (f64 goes through f32, to f32's precision), erfc as 1 - Erf (its
tail is lost), atan2 from Atan of |y| / x with the quadrant, signed zeros and infinities set
around it. Each program runs on the reference and through onnxruntime, against Python's
math.erf and math.erfc (f32 results; the f64 reference is checked against long double in
tests/ir, and glibc's f64 erfc, which math.erfc calls, is itself several ulps off) and NumPy's
long double arctan and arctan2."""
import math

import numpy as np
import pytest

from test_onnx_semantics import HS, reference_and_onnx, ulps_from_truth

ERF = np.vectorize(math.erf, otypes=[np.float64])
ERFC = np.vectorize(math.erfc, otypes=[np.float64])


def erf_truth(x):
    return ERF(x.astype(np.float64))


def erfc_truth(x):
    return ERFC(x.astype(np.float64))


def values(dtype, rng, n=20000):
    """Every binade of either sign (subnormals too), draws from [-8, 8], and the special values."""
    lo, hi = (-149, 128) if dtype == np.float32 else (-1074, 1024)
    binades = np.ldexp(rng.uniform(0.5, 1.0, n), rng.integers(lo + 1, hi, n)) * rng.choice([-1, 1], n)
    special = [0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan]
    return np.concatenate([binades, rng.uniform(-8, 8, n), special]).astype(dtype)


def relative_error(got, want):
    """|got - want| / |want| where want, rounded to got's dtype, is a normal number; 0 where got
    is that rounding or both are NaN."""
    rounded = want.astype(got.dtype)
    with np.errstate(all="ignore"):
        d = np.abs(got.astype(np.longdouble) - want) / np.abs(want)
    normal = np.abs(rounded) >= np.finfo(got.dtype).tiny
    same = (got == rounded) | (np.isnan(got) & np.isnan(want))
    return np.where(same | ~normal, 0.0, d)


def export(tmp_path, dtype, body, inputs):
    name = "f32" if dtype == np.float32 else "f64"
    params = ", ".join(f"{k}: {name}[T]" for k in inputs)
    text = f"program p({params}) {{\n  return {body}\n}}\n"
    n = len(next(iter(inputs.values())))
    return reference_and_onnx(tmp_path, text, inputs, *HS, "--size", f"T={n}")


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("fn,truth,f32_ulps", [("erf", erf_truth, 2), ("atan", np.arctan, 4)])
def test_erf_and_atan_export_as_onnxs_own_ops(tmp_path, dtype, fn, truth, f32_ulps):
    """onnxruntime 1.32: Erf within 0.9 ulp and Atan within 3.2 at f32; f64 computes in f32
    (within 2^-21 relative where the result is normal), except below 2^-28, where x 2/sqrt(pi)
    and x keep f64's precision and the sign of zero. The reference stays within 1 ulp."""
    x = values(dtype, np.random.default_rng(3))
    ref, got = export(tmp_path, dtype, f"{fn}(x)", {"x": x})
    if dtype == np.float32 or fn == "atan":
        assert ulps_from_truth(ref, x, truth).max() <= 1
    if dtype == np.float32:
        assert ulps_from_truth(got, x, truth).max() <= f32_ulps
        return
    with np.errstate(all="ignore"):
        want = truth(x.astype(np.longdouble)).astype(np.longdouble)
    assert relative_error(got, want).max() <= 2.0 ** -21
    tiny = np.abs(x) < 2.0 ** -28
    assert ulps_from_truth(got[tiny], x[tiny], truth).max() <= 1
    assert np.array_equal(np.signbit(got[x == 0]), np.signbit(x[x == 0]))


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_erfc_exports_as_one_minus_erf_which_loses_the_tail(tmp_path, dtype):
    """1 - Erf is within an ulp of 1 of erfc (absolute), and 0 where Erf rounds to 1 (from 3.9 at
    f32, where erfc is 3e-8, and in f32 for f64 too); the reference keeps erfc's relative
    precision to the subnormals."""
    x = values(dtype, np.random.default_rng(4))
    ref, got = export(tmp_path, dtype, "erfc(x)", {"x": x})
    if dtype == np.float32:
        assert ulps_from_truth(ref, x, erfc_truth).max() <= 1
    with np.errstate(all="ignore"):
        error = np.abs(got.astype(np.float64) - erfc_truth(x))
    finite = np.isfinite(x)
    assert error[finite].max() <= 2.0 ** -23
    tail = (x > 4) & (x < 9)
    assert tail.any() and np.all(got[tail] == 0) and np.all(ref[tail] > 0)


def atan2_values(dtype, rng, n=20000):
    """y and x: signed zeros and infinities paired with each other and with +-1, +-3, the
    smallest subnormal, the largest float and NaN (the first `specials` pairs), then pairs of
    every binade and sign, and pairs whose quotient is near 1."""
    special = np.array([0.0, -0.0, np.inf, -np.inf], dtype)
    other = np.array([1.0, -1.0, 3.0, -3.0, np.finfo(dtype).smallest_subnormal, np.finfo(dtype).max, np.nan], dtype)
    everything = np.concatenate([special, other])
    ys = np.concatenate([np.repeat(special, len(everything)), np.tile(everything, len(special))])
    xs = np.concatenate([np.tile(everything, len(special)), np.repeat(special, len(everything))])
    lo, hi = (-149, 128) if dtype == np.float32 else (-1074, 1024)
    draw = lambda: np.ldexp(rng.uniform(0.5, 1.0, n), rng.integers(lo + 1, hi, n)) * rng.choice([-1, 1], n)
    near = rng.uniform(-4, 4, n)
    specials = len(ys)
    ys = np.concatenate([ys, draw(), near * rng.uniform(0.5, 2.5, n)])
    xs = np.concatenate([xs, draw(), near])
    return ys.astype(dtype), xs.astype(dtype), specials


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_atan2_exports_with_cs_quadrants_signed_zeros_and_infinities(tmp_path, dtype):
    """atan2 from Atan(|y| / x), plus pi where x's sign bit is set, 0 or pi where y is +-0, pi/2
    or pi/4 where the quotient or both operands are infinite, then y's sign: wherever either
    operand is a signed zero or an infinity, the C library's (long double) value rounded, sign
    of zero included, and NaN for NaN; elsewhere within 4 ulps at f32 (Atan's 3.2, and y / x
    rounds once before it) and 2^-21 relative at f64 (Atan in f32) where the result is normal.
    The reference stays within 1 ulp."""
    y, x, specials = atan2_values(dtype, np.random.default_rng(5))
    ref, got = export(tmp_path, dtype, "atan2(y, x)", {"y": y, "x": x})
    with np.errstate(all="ignore"):
        want = np.arctan2(y.astype(np.longdouble), x.astype(np.longdouble))
        rounded = want.astype(dtype)
        ulps = lambda r: np.where((r == rounded) | (np.isnan(r) & np.isnan(want)), 0.0,
                                  np.abs(r - want) / np.spacing(np.abs(rounded)))
    assert ulps(ref).max() <= 1
    edge = slice(0, specials)
    assert np.array_equal(got[edge], rounded[edge], equal_nan=True)
    assert np.array_equal(np.signbit(got[edge]), np.signbit(rounded[edge]))
    assert np.array_equal(np.isnan(got), np.isnan(want))
    if dtype == np.float32:
        assert ulps(got).max() <= 4
    else:
        assert relative_error(got, want).max() <= 2.0 ** -21
