"""Every example through the CLI on awkward sizes, against an independent NumPy computation of
the same recurrence written as a plain loop in float64 (int64 for integers)."""
from dataclasses import dataclass
from typing import Callable

import json
import math
import os

import numpy as np
import pytest

from scanc_cli import EXAMPLES, save_inputs, scanc

N = 3  # independent rows
LENGTHS = [0, 1, 2, 7, 33, 100, 257]  # the scanned length
BACKEND = os.environ.get("SCANC_BACKEND", "auto")  # which backend the examples run on


@dataclass
class Example:
    file: str
    make_inputs: Callable  # (rng, T) -> {param name: array}, in parameter order
    expected: Callable  # (inputs as float64/int64) -> [result, ...]
    random_sizes: str = "N=5,T=9"


def uniform(rng, shape, low=-1.0, high=1.0, dtype=np.float32):
    return rng.uniform(low, high, size=shape).astype(dtype)


def cumsum(x):
    y, acc = np.zeros_like(x), np.zeros(x.shape[0])
    for t in range(x.shape[1]):
        acc = acc + x[:, t]
        y[:, t] = acc
    return [y]


def cummax(x):
    y = np.zeros_like(x)
    for t in range(x.shape[0]):
        y[t] = x[t] if t == 0 else np.maximum(y[t - 1], x[t])
    return [y]


def logcumsumexp(x, logaddexp=np.logaddexp):
    y, acc = np.zeros_like(x), np.full(x.shape[0], -np.inf)
    for t in range(x.shape[1]):
        acc = logaddexp(acc, x[:, t])
        y[:, t] = acc
    return [y]


def logcumsumexp2(x):
    return logcumsumexp(x, np.logaddexp2)


def normal_logcdf(x):
    """log Phi(x) = log(erfc(-x / sqrt 2) / 2) by Python's math.erfc, summed along rows."""
    log_cdf = np.vectorize(lambda v: math.log(math.erfc(-v / math.sqrt(2)) / 2))(x) if x.size else x
    return cumsum(log_cdf)


def mamba(x, dt, A):
    h, out = np.zeros((x.shape[0], x.shape[2])), np.zeros_like(x)
    for t in range(x.shape[1]):
        h = np.exp(dt[:, t, :] * A) * h + dt[:, t, :] * x[:, t, :]
        out[:, t, :] = h
    return [out]


def recurrence(p, q):
    y, y_prev = np.zeros_like(p), np.zeros_like(p)
    last, before = np.ones(p.shape[0]), np.zeros(p.shape[0])  # y[-1] = 1, y[-2] = 0
    for t in range(p.shape[1]):
        last, before = p[:, t] * last + q[:, t] * before, last
        y[:, t], y_prev[:, t] = last, before
    return [y, y_prev]


def running_stats(x):
    mean, var = np.zeros_like(x), np.zeros_like(x)
    for t in range(x.shape[1]):
        window = x[:, : t + 1]
        mean[:, t] = window.mean(axis=1)
        var[:, t] = ((window - mean[:, t : t + 1]) ** 2).mean(axis=1)
    return [mean, var]


def segmented_sum(start, x):
    y, acc = np.zeros_like(x), np.zeros(x.shape[0], dtype=np.int64)
    for t in range(x.shape[1]):
        acc = np.where(start[:, t] | (t == 0), x[:, t], acc + x[:, t])
        y[:, t] = acc
    return [y]


def smooth_max(x, tau):
    y, tau = np.zeros_like(x), tau[:, 0]
    for t in reversed(range(x.shape[1])):  # reverse: the later element is the left operand
        y[:, t] = x[:, t] if t == x.shape[1] - 1 else \
            tau * np.logaddexp(y[:, t + 1] / tau, x[:, t] / tau)
    return [y]


