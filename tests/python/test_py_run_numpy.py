"""Module.run with NumPy inputs: every dtype, awkward sizes, any strides, compared with the
independent loops of scan_loops.py."""

import numpy as np
import pytest

import scan_loops
import scanc

NUMPY_DTYPES = {
    "bool": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "u8": np.uint8, "f16": np.float16, "f32": np.float32, "f64": np.float64,
}
SIZES = [0, 1, 2, 7, 31, 33, 127, 257, 4099]


def scan_module():
    """One program per dtype and dim: an inclusive sum (or for bool) along rows or columns."""
    parts = [
        "combine add(a | b) {\n  return a + b\n}\n",
        "combine lor(a | b) {\n  return a or b\n}\n",
        "combine affine(a1, b1 | a2, b2) {\n  return a1 * a2, a2 * b1 + b2\n}\n",
        "combine smooth_max(x1 | x2; tau) {\n  return tau * logaddexp(x1 / tau, x2 / tau)\n}\n",
    ]
    for name in NUMPY_DTYPES:
        combine = "lor" if name == "bool" else "add"
        for dim in (0, 1):
            parts.append(f"program {combine}_{name}_{dim}(x: {name}[N, T]) {{\n"
                         f"  y = scan {combine}(x) dim={dim}\n  return y\n}}\n")
    parts.append("""
program mamba(x: f32[B, L, D], dt: f32[B, L, D], A: f32[D]) {
  a = exp(dt * A)
  b = dt * x
  (_, h) = scan affine(a, b) dim=1
  return h
}

program softmax_max(x: f64[N, T], tau: f64[N, 1]) {
  y = scan smooth_max(x) dim=1 reverse with (tau)
  return y
}

program two_results(x: i64[T]) {
  y = scan add(x) dim=0
  return y, x * 2
}
""")
    return scanc.loads("".join(parts), "numpy_test.scan")


MOD = scan_module()
RNG = np.random.default_rng(1234)


def random_array(name, shape):
    """Values small enough that no integer sum below overflows (i8: |sum| <= 127 for T <= 127)."""
    if name == "bool":
        return RNG.random(shape) < 0.2
    if name in ("i8", "u8"):
        return RNG.integers(0, 2, shape).astype(NUMPY_DTYPES[name])
    if name.startswith("i"):
        return RNG.integers(-50, 50, shape).astype(NUMPY_DTYPES[name])
    return RNG.standard_normal(shape).astype(NUMPY_DTYPES[name])


def expected_sum(name, x, dim):
    combine = scan_loops.logical_or if name == "bool" else scan_loops.add
    compute = np.float32 if name == "f16" else None
    return scan_loops.scan(combine, (x,), dim, compute_dtype=compute)[0]


def fits(name, length):
    return name not in ("i8", "u8") or length <= 127


@pytest.mark.parametrize("name", list(NUMPY_DTYPES))
@pytest.mark.parametrize("dim", [0, 1])
def test_reference_backend_matches_a_sequential_loop_for_every_dtype(name, dim):
    for length in SIZES:
        if not fits(name, length):
            continue
        shape = (length, 3) if dim == 0 else (3, length)
        x = random_array(name, shape)
        combine = "lor" if name == "bool" else "add"
        (y,) = MOD.run(f"{combine}_{name}_{dim}", x, backend="reference")
        assert isinstance(y, np.ndarray)
        assert y.dtype == x.dtype and y.shape == x.shape
        # Sequential in the leaf's own type (f16 through f32): the same operations in the same
        # order, so the results agree bit for bit.
        np.testing.assert_array_equal(y, expected_sum(name, x, dim), err_msg=f"length {length}")


