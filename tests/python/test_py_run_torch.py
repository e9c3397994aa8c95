"""Module.run with torch tensors: torch in, torch out (through DLPack, without a copy), on the
inputs' device, for every dtype torch and scanc share, including bf16 and bool."""

import numpy as np
import pytest

import scan_loops
import scanc

torch = pytest.importorskip("torch")

TORCH_DTYPES = {
    "bool": torch.bool, "i8": torch.int8, "i16": torch.int16, "i32": torch.int32,
    "i64": torch.int64, "u8": torch.uint8, "f16": torch.float16, "bf16": torch.bfloat16,
    "f32": torch.float32, "f64": torch.float64,
}
MOD = scanc.loads("combine add(a | b) {\n  return a + b\n}\n"
                  "combine lor(a | b) {\n  return a or b\n}\n"
                  + "".join(f"program scan_{n}(x: {n}[N, T]) {{\n"
                            f"  y = scan {'lor' if n == 'bool' else 'add'}(x) dim=1\n"
                            f"  return y\n}}\n" for n in TORCH_DTYPES), "torch_test.scan")


def random_tensor(name, shape, gen):
    if name == "bool":
        return torch.rand(shape, generator=gen) < 0.2
    if name in ("i8", "u8"):
        return torch.randint(0, 2, shape, generator=gen).to(TORCH_DTYPES[name])
    if name.startswith("i"):
        return torch.randint(-50, 50, shape, generator=gen).to(TORCH_DTYPES[name])
    return torch.randn(shape, generator=gen).to(TORCH_DTYPES[name])


def expected(name, x):
    """The sequential loop on a NumPy copy; f16 and bf16 carry the running sum in f32 and round
    each stored value (bf16 through torch, which NumPy lacks)."""
    if name == "bool":
        return torch.from_numpy(scan_loops.scan(scan_loops.logical_or, (x.numpy(),), 1)[0])
    if name in ("f16", "bf16"):
        out = torch.empty_like(x)
        acc = None
        for t in range(x.shape[1]):
            v = x[:, t].float()
            acc = v if acc is None else acc + v
            out[:, t] = acc.to(x.dtype)
        return out
    return torch.from_numpy(scan_loops.scan(scan_loops.add, (x.numpy(),), 1)[0])


@pytest.mark.parametrize("name", list(TORCH_DTYPES))
@pytest.mark.parametrize("length", [0, 1, 5, 127])
def test_torch_tensors_in_give_torch_tensors_out_with_the_same_dtype(name, length):
    gen = torch.Generator().manual_seed(length)
    x = random_tensor(name, (3, length), gen)
    (y,) = MOD.run(f"scan_{name}", x, backend="reference")
    assert isinstance(y, torch.Tensor)
    assert y.dtype == x.dtype and tuple(y.shape) == (3, length) and y.device == x.device
    torch.testing.assert_close(y, expected(name, x), rtol=0, atol=0)


def test_a_transposed_torch_tensor_is_read_through_its_strides():
    x = torch.randn(300, 4, dtype=torch.float64).t()
    assert not x.is_contiguous()
    (y,) = MOD.run("scan_f64", x, backend="reference")
    torch.testing.assert_close(y, expected("f64", x.contiguous()), rtol=0, atol=0)


def test_a_tensor_that_requires_grad_is_accepted():
    x = torch.randn(2, 9, requires_grad=True)
    (y,) = MOD.run("scan_f32", x)
    torch.testing.assert_close(y, torch.cumsum(x.detach(), dim=1), rtol=1e-5, atol=1e-5)


def test_a_meta_tensor_is_refused_for_its_device_not_its_dtype():
    with pytest.raises(scanc.CompileError, match="is on device `meta`"):
        MOD.run("scan_f32", torch.ones(2, 3, device="meta"))


