"""Exported ONNX models compute what the reference computes, where ONNX's own ops differ from
scanc's semantics (docs/semantics.md) or have no kernel in onnxruntime: empty dims, integer
division by zero and INT_MIN / -1, shift counts, saturating casts, the exp/log family near 0 and
at large arguments, log2, log10 and exp2 (which ONNX lacks), 8/16-bit and bool operands, names
that collide with the exporter's own.
Each program runs on the reference (`scanc run`) and, exported by `scanc lower --emit onnx`,
through onnx.checker and onnxruntime; results must match bit for bit (integers) or to a few
ulps (floats)."""
import numpy as np
import pytest

from test_onnx import onnx, ort, scanc


def one_scan(dtype, combine, prologue="x", params="x: {dt}[T]"):
    return (f"combine c(a | b) {{\n  return {combine}\n}}\n"
            f"program p({params.format(dt=dtype)}) {{\n  l = {prologue}\n"
            f"  y = scan c(l) dim=0\n  return y\n}}\n")


def reference_and_onnx(tmp_path, text, inputs, *lower_args):
    """The reference's result and the exported model's, on the same inputs."""
    path = tmp_path / "p.scan"
    path.write_text(text)
    args = []
    for name, value in inputs.items():
        np.save(tmp_path / f"{name}.npy", value)
        args += ["--input", f"{name}={tmp_path / f'{name}.npy'}"]
    run = scanc("run", path, "--backend", "reference", *args, "--output", tmp_path / "ref.npy")
    assert run.returncode == 0, run.stderr
    model = tmp_path / "p.onnx"
    lower = scanc("lower", path, *lower_args, "--emit", "onnx", "-o", model)
    assert lower.returncode == 0, lower.stderr
    onnx.checker.check_model(onnx.load(str(model)), full_check=True)
    session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
    return np.load(tmp_path / "ref.npy"), session.run(None, inputs)[0]


HS = ("--algorithm", "hillis-steele")


@pytest.mark.parametrize("shape", [(8, 0), (3, 1, 0), (65, 2, 0)])
def test_work_efficient_models_keep_their_shape_when_another_dim_is_empty(tmp_path, shape):
    dims = ", ".join(["T"] + [f"D{i}" for i in range(1, len(shape))])
    text = one_scan("f32", "a + b", params=f"x: f32[{dims}]")
    ref, got = reference_and_onnx(tmp_path, text, {"x": np.zeros(shape, np.float32)},
                                  "--algorithm", "work-efficient", "--size", f"T={shape[0]}")
    assert got.shape == ref.shape == shape


BOOLS = np.array([True, False, True, False, False])
SHORTS = np.array([3, -2, 5, 1, 0], np.int16)


@pytest.mark.parametrize("dtype,combine,prologue,x", [
    ("u8", "a + b", "-x", np.array([1, 2, 3, 0, 250], np.uint8)),
    ("bool", "max(a, b)", "x", BOOLS),
    ("bool", "min(a, b)", "x", BOOLS),
    ("bool", "(a > b) or a", "x", BOOLS),
    ("bool", "a or b", "abs(x)", BOOLS),
    ("i16", "max(a, b)", "x", SHORTS),
    ("i16", "min(a, b)", "x", SHORTS),
    ("i16", "a + b", "where(x > 0, x, 1)", SHORTS),
    ("bool", "where(b, b, a)", "x", BOOLS),
    ("i8", "max(a, b)", "x", SHORTS.astype(np.int8)),
], ids=["u8 neg", "bool max", "bool min", "bool greater", "bool abs", "i16 max", "i16 min",
        "i16 where", "bool where", "i8 max"])
def test_ops_on_narrow_integers_and_bools_export_as_valid_models(tmp_path, dtype, combine,
                                                                  prologue, x):
    ref, got = reference_and_onnx(tmp_path, one_scan(dtype, combine, prologue), {"x": x},
                                  *HS, "--size", f"T={len(x)}")
    assert got.dtype == ref.dtype and np.array_equal(got, ref)