@pytest.mark.parametrize("name", list(NUMPY_DTYPES))
def test_default_backend_agrees_with_the_loop_within_rounding(name):
    for length in SIZES:
        if not fits(name, length):
            continue
        x = random_array(name, (5, length))
        combine = "lor" if name == "bool" else "add"
        (y,) = MOD.run(f"{combine}_{name}_1", x)
        want = expected_sum(name, x, 1)
        if name in ("f16", "f32", "f64"):
            # A parallel backend may group the sum differently: compare against its magnitude.
            scale = np.maximum(1.0, np.cumsum(np.abs(x.astype(np.float64)), axis=1))
            tol = {"f16": 4e-3, "f32": 1e-5, "f64": 1e-12}[name]
            assert np.all(np.abs(y.astype(np.float64) - want.astype(np.float64)) <= tol * scale)
        else:
            np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("make_view", [
    pytest.param(lambda a: a[::2, ::3], id="steps"),
    pytest.param(lambda a: a.T, id="transpose"),
    pytest.param(lambda a: a[::-1, 5:-1], id="negative-step"),
    pytest.param(lambda a: np.asfortranarray(a), id="fortran"),
    pytest.param(lambda a: np.broadcast_to(a[:1], a.shape), id="broadcast"),
])
@pytest.mark.parametrize("dim", [0, 1])
def test_inputs_of_any_strides_give_the_same_result_as_a_contiguous_copy(make_view, dim):
    x = make_view(RNG.standard_normal((40, 66)))
    assert not x.flags.c_contiguous or x.strides[0] == 0
    (y,) = MOD.run(f"add_f64_{dim}", x, backend="reference")
    np.testing.assert_array_equal(y, expected_sum("f64", np.ascontiguousarray(x), dim))
    (z,) = MOD.run(f"add_f64_{dim}", x)
    np.testing.assert_allclose(z, y, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["reference", "auto"])
@pytest.mark.parametrize("length", [0, 1, 2, 17, 1024, 4097])
def test_mamba_matches_the_recurrence_h_equals_a_h_plus_b(backend, length):
    bsz, d = 2, 5
    x = RNG.standard_normal((bsz, length, d)).astype(np.float32)
    dt = RNG.uniform(0.01, 0.1, (bsz, length, d)).astype(np.float32)
    a_param = -RNG.uniform(0.5, 2.0, d).astype(np.float32)
    (h,) = MOD.run("mamba", x, dt, a_param, backend=backend)
    # The recurrence itself, in float64, written out directly rather than as a scan.
    a = np.exp(dt.astype(np.float64) * a_param)
    b = dt.astype(np.float64) * x
    want = np.zeros((bsz, length, d))
    prev = np.zeros((bsz, d))
    for t in range(length):
        prev = a[:, t] * prev + b[:, t]
        want[:, t] = prev
    assert h.dtype == np.float32 and h.shape == (bsz, length, d)
    np.testing.assert_allclose(h, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("length", [0, 1, 3, 64])
def test_reverse_scan_with_a_captured_value_runs_from_the_end(length):
    n = 3
    x = RNG.standard_normal((n, length))
    tau = RNG.uniform(0.5, 2.0, (n, 1))
    (y,) = MOD.run("softmax_max", x, tau, backend="reference")
    want = np.empty_like(x)
    for i in range(n):
        acc = None
        for t in reversed(range(length)):
            v = x[i, t]
            acc = v if acc is None else tau[i, 0] * np.logaddexp(v / tau[i, 0], acc / tau[i, 0])
            want[i, t] = acc
    np.testing.assert_allclose(y, want, rtol=1e-12)


def test_several_results_come_back_as_a_tuple_in_return_order():
    x = np.arange(10, dtype=np.int64)
    ys = MOD.run("two_results", x)
    assert isinstance(ys, tuple) and len(ys) == 2
    np.testing.assert_array_equal(ys[0], np.cumsum(x))
    np.testing.assert_array_equal(ys[1], x * 2)


def test_outputs_stay_valid_after_the_module_and_inputs_are_gone():
    mod = scanc.loads("combine add(a | b) {\n return a + b\n}\n"
                      "program p(x: i32[T]) {\n y = scan add(x) dim=0\n return y\n}\n")
    x = np.arange(1000, dtype=np.int32)
    (y,) = mod.run("p", x)
    del mod, x
    import gc
    gc.collect()
    np.testing.assert_array_equal(y, np.cumsum(np.arange(1000, dtype=np.int32)))


def test_python_numbers_and_lists_become_arrays_of_the_parameters_dtype():
    mod = scanc.loads("combine add(a | b) {\n return a + b\n}\n"
                      "program p(x: f32[T], s: f32[]) {\n y = scan add(x * s) dim=0\n"
                      " return y\n}\n")
    (y,) = mod.run("p", [1, 2, 3], 2)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, [2, 6, 12])


@pytest.mark.parametrize("dtype,value", [("i32", [1.5, 2.0]), ("u8", [300]), ("i8", -129),
                                         ("bool", [0, 2]), ("i64", float("nan")),
                                         ("i32", float("inf"))])