def causal_softmax(x, v):
    """Softmax-weighted averages of v and log-sum-exps over each prefix, from cumulative sums
    of exp(x - the row's largest x) in float64 (exact enough for scores within +-60)."""
    top = np.max(x, axis=1, keepdims=True) if x.size else 0
    e = np.exp(x - top)
    s, w = np.cumsum(e, axis=1), np.cumsum(e * v, axis=1)
    return [w / s, np.log(s) + top]


EXAMPLE_LIST = [
    Example("cumsum.scan", lambda rng, T: {"x": uniform(rng, (N, T))}, cumsum),
    Example("cummax.scan", lambda rng, T: {"x": uniform(rng, (T, N))}, cummax),
    Example("logcumsumexp.scan",
            lambda rng, T: {"x": uniform(rng, (N, T), -20, 20, np.float64)}, logcumsumexp),
    Example("logcumsumexp2.scan",
            lambda rng, T: {"x": uniform(rng, (N, T), -200, 200)}, logcumsumexp2),
    Example("normal_logcdf.scan",
            lambda rng, T: {"x": uniform(rng, (N, T), -13, 4)}, normal_logcdf),
    Example("mamba.scan", lambda rng, T: {
        "x": uniform(rng, (2, T, 5)),
        "dt": uniform(rng, (2, T, 5), 0.0, 0.5),
        "A": uniform(rng, (5,), -2.0, 0.5),
    }, mamba, "B=2,L=9,D=3"),
    Example("matmul2x2.scan", lambda rng, T: {
        "p": uniform(rng, (N, T)), "q": uniform(rng, (N, T), -0.5, 0.5)}, recurrence),
    Example("welford.scan", lambda rng, T: {"x": uniform(rng, (N, T), -3, 5)}, running_stats),
    Example("segmented_sum.scan", lambda rng, T: {
        "start": rng.random((N, T)) < 0.2,
        "x": rng.integers(-1000, 1000, size=(N, T), dtype=np.int32),
    }, segmented_sum),
    # Scores 120 apart: exp of their differences overflows f32 unless the combine rescales.
    Example("online_softmax.scan", lambda rng, T: {
        "x": uniform(rng, (N, T), -60, 60), "v": uniform(rng, (N, T))}, causal_softmax),
    Example("smooth_max.scan", lambda rng, T: {
        "x": uniform(rng, (N, T), -4, 4), "tau": uniform(rng, (N, 1), 0.25, 2.0)}, smooth_max),
]


def widened(a):
    """float64 / int64 / bool copy for the reference computation."""
    if a.dtype == np.bool_:
        return a.copy()
    return a.astype(np.float64 if np.issubdtype(a.dtype, np.floating) else np.int64)


def assert_matches(got, want, dtype, what):
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}, expected {dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if not np.issubdtype(dtype, np.floating):
        np.testing.assert_array_equal(got, want.astype(dtype), err_msg=what)
        return
    rtol = 1e-10 if dtype == np.float64 else 2e-4
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale, err_msg=what)
    zeros = (got == 0) & (want == 0)  # of the loop's sign (welford's first variance was -0)
    np.testing.assert_array_equal(np.signbit(got[zeros]), np.signbit(want[zeros]), err_msg=what)


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("example", EXAMPLE_LIST, ids=lambda e: e.file)
def test_example_matches_a_plain_loop_over_the_recurrence(example, length, tmp_path):
    rng = np.random.default_rng(1000 * length + len(example.file))
    inputs = example.make_inputs(rng, length)
    want = example.expected(*[widened(a) for a in inputs.values()])
    outputs = [tmp_path / f"out{i}.npy" for i in range(len(want))]
    result_dtype = next(a.dtype for a in reversed(list(inputs.values())) if a.dtype != np.bool_)

    output_args = [arg for path in outputs for arg in ("--output", path)]
    proc = scanc("run", EXAMPLES / example.file, "--backend", BACKEND,
                 *save_inputs(tmp_path, inputs), *output_args)
    assert proc.returncode == 0, proc.stderr
    for i, (path, w) in enumerate(zip(outputs, want)):
        assert_matches(np.load(path), w, result_dtype, f"{example.file} T={length} result {i}")


