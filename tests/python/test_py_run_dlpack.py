"""Module.run with the other DLPack frameworks: JAX and CuPy arrays in, the same kind out.
scripts/setup.sh installs JAX (on the CPU); CuPy runs where a GPU machine has it (scripts/gpu.sh
runs this file there)."""

import numpy as np
import pytest

import scanc

MOD = scanc.loads("combine add(a | b) {\n  return a + b\n}\n"
                  "program p(x: f32[N, T]) {\n  y = scan add(x) dim=1\n  return y\n}\n")

# Two leaves, a captured value broadcast along T, and two results of different dtypes.
AFFINE = scanc.loads("""
combine affine(a1, b1 | a2, b2) {
  return a1 * a2, a2 * b1 + b2
}
combine add(a | b) {
  return a + b
}
program p(a: f32[N, T], b: f32[N, T], s: f32[N, 1], k: i32[N, T]) {
  (_, h) = scan affine(a, b * s) dim=1
  c = scan add(k) dim=1 reverse
  return h, c
}
""")


def test_jax_arrays_in_give_jax_arrays_out():
    jnp = pytest.importorskip("jax.numpy")
    x = np.random.default_rng(3).standard_normal((3, 1001)).astype(np.float32)
    (y,) = MOD.run("p", jnp.asarray(x))
    assert type(y).__module__.split(".")[0] in ("jax", "jaxlib")
    np.testing.assert_allclose(np.asarray(y), np.cumsum(x, axis=1, dtype=np.float64),
                               rtol=1e-4, atol=1e-4)


def test_jax_arrays_of_several_dtypes_give_the_results_numpy_arrays_give():
    jax = pytest.importorskip("jax")
    cpu = jax.devices("cpu")[0]  # host arrays for the host backends, where JAX has a GPU too
    rng = np.random.default_rng(5)
    n, t = 4, 257
    inputs = [rng.uniform(0.5, 1.0, (n, t)).astype(np.float32),
              rng.standard_normal((n, t)).astype(np.float32),
              rng.standard_normal((n, 1)).astype(np.float32),
              rng.integers(-1000, 1000, (n, t), dtype=np.int32)]
    for backend in {"reference", "cpu"} & set(scanc.available_backends()):
        from_numpy = AFFINE.run("p", *inputs, backend=backend)
        from_jax = AFFINE.run("p", *[jax.device_put(v, cpu) for v in inputs], backend=backend)
        for want, got in zip(from_numpy, from_jax):
            assert type(got).__module__.split(".")[0] in ("jax", "jaxlib")
            assert np.asarray(got).dtype == want.dtype
            np.testing.assert_array_equal(np.asarray(got), want)  # same backend, same bits
    h, c = AFFINE.run("p", *inputs, backend="reference")
    np.testing.assert_array_equal(c, np.flip(np.cumsum(np.flip(inputs[3], 1), 1), 1))
    want_h = np.zeros((n, t))
    for i in range(t):  # h[t] = a[t] h[t-1] + b[t] s in f64
        prev = want_h[:, i - 1] if i else 0.0
        want_h[:, i] = inputs[0][:, i] * prev + inputs[1][:, i] * inputs[2][:, 0]
    np.testing.assert_allclose(h, want_h, rtol=1e-4, atol=1e-5)


def test_a_jax_bfloat16_array_gives_a_bfloat16_running_sum():
    jnp = pytest.importorskip("jax.numpy")
    mod = scanc.loads("combine add(a | b) {\n  return a + b\n}\n"
                      "program p(x: bf16[T]) {\n  y = scan add(x) dim=0\n  return y\n}\n")
    x = jnp.asarray(np.arange(1, 65) % 7, dtype=jnp.bfloat16)  # sums up to 189: exact in bf16
    (y,) = mod.run("p", x)
    assert y.dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(y, dtype=np.float32),
                                  np.cumsum(np.arange(1, 65) % 7).astype(np.float32))


def test_cupy_arrays_in_give_cupy_arrays_out_on_the_gpu():
    cp = pytest.importorskip("cupy")
    if "cuda" not in scanc.available_backends():
        pytest.skip("the CUDA backend is not available here")
    x = np.random.default_rng(4).standard_normal((3, 1001)).astype(np.float32)
    (y,) = MOD.run("p", cp.asarray(x))
    assert isinstance(y, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(y), np.cumsum(x, axis=1, dtype=np.float64),
                               rtol=1e-4, atol=1e-4)
