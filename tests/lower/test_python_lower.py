"""scanc.lower / Module.lower from Python: lowered text and ONNX bytes.

Needs the built package on PYTHONPATH (<build>/python) and onnxruntime; skipped otherwise."""
from pathlib import Path

import numpy as np
import pytest

scanc = pytest.importorskip("scanc")
onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

AFFINE = """
combine affine(a1, b1 | a2, b2) {
  return a1 * a2, a2 * b1 + b2
}
program decay(a: f64[N, L<=64], b: f64[N, L]) {
  (_, h) = scan affine(a, b) dim=1 reverse
  return h
}
"""


def test_module_lower_gives_onnx_bytes_that_onnxruntime_runs_correctly():
    model = scanc.loads(AFFINE).lower(emit="onnx")
    assert isinstance(model, bytes)
    onnx.checker.check_model(onnx.load_from_string(model))
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for s in (1, 2, 31, 64):
        a, b = rng.uniform(0.5, 1.0, (3, s)), rng.uniform(-1, 1, (3, s))
        (h,) = session.run(None, {"a": a, "b": b})
        want = np.empty_like(b)  # reverse: h[t] = a[t] * h[t+1] + b[t]
        acc = np.zeros(3)
        for t in reversed(range(s)):
            acc = a[:, t] * acc + b[:, t] if t < s - 1 else b[:, t]
            want[:, t] = acc
        np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-12)


def test_lower_of_a_file_gives_text_without_a_scan():
    text = scanc.lower(EXAMPLES / "cumsum.scan", algorithm="work-efficient", sizes={"T": 9})
    assert isinstance(text, str)
    assert "scan " not in text and "program cumsum" in text


def test_an_unbounded_length_raises_a_value_error_naming_the_bound_as_python_passes_it():
    with pytest.raises(ValueError, match=r"pass bounds=\{'T': 65536\}") as err:
        scanc.lower(EXAMPLES / "cumsum.scan")
    assert "--bound" not in str(err.value)


@pytest.mark.parametrize("options,message", [
    ({"bounds": {"T": -4}}, r"bounds=\{'T': -4\}: must be 1 or more"),
    ({"bounds": {"Q": 8}}, r"bounds=\{'Q': 8\}: program `cumsum` has no size named `Q`"),
    ({"sizes": {"T": -1}}, r"sizes=\{'T': -1\}: must be 0 or more$"),
    ({"sizes": {"T": 5}, "bounds": {"T": 3}},
     r"sizes=\{'T': 5\} and bounds=\{'T': 3\}: give a symbol a size or a bound, not both"),
])
def test_bad_bounds_and_sizes_are_named_in_keyword_arguments(options, message):
    with pytest.raises(ValueError, match=message):
        scanc.lower(EXAMPLES / "cumsum.scan", **options)


@pytest.mark.parametrize("options,message", [
    ({"bounds": {"T": "5"}}, r"bounds=\{'T': '5'\}: a size is an int"),
    ({"bounds": {"T": 1.5}}, r"bounds=\{'T': 1\.5\}: a size is an int"),
    ({"sizes": {"T": True}}, r"sizes=\{'T': True\}: a size is an int"),
    ({"sizes": {3: 4}}, r"sizes=\{3: \.\.\.\}: a size symbol is a str"),
    ({"bounds": [("T", 4)]}, r"bounds= must be a dict of size symbols to sizes"),
])
def test_bounds_and_sizes_of_the_wrong_type_are_type_errors_naming_the_entry(options, message):
    with pytest.raises(TypeError, match=message):
        scanc.lower(EXAMPLES / "cumsum.scan", **options)


def test_a_size_beyond_64_bits_is_refused_by_name():
    with pytest.raises(scanc.CompileError, match="beyond a 64-bit size"):
        scanc.lower(EXAMPLES / "cumsum.scan", sizes={"T": 2**70})


def test_numpy_integers_serve_as_bounds():
    text = scanc.lower(EXAMPLES / "cumsum.scan", bounds={"T": np.int64(8)})
    assert text == scanc.lower(EXAMPLES / "cumsum.scan", bounds={"T": 8})
