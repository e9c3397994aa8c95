"""User mistakes: each must exit with code 2 and a one-paragraph message on stderr that names the
problem and where it is (file:line:col for program text; the parameter or file for inputs)."""
import io
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from scanc_cli import EXAMPLES, save_inputs, scanc, scanc_bin

ADD = "combine add(a | b) {\n  return a + b\n}\n"


def write(tmp_path, text, name="bad.scan"):
    path = tmp_path / name
    path.write_text(text)
    return path


def assert_user_error(proc, *needles, place=None):
    """Exit code 2, no crash, and every needle (a regex) in stderr; `place` is "file:line"."""
    assert proc.returncode == 2, f"exit {proc.returncode}\nstdout: {proc.stdout}\n{proc.stderr}"
    message = proc.stderr
    assert message.strip(), "no message on stderr"
    if place is not None:
        assert re.search(re.escape(str(place)) + r":\d+", message), \
            f"no {place}:COL in: {message}"
    for needle in needles:
        assert re.search(needle, message, re.IGNORECASE), f"no /{needle}/ in: {message}"


# --- mistakes in the program text: reported at file:line:col --------------------------------

TEXT_ERRORS = {
    "unknown_name": (
        "program p(x: f32[N]) {\n  y = x + zz\n  return y\n}\n",
        2, ["zz"]),
    "wrong_function_arity": (
        "program p(x: f32[N]) {\n  y = exp(x, x)\n  return y\n}\n",
        2, ["exp", "argument"]),
    "wrong_number_of_scan_leaves": (
        ADD + "program p(x: f32[N, T]) {\n  y = scan add(x, x) dim=1\n  return y\n}\n",
        5, ["add", "1"]),
    "dtype_mismatch": (
        "program p(x: f32[N], k: i32[N]) {\n  y = x + k\n  return y\n}\n",
        2, ["dtype", "f32", "i32"]),
    "shape_mismatch": (
        "program p(x: f32[N], y: f32[M]) {\n  z = x * y\n  return z\n}\n",
        2, ["shape", r"\bN\b", r"\bM\b"]),
    "captured_argument_varying_along_the_scan_dim": (
        "combine sm(a | b; tau) {\n  return tau * logaddexp(a / tau, b / tau)\n}\n"
        "program p(x: f32[N, T], tau: f32[N, T]) {\n"
        "  y = scan sm(x) dim=1 with (tau)\n  return y\n}\n",
        5, ["captured", "varies", "dim"]),
    "scan_dim_out_of_range": (
        ADD + "program p(x: f32[N, T]) {\n  y = scan add(x) dim=5\n  return y\n}\n",
        5, ["dim", "5", "range"]),
    "duplicate_definition": (
        ADD + "program p(x: f32[N]) {\n  return x\n}\n"
        "program p(x: f32[N]) {\n  return x\n}\n",
        7, [r"\bp\b", "(duplicate|already|twice|redefin)"]),
    "syntax_error": (
        "program p(x: f32[N]) {\n  y = (x + 1\n  return y\n}\n",
        3, ["expected"]),
    "unknown_dtype": (
        "program p(x: f31[N]) {\n  return x\n}\n",
        1, ["f31", "dtype"]),
    "too_many_names_for_a_scan": (
        ADD + "program p(x: f32[N, T]) {\n  (y, z) = scan add(x) dim=1\n  return y\n}\n",
        5, ["2", "1"]),
}


@pytest.mark.parametrize("mistake", TEXT_ERRORS)
@pytest.mark.parametrize("command", ["check", "run"])
def test_a_program_text_mistake_is_reported_at_its_line(mistake, command, tmp_path):
    text, line, needles = TEXT_ERRORS[mistake]
    path = write(tmp_path, text)
    extra = ["--random", "N=2,M=2,T=3"] if command == "run" else []
    assert_user_error(scanc(command, path, *extra), *needles, place=f"{path}:{line}")


NON_ASSOCIATIVE = ("combine sub(a | b) {\n  return a - b\n}\n"
                   "program p(x: f32[N, T]) {\n  y = scan sub(x) dim=1\n  return y\n}\n")


def test_check_gives_a_counterexample_for_a_non_associative_combine(tmp_path):
    path = write(tmp_path, NON_ASSOCIATIVE)
    assert_user_error(scanc("check", path), "not associative", r"sub", place=f"{path}:5")


def test_run_refuses_a_non_associative_combine(tmp_path):
    path = write(tmp_path, NON_ASSOCIATIVE)
    assert_user_error(scanc("run", path, "--random", "N=2,T=3"), "associative",
                      place=f"{path}:5")