def test_default_backend_matches_torch_cumsum_on_a_long_row():
    x = torch.randn(3, 100_003, dtype=torch.float64)
    (y,) = MOD.run("scan_f64", x)
    torch.testing.assert_close(y, torch.cumsum(x, dim=1), rtol=1e-9, atol=1e-9)


def test_the_output_shares_memory_with_nothing_it_was_given():
    x = torch.arange(6, dtype=torch.int64).reshape(1, 6)
    (y,) = MOD.run("scan_i64", x)
    y += 100  # writable, and x is untouched
    assert x.tolist() == [[0, 1, 2, 3, 4, 5]]
    assert y.tolist() == [[100, 101, 103, 106, 110, 115]]


def test_a_bf16_result_bound_for_numpy_is_widened_to_float32():
    mod = scanc.loads("combine add(a | b) {\n  return a + b\n}\n"
                      "program p(x: f32[T]) {\n  y = scan add(bf16(x)) dim=0\n  return y\n}\n")
    x = np.array([1.0, 2.0, 3.5], dtype=np.float32)
    (y,) = mod.run("p", x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32
    np.testing.assert_array_equal(y, [1.0, 3.0, 6.5])
    (z,) = mod.run("p", torch.from_numpy(x))
    assert z.dtype == torch.bfloat16 and z.float().tolist() == [1.0, 3.0, 6.5]


@pytest.mark.skipif(not torch.cuda.is_available() or "cuda" not in scanc.available_backends(),
                    reason="needs a GPU and the CUDA backend")
def test_cuda_tensors_in_give_cuda_tensors_out_on_the_same_device():
    x = torch.randn(4, 10_007, device="cuda", dtype=torch.float64)
    (y,) = MOD.run("scan_f64", x, backend="cuda")
    assert isinstance(y, torch.Tensor) and y.device == x.device
    torch.testing.assert_close(y, torch.cumsum(x, dim=1), rtol=1e-9, atol=1e-9)


@pytest.mark.skipif(not torch.cuda.is_available() or "cuda" not in scanc.available_backends(),
                    reason="needs a GPU and the CUDA backend")
def test_cuda_runs_after_finish_compiles_give_the_first_runs_bits():
    # The first run of a new program launches quick builds of its kernels; after
    # finish_compiles the full builds run, with the same results bit for bit.
    mod = scanc.loads("combine affine(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }\n"
                      "program quick_then_full(a: f32[B, L, D], b: f32[B, L, D]) {\n"
                      "  (_, h) = scan affine(a, b) dim=1\n  return h * 0.25 - b\n}\n")
    a = torch.rand(3, 2049, 5, device="cuda") * 0.5 + 0.5
    b = torch.randn(3, 2049, 5, device="cuda")
    (first,) = mod.run("quick_then_full", a, b, backend="cuda")
    assert scanc.finish_compiles() is None
    (later,) = mod.run("quick_then_full", a, b, backend="cuda")
    assert torch.equal(first, later)


def test_outputs_given_to_the_reference_backend_are_refused_with_the_option_named():
    x = torch.randn(2, 5)
    with pytest.raises(scanc.CompileError, match="backend `reference` allocates its outputs"):
        MOD.run("scan_f32", x, backend="reference", out=[torch.empty(2, 5)])


@pytest.mark.skipif("cpu" not in scanc.available_backends(), reason="needs the CPU backend")
def test_cpu_results_go_into_given_tensors_and_arrays_of_any_strides_and_come_back_as_them():
    x = torch.randn(4, 10_007, dtype=torch.float64)
    want = torch.cumsum(x, dim=1)
    for out in (torch.empty(4, 10_007, dtype=torch.float64),
                torch.empty(10_007, 4, dtype=torch.float64).t(),  # transposed
                torch.empty(4, 20_014, dtype=torch.float64)[:, ::2],  # every other element
                torch.empty(4, 10_007, dtype=torch.float64).flip(0)):  # rows walked backwards
        (y,) = MOD.run("scan_f64", x, backend="cpu", out=[out])
        assert y is out
        torch.testing.assert_close(out, want, rtol=1e-9, atol=1e-9)
    array = np.empty((4, 10_007))
    (y,) = MOD.run("scan_f64", x.numpy(), backend="cpu", out=[array])
    assert y is array
    np.testing.assert_allclose(array, want.numpy(), rtol=1e-9, atol=1e-9)
    with pytest.raises(scanc.CompileError, match="shape mismatch: output 0"):
        MOD.run("scan_f64", x, backend="cpu", out=[torch.empty(4, 3, dtype=torch.float64)])
    with pytest.raises(scanc.CompileError, match="output 0 of program `scan_f64` overlaps the memory of input `x`"):
        MOD.run("scan_f64", x, backend="cpu", out=[x])
    array.flags.writeable = False
    with pytest.raises(scanc.CompileError, match=r"\.scan:\d+:\d+: error: output 0 of program `scan_f64` is read-only"):
        MOD.run("scan_f64", x.numpy(), backend="cpu", out=[array])


@pytest.mark.skipif("cpu" not in scanc.available_backends(), reason="needs the CPU backend")
def test_outputs_interleaved_in_one_buffer_are_refused_as_overlapping_memory():
    mod = scanc.loads("combine add(a | b) {\n  return a + b\n}\n"
                      "program p(x: f32[N, T]) {\n  y = scan add(x) dim=1\n  z = x * 2\n"
                      "  return y, z\n}\n")
    x, buffer = torch.ones(4, 300), torch.empty(4, 600)
    with pytest.raises(scanc.CompileError, match="output 1 of program `p` overlaps the memory of output 0"):
        mod.run("p", x, backend="cpu", out=[buffer[:, ::2], buffer[:, 1::2]])
    with pytest.raises(scanc.CompileError, match="output 0 of program `p` overlaps the memory of input `x`"):
        mod.run("p", buffer[:, ::2], backend="cpu", out=[buffer[:, 1::2], torch.empty(4, 300)])


@pytest.mark.skipif("cpu" not in scanc.available_backends(), reason="needs the CPU backend")
def test_out_must_be_a_list_or_tuple_with_one_tensor_per_result():
    x = torch.randn(4, 300)
    with pytest.raises(scanc.CompileError, match="program `scan_f32` has 1 result, got 0 outputs"):
        MOD.run("scan_f32", x, backend="cpu", out=[])
    with pytest.raises(TypeError, match="out= takes a list or tuple of tensors, one per result of "
                                        "program `scan_f32` \\(1\\); got a Tensor"):
        MOD.run("scan_f32", x, backend="cpu", out=torch.empty(4, 300))
    (y,) = MOD.run("scan_f32", x, backend="cpu", out=(torch.empty(4, 300),))
    torch.testing.assert_close(y, torch.cumsum(x, 1), rtol=1e-5, atol=1e-5)


def test_something_that_is_not_a_tensor_as_an_output_is_a_type_error():
    with pytest.raises(TypeError, match="output 0 of program `scan_f32` is a str"):
        MOD.run("scan_f32", torch.randn(2, 5), out=["not a tensor"])


@pytest.mark.skipif(not torch.cuda.is_available() or "cuda" not in scanc.available_backends(),
                    reason="needs a GPU and the CUDA backend")
def test_cuda_results_go_into_given_tensors_of_any_strides_and_come_back_as_them():
    x = torch.randn(4, 10_007, device="cuda", dtype=torch.float64)
    out = torch.empty(10_007, 4, device="cuda", dtype=torch.float64).t()  # transposed
    (y,) = MOD.run("scan_f64", x, backend="cuda", out=[out])
    assert y is out
    torch.testing.assert_close(out, torch.cumsum(x, dim=1), rtol=1e-9, atol=1e-9)
    with pytest.raises(scanc.CompileError, match="shape mismatch: output 0"):
        MOD.run("scan_f64", x, backend="cuda",
                out=[torch.empty(4, 3, device="cuda", dtype=torch.float64)])