EXAMPLE_FILES = sorted(p.name for p in EXAMPLES.glob("*.scan"))


def test_every_example_file_is_covered_by_a_reference_loop():
    assert EXAMPLE_FILES == sorted(e.file for e in EXAMPLE_LIST)


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_check_passes_on_every_example(name):
    proc = scanc("check", EXAMPLES / name)
    assert proc.returncode == 0, proc.stderr
    assert "associative (" in proc.stdout
    assert "not associative" not in proc.stdout + proc.stderr


@pytest.mark.parametrize("name,pattern", [("cumsum.scan", "sum"), ("cummax.scan", "max"),
                                          ("mamba.scan", "affine")])
def test_check_names_the_recognized_pattern(name, pattern):
    proc = scanc("check", EXAMPLES / name)
    assert proc.returncode == 0, proc.stderr
    assert f"pattern: {pattern}" in proc.stdout


@pytest.mark.parametrize("name", EXAMPLE_FILES)
def test_print_is_idempotent_on_every_example(name, tmp_path):
    first = scanc("print", EXAMPLES / name)
    assert first.returncode == 0, first.stderr
    assert "program" in first.stdout
    printed = tmp_path / name
    printed.write_text(first.stdout)
    second = scanc("print", printed)
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout


@pytest.mark.parametrize("example", EXAMPLE_LIST, ids=lambda e: e.file)
def test_printed_text_computes_the_same_results(example, tmp_path):
    printed = tmp_path / example.file
    printed.write_text(scanc("print", EXAMPLES / example.file).stdout)
    summary = scanc("run", EXAMPLES / example.file, "--random", example.random_sizes)
    assert summary.returncode == 0, summary.stderr
    num_results = len(summary.stdout.splitlines())
    results = []
    for i, path in enumerate((EXAMPLES / example.file, printed)):
        outputs = [tmp_path / f"run{i}_out{k}.npy" for k in range(num_results)]
        proc = scanc("run", path, "--random", example.random_sizes, "--seed", 7,
                     *[arg for out in outputs for arg in ("--output", out)])
        assert proc.returncode == 0, proc.stderr
        results.append([np.load(out) for out in outputs])
    for original, reprinted in zip(*results):
        np.testing.assert_array_equal(reprinted, original)


def test_run_without_outputs_prints_one_summary_per_result():
    proc = scanc("run", EXAMPLES / "matmul2x2.scan", "--random", "N=2,T=3")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2
    assert all("f32[2, 3]" in line for line in lines)


def test_random_inputs_depend_only_on_the_seed(tmp_path):
    def run(seed, name):
        out = tmp_path / name
        proc = scanc("run", EXAMPLES / "cumsum.scan", "--random", "N=4,T=33", "--seed", seed,
                     "--output", out)
        assert proc.returncode == 0, proc.stderr
        return np.load(out)

    first, again, other = run(3, "a.npy"), run(3, "b.npy"), run(4, "c.npy")
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)
    # floats are uniform in [-1, 1]: the first column is the input itself
    assert np.all(np.abs(first[:, 0]) <= 1) and np.any(first[:, 0] != 0)


def run_ranged(tmp_path, *ranges, seed=0):
    """x: f32[N], k: i32[N], m: u8[N], b: bool[N] drawn by `--random N=4001` with `ranges`."""
    path = tmp_path / "inputs.scan"
    path.write_text("program p(x: f32[N], k: i32[N], m: u8[N], b: bool[N]) {\n  return x, k, m, b\n}\n")
    outs = [tmp_path / f"{name}.npy" for name in "xkmb"]
    args = [a for r in ranges for a in ("--range", r)]
    proc = scanc("run", path, "--random", "N=4001", "--seed", seed, *args, *[a for o in outs for a in ("--output", o)])
    assert proc.returncode == 0, proc.stderr
    return [np.load(o) for o in outs]