@pytest.mark.parametrize("text", ["", "# only a comment\n", ADD])
def test_a_file_without_a_program_has_nothing_to_run(text, tmp_path):
    path = write(tmp_path, text)
    assert_user_error(scanc("run", path, "--random", "N=1"), "program")


def test_a_missing_file_is_named(tmp_path):
    missing = tmp_path / "nowhere.scan"
    for command in ("run", "check", "print"):
        assert_user_error(scanc(command, missing), re.escape(str(missing)))


def test_a_directory_given_as_a_file_is_named_as_one(tmp_path):
    folder = tmp_path / "programs.scan"
    folder.mkdir()
    for command in ("run", "check", "print"):
        assert_user_error(scanc(command, folder), re.escape(f"{folder}: error: cannot read the file: it is a directory"))
    inputs = tmp_path / "x.npy"
    inputs.mkdir()
    assert_user_error(cumsum_run(tmp_path, "--input", f"x={inputs}"), re.escape(f"{inputs}: error: cannot read it: it is a directory"))



@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")
def test_a_file_that_never_ends_is_refused_past_64_mib():
    for command in ("check", "print"):
        assert_user_error(scanc(command, "/dev/zero"), re.escape("/dev/zero: error: cannot read "
                                                                 "the file: it is larger than 64 MiB"))

def test_an_unknown_program_is_named_with_the_ones_there_are():
    assert_user_error(scanc("run", EXAMPLES / "cumsum.scan", "--program", "nope",
                            "--random", "N=2,T=3"), "nope", "cumsum")


def test_an_unknown_backend_lists_the_available_ones():
    assert_user_error(scanc("run", EXAMPLES / "cumsum.scan", "--backend", "tpu",
                            "--random", "N=2,T=3"), "unknown backend", "tpu", "reference")


# --- mistakes in the inputs: the message names the parameter or the file --------------------

def cumsum_run(tmp_path, *args):
    return scanc("run", EXAMPLES / "cumsum.scan", *args)


@pytest.mark.parametrize("spec", ["B4", "N=2,T", "N=-1,T=2", "N=2;T=3", "N=2,T=3x", "=3"])
def test_bad_random_syntax_shows_the_expected_form(spec, tmp_path):
    assert_user_error(cumsum_run(tmp_path, "--random", spec), "--random", "SYM=N")



@pytest.mark.parametrize("seed", ["-1", "18446744073709551616", "1e3"])
def test_a_seed_outside_64_bits_is_refused_not_wrapped(seed, tmp_path):
    assert_user_error(cumsum_run(tmp_path, "--random", "N=2,T=3", "--seed", seed), "--seed",
                      "whole number from 0 to 2\\^64 - 1")


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_two_to_the_40_empty_lines_scan_at_once(backend, tmp_path):
    run = cumsum_run(tmp_path, "--random", "N=1099511627776,T=0", "--backend", backend)
    assert run.returncode == 0, run.stderr
    assert "f32[1099511627776, 0] (empty)" in run.stdout

@pytest.mark.parametrize("spec, needle", [
    ("x", "NAME=LO:HI"), ("x=1", "NAME=LO:HI"), ("x=a:b", "NAME=LO:HI"), ("x=0:inf", "NAME=LO:HI"),
    ("x=2:1", "LO is above HI"), ("nope=0:1", "no parameter `nope`"), ("x=0:1e39", "f32, which holds"),
])
def test_a_bad_range_names_itself_and_what_was_expected(spec, needle, tmp_path):
    assert_user_error(cumsum_run(tmp_path, "--random", "N=2,T=3", "--range", spec), "--range", re.escape(needle))


def test_a_range_given_twice_for_one_input_is_named(tmp_path):
    proc = cumsum_run(tmp_path, "--random", "N=2,T=3", "--range", "x=0:1", "--range", "x=0:2")
    assert_user_error(proc, "`x`", "twice")


def test_integer_and_bool_inputs_take_only_ranges_they_can_hold(tmp_path):
    path = write(tmp_path, "program p(k: u8[N], b: bool[N]) {\n  return k, b\n}\n")
    for spec, needle in [("k=0.5:3", "integers"), ("k=-1:3", "u8, which holds"), ("b=0:1", "bool")]:
        assert_user_error(scanc("run", path, "--random", "N=3", "--range", spec), "--range", needle)


def test_a_range_without_random_inputs_says_where_values_come_from(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((2, 3), np.float32))
    proc = cumsum_run(tmp_path, "--input", f"x={x}", "--range", "x=0:1")
    assert_user_error(proc, "--range", "--input")


