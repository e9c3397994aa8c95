"""Example programs with random token edits (deleted, replaced, doubled or swapped tokens), run
through the whole command line: each must either be refused as a user error (exit 2, with
file:line:col) or check, and then run on the CPU backend to the reference executor's results
on the same random inputs, at sizes that include 0, 1, primes and 2^k+-1; and lower to
slice/concat/elementwise programs with the same results."""
import math
import random
import re

import numpy as np
import pytest

from scanc_cli import EXAMPLES, scanc

TOKEN = re.compile(r"[A-Za-z_][A-Za-z_0-9]*|\d+\.?\d*(?:e-?\d+)?|==|!=|<=|>=|\S")
SOURCES = sorted(EXAMPLES.glob("*.scan"))
VOCABULARY = sorted({t for p in SOURCES for t in TOKEN.findall(p.read_text())} |
                    {"reverse", "dim=-1", "0", "1e30", "-1", "f16", "i8", "u8", "bool", "with", "where"})
SIZES = [0, 1, 2, 3, 17, 31, 257, 1025]
MAX_ELEMENTS = 1 << 21  # so that three size symbols never ask for 1025^3 elements a tensor


def draw_sizes(symbols, rng):
    """A size from SIZES for each symbol; while their product passes MAX_ELEMENTS, the largest
    is drawn again from the sizes below it."""
    sizes = {s: rng.choice(SIZES) for s in symbols}
    while math.prod(sizes.values()) > MAX_ELEMENTS:
        largest = max(sizes, key=sizes.get)
        sizes[largest] = rng.choice([n for n in SIZES if n < sizes[largest]])
    return sizes


def mutate(text, rng):
    for _ in range(rng.randint(1, 3)):
        spans = [m.span() for m in TOKEN.finditer(text)]
        a, b = rng.choice(spans)
        edit = rng.random()
        if edit < 0.3:
            text = text[:a] + text[b:]
        elif edit < 0.6:
            text = text[:a] + rng.choice(VOCABULARY) + text[b:]
        elif edit < 0.8:
            text = text[:a] + text[a:b] + " " + text[a:b] + text[b:]
        else:
            c, d = rng.choice(spans)
            if c > b:
                text = text[:a] + text[c:d] + text[b:c] + text[a:b] + text[d:]
    return text


def run_outputs(path, program, backend, sizes, tmp_path):
    """The program's results on `backend` (random inputs, seed 3), or the failed process."""
    args = ["run", path, "--program", program, "--backend", backend, "--seed", 3, "--random", sizes]
    summary = scanc(*args)
    if summary.returncode != 0:
        return summary
    results = len(re.findall(r"^result", summary.stdout, re.M))
    files = [tmp_path / f"{backend}{r}.npy" for r in range(results)]
    written = scanc(*args, *[a for f in files for a in ("--output", f)])
    assert written.returncode == 0, written.stderr
    return [np.load(f) for f in files]


def assert_same_results(got, want, context):
    assert len(got) == len(want), context
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape, context
        if w.dtype.kind == "f":
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64),
                                       rtol=2e-2 if w.dtype.itemsize == 2 else 1e-4, atol=1e-3,
                                       equal_nan=True, err_msg=context)
        else:
            np.testing.assert_array_equal(g, w, err_msg=context)


def mutated_programs(seed, tmp_path):
    """40 mutated files: yields (path, text, check process, programs), where programs lists,
    for a file that checks, each program with random sizes for its size symbols (none where
    they are all constant)."""
    rng = random.Random(seed)
    for _ in range(40):
        text = mutate(rng.choice(SOURCES).read_text(), rng)
        path = tmp_path / "mutated.scan"
        path.write_text(text)
        checked = scanc("check", path)
        programs = []
        if checked.returncode == 0:
            for program, params in re.findall(r"program\s+(\w+)\s*\(([^)]*)\)", text):
                # size symbols: capitalized names inside a parameter's brackets
                dims = " ".join(re.findall(r"\[([^\]]*)\]", params))
                sizes = draw_sizes(sorted(set(re.findall(r"\b([A-Z]\w*)\b", dims))), rng)
                programs.append((program, sizes))
        yield path, text, checked, programs


def sizes_arg(sizes):
    return ",".join(f"{s}={n}" for s, n in sizes.items())


@pytest.mark.parametrize("seed", range(8))
def test_mutated_examples_are_refused_with_a_place_or_run_to_the_references_results(seed, tmp_path):
    refused = ran = 0
    for path, text, checked, programs in mutated_programs(seed, tmp_path):
        assert checked.returncode in (0, 2), f"exit {checked.returncode}\n{checked.stderr}\n{text}"
        if checked.returncode == 2:
            assert re.search(r"mutated\.scan:\d+:\d+", checked.stderr), f"{checked.stderr}\n{text}"
            refused += 1
        for program, sizes in programs:
            want = run_outputs(path, program, "reference", sizes_arg(sizes), tmp_path)
            got = run_outputs(path, program, "cpu", sizes_arg(sizes), tmp_path)
            if not isinstance(want, list):  # refused at run time (sizes its bounds exclude, ...)
                assert want.returncode == 2 and not isinstance(got, list) and got.returncode == 2, \
                    f"{want.stderr}\n{getattr(got, 'stderr', '')}\n{text}"
                continue
            assert isinstance(got, list), f"{got.stderr}\n{text}"
            ran += 1
            assert_same_results(got, want, f"{program} at {sizes}:\n{text}")
    assert refused > 0 and ran > 0  # the edits reach both outcomes


@pytest.mark.parametrize("seed", range(8, 12))
def test_mutated_examples_that_check_lower_to_programs_with_the_same_results(seed, tmp_path):
    # Hillis-Steele for every size up to a bound (at or above the one run), work-efficient at
    # exactly the sizes run (it needs static lengths); both run on the reference executor.
    lowered = tmp_path / "lowered.scan"
    compared = 0
    for path, text, _, programs in mutated_programs(seed, tmp_path):
        for number, (program, sizes) in enumerate(programs):
            static = number % 2 == 1
            args = ["lower", path, "--program", program, "--emit", "scan", "-o", lowered,
                    "--algorithm", "work-efficient" if static else "hillis-steele"]
            for s, n in sizes.items():
                args += ["--size", f"{s}={n}"] if static else ["--bound", f"{s}={n + 3}"]
            low = scanc(*args)
            assert low.returncode in (0, 2), f"exit {low.returncode}\n{low.stderr}\n{text}"
            if low.returncode == 2:
                continue
            want = run_outputs(path, program, "reference", sizes_arg(sizes), tmp_path)
            got = run_outputs(lowered, program, "reference", "" if static else sizes_arg(sizes), tmp_path)
            if not isinstance(want, list):
                continue
            assert isinstance(got, list), f"{got.stderr}\n{lowered.read_text()}"
            compared += 1
            assert_same_results(got, want, f"{program} at {sizes}:\n{text}\nlowered:\n{lowered.read_text()}")
    assert compared > 0