def test_range_draws_each_named_input_within_its_own_interval(tmp_path):
    x, k, m, b = run_ranged(tmp_path, "x=0.001:0.1", "k=-3:3", "m=250:255")
    assert x.min() >= 0.001 and x.max() < 0.1 and x.max() - x.min() > 0.09  # spread over the interval
    assert set(np.unique(k)) == set(range(-3, 4))  # integers: both ends included
    assert set(np.unique(m)) == set(range(250, 256))
    assert set(np.unique(b)) == {False, True}  # an input without a range keeps the default


def test_range_of_one_value_gives_that_value_everywhere(tmp_path):
    x, k, _, _ = run_ranged(tmp_path, "x=-2.5:-2.5", "k=7:7")
    assert np.all(x == -2.5) and np.all(k == 7)


def test_ranged_inputs_depend_only_on_the_seed(tmp_path):
    first = run_ranged(tmp_path, "x=5:6", seed=1)
    again = run_ranged(tmp_path, "x=5:6", seed=1)
    other = run_ranged(tmp_path, "x=5:6", seed=2)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])


def test_bench_names_the_ranges_it_drew_from():
    proc = scanc("bench", EXAMPLES / "mamba.scan", "--backend", "cpu", "--random", "B=1,L=64,D=8",
                 "--range", "dt=0.001:0.1", "--range", "A=-16:-1", "--seconds", "0.05", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["ranges"] == {"dt": [0.001, 0.1], "A": [-16.0, -1.0]} and report["ok"]


def test_a_program_of_constant_sizes_runs_on_random_inputs_with_random_alone(tmp_path):
    path = tmp_path / "constant.scan"
    path.write_text("combine add(a | b) {\n  return a + b\n}\n"
                    "program p(x: i32[3, 5]) {\n  y = scan add(x) dim=1\n  return x, y\n}\n")
    x, y = tmp_path / "x.npy", tmp_path / "y.npy"
    proc = scanc("run", path, "--random", "--output", x, "--output", y)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(y), np.cumsum(np.load(x), axis=1, dtype=np.int32))
    assert np.any(np.load(x) != 0)


def test_bench_checks_against_the_reference_and_reports_bandwidth():
    proc = scanc("bench", EXAMPLES / "mamba.scan", "--random", "B=2,L=100,D=8",
                 "--seconds", "0.2")
    assert proc.returncode == 0, proc.stderr
    assert "GB/s" in proc.stdout
    assert "time: best" in proc.stdout