def test_a_size_missing_from_random_is_named(tmp_path):
    assert_user_error(cumsum_run(tmp_path, "--random", "N=3"), "`T`")


def test_a_size_symbol_the_program_lacks_is_named(tmp_path):
    assert_user_error(cumsum_run(tmp_path, "--random", "N=3,T=2,Q=5"), "`Q`")


def test_a_corrupt_npy_file_is_named(tmp_path):
    bad = tmp_path / "x.npy"
    bad.write_bytes(b"\x93NUMPY\x01\x00garbage that is no header")
    assert_user_error(cumsum_run(tmp_path, "--input", f"x={bad}"), re.escape(str(bad)))


def test_a_file_that_is_not_npy_at_all_is_named(tmp_path):
    bad = tmp_path / "x.npy"
    bad.write_text("hello")
    assert_user_error(cumsum_run(tmp_path, "--input", f"x={bad}"), re.escape(str(bad)))


def test_an_npy_of_the_wrong_dtype_names_the_parameter(tmp_path):
    args = save_inputs(tmp_path, {"x": np.zeros((2, 3), np.float64)})
    assert_user_error(cumsum_run(tmp_path, *args), "dtype", "`x`", "f32", "f64")


def test_an_npy_of_the_wrong_rank_names_the_parameter(tmp_path):
    args = save_inputs(tmp_path, {"x": np.zeros(3, np.float32)})
    assert_user_error(cumsum_run(tmp_path, *args), "`x`", "dims")


def test_a_missing_input_is_named(tmp_path):
    args = save_inputs(tmp_path, {"x": np.zeros((2, 3, 4), np.float32)})
    assert_user_error(scanc("run", EXAMPLES / "mamba.scan", *args), "missing input", "`dt`")


def test_an_unknown_input_name_is_named_with_the_parameters(tmp_path):
    args = save_inputs(tmp_path, {"x": np.zeros((2, 3), np.float32),
                                  "w": np.zeros((2, 3), np.float32)})
    assert_user_error(cumsum_run(tmp_path, *args), "unknown input", "`w`", "`x`")


def test_an_input_given_twice_is_named(tmp_path):
    args = save_inputs(tmp_path, {"x": np.zeros((2, 3), np.float32)})
    assert_user_error(cumsum_run(tmp_path, *args, *args), "`x`", "twice")


@pytest.mark.parametrize("option,spec", [("--bound", "T=abc"), ("--size", "T=-1"),
                                         ("--bound", "T=5,T=6")])
def test_lower_names_the_size_option_whose_value_is_malformed(option, spec, tmp_path):
    proc = scanc("lower", EXAMPLES / "cumsum.scan", "--algorithm", "hillis-steele", option, spec,
                 "--emit", "scan", "-o", tmp_path / "out.scan")
    assert_user_error(proc, re.escape(f"bad {option}"))
    assert "--random" not in proc.stderr


def test_lower_refuses_a_size_and_a_bound_for_one_symbol(tmp_path):
    proc = scanc("lower", EXAMPLES / "cumsum.scan", "--algorithm", "hillis-steele", "--size",
                 "T=5", "--bound", "T=3", "--emit", "scan", "-o", tmp_path / "out.scan")
    assert_user_error(proc, "--size T=5", "--bound T=3", "not both")


def test_a_bad_input_option_shows_the_expected_form(tmp_path):
    assert_user_error(cumsum_run(tmp_path, "--input", "x.npy"), "NAME=PATH")


def test_the_output_count_must_match_the_results(tmp_path):
    proc = cumsum_run(tmp_path, "--random", "N=2,T=3", "--output", tmp_path / "a.npy",
                      "--output", tmp_path / "b.npy")
    assert_user_error(proc, "returns 1 value", "2 --output")


def test_a_bound_exceeded_at_run_time_names_the_symbol_and_bound(tmp_path):
    path = write(tmp_path, ADD + "program p(x: f32[L<=8]) {\n  y = scan add(x) dim=0\n"
                                 "  return y\n}\n")
    args = save_inputs(tmp_path, {"x": np.zeros(10, np.float32)})
    assert_user_error(scanc("run", path, *args), "bound", r"\bL\b", r"\b8\b", r"\b10\b")
    assert_user_error(scanc("run", path, "--random", "L=9"), "bound", r"\bL\b", r"\b8\b")


@pytest.mark.parametrize("sizes", ["N=4611686018427387904,T=4", "N=3037000500,T=3037000500",
                                   "N=9223372036854775807,T=2"])
