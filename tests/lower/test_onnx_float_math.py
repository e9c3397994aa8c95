"""scanc's floating-point functions exported to ONNX (docs/semantics.md): ONNX's Erf and Atan at
f32, the reference's formulas in graph arithmetic for every erfc (ONNX has no Erfc, and 1 - Erf
loses the tail) and for f64 erf, atan, sin and cos (onnxruntime has no f64 Erf or Atan, and its
f64 Sin and Cos are hundreds of ulps off), atan2 from atan of |y| / x with the quadrant, signed
zeros and infinities set around it, and log1p and expm1 with the sign of zero. Each program runs
on the reference and through onnxruntime, against Python's math.erf and math.erfc (f32 results;
the f64 reference is checked against long double in tests/ir, and glibc's f64 erfc, which
math.erfc calls, is itself several ulps off), the reference itself, and NumPy's long double
arctan and arctan2."""
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


def export(tmp_path, dtype, body, inputs):
    name = "f32" if dtype == np.float32 else "f64"
    params = ", ".join(f"{k}: {name}[T]" for k in inputs)
    text = f"program p({params}) {{\n  return {body}\n}}\n"
    n = len(next(iter(inputs.values())))
    return reference_and_onnx(tmp_path, text, inputs, *HS, "--size", f"T={n}")


def ulps_from(got, ref):
    """|got - ref| in ulps of ref (0 where both are NaN)."""
    with np.errstate(all="ignore"):
        d = np.abs(got.astype(np.longdouble) - ref) / np.spacing(np.abs(ref))
    return np.where((got == ref) | (np.isnan(got) & np.isnan(ref)), 0.0, d)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_atan_exports_as_onnxs_atan_at_f32_and_the_references_formula_at_f64(tmp_path, dtype):
    """onnxruntime 1.32: Atan within 3.2 ulp at f32; f64 (no Atan kernel there) is the
    reference's formula in graph arithmetic, which gives the reference's bits, sign of zero
    included. The reference stays within 1 ulp."""
    x = values(dtype, np.random.default_rng(3))
    ref, got = export(tmp_path, dtype, "atan(x)", {"x": x})
    assert ulps_from_truth(ref, x, np.arctan).max() <= 1
    if dtype == np.float32:
        assert ulps_from_truth(got, x, np.arctan).max() <= 4
    else:
        assert np.array_equal(got, ref, equal_nan=True)
        assert np.array_equal(np.signbit(got), np.signbit(ref))


def erf_values(dtype, rng):
    """values(), and a fine sweep of [-30, 30]: erfc's every interval and its far tail, which
    underflows at 10.1 in f32 and 27.3 in f64."""
    return np.concatenate([values(dtype, rng), np.linspace(-30, 30, 60001).astype(dtype)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("fn,truth", [("erf", erf_truth), ("erfc", erfc_truth)])
def test_erf_and_erfc_export_with_their_tails_and_signed_zeros(tmp_path, dtype, fn, truth):
    """f32 erf is ONNX's Erf (onnxruntime 1.32: within 1 ulp); f32 erfc and f64 erf and erfc are
    the reference's formulas in graph arithmetic, erfc's exponent through the runtime's Exp: f32
    erfc gives the reference's bits, f64 erf stays within 1 ulp of it and f64 erfc within 4 (3
    measured), far tail and subnormal results included. erf keeps the sign of zero. The
    reference stays within 1 ulp of the truth."""
    x = erf_values(dtype, np.random.default_rng(4))
    ref, got = export(tmp_path, dtype, f"{fn}(x)", {"x": x})
    if dtype == np.float32:
        assert ulps_from_truth(ref, x, truth).max() <= 1
    bound = {("erf", np.float32): 1, ("erfc", np.float32): 0, ("erf", np.float64): 1, ("erfc", np.float64): 4}
    assert ulps_from(got, ref).max() <= bound[fn, dtype]
    assert np.array_equal(np.signbit(got), np.signbit(ref))
    if fn == "erfc":
        far = (x > 6) & (ref > 0)
        assert far.sum() > 1000 and np.all(got[far] > 0)


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
    rounds once before it) and 2 at f64 (scanc's atan; 1.34 measured). The reference stays
    within 1 ulp."""
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
    assert ulps(got).max() <= (4 if dtype == np.float32 else 2)


def trig_values(dtype, rng):
    """values(), draws from [-10, 10], the multiples of pi/2 to +-20 pi (sin(pi) is 1.2e-16,
    not 0), and both sides of the formula's limit 2^20."""
    return np.concatenate([values(dtype, rng), rng.uniform(-10, 10, 20000), np.arange(-40, 41) * (np.pi / 2),
                           [2.0**20, np.nextafter(2.0**20, 4.0**20), -(2.0**20), 1e300]]).astype(dtype)


@pytest.mark.parametrize("fn", ["sin", "cos"])
def test_f64_sin_and_cos_export_as_the_references_formula(tmp_path, fn):
    """onnxruntime's f64 Sin and Cos are hundreds of ulps off (sin(pi) is -0 there): within
    |x| <= 2^20 the export is the reference's reduction and kernels in graph arithmetic, which
    gives the reference's bits, sign of zero included; beyond, both take a library's function
    (within 2 ulps of each other)."""
    x = trig_values(np.float64, np.random.default_rng(7))
    ref, got = export(tmp_path, np.float64, f"{fn}(x)", {"x": x})
    within = np.abs(x) <= 2.0**20
    assert np.array_equal(got[within], ref[within], equal_nan=True)
    assert np.array_equal(np.signbit(got[within]), np.signbit(ref[within]))
    assert ulps_from(got[~within], ref[~within]).max() <= 2
    if fn == "sin":
        assert got[x == np.float64(np.pi)][0] == np.sin(np.pi)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("fn", ["log1p", "expm1"])
def test_log1p_and_expm1_keep_the_sign_of_zero(tmp_path, dtype, fn):
    """x itself where 1 + x or e^x rounds to 1 comes through Where's false branch (onnxruntime
    gives +0 for a -0 in its true branch)."""
    x = np.array([-0.0, 0.0, -1e-30, 1e-30, -0.5, 0.5], dtype)
    ref, got = export(tmp_path, dtype, f"{fn}(x)", {"x": x})
    assert np.array_equal(np.signbit(got), np.signbit(x))
    np.testing.assert_allclose(got, ref, rtol=4 * np.finfo(dtype).eps, atol=0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_tanh_exports_as_the_references_formula(tmp_path, dtype):
    """ONNX's Tanh is 81 ulps off on f32 subnormals and reaches +-1 early; the export is the
    reference's formula with the runtime's Exp: f32 gives the reference's bits, f64 stays within
    2 ulps of it, and the sign of zero is kept."""
    rng = np.random.default_rng(8)
    x = np.concatenate([values(dtype, rng), rng.uniform(-20, 20, 20000), [9.0, -17.897, 0.625, 2.0**-10]]).astype(dtype)
    ref, got = export(tmp_path, dtype, "tanh(x)", {"x": x})
    assert ulps_from(got, ref).max() <= (0 if dtype == np.float32 else 2)
    assert np.array_equal(np.signbit(got[~np.isnan(x)]), np.signbit(ref[~np.isnan(x)]))