def test_bench_checks_long_float_scans_against_f64_carries_where_the_f32_reference_stalls(tmp_path):
    # Ones summed in f32: the sequential reference stalls at 2^24, the CPU backend's blocked
    # sums keep counting. Against the f32 reference that looked like wrong results (6% off at
    # the end); the reference with f64 carries agrees with the backend.
    path = tmp_path / "ones.scan"
    path.write_text("combine add(a | b) {\n  return a + b\n}\n"
                    "program p(x: f32[N]) {\n  y = scan add(x * 0 + 1) dim=0\n  return y\n}\n")
    proc = scanc("bench", path, "--random", f"N={2**24 + 2**20}", "--seconds", "0.1",
                 "--backend", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    [check] = json.loads(proc.stdout)["checks"]
    assert check["oracle"] == "reference with f64 carries" and check["mismatches"] == 0


def test_bench_says_when_every_mismatch_is_an_overflow_of_its_random_inputs():
    # Sums of values near the f32 maximum overflow at once; combined in another order than the
    # reference's, they overflow at other elements (inf against a finite value, or NaN from
    # inf - inf). bench still fails, and says why, and how to draw smaller inputs.
    args = ("bench", EXAMPLES / "cumsum.scan", "--random", "N=1,T=100000", "--range", "x=-3e38:3e38",
            "--backend", "cpu", "--threads", "2", "--seconds", "0.05")
    proc = scanc(*args)
    assert proc.returncode == 1
    assert "overflowed to inf or NaN" in proc.stdout and "--range" in proc.stdout
    [check] = json.loads(scanc(*args, "--json").stdout)["checks"]
    assert check["mismatches"] > 0 and check["nonfinite_mismatches"] == check["mismatches"]


def test_bench_json_reports_the_same_measurement_for_scripts():
    proc = scanc("bench", EXAMPLES / "cumsum.scan", "--random", "N=10,T=100", "--seconds", "0.1",
                 "--backend", "cpu", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["backend"] == "cpu" and report["sizes"] == {"N": 10, "T": 100}
    assert report["input_bytes"] == report["output_bytes"] == 4000  # f32[N, T] in and out
    assert report["ok"] and [c["mismatches"] for c in report["checks"]] == [0]
    assert report["runs"] >= 3 and 0 < report["best_seconds"] <= report["median_seconds"]
    assert report["best_gbps"] * 1e9 * report["best_seconds"] == pytest.approx(8000)


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_a_fortieth_difference_checks_runs_and_lowers_like_numpy_diff(tmp_path, backend):
    # x[1:] - x[:-1], 40 times: each slice's length nests the last one's (it once grew 2^40).
    chain = "".join(f"  t{i + 1} = slice(t{i}, 1, 1, T) - slice(t{i}, 1, 0, -1)\n" for i in range(40))
    path = tmp_path / "diff.scan"
    path.write_text(f"program p(t0: i64[N, T]) {{\n{chain}  return t40\n}}\n")
    check = scanc("check", path, timeout=60)
    assert check.returncode == 0 and "T - min(T, 40)" in check.stdout, check.stdout + check.stderr
    x = np.random.default_rng(0).integers(-5, 5, (N, 45), dtype=np.int64)
    out = tmp_path / "y.npy"
    proc = scanc("run", path, "--backend", backend, *save_inputs(tmp_path, {"t0": x}), "--output", out,
                 timeout=60)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), np.diff(x, n=40, axis=1))
    assert scanc("lower", path, "--bound", "T=64", "-o", tmp_path / "low.scan", timeout=60).returncode == 0


# Chains of 30 slices of one kind; (scan text, NumPy slice of a row). Each bound names a size in
# its own way: constants, negative constants, the symbol K, a step; the last concatenates two
# slices of the last link, so its length nests twice a link.
SLICE_CHAINS = {
    "trim both ends": ("slice({x}, 1, 1, -1)", lambda r, k: r[1:-1]),
    "drop K": ("slice({x}, 1, K, T)", lambda r, k: r[k:]),
    "keep the first K but one": ("slice({x}, 1, 1, K)", lambda r, k: r[1:k]),
    "every other": ("slice({x}, 1, 1, T, 2)", lambda r, k: r[1::2]),
    "counted from the end": ("slice({x}, 1, -40, -1)", lambda r, k: r[-40:-1]),
    "rotated by one": ("concat(1, slice({x}, 1, 1, -1), slice({x}, 1, 0, 1))",
                       lambda r, k: np.concatenate([r[1:-1], r[:1]])),
}


@pytest.mark.parametrize("chain", SLICE_CHAINS)
def test_thirty_chained_slices_check_run_and_lower_at_once_like_numpy(tmp_path, chain):
    # Their lengths once named the last link's twice a link: 30 links never finished.
    link, numpy_slice = SLICE_CHAINS[chain]
    body = "".join(f"  t{i + 1} = {link.format(x=f't{i}')}\n" for i in range(30))
    path = tmp_path / "chain.scan"
    path.write_text("combine add(a | b) {\n  return a + b\n}\n"
                    f"program p(t0: i64[N, T], k: i64[K]) {{\n{body}  y = scan add(t30) dim=1\n  return y\n}}\n")
    check = scanc("check", path, timeout=30)
    assert check.returncode == 0 and len(check.stdout) < 2000, check.stdout[:2000] + check.stderr
    rng = np.random.default_rng(1)
    x, k = rng.integers(-5, 5, (N, 200), dtype=np.int64), np.zeros(3, dtype=np.int64)
    expected = x
    for _ in range(30):
        expected = np.stack([numpy_slice(row, len(k)) for row in expected])
    out = tmp_path / "y.npy"
    proc = scanc("run", path, "--backend", "reference", *save_inputs(tmp_path, {"t0": x, "k": k}), "--output", out,
                 timeout=30)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.load(out), np.cumsum(expected, axis=1))
    lowered = scanc("lower", path, "--bound", "T=256", "--bound", "K=8", "--emit", "onnx", "-o", tmp_path / "y.onnx",
                    timeout=30)
    assert lowered.returncode == 0, lowered.stderr