@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_sizes_whose_tensors_pass_2_to_the_50_elements_are_refused_before_allocating(sizes, backend,
                                                                                    tmp_path):
    assert_user_error(cumsum_run(tmp_path, "--random", sizes, "--backend", backend),
                      "sizes too large", r"\[N, T\]", r"2\^50")


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_a_slice_bound_whose_value_leaves_64_bits_is_refused_at_the_slice(backend, tmp_path):
    path = write(tmp_path, "program p(x: f32[N]) {\n  y = slice(x, 0, 0, N * 9223372036854775807)\n"
                           "  return y\n}\n")
    assert_user_error(scanc("run", path, "--random", "N=3", "--backend", backend),
                      "does not fit in 64 bits", place=f"{path}:2")


def test_constant_dims_whose_tensor_passes_2_to_the_50_elements_are_refused(tmp_path):
    path = write(tmp_path, "program p(x: f32[9223372036854775807, 2]) {\n  return x\n}\n")
    assert_user_error(scanc("run", path, "--random"), "sizes too large", "9223372036854775807, 2")


def test_a_chain_of_operations_past_the_depth_limit_is_refused_at_its_line_by_any_command(tmp_path):
    # 20000 statements, each on the last one's result: deeper than scanc's passes can walk.
    chain = "".join(f"  y{i + 1} = y{i} * 2\n" for i in range(20000))
    path = write(tmp_path, f"program p(y0: f32[N]) {{\n{chain}  return y20000\n}}\n")
    for args in (["check"], ["print"], ["run", "--random", "N=3", "--backend", "cpu"],
                 ["lower", "--bound", "N=4", "-o", tmp_path / "low.scan"]):
        assert_user_error(scanc(args[0], path, *args[1:]), "chain of 10001 operations",
                          place=f"{path}:10001")


def test_a_chain_of_operations_just_within_the_depth_limit_runs_on_every_backend(tmp_path):
    chain = "".join(f"  y{i + 1} = y{i} + 1\n" for i in range(9990))
    path = write(tmp_path, f"program p(y0: i32[N]) {{\n{chain}  return y9990\n}}\n")
    x = np.arange(5, dtype=np.int32)
    for backend in ("reference", "cpu"):
        out = tmp_path / f"{backend}.npy"
        proc = scanc("run", path, "--backend", backend, *save_inputs(tmp_path, {"y0": x}),
                     "--output", out)
        assert proc.returncode == 0, proc.stderr
        np.testing.assert_array_equal(np.load(out), x + 9990)


def test_inputs_and_random_together_are_a_usage_error(tmp_path):
    args = save_inputs(tmp_path, {"x": np.zeros((2, 3), np.float32)})
    assert_user_error(cumsum_run(tmp_path, *args, "--random", "N=2,T=3"), "random|input")


def test_no_inputs_at_all_says_how_to_give_them(tmp_path):
    assert_user_error(cumsum_run(tmp_path), "--input", "--random")


@pytest.mark.parametrize("argv", [[], ["frobnicate"], ["run"], ["bench", "x.scan"],
                                  ["run", "x.scan", "--seed", "many"]])
def test_a_command_line_usage_mistake_exits_with_2(argv):
    proc = scanc(*argv)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip()


@pytest.mark.parametrize("command", ["run", "check", "print", "bench"])
def test_every_subcommand_has_help(command):
    proc = scanc(command, "--help")
    assert proc.returncode == 0
    assert command in proc.stdout and "--help" in proc.stdout


TWO_RESULTS = "program p(x: f32[N]) {\n  return x, x * 2.0\n}\n"


def test_results_are_written_all_or_none_when_a_later_file_cannot_be(tmp_path):
    path = write(tmp_path, TWO_RESULTS)
    proc = scanc("run", path, "--random", "N=3", "--output", tmp_path / "a.npy",
                 "--output", tmp_path / "missing" / "b.npy")
    assert_user_error(proc, "cannot open the file for writing", re.escape(str(tmp_path / "missing" / "b.npy")))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.scan"]  # no a.npy, nothing partial


def test_a_bf16_result_or_one_file_for_two_results_is_refused_before_running(tmp_path):
    path = write(tmp_path, "program p(x: f32[N]) {\n  return x, bf16(x)\n}\n")
    assert_user_error(scanc("run", path, "--random", "N=3", "--output", tmp_path / "a.npy",
                            "--output", tmp_path / "b.npy"), "result 1 is bf16", "cast it to f32")
    path = write(tmp_path, TWO_RESULTS)
    assert_user_error(scanc("run", path, "--random", "N=3", "--output", tmp_path / "a.npy",
                            "--output", tmp_path / "a.npy"), "given for result 0", "give each its own file")
    assert not (tmp_path / "a.npy").exists()


