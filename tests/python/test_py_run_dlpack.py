"""Module.run with the other DLPack frameworks: JAX and CuPy arrays in, the same kind out. Each
test runs where its framework is installed (JAX and CuPy are not set up by scripts/setup.sh)."""

import numpy as np
import pytest

import scanc

MOD = scanc.loads("combine add(a | b) {\n  return a + b\n}\n"
                  "program p(x: f32[N, T]) {\n  y = scan add(x) dim=1\n  return y\n}\n")


def test_jax_arrays_in_give_jax_arrays_out():
    jnp = pytest.importorskip("jax.numpy")
    x = np.random.default_rng(3).standard_normal((3, 1001)).astype(np.float32)
    (y,) = MOD.run("p", jnp.asarray(x))
    assert type(y).__module__.split(".")[0] in ("jax", "jaxlib")
    np.testing.assert_allclose(np.asarray(y), np.cumsum(x, axis=1, dtype=np.float64),
                               rtol=1e-4, atol=1e-4)


def test_cupy_arrays_in_give_cupy_arrays_out_on_the_gpu():
    cp = pytest.importorskip("cupy")
    if "cuda" not in scanc.available_backends():
        pytest.skip("the CUDA backend is not available here")
    x = np.random.default_rng(4).standard_normal((3, 1001)).astype(np.float32)
    (y,) = MOD.run("p", cp.asarray(x))
    assert isinstance(y, cp.ndarray)
    np.testing.assert_allclose(cp.asnumpy(y), np.cumsum(x, axis=1, dtype=np.float64),
                               rtol=1e-4, atol=1e-4)