INT32_MIN = np.iinfo(np.int32).min


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64])
@pytest.mark.parametrize("prologue,x,y", [
    ("x / y", [7, -7, 5, 0], [0, 2, 0, 3]),
    ("x % y", [7, -7, 5, 0], [0, 2, 0, 3]),
    ("x / y", [INT32_MIN, 9, INT32_MIN], [-1, -1, 1]),
    ("x % y", [INT32_MIN, 9, -8], [-1, -1, 3]),
], ids=["divide by zero", "remainder by zero", "INT_MIN / -1", "INT_MIN % -1"])
def test_integer_division_keeps_the_reference_s_rules(tmp_path, prologue, x, y, dtype):
    lowest = np.iinfo(dtype).min  # INT32_MIN stands for the dtype's own
    x = [lowest if v == INT32_MIN else v for v in x]
    inputs = {"x": np.array(x, dtype), "y": np.array(y, dtype)}
    name = {np.int8: "i8", np.int16: "i16", np.int32: "i32", np.int64: "i64"}[dtype]
    text = one_scan(name, "a + b", prologue, params="x: {dt}[T], y: {dt}[T]")
    ref, got = reference_and_onnx(tmp_path, text, inputs, *HS, "--size", f"T={len(x)}")
    assert np.array_equal(got, ref)