@pytest.mark.filterwarnings("error")  # the error says it all: no NumPy cast warning beside it
def test_python_values_an_integer_parameter_cannot_hold_exactly_are_compile_errors(dtype, value):
    mod = scanc.loads("combine last(a | b) {\n return b\n}\n"
                      f"program p(x: {dtype}[T]) {{\n y = scan last(x) dim=0\n return y\n}}\n")
    with pytest.raises(scanc.CompileError, match=f"input `x`: .* {dtype}"):
        mod.run("p", value if isinstance(value, list) else [value])


@pytest.mark.parametrize("value,what", [(1.5, "number"), ([1.0, 2.0], "list")])
def test_python_values_for_a_bf16_parameter_ask_for_a_tensor(value, what):
    mod = scanc.loads("combine add(a | b) {\n return a + b\n}\n"
                      "program p(x: bf16[T]) {\n y = scan add(x) dim=0\n return y\n}\n")
    with pytest.raises(scanc.CompileError, match=f"input `x` is a Python {what}, but its dtype "
                                                 f"bf16 has no NumPy equivalent; pass a tensor"):
        mod.run("p", value)


def test_python_values_an_integer_parameter_holds_exactly_are_taken():
    mod = scanc.loads("combine add(a | b) {\n return a + b\n}\n"
                      "program p(x: u8[T]) {\n y = scan add(x) dim=0\n return y\n}\n")
    (y,) = mod.run("p", [1.0, True, 255])
    assert y.dtype == np.uint8
    np.testing.assert_array_equal(y, [1, 2, 1])  # u8 wraps, as NumPy's cumsum in u8


def test_a_single_program_module_may_be_run_without_its_name():
    mod = scanc.loads("combine add(a | b) {\n return a + b\n}\n"
                      "program p(x: i64[T]) {\n y = scan add(x) dim=0\n return y\n}\n")
    (y,) = mod.run(np.array([5, 1, 2], dtype=np.int64))
    np.testing.assert_array_equal(y, [5, 6, 8])


def test_runs_from_several_threads_at_once_all_give_correct_results():
    from concurrent.futures import ThreadPoolExecutor

    xs = [RNG.standard_normal((4, 3001)) for _ in range(8)]
    with ThreadPoolExecutor(4) as pool:
        ys = list(pool.map(lambda x: MOD.run("add_f64_1", x, backend="reference")[0], xs))
    for x, y in zip(xs, ys):
        np.testing.assert_array_equal(y, expected_sum("f64", x, 1))


def _sum_on_two_threads(x):
    return MOD.run("add_f64_1", x, backend="cpu", num_threads=2)[0]


# JAX, once another test imported it, warns at every fork; the child here runs scanc only.
@pytest.mark.filterwarnings("ignore:os.fork\\(\\) was called:RuntimeWarning")
def test_a_forked_worker_runs_on_threads_of_its_own_after_the_parent_ran_on_several():
    # A worker forked from a process whose runs used the CPU backend's threads (a
    # multiprocessing pool) inherited a pool without its workers, and waited for them forever.
    # (NumPy only: torch's own OpenMP threads do not survive a fork either.)
    import multiprocessing

    x = RNG.standard_normal((4, 400_000))
    in_parent = _sum_on_two_threads(x)
    with multiprocessing.get_context("fork").Pool(1) as pool:
        in_child = pool.apply_async(_sum_on_two_threads, (x,)).get(timeout=60)
    np.testing.assert_array_equal(in_child, in_parent)
    np.testing.assert_allclose(in_child, np.cumsum(x, axis=1), rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("backend", [b for b in ("reference", "cpu") if b in scanc.available_backends()])
def test_an_interleave_of_lengths_apart_by_more_than_one_is_the_same_error_on_every_backend(backend):
    mod = scanc.loads("program p(x: f32[N], y: f32[M]) {\n  return interleave(0, x, y)\n}\n")
    (z,) = mod.run("p", np.float32([0, 1, 2]), np.float32([10, 11]), backend=backend)
    np.testing.assert_array_equal(z, [0, 10, 1, 11, 2])
    with pytest.raises(scanc.CompileError, match=r"<string>:2:10: error: interleave needs the first "
                                                 r"tensor as long as the second or one longer "
                                                 r"along dim 0, got 3 and 5"):
        mod.run("p", np.ones(3, np.float32), np.ones(5, np.float32), backend=backend)