def test_output_that_cannot_be_written_in_full_is_an_error_not_a_success(tmp_path):
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full on this system")
    cumsum = EXAMPLES / "cumsum.scan"
    for emit in ("scan", "dot", "onnx"):
        proc = scanc("lower", cumsum, "--size", "T=4", "--emit", emit, "-o", "/dev/full")
        if emit == "onnx" and "without ONNX export" in proc.stderr:
            continue
        assert_user_error(proc, "writing `/dev/full` failed")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([str(scanc_bin()), "print", str(cumsum)], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert_user_error(proc, "writing to standard output failed")


def test_a_float64_range_as_wide_as_the_doubles_draws_finite_values_inside_it(tmp_path):
    path = write(tmp_path, "program p(x: f64[N]) {\n  return x\n}\n")
    for low, high in (("-1e308", "1e308"), ("-1.7976931348623157e308", "1.7976931348623157e308")):
        out = tmp_path / "x.npy"
        proc = scanc("run", path, "--random", "N=1000", "--range", f"x={low}:{high}", "--output", out)
        assert proc.returncode == 0, proc.stderr
        x = np.load(out)
        assert np.isfinite(x).all() and (x >= float(low)).all() and (x < float(high)).all()
        assert x.min() < -1e307 and x.max() > 1e307  # spread over the range, not squeezed


def test_a_where_whose_condition_is_only_literals_says_so(tmp_path):
    path = write(tmp_path, "program p(i: i32[N]) {\n  y = where(32 == 32, i, i)\n  return y\n}\n")
    assert_user_error(scanc("check", path), "made only of literals", place=f"{path}:2")


def emit_or_skip(*args):
    proc = scanc("emit", *args)
    if "built without the CUDA backend" in proc.stderr:
        pytest.skip("this scanc has no CUDA backend")
    return proc


@pytest.mark.parametrize("arch", ["sm_7x0", "sm_4294967386", "sm_90 --foo", "sm_75", "sm_999"])
def test_emit_refuses_an_arch_it_cannot_compile_for(arch):
    proc = emit_or_skip(EXAMPLES / "cumsum.scan", "--arch", arch, "--ptx")
    assert_user_error(proc, "CUDA arch", re.escape(arch))


def test_emit_writes_a_chain_as_long_as_the_parser_allows(tmp_path):
    chain = "".join(f"  y{i + 1} = y{i} + 1\n" for i in range(9990))
    path = write(tmp_path, f"program p(y0: i32[N]) {{\n{chain}  return y9990\n}}\n")
    proc = emit_or_skip(path, "-o", tmp_path / "chain.cu")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "chain.cu").read_text().count("sc_add(") >= 9990


def test_a_length_whose_bound_overflows_says_so_rather_than_asking_for_a_bound(tmp_path):
    path = write(tmp_path, ADD + "program p(x: f32[T]) {\n  y = scan add(concat(0, x, x, x)) dim=0\n"
                                 "  return y\n}\n")
    assert_user_error(scanc("lower", path, "--bound", f"T={2 ** 62}"), r"`3\*T`", "passes 2\\^63",
                      "smaller bounds", place=f"{path}:5")


def test_a_file_of_several_programs_asks_which_one_naming_the_file(tmp_path):
    path = write(tmp_path, "program p(x: f32[N]) {\n  return x\n}\nprogram q(x: f32[N]) {\n  return x\n}\n")
    proc = scanc("run", path, "--random", "N=2")
    assert_user_error(proc, r"several programs \(p, q\)", "--program NAME")
    assert str(path) in proc.stderr


@pytest.mark.parametrize("seconds", ["nan", "-1", "inf", "601"])
def test_bench_refuses_a_time_that_is_not_one(seconds):
    assert_user_error(scanc("bench", EXAMPLES / "cumsum.scan", "--random", "N=2,T=3",
                            "--seconds", seconds), "--seconds")


def test_a_result_may_go_to_standard_output_which_is_no_file_to_rename_into(tmp_path):
    proc = subprocess.run([str(scanc_bin()), "run", str(write(tmp_path, TWO_RESULTS)), "--random", "N=3",
                           "--output", "/dev/stdout", "--output", str(tmp_path / "b.npy")],
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    first, second = np.load(io.BytesIO(proc.stdout)), np.load(tmp_path / "b.npy")
    np.testing.assert_array_equal(second, first * 2)
