"""The Python module API besides run's results: load/loads, errors as ValueError with line:col,
programs/combines/print/check, backends."""

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest

import scanc

TEXT = """\
# an affine recurrence and a running sum
combine affine(a1, b1 | a2, b2) {
  return a1 * a2, a2 * b1 + b2
}

combine add(x | y) {
  return x + y
}

program mamba(x: f32[B, L<=1048576, D], dt: f32[B, L, D], A: f32[D]) {
  a = exp(dt * A)
  b = dt * x
  (_, h) = scan affine(a, b) dim=1
  return h
}

program cumsum(x: f64[N]) {
  y = scan add(x) dim=0
  return y
}
"""


def error_place(message):
    """(file, line, col) from the `file:line:col` an error message starts with."""
    m = re.match(r"(.*?):(\d+):(\d+)", message)
    assert m, f"no file:line:col in {message!r}"
    return m[1], int(m[2]), int(m[3])


def test_loads_lists_programs_and_combines_in_order_of_definition():
    mod = scanc.loads(TEXT)
    assert mod.programs == ["mamba", "cumsum"]
    assert mod.combines == ["affine", "add"]


def test_load_reads_a_file(tmp_path):
    path = tmp_path / "m.scan"
    path.write_text(TEXT)
    assert scanc.load(path).programs == ["mamba", "cumsum"]
    assert scanc.load(str(path)).combines == ["affine", "add"]


def test_printed_text_parses_back_to_the_same_text():
    printed = scanc.loads(TEXT).print()
    assert "combine affine" in printed and "program mamba" in printed
    assert scanc.loads(printed).print() == printed


def test_params_describe_each_parameter_with_its_symbols():
    assert scanc.loads(TEXT).params("mamba") == [
        ("x", "f32", ["B", "L", "D"]), ("dt", "f32", ["B", "L", "D"]), ("A", "f32", ["D"])]


def test_a_syntax_error_is_a_value_error_at_its_line_and_column():
    text = "combine add(x | y) {\n  return x + \n}\n"
    with pytest.raises(ValueError) as info:
        scanc.loads(text, "bad.scan")
    assert isinstance(info.value, scanc.CompileError)
    file, line, _ = error_place(str(info.value))
    assert file == "bad.scan" and line in (2, 3)


def test_an_error_in_a_loaded_file_names_the_file(tmp_path):
    path = tmp_path / "broken.scan"
    path.write_text("program p(x: f32[N]) {\n  y = x +* 2\n  return y\n}\n")
    with pytest.raises(ValueError) as info:
        scanc.load(path)
    file, line, col = error_place(str(info.value))
    assert file.endswith("broken.scan") and line == 2 and col >= 9


def test_an_unknown_name_is_reported_where_it_is_used():
    text = "program p(x: f32[N]) {\n  return x * nope\n}\n"
    with pytest.raises(ValueError) as info:
        scanc.loads(text)
    _, line, col = error_place(str(info.value))
    assert (line, col) == (2, 14)
    assert "nope" in str(info.value)


def test_a_missing_file_is_a_value_error_naming_it(tmp_path):
    with pytest.raises(ValueError, match="no_such.scan"):
        scanc.load(tmp_path / "no_such.scan")


def test_check_reports_each_scan_and_what_it_was_recognized_as():
    reports = scanc.loads(TEXT).check()
    assert [(r["program"], r["combine"], r["dim"]) for r in reports] == [
        ("mamba", "affine", 1), ("cumsum", "add", 0)]
    assert reports[0]["pattern"].startswith("affine")
    assert reports[1]["pattern"].startswith("sum")
    assert all(r["trials"] > 0 for r in reports)


def test_check_rejects_a_combine_that_is_not_associative():
    mod = scanc.loads("combine sub(x | y) {\n  return x - y\n}\n"
                      "program p(x: f32[N]) {\n  y = scan sub(x) dim=0\n  return y\n}\n")
    with pytest.raises(ValueError, match=r"associative"):
        mod.check()
    with pytest.raises(ValueError, match=r"associative"):
        mod.run("p", np.ones(3, np.float32))


def emitted(module, **options):
    try:
        return module.emit("mamba", **options)
    except scanc.CompileError as e:
        if "without the CUDA backend" in str(e):
            pytest.skip("this scanc has no CUDA backend")
        raise


def test_emit_writes_the_cuda_source_of_a_program_with_its_scan_and_prologue_inlined():
    source = emitted(scanc.loads(TEXT))
    assert "__global__" in source
    # The prologue a = exp(dt * A), fused into the scan's kernels: exp of a computed value.
    assert re.search(r"sc_exp\(p\d+\)", source)


def test_emit_compiles_the_source_to_ptx_for_the_arch_asked_without_a_gpu():
    module = scanc.loads(TEXT)
    emitted(module)  # skips without the CUDA backend
    try:
        ptx = module.emit("mamba", ptx=True, arch="sm_90")
    except scanc.CompileError as e:
        pytest.skip(f"no NVRTC here: {e}")
    assert ".target sm_90" in ptx and ".entry" in ptx