INTEGERS = {"u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64}


@pytest.mark.parametrize("dtype", INTEGERS)
@pytest.mark.parametrize("op", ["<<", ">>"])
def test_shifts_of_every_integer_dtype_keep_the_reference_s_rules(tmp_path, op, dtype):
    """Counts modulo the bit width (negative ones and ones past it too), `<<` wrapping, `>>` of
    signed values arithmetic: ONNX's BitShift takes unsigned integers only."""
    t = INTEGERS[dtype]
    info, bits = np.iinfo(t), 8 * np.dtype(t).itemsize
    rng = np.random.default_rng(bits)
    edges = [info.min, info.min + 1, -1, 0, 1, info.max, info.max - 1, 5]
    x = np.concatenate([np.array(edges, np.int64).clip(info.min, info.max),
                        rng.integers(info.min, info.max, 400, endpoint=True)]).astype(t)
    counts = [0, 1, bits - 1, bits, bits + 1, 2 * bits - 1, -1, -bits, info.max, info.min]
    y = np.array([counts[i % len(counts)] for i in range(len(x) // 2)]
                 + list(rng.integers(info.min, info.max, len(x) - len(x) // 2, endpoint=True)),
                 np.int64).clip(info.min, info.max).astype(t)
    text = one_scan(dtype, "a ^ b", f"x {op} y", params="x: {dt}[T], y: {dt}[T]")
    ref, got = reference_and_onnx(tmp_path, text, {"x": x, "y": y}, *HS, "--size", f"T={len(x)}")
    assert got.dtype == ref.dtype and np.array_equal(got, ref)


@pytest.mark.parametrize("to,source", [("i32", np.float32), ("u8", np.float32),
                                       ("i64", np.float64), ("i16", np.float64)])
def test_float_to_integer_casts_saturate_and_take_nan_to_zero(tmp_path, to, source):
    x = np.array([1e30, -1e30, np.nan, 3.7, -3.7, np.inf, -np.inf, 2.0**63, 255.9], source)
    source_name = "f32" if source is np.float32 else "f64"
    text = one_scan(to, "max(a, b)", f"{to}(x)", params=f"x: {source_name}[T]")
    ref, got = reference_and_onnx(tmp_path, text, {"x": x}, *HS, "--size", f"T={len(x)}")
    assert np.array_equal(got, ref)


def near_midpoints(narrow, rng, n=3000):
    """f64 values at, just above and just below midpoints between neighbouring values of
    `narrow` (np.float16, or bf16 as the f32 values whose low 16 bits are 0), of every binade,
    subnormals and the overflow edge included, and the special values."""
    if narrow is np.float16:
        grid = rng.integers(0, 0x7C00, n, dtype=np.uint16).view(np.float16).astype(np.float64)
        up = np.nextafter(grid.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    else:
        bits = rng.integers(0, 0x7F80, n, dtype=np.uint32) << 16
        grid = bits.view(np.float32).astype(np.float64)
        up = ((bits + 0x10000) & 0xFFFFFFFF).view(np.float32).astype(np.float64)
    mid = (grid + up) / 2  # exact: one more bit than the narrow dtype's
    nudge = np.abs(mid) * 2.0**-40
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, 65520.0, 65519.99, 2.0**-25, 2.0**-25 + 2.0**-60, 1e300]
    values = np.concatenate([mid, mid + nudge, mid - nudge, grid, special])
    return np.concatenate([values, -values])


@pytest.mark.parametrize("narrow,name", [(np.float16, "f16"), ("bf16", "bf16")])
def test_f64_cast_into_f16_and_bf16_rounds_once(tmp_path, narrow, name):
    """onnxruntime casts through f32, which rounds twice at the narrow dtype's midpoints: the
    export rounds to the narrow grid first, so that every value matches the reference's one
    rounding (ties to even), signs of zero and the overflow to inf included."""
    x = near_midpoints(narrow, np.random.default_rng(9))
    text = f"program p(x: f64[T]) {{\n  return f32({name}(x))\n}}\n"
    ref, got = reference_and_onnx(tmp_path, text, {"x": x}, *HS, "--size", f"T={len(x)}")
    assert np.array_equal(got, ref, equal_nan=True)
    assert np.array_equal(np.signbit(got[~np.isnan(x)]), np.signbit(ref[~np.isnan(x)]))


@pytest.mark.parametrize("source", [np.int32, np.int64])
def test_integer_cast_into_bf16_rounds_once(tmp_path, source):
    """Integers beyond 2^24 round in f32 first on onnxruntime's way to bf16: the export converts
    them to f64 (exactly up to 2^53) and rounds from there once, as the reference does (an i64
    beyond 2^53, just past a midpoint, rounds in f64 first there too)."""
    info, rng = np.iinfo(source), np.random.default_rng(10)
    shift = rng.integers(8, 31 if source is np.int32 else 62, 2000)
    top = (rng.integers(128, 256, 2000) * 2 + 1).astype(object)  # 8 bits, then a midpoint's 1
    low = [int(rng.integers(-1, 2)) for _ in range(2000)]  # at, above or below the midpoint
    draws = [(t << int(k - 8)) + (d if k > 8 else 0) for t, k, d in zip(top, shift, low)]
    x = [v for v in draws if v <= info.max] + [info.max, info.min, info.min + 1, 0, 1, -1,
                                               2**24 + 2**16 + 1, 2**24 + 2**16]
    if source is np.int64:
        x += [2**62 + 2**54 + 1, 2**62 + 2**54, 2**62 + 2**54 - 1]
    x = np.array(x + [-v for v in x if v > info.min], source)
    name = "i32" if source is np.int32 else "i64"
    text = f"program p(x: {name}[T]) {{\n  return f32(bf16(x))\n}}\n"
    ref, got = reference_and_onnx(tmp_path, text, {"x": x}, *HS, "--size", f"T={len(x)}")
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
@pytest.mark.parametrize("fn,values", [
    ("expm1", [1e-8, 3e-8, -2e-8, 1e-3, 30.0, -40.0]),
    ("log1p", [1e-8, 3e-8, -2e-8, 1e-3, 1e30, -1.0]),
    ("softplus", [-20.0, -800.0, 1e-8, 50.0, 800.0, 1e30]),
    ("sigmoid", [-20.0, -90.0, 0.0, 1e-8, 20.0, 1e30]),
])
def test_the_exp_and_log_family_keeps_its_precision_at_both_ends(tmp_path, dtype, fn, values):
    x = np.array(values, np.float32 if dtype == "f32" else np.float64)
    ref, got = reference_and_onnx(tmp_path, one_scan(dtype, "a + b", f"{fn}(x)"), {"x": x},
                                  *HS, "--size", f"T={len(x)}")
    np.testing.assert_allclose(got, ref, rtol=8 * np.finfo(x.dtype).eps, atol=0)


@pytest.mark.parametrize("dtype,fn,values", [
    ("f32", "expm1", [80.0, 84.5, 85.0, 88.0, 88.7]),
    ("f64", "expm1", [700.0, 703.5, 704.0, 709.0, 709.7]),
    ("f32", "log1p", [1e36, 4e36, 1e38, 3.4e38]),
    ("f64", "log1p", [1e305, 3e305, 1e308, 1.7e308]),
])
def test_expm1_and_log1p_stay_finite_wherever_their_results_are(tmp_path, dtype, fn, values):
    x = np.array(values, np.float32 if dtype == "f32" else np.float64)
    ref, got = reference_and_onnx(tmp_path, one_scan(dtype, "max(a, b)", f"{fn}(x)"), {"x": x},
                                  *HS, "--size", f"T={len(x)}")
    assert np.isfinite(ref).all()
    np.testing.assert_allclose(got, ref, rtol=8 * np.finfo(x.dtype).eps, atol=0)


def ulps_from_truth(got, x, fn):
    """|got - fn(x)| in ulps of got's dtype, fn computed in long double and rounded."""
    with np.errstate(all="ignore"):
        want = fn(x.astype(np.longdouble)).astype(got.dtype)
        ulp = np.spacing(np.abs(want)).astype(np.longdouble)
        d = np.abs(got.astype(np.longdouble) - want.astype(np.longdouble)) / ulp
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    return np.where(same, 0.0, d)


def base_log_inputs(fn, dtype, rng):
    """Positive values of every binade (subnormals too), the powers of two and of ten, and the
    special values for log2 and log10; for exp2 draws past both ends of its range and every
    integer within it."""
    lo, hi = (-149, 128) if dtype == np.float32 else (-1074, 1024)
    special = [0.0, -0.0, -1.0, np.inf, -np.inf, np.nan]
    if fn == "exp2":
        draws = rng.uniform(1.05 * lo, 1.05 * hi, 20000)
        return np.concatenate([draws, np.arange(lo, hi), special]).astype(dtype)
    draws = np.ldexp(rng.uniform(0.5, 1.0, 20000), rng.integers(lo + 1, hi, 20000))
    tens = 10.0 ** np.arange(11 if dtype == np.float32 else 23)
    return np.concatenate([draws, np.ldexp(1.0, np.arange(lo, hi)), tens, special]).astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("fn,numpy_fn", [("log2", np.log2), ("log10", np.log10), ("exp2", np.exp2)])
def test_log2_log10_and_exp2_export_within_four_ulps(tmp_path, dtype, fn, numpy_fn):
    """ONNX has none of them: Log times 1 / ln 2 or 1 / ln 10 rounds twice (on onnxruntime 1.32
    log2 within 2 ulps, log10 within 3 (f32) or 4 (f64), not exact at every power of two), and
    Pow(2, x) is the runtime's pow (within 1 ulp there, exact at integers). The reference stays
    within 1 ulp and exact at powers of two."""
    x = base_log_inputs(fn, dtype, np.random.default_rng(2))
    name = "f32" if dtype == np.float32 else "f64"
    text = f"program p(x: {name}[T]) {{\n  return {fn}(x)\n}}\n"
    ref, got = reference_and_onnx(tmp_path, text, {"x": x}, *HS, "--size", f"T={len(x)}")
    assert ulps_from_truth(ref, x, numpy_fn).max() <= 1
    assert ulps_from_truth(got, x, numpy_fn).max() <= 4
    if fn == "exp2":  # exact at every integer whose power of two is a float
        k = np.arange(*((-149, 128) if dtype == np.float32 else (-1074, 1024)))
        on_integers = np.isin(x, k)
        assert np.array_equal(got[on_integers], np.ldexp(dtype(1), x[on_integers].astype(int)))
    if fn == "log2":
        powers = (x > 0) & np.isfinite(x) & (np.frexp(x)[0] == 0.5)
        assert np.array_equal(ref[powers], np.frexp(x[powers])[1] - 1)


def test_logcumsumexp_keeps_tiny_increments(tmp_path):
    x = np.array([0.0, -20.0, -30.0, -40.0], np.float32)
    ref, got = reference_and_onnx(tmp_path, one_scan("f32", "logaddexp(a, b)"), {"x": x},
                                  *HS, "--size", "T=4")
    assert ref[1] > 0  # 1 + e^-20 is 1 in f32: a log1p-free formula gives 0
    np.testing.assert_allclose(got, ref, rtol=8 * np.finfo(np.float32).eps, atol=0)



SYMBOLIC_SLICES = """combine add(a | b) {
  return a + b
}
program p(x: f32[N, T], z: f32[K]) {
  u = slice(x, 1, 1, T - 1)
  v = slice(x, 1, floordiv(T, 2), max(T - 3, K), 2)
  q = slice(x, 1, min(K, T) - 2, 2 * T - K)
  y = scan add(concat(1, u, v, q)) dim=1
  return y
}
"""


@pytest.mark.parametrize("length,k", [(0, 0), (1, 3), (2, 0), (5, 16), (17, 1), (33, 16),
                                      (64, 3)])
def test_slice_bounds_written_in_sizes_are_computed_from_the_inputs_shapes(tmp_path, length, k):
    # min(K, T) - 2 is below 0 for short inputs: the IR clamps it to 0 where ONNX would count
    # it from the end.
    rng = np.random.default_rng(length)
    inputs = {"x": rng.standard_normal((2, length)).astype(np.float32),
              "z": rng.standard_normal(k).astype(np.float32)}
    ref, got = reference_and_onnx(tmp_path, SYMBOLIC_SLICES, inputs, *HS, "--bound", "T=64",
                                  "--bound", "K=16")
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)

@pytest.mark.parametrize("param,result", [("const_1", "y"), ("x", "t_5"), ("merged_3", "const_0")])
def test_user_names_never_collide_with_the_exporter_s_own(tmp_path, param, result):
    text = (f"combine c(a | b) {{\n  return a + b\n}}\n"
            f"program p({param}: f32[T]) {{\n  {result} = scan c({param}) dim=0\n"
            f"  return {result}\n}}\n")
    x = np.arange(8, dtype=np.float32)
    ref, got = reference_and_onnx(tmp_path, text, {param: x}, "--algorithm", "work-efficient",
                                  "--size", "T=8")
    assert np.array_equal(got, ref)


@pytest.mark.parametrize("example,combine", [
    ("welford.scan", None), ("matmul2x2.scan", None),
    (None, "combine k(a1, b1 | a2, b2) {\n  return a1 + a2, b1 * 0\n}\n"),
])
def test_programs_that_pad_nothing_lower_with_f16_leaves_or_a_combine_that_zeroes(
        tmp_path, example, combine):
    from test_onnx import EXAMPLES
    if example:
        text = (EXAMPLES / example).read_text().replace("f32[", "f16[")
    else:
        text = combine + "program p(x: f32[T], y: f32[T]) {\n  (s, z) = scan k(x, y) dim=0\n" \
                         "  return s, z\n}\n"
    path = tmp_path / "p.scan"
    path.write_text(text)
    for algorithm in ("hillis-steele", "work-efficient"):
        lower = scanc("lower", path, "--algorithm", algorithm, "--size", "T=9", "--emit", "onnx",
                      "-o", tmp_path / "p.onnx")
        assert lower.returncode == 0, lower.stderr
        onnx.checker.check_model(onnx.load(str(tmp_path / "p.onnx")), full_check=True)
