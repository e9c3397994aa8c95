"""ONNX export of lowered scans, checked end to end.

Every example is lowered by each algorithm through the CLI (`scanc lower --emit onnx`), checked
with onnx.checker, run by onnxruntime and compared with an independent NumPy loop (float64) for
S in {1, 2, 3, 7, 8, 9, 100, 1000, 4097}. One bounded dynamic model is run at many lengths.
The binary is $SCANC_BIN, default build/tools/scanc/scanc."""
import math
import os
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
LENGTHS = [1, 2, 3, 7, 8, 9, 100, 1000, 4097]
ALGORITHMS = ["hillis-steele", "work-efficient", "auto"]


def scanc_bin():
    path = Path(os.environ.get("SCANC_BIN", "build/tools/scanc/scanc"))
    return path if path.is_absolute() else REPO / path


def scanc(*args):
    if not scanc_bin().exists():
        pytest.skip(f"no scanc binary at {scanc_bin()}; build it or set SCANC_BIN")
    return subprocess.run([str(scanc_bin()), *map(str, args)], capture_output=True, text=True,
                          timeout=300)


def numpy_scan(combine, leaves, dim, reverse=False, captured=()):
    """y[0] = x[0], y[t] = y[t-1] o x[t] along dim (reverse: from the end, later on the left)."""
    leaves = [np.moveaxis(np.asarray(x, dtype=np.float64 if x.dtype.kind == "f" else x.dtype),
                          dim, 0) for x in leaves]
    captured = [np.moveaxis(np.asarray(c, dtype=np.float64), dim, 0)[0] for c in captured]
    outs = [np.empty_like(x) for x in leaves]
    steps = range(leaves[0].shape[0])
    acc = None
    for t in (reversed(steps) if reverse else steps):
        elem = tuple(x[t] for x in leaves)
        if acc is not None:
            acc = combine(elem, acc, *captured) if reverse else combine(acc, elem, *captured)
        else:
            acc = elem
        for out, a in zip(outs, acc):
            out[t] = a
    return [np.moveaxis(o, 0, dim) for o in outs]


def matmul(l, r):
    a00, a01, a10, a11 = l
    b00, b01, b10, b11 = r
    return (b00 * a00 + b01 * a10, b00 * a01 + b01 * a11, b10 * a00 + b11 * a10,
            b10 * a01 + b11 * a11)


def welford(l, r):
    n1, mean1, m2_1 = l
    n2, mean2, m2_2 = r
    n = n1 + n2
    delta = mean2 - mean1
    return n, mean1 + delta * n2 / n, m2_1 + m2_2 + delta * delta * n1 * n2 / n


def affine(l, r):
    return l[0] * r[0], r[0] * l[1] + r[1]


def segsum(l, r):
    return np.logical_or(l[0], r[0]), np.where(r[0], r[1], l[1] + r[1])


def smooth_max(l, r, tau):
    return (tau * np.logaddexp(l[0] / tau, r[0] / tau),)


def online_softmax(l, r):
    m = np.maximum(l[0], r[0])
    e1, e2 = np.exp(l[0] - m), np.exp(r[0] - m)
    return m, l[1] * e1 + r[1] * e2, l[2] * e1 + r[2] * e2


def normal_log_cdf(x):
    """log(erfc(-x / sqrt 2) / 2) by Python's math.erfc, in float64."""
    return np.vectorize(lambda v: math.log(math.erfc(-v / math.sqrt(2)) / 2))(x.astype(np.float64))


# example file -> (program, size symbol, inputs(S, rng), expected outputs(inputs))
def _f32(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, shape).astype(np.float32)