@pytest.mark.parametrize("options,error", [
    ({"target": "metal"}, r'target="metal": expected "cuda"'),
    ({"arch": "sm_75"}, r"CUDA arch `sm_75`")])
def test_emit_refuses_an_unknown_target_or_arch(options, error):
    with pytest.raises(scanc.CompileError, match=error):
        emitted(scanc.loads(TEXT), **options)


def test_emit_refuses_a_combine_that_is_not_associative():
    module = scanc.loads("combine sub(x | y) {\n  return x - y\n}\n"
                         "program mamba(x: f32[N]) {\n  y = scan sub(x) dim=0\n  return y\n}\n")
    with pytest.raises(ValueError, match=r"associative"):
        emitted(module)


def test_backends_include_the_reference_and_the_default():
    backends = scanc.available_backends()
    assert "reference" in backends
    assert scanc.default_backend() in backends


def test_finish_compiles_returns_at_once_when_nothing_compiles():
    mod = scanc.loads(TEXT)
    mod.run("cumsum", np.ones(3), backend="cpu")  # the CPU backend compiles nothing behind
    start = time.perf_counter()
    assert scanc.finish_compiles() is None
    assert time.perf_counter() - start < 1.0


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/self/maps")
def test_finish_compiles_loads_no_compiler_in_a_process_that_compiled_nothing():
    # Nothing was handed to the background compiles, so there is nothing to wait for, and NVRTC
    # (where installed) stays unloaded: a cold load of it once took 2 s on a busy CI box.
    code = ("import numpy as np, scanc\n"
            f"scanc.loads({TEXT!r}).run('cumsum', np.ones(3), backend='cpu')\n"
            "scanc.finish_compiles()\n"
            "print('nvrtc' in open('/proc/self/maps').read())\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_an_unknown_backend_is_a_value_error_listing_the_available_ones():
    mod = scanc.loads(TEXT)
    with pytest.raises(ValueError, match="reference"):
        mod.run("cumsum", np.ones(3), backend="tpu")


def test_run_tensors_refuses_an_unknown_output_framework():
    with pytest.raises(ValueError, match="'nope'"):
        scanc.loads(TEXT).run_tensors("cumsum", [np.ones(3)], backend="reference",
                                      framework="nope")


def test_an_unknown_program_is_a_value_error():
    with pytest.raises(ValueError, match="nope"):
        scanc.loads(TEXT).run("nope", np.ones(3))


@pytest.mark.parametrize("inputs, pattern", [
    pytest.param((np.ones(3, np.float32),), "f64", id="dtype"),
    pytest.param((np.ones((3, 2)),), "dims", id="rank"),
    pytest.param((), "1 input", id="count"),
    pytest.param((np.ones(3), np.ones(3)), "1 input", id="too-many"),
    pytest.param((np.ones(3, np.complex128),), "complex", id="unsupported-dtype"),
    # arrays DLPack cannot carry: named by their dtype, not called "not a tensor"
    pytest.param((np.ones(3, ">f8" if np.little_endian else "<f8"),), "[<>]f8.*byte order", id="foreign-byte-order"),
    pytest.param((np.array([1.0, None, 2.0], dtype=object),), "dtype object", id="object-dtype"),
])
def test_inputs_that_do_not_fit_the_program_are_value_errors(inputs, pattern):
    with pytest.raises(ValueError, match=pattern):
        scanc.loads(TEXT).run("cumsum", *inputs)


def test_sizes_that_disagree_with_a_shared_symbol_are_a_value_error():
    x = np.ones((1, 4, 3), np.float32)
    with pytest.raises(ValueError, match="shape mismatch"):
        scanc.loads(TEXT).run("mamba", x, np.ones((1, 5, 3), np.float32), np.ones(3, np.float32))


def test_something_that_is_not_a_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="x"):
        scanc.loads(TEXT).run("cumsum", "not a tensor")


def test_run_without_a_program_name_is_refused_when_there_are_several():
    with pytest.raises(TypeError, match="mamba, cumsum"):
        scanc.loads(TEXT).run(np.ones(3))


def test_a_negative_thread_count_is_a_compile_error_not_the_default():
    with pytest.raises(scanc.CompileError, match="num_threads -1: must be 0"):
        scanc.loads(TEXT).run("cumsum", np.ones(5), backend="cpu", num_threads=-1)


def test_a_thread_count_beyond_a_c_int_is_a_compile_error_not_a_signature_dump():
    with pytest.raises(scanc.CompileError, match="num_threads 1099511627776: must be 0"):
        scanc.loads(TEXT).run("cumsum", np.ones(5), backend="cpu", num_threads=2**40)


def test_a_numpy_bfloat16_array_is_refused_with_what_to_pass_instead():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = scanc.loads("combine add(a | b) {\n  return a + b\n}\n"
                       "program r(x: bf16[T]) {\n  y = scan add(x) dim=0\n  return y\n}\n")
    with pytest.raises(scanc.CompileError, match="NumPy bfloat16 array .* torch, JAX or CuPy"):
        bf16.run(np.ones(4, ml_dtypes.bfloat16), backend="cpu")