def test_bench_checks_a_float_result_at_the_precision_it_is_computed_in(tmp_path):
    # An f32 sum returned as f64 carries the f32 sum's reassociation error: f64's tolerance
    # called it a mismatch (found by fuzzing); an f64 sum keeps f64's.
    path = tmp_path / "widened.scan"
    path.write_text("combine add(a | b) {\n  return a + b\n}\n"
                    "program widened(x: f32[N, T]) {\n  y = scan add(x) dim=0\n  return f64(y)\n}\n"
                    "program wide(x: f64[N, T]) {\n  y = scan add(x) dim=0\n  return y\n}\n")
    for program, rtol in (("widened", 1e-3), ("wide", 1e-9)):
        proc = scanc("bench", path, "--program", program, "--random", "N=1327,T=4", "--seed", "74", "--backend",
                     "cpu", "--threads", "1", "--seconds", "0.01", "--json")
        assert proc.returncode == 0, proc.stdout + proc.stderr
        check = json.loads(proc.stdout)["checks"][0]
        assert check["rtol"] == rtol and check["mismatches"] == 0
    reference_error = json.loads(scanc("bench", path, "--program", "widened", "--random", "N=1327,T=4", "--seed", "74",
                                       "--backend", "cpu", "--threads", "1", "--seconds", "0.01",
                                       "--json").stdout)["checks"][0]["max_rel_err"]
    assert reference_error > 1e-9  # what f64's tolerance would have failed


def write_scan_of_integers_from_floats(tmp_path):
    # A running sum cast to integers and compared with 0: where the CPU backend's reassociated
    # sum and the reference's straddle an integer or 0, the two results differ by one.
    path = tmp_path / "from_floats.scan"
    path.write_text("combine add(a | b) {\n  return a + b\n}\n"
                    "program p(x: f32[N, T]) {\n  y = scan add(x) dim=1\n  return i32(y * 1000.0), y > 0.0\n}\n")
    return path


def test_bench_checks_integers_computed_from_floats_from_this_backends_floats(tmp_path):
    path = write_scan_of_integers_from_floats(tmp_path)
    args = ("bench", path, "--random", "N=4,T=100000", "--backend", "cpu", "--threads", "2", "--seconds", "0.05")
    proc = scanc(*args)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "computed from this backend's floats" in proc.stdout and "round or compare the other way" in proc.stdout
    cast, compared = json.loads(scanc(*args, "--json").stdout)["checks"]
    assert cast["oracle"] == "reference from this backend's floats" and cast["mismatches"] == 0
    assert cast["reference_mismatches"] > 0  # the direct comparison this check replaces fails
    assert compared["mismatches"] == 0


def test_bench_still_fails_integers_whose_floats_are_out_of_tolerance(tmp_path):
    # Sums near the f32 maximum overflow at other elements than the reference's: the floats the
    # integers come from differ by inf, so nothing explains the integers' differences.
    path = write_scan_of_integers_from_floats(tmp_path)
    proc = scanc("bench", path, "--random", "N=1,T=100000", "--range", "x=-3e38:3e38", "--backend", "cpu",
                 "--threads", "2", "--seconds", "0.05", "--json")
    assert proc.returncode == 1
    cast = json.loads(proc.stdout)["checks"][0]
    assert cast["oracle"] == "reference" and cast["mismatches"] > 0