EXAMPLE_CASES = {
    "cumsum": ("cumsum", "T", lambda s, g: {"x": _f32(g, (3, s))},
               lambda i: numpy_scan(lambda l, r: (l[0] + r[0],), [i["x"]], 1)),
    "cummax": ("cummax", "T", lambda s, g: {"x": _f32(g, (s, 3))},
               lambda i: numpy_scan(lambda l, r: (np.maximum(l[0], r[0]),), [i["x"]], 0)),
    "logcumsumexp": ("logcumsumexp", "T", lambda s, g: {"x": g.uniform(-3, 3, (2, s))},
                     lambda i: numpy_scan(lambda l, r: (np.logaddexp(l[0], r[0]),), [i["x"]], 1)),
    # From -13, where erfc(9.2) is 1e-38 (1 - Erf would be 0 from -5.5 on).
    "normal_logcdf": ("normal_logcdf", "T", lambda s, g: {"x": _f32(g, (2, s), -13, 4)},
                      lambda i: numpy_scan(lambda l, r: (l[0] + r[0],), [normal_log_cdf(i["x"])], 1)),
    "logcumsumexp2": ("logcumsumexp2", "T", lambda s, g: {"x": _f32(g, (2, s), -30, 30)},
                      lambda i: numpy_scan(lambda l, r: (np.logaddexp2(l[0], r[0]),), [i["x"]], 1)),
    "matmul2x2": ("recurrence", "T",
                  lambda s, g: {"p": _f32(g, (2, s), -0.4, 0.4), "q": _f32(g, (2, s), -0.4, 0.4)},
                  lambda i: (lambda o: [o[0], o[2]])(numpy_scan(
                      matmul, [i["p"], i["q"], np.ones_like(i["p"]), np.zeros_like(i["p"])], 1))),
    "segmented_sum": ("segmented_sum", "T",
                      lambda s, g: {"start": g.uniform(size=(2, s)) < 0.2,
                                    "x": g.integers(-50, 50, (2, s)).astype(np.int32)},
                      lambda i: numpy_scan(segsum, [i["start"], i["x"]], 1)[1:]),
    "smooth_max": ("softmax_max", "T",
                   lambda s, g: {"x": _f32(g, (2, s)), "tau": _f32(g, (2, 1), 0.5, 2.0)},
                   lambda i: numpy_scan(smooth_max, [i["x"]], 1, True, [i["tau"]])),
    "online_softmax": ("causal_softmax", "T",
                       lambda s, g: {"x": _f32(g, (2, s), -60, 60), "v": _f32(g, (2, s))},
                       lambda i: (lambda o: [o[2] / o[1], o[0] + np.log(o[1])])(numpy_scan(
                           online_softmax, [i["x"], np.ones_like(i["x"]), i["v"]], 1))),
    "welford": ("running_stats", "T", lambda s, g: {"x": _f32(g, (2, s))},
                lambda i: (lambda o: [o[1], o[2] / o[0]])(numpy_scan(
                    welford, [np.ones_like(i["x"]), i["x"], np.zeros_like(i["x"])], 1))),
    "mamba": ("mamba", "L",
              lambda s, g: {"x": _f32(g, (2, s, 3)), "dt": _f32(g, (2, s, 3), 0.0, 0.5),
                            "A": _f32(g, (3,), -1.0, 0.0)},
              lambda i: numpy_scan(affine, [np.exp(i["dt"].astype(np.float64) * i["A"]),
                                            i["dt"].astype(np.float64) * i["x"]], 1)[1:]),
}


def export(tmp_path, example, *options):
    out = tmp_path / f"{example}.onnx"
    r = scanc("lower", EXAMPLES / f"{example}.scan", "--emit", "onnx", "-o", out, *options)
    assert r.returncode == 0, r.stderr
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    read = {name for node in model.graph.node for name in node.input}
    unread = [t.name for t in model.graph.initializer if t.name not in read]
    assert not unread, f"initializers that no node reads: {unread}"
    return model, ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])


def assert_matches(got, want, dtype):
    if np.issubdtype(dtype, np.integer) or dtype == np.bool_:
        np.testing.assert_array_equal(got, want)
    else:
        scale = max(1.0, float(np.max(np.abs(want), initial=0)))
        rtol = 1e-9 if dtype == np.float64 else 1e-4
        np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("example", sorted(EXAMPLE_CASES))
def test_every_example_lowered_to_onnx_matches_a_numpy_loop(tmp_path, example, algorithm):
    program, sym, make_inputs, expected = EXAMPLE_CASES[example]
    rng = np.random.default_rng(zlib.crc32(f"{example}/{algorithm}".encode()))
    for s in LENGTHS:
        size = ["--size", f"{sym}={s}"]
        model, session = export(tmp_path, example, "--algorithm", algorithm, *size)
        inputs = make_inputs(s, rng)
        assert [i.name for i in session.get_inputs()] == list(inputs)
        got = session.run(None, inputs)
        want = expected(inputs)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == w.shape, f"S={s}"
            assert_matches(g, w, g.dtype)


def test_every_example_file_has_an_onnx_case():
    assert sorted(p.stem for p in EXAMPLES.glob("*.scan")) == sorted(EXAMPLE_CASES)


def test_one_bounded_dynamic_model_is_right_for_many_lengths(tmp_path):
    model, session = export(tmp_path, "mamba", "--algorithm", "hillis-steele", "--bound",
                            "L=300")
    dims = [[d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
            for i in model.graph.input]
    assert dims == [["B", "L", "D"], ["B", "L", "D"], ["D"]]
    program, sym, make_inputs, expected = EXAMPLE_CASES["mamba"]
    rng = np.random.default_rng(11)
    for s in list(range(1, 34)) + [63, 64, 65, 127, 128, 129, 255, 256, 257, 299, 300]:
        inputs = make_inputs(s, rng)
        (h,) = session.run(None, inputs)
        assert_matches(h, expected(inputs)[0], h.dtype)


def test_half_precision_exports_give_the_reference_executors_bits(tmp_path):
    """An f16 op takes a literal operand at f32 precision (`x * 0.1` multiplies by 0.1f, not by
    f16(0.1)) and rounds its result; a scan adds in f32 and rounds each output once. The sums of
    these multiples of 2^-14 are exact in f32, so any association gives the same bits."""
    src = tmp_path / "half.scan"
    src.write_text("combine add(a | b) { return a + b }\n"
                   "program p(x: f16[N]) {\n  s = scan add(x * 0.1) dim=0\n  return s, s * 0.3 - x\n}\n")
    x = np.random.default_rng(3).integers(-5, 6, 700).astype(np.float16)
    np.save(tmp_path / "x.npy", x)
    r = scanc("run", src, "--backend", "reference", "--input", f"x={tmp_path / 'x.npy'}",
              "--output", tmp_path / "s.npy", "--output", tmp_path / "e.npy")
    assert r.returncode == 0, r.stderr
    want = [np.load(tmp_path / "s.npy"), np.load(tmp_path / "e.npy")]
    for algorithm in ["hillis-steele", "work-efficient"]:
        out = tmp_path / f"half-{algorithm}.onnx"
        r = scanc("lower", src, "--emit", "onnx", "--size", "N=700", "--algorithm", algorithm, "-o", out)
        assert r.returncode == 0, r.stderr
        got = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).run(None, {"x": x})
        for g, w in zip(got, want):
            assert g.dtype == np.float16
            np.testing.assert_array_equal(g, w, err_msg=algorithm)


def test_graph_inputs_are_named_after_params_and_outputs_follow_return_order(tmp_path):
    model, session = export(tmp_path, "welford", "--bound", "T=64")
    assert [i.name for i in model.graph.input] == ["x"]
    assert len(model.graph.output) == 2
    assert model.opset_import[0].version >= 17
    assert [d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim] == ["N", "T"]


def test_native_cumsum_maps_a_pure_sum_to_onnx_cumsum(tmp_path):
    model, session = export(tmp_path, "cumsum", "--native-cumsum", "--bound", "T=4097")
    assert [n.op_type for n in model.graph.node].count("CumSum") == 1
    x = np.random.default_rng(3).uniform(-1, 1, (3, 1000)).astype(np.float32)
    (y,) = session.run(None, {"x": x})
    assert_matches(y, np.cumsum(x.astype(np.float64), axis=1), y.dtype)


BOUND_GUARD_OPS = {"Shape", "Sub", "Min", "Mul", "Add", "Reshape"}  # shape arithmetic only


def test_default_export_is_primitive_only(tmp_path):
    model, _ = export(tmp_path, "cumsum", "--bound", "T=100")
    ops = {n.op_type for n in model.graph.node}
    assert "CumSum" not in ops and "Scan" not in ops and "Loop" not in ops
    assert ops <= {"Slice", "Concat", "Add", "Identity"} | BOUND_GUARD_OPS
    r = scanc("lower", EXAMPLES / "cumsum.scan", "--emit", "onnx", "--size", "N=3,T=100",
              "--algorithm", "hillis-steele", "-o", tmp_path / "static.onnx")  # no bound to guard
    assert r.returncode == 0, r.stderr
    assert {n.op_type for n in onnx.load(tmp_path / "static.onnx").graph.node} <= {"Slice", "Concat", "Add", "Identity"}


def test_a_bounded_model_refuses_a_longer_input_naming_the_bound_and_runs_every_length_up_to_it(tmp_path):
    # Past its bound a lowered scan misses levels: without the guard, lengths 9 to 16 of a
    # bound of 8 read sums of at most 8 elements.
    model, session = export(tmp_path, "cumsum", "--algorithm", "hillis-steele", "--bound", "T=8")
    rng = np.random.default_rng(5)
    for t in range(0, 9):
        x = rng.uniform(-1, 1, (3, t)).astype(np.float32)
        (y,) = session.run(None, {"x": x})
        assert_matches(y, np.cumsum(x.astype(np.float64), axis=1), y.dtype)
    for t in (9, 16, 1000):
        with pytest.raises(Exception, match="T_exceeds_its_bound_8"):
            session.run(None, {"x": np.ones((3, t), np.float32)})


def test_stats_print_the_op_census_and_levels(tmp_path):
    r = scanc("lower", EXAMPLES / "cumsum.scan", "--algorithm", "hillis-steele", "--bound",
              "T=1000", "--emit", "scan", "-o", tmp_path / "low.scan", "--stats")
    assert r.returncode == 0, r.stderr
    assert "levels: 10" in r.stdout
    assert "Add 10" in r.stdout and "Concat 10" in r.stdout and "Scan" not in r.stdout


def test_dot_draws_the_lowered_graph(tmp_path):
    r = scanc("lower", EXAMPLES / "cumsum.scan", "--size", "T=8", "--emit", "dot")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("digraph") and "Concat" in r.stdout


def test_an_unbounded_length_is_a_user_error_that_names_the_bound_to_give():
    r = scanc("lower", EXAMPLES / "cumsum.scan", "--emit", "scan")
    assert r.returncode == 2
    assert "--bound T=" in r.stderr and "dim 1" in r.stderr
