"""Random whole programs against the reference executor: chains of scans (sums, max, min,
products, bitwise ors and xors, affine maps, logaddexp, argmax, a max clamped by a captured
value, 2x2 matrix products, the last nonzero, sums segmented by bool flags), forwards or
reversed along any dim, between elementwise ops with broadcasts and casts, comparisons, logic
and selects, slices, concat and interleave (the evens and odds of a tensor woven back into its
own length too), over ranks 1-3 and every dtype (bf16 as torch tensors, where torch is there),
symbols bounded or not, at awkward sizes (0, 1, primes, 2^k +- 1, one long line), with inputs
in strided layouts. Each program prints to text that parses back to the same print; it runs on
the CPU backend at 1-3 threads and ordered, and lowered into slice/concat/elementwise ops (at
its sizes, or for every length up to a bound): as .scan text run by the reference, and as ONNX
run by onnxruntime where it and scanc's ONNX export are there; and on CUDA where there is a GPU.
Without one, every twelfth program's CUDA kernels are compiled by NVRTC for sm_90 (where NVRTC is).

Ordered runs give the reference's bits. Elsewhere a float scan that adds or multiplies may
associate differently: each value knows whether its bits depend on the association (then it is
compared within the tolerance of the program's narrowest float dtype), or its discrete values do
(a comparison, floor, cast to an integer or argmax index of such a value: compared only in the
ordered run). Every other result is compared bit for bit, but the floats of ONNX and CUDA,
which have their own exp, log and tanh, within the tolerance."""
import functools
import random

import numpy as np
import pytest

import scanc

try:
    import onnxruntime
except ImportError:  # the ONNX runs are left out; everything else runs
    onnxruntime = None
try:
    import torch  # CUDA runs take torch tensors on the GPU
    CUDA = torch.cuda.is_available() and "cuda" in scanc.available_backends()
except ImportError:
    torch, CUDA = None, False

FLOATS = ["f16", "bf16", "f32", "f64"]
INTEGERS = ["u8", "i8", "i16", "i32", "i64"]
DTYPES = FLOATS + INTEGERS + ["bool"]
NUMPY = {"u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
         "f16": np.float16, "bf16": np.float32, "f32": np.float32, "f64": np.float64,
         "bool": np.bool_}  # bf16 is drawn in f32, then rounded by torch
TOLERANCE = {"f16": 3e-2, "bf16": 3e-2, "f32": 1e-3, "f64": 1e-9}  # of max(1, mean |reference|)
SIZES = [0, 1, 2, 3, 5, 7, 8, 9, 16, 17, 31, 33, 64, 65, 127]
LONG_LINES = [4097, 65537, 70001]

# How far a value's bits depend on the order a scan associates its elements in.
EXACT, APPROXIMATE, UNSTABLE = 0, 1, 2

# name: (definition, leaves, the dtypes it takes: any, int or float, captured values)
COMBINES = {
    "add": ("combine add(a | b) { return a + b }", 1, "any", 0),
    "mx": ("combine mx(a | b) { return max(a, b) }", 1, "any", 0),
    "mn": ("combine mn(a | b) { return min(a, b) }", 1, "any", 0),
    "mul": ("combine mul(a | b) { return a * b }", 1, "int", 0),
    "bor": ("combine bor(a | b) { return a | b }", 1, "int", 0),
    "bxor": ("combine bxor(a | b) { return a ^ b }", 1, "int", 0),
    "aff": ("combine aff(a1, b1 | a2, b2) { return a1 * a2, a2 * b1 + b2 }", 2, "any", 0),
    "lae": ("combine lae(a | b) { return logaddexp(a, b) }", 1, "float", 0),
    "argmax": ("combine argmax(v1, i1 | v2, i2) {\n  take = v2 > v1\n"
               "  return where(take, v2, v1), where(take, i2, i1)\n}", 2, "any", 0),
    "clamped": ("combine clamped(a | b; m) { return min(max(a, b), m) }", 1, "any", 1),
    "mat": ("combine mat(a1, b1, c1, d1 | a2, b2, c2, d2) {\n"
            "  return a2 * a1 + b2 * c1, a2 * b1 + b2 * d1, c2 * a1 + d2 * c1, "
            "c2 * b1 + d2 * d1\n}", 4, "int", 0),
    "last": ("combine last(a | b) { return where(b != 0, b, a) }", 1, "any", 0),
    "seg": ("combine seg(f1, v1 | f2, v2) { return f1 or f2, where(f2, v2, v1 + v2) }", 2,
            "any", 0),
}
REASSOCIATED_FLOATS = {"add", "aff", "lae", "seg"}  # float scans whose bits depend on the order
TAKE_BOOL = {"mx", "mn", "bor", "bxor", "argmax", "clamped", "last"}  # first leaves of bool

UNARY = {  # (form, discrete)
    "float": [("exp(-abs({}))", False), ("tanh({})", False), ("sigmoid({})", False),
              ("-{}", False), ("abs({})", False), ("{} * 0.5", False), ("softplus({})", False),
              ("sqrt(abs({}))", False), ("floor({} * 4)", True), ("{} - 1", False)],
    "int": [("-{}", False), ("abs({})", False), ("{} % 7", False), ("{} >> 1", False),
            ("{} << 2", False), ("{} + 3", False), ("{} * 3", False), ("{} & 15", False)],
}


class Value:
    """A tensor of the program: its name, dtype, lengths and how exact it is. A length is a
    token: a symbol ("N"), "1", or a tuple naming how it was made, so that equal tokens are
    equal lengths."""

    def __init__(self, name, dtype, lengths, exactness=EXACT):
        self.name, self.dtype, self.lengths = name, dtype, tuple(lengths)
        self.exactness = exactness

    def with_length(self, dim, length, name, exactness=None):
        lengths = self.lengths[:dim] + (length,) + self.lengths[dim + 1:]
        return Value(name, self.dtype, lengths,
                     self.exactness if exactness is None else exactness)


def is_symbol(length):
    return isinstance(length, str) and length != "1"


def broadcasts(small, big):
    return len(small) <= len(big) and all(
        s == b or s == "1" for s, b in zip(small[::-1], big[::-1]))


def exactness_of(operands, discrete=False):
    """A value made of `operands`; `discrete`: by a function that jumps (a comparison, floor,
    a cast to an integer), which turns an approximate operand into an unstable result."""
    worst = max(o.exactness for o in operands)
    return UNSTABLE if discrete and worst == APPROXIMATE else worst


class RandomProgram:
    """One program `p` drawn from `rng`: its text, parameters and results."""

    def __init__(self, rng: random.Random):
        self.rng, self.lines, self.combines, self.count = rng, [], set(), 0
        rank = rng.randint(1, 3)
        symbols = rng.sample(["N", "T", "D"], rank)
        self.symbols = sorted(symbols)
        self.bound = 200000 if rng.random() < 0.5 else None
        self.params = [Value(f"x{i}", rng.choice(DTYPES), symbols)
                       for i in range(rng.randint(1, 3))]
        if rank > 1 and rng.random() < 0.6:  # a parameter that broadcasts (a captured value's)
            one = rng.randrange(rank)
            self.params.append(Value(f"c{len(self.params)}", rng.choice(DTYPES),
                                     ["1" if i == one else s for i, s in enumerate(symbols)]))
        self.pool = list(self.params)
        steps = [self.unary, self.binary, self.compare, self.slice, self.interleave,
                 self.concat, self.scan, self.scan, self.scan]
        for _ in range(rng.randint(2, 9)):
            rng.choice(steps)()
        if not self.combines:
            self.scan()
        self.results = self.pool[::-1][:rng.randint(1, 3)]  # the last values made
        self.text = "\n".join(
            [COMBINES[c][0] for c in sorted(self.combines)]
            + [f"program p({self.signature()}) {{"] + self.lines
            + [f"  return {', '.join(v.name for v in self.results)}", "}", ""])
        self.float_dtypes = {v.dtype for v in self.pool if v.dtype in FLOATS}
        self.takes_torch = any(p.dtype == "bf16" for p in self.params)  # NumPy has no bf16

    def signature(self):
        seen = set()

        def dim(s):  # a bound, where there is one, on each symbol's first appearance
            if self.bound and s != "1" and s not in seen:
                seen.add(s)
                return f"{s}<={self.bound}"
            return s
        return ", ".join(f"{p.name}: {p.dtype}[{', '.join(dim(s) for s in p.lengths)}]"
                         for p in self.params)

    def fresh(self):
        self.count += 1
        return f"v{self.count}"

    def add(self, expr, value):
        self.lines.append(f"  {value.name} = {expr}")
        self.pool.append(value)
        return value

    def pick(self, accept=lambda v: True):
        choices = [v for v in self.pool if accept(v)]
        return self.rng.choice(choices) if choices else None

    @staticmethod
    def cast(v, dtype):
        """v's text in `dtype`, and whether the cast is discrete (a float to an integer or
        bool)."""
        if v.dtype == dtype:
            return v.name, False
        return f"{dtype}({v.name})", v.dtype in FLOATS and dtype not in FLOATS

    def unary(self):
        v = self.pick()
        form, discrete = (("not {}", False) if v.dtype == "bool" else
                          self.rng.choice(UNARY["float" if v.dtype in FLOATS else "int"]))
        self.add(form.format(v.name), Value(self.fresh(), v.dtype, v.lengths,
                                            exactness_of([v], discrete)))

    def binary(self):
        """An op of a and b (b cast to a's dtype, broadcast to a's lengths), or a select of
        one of them by a bool that broadcasts to a."""
        a = self.pick()
        same = self.rng.random() < 0.8
        b = self.pick(lambda v: v.lengths == a.lengths if same else
                      broadcasts(v.lengths, a.lengths))
        if b is None:
            return
        ops = ["and", "or", "^"] if a.dtype == "bool" else ["+", "-", "*"]
        op = self.rng.choice(ops + ["max", "min", "where", "select"])
        bx, discrete = self.cast(b, a.dtype)
        operands = [a, b]
        if op == "select":
            c = self.pick(lambda v: v.dtype == "bool" and broadcasts(v.lengths, a.lengths))
            if c is None:
                return
            operands.append(c)
            expr = f"where({c.name}, {a.name}, {bx})"
        else:
            expr = (f"{op}({a.name}, {bx})" if op in ("max", "min") else
                    f"where({a.name} > {bx}, {a.name}, {bx})" if op == "where" else
                    f"{a.name} {op} {bx}")
        self.add(expr, Value(self.fresh(), a.dtype, a.lengths,
                             exactness_of(operands, discrete)))

    def compare(self):
        a = self.pick()
        self.add(f"{a.name} > 0", Value(self.fresh(), "bool", a.lengths, exactness_of([a], True)))

    def slice(self):
        """Ends dropped (x[1:-1] and x[2:] are one length), every other element (x[1::2] and
        x[:-1:2] are one length), or a slice of a new length."""
        v = self.pick(lambda v: any(s != "1" for s in v.lengths))
        if v is None:
            return
        d = self.rng.choice([i for i, s in enumerate(v.lengths) if s != "1"])
        length, kind = v.lengths[d], self.rng.random()
        if kind < 0.35 and is_symbol(length):
            k = self.rng.randint(1, 3)
            a = self.rng.randint(0, k)
            stop = f"-{k - a}" if k > a else length
            self.add(f"slice({v.name}, {d}, {a}, {stop})",
                     v.with_length(d, ("drop", length, k), self.fresh()))
        elif kind < 0.7 and is_symbol(length):
            odd = self.rng.random() < 0.5
            bounds = self.rng.choice([f"1, {length}", "0, -1"]) if odd else f"0, {length}"
            self.add(f"slice({v.name}, {d}, {bounds}, 2)",
                     v.with_length(d, ("odds" if odd else "evens", length), self.fresh()))
        else:
            # from a constant or another dim's size (a length of two symbols)
            start = self.rng.choice([0, 1, 2, 3, 4] + [s for s in self.symbols if s != length])
            step, stop = self.rng.choice([1, 1, 2, 3]), self.bound or 1 << 40
            self.add(f"slice({v.name}, {d}, {start}, {stop}, {step})",
                     v.with_length(d, ("new", self.fresh()), self.fresh()))

    def interleave(self):
        if self.rng.random() < 0.5:  # the evens and odds of a tensor, woven back into its length
            v = self.pick(lambda v: any(map(is_symbol, v.lengths)))
            if v is None:
                return
            d = self.rng.choice([i for i, s in enumerate(v.lengths) if is_symbol(s)])
            n = v.lengths[d]
            evens = self.add(f"slice({v.name}, {d}, 0, {n}, 2)",
                             v.with_length(d, ("evens", n), self.fresh()))
            odds = self.add(f"slice({v.name}, {d}, 1, {n}, 2)",
                            v.with_length(d, ("odds", n), self.fresh()))
            woven = self.add(f"interleave({d}, {evens.name}, {odds.name})",
                             v.with_length(d, n, self.fresh()))
            op = "and" if v.dtype == "bool" else "+"
            self.add(f"{woven.name} {op} {v.name}", v.with_length(d, n, self.fresh()))
            return
        a = self.pick()
        b = self.pick(lambda v: v.lengths == a.lengths and v.dtype == a.dtype)
        d = self.rng.randrange(len(a.lengths))
        self.add(f"interleave({d}, {a.name}, {b.name})",
                 a.with_length(d, ("twice", a.lengths[d]), self.fresh(), exactness_of([a, b])))

    def concat(self):
        a = self.pick()
        d = self.rng.randrange(len(a.lengths))
        b = self.pick(lambda v: v.dtype == a.dtype and len(v.lengths) == len(a.lengths) and all(
            x == y for i, (x, y) in enumerate(zip(v.lengths, a.lengths)) if i != d))
        self.add(f"concat({d}, {a.name}, {b.name})",
                 a.with_length(d, ("cat", a.lengths[d], b.lengths[d]), self.fresh(),
                               exactness_of([a, b])))

    def scan(self):
        name = self.rng.choice(list(COMBINES))
        _, leaves, takes, captured = COMBINES[name]
        first = self.pick(lambda v: name in TAKE_BOOL if v.dtype == "bool" else (
            (takes != "int" or v.dtype in INTEGERS) and (takes != "float" or v.dtype in FLOATS)))
        if first is None:
            return
        operands, args, dtypes, discrete = [first], [first.name], [first.dtype] * leaves, False
        if name == "seg":  # bool flags first: a value of first's lengths, or first's sign
            flags = self.pick(lambda v: v.lengths == first.lengths and v.dtype == "bool")
            flags_text, jumps = (flags.name, False) if flags else self.cast(first, "bool")
            operands, args, dtypes = [flags or first, first], [flags_text, first.name], [
                "bool", first.dtype]
            discrete = jumps
        elif name == "argmax":
            index = self.pick(lambda v: v.lengths == first.lengths and v.dtype in INTEGERS)
            operands.append(index or first)
            args.append(index.name if index else f"i32({first.name})")
            dtypes[1] = index.dtype if index else "i32"
            discrete = index is None and first.dtype in FLOATS
        else:
            for _ in range(leaves - 1):
                other = self.pick(lambda v: v.lengths == first.lengths)
                text, jumps = self.cast(other, first.dtype)
                operands.append(other)
                args.append(text)
                discrete = discrete or jumps
        # Keep products bounded: factors in [0.5, 1) for floats, [0, 3) or (-3, 0] for integers.
        if name == "aff" and first.dtype in FLOATS:
            args[0] = f"0.5 + 0.5 * sigmoid({args[0]})"
        elif name in ("mat", "mul", "aff"):
            args = [f"{a} % 3" for a in args]
        d = self.rng.randrange(len(first.lengths))
        tail = " reverse" if self.rng.random() < 0.4 else ""
        if captured:
            one_slice = tuple("1" if i == d else s for i, s in enumerate(first.lengths))
            c = self.pick(lambda v: broadcasts(v.lengths, one_slice))
            if c is None:
                return
            text, jumps = self.cast(c, first.dtype)
            operands.append(c)
            discrete = discrete or jumps
            tail += f" with ({text})"
        self.combines.add(name)
        exactness = exactness_of(operands, discrete or name == "last")
        if name in REASSOCIATED_FLOATS and first.dtype in FLOATS:
            exactness = max(exactness, APPROXIMATE)
        outs = [Value(self.fresh(), t, first.lengths, exactness) for t in dtypes]
        if name == "argmax" and exactness == APPROXIMATE:
            outs[1].exactness = UNSTABLE  # the index of a maximum that moves
        names = ", ".join(o.name for o in outs)
        self.lines.append(f"  {names if leaves == 1 else f'({names})'} = "
                          f"scan {name}({', '.join(args)}) dim={d}{tail}")
        self.pool += outs

    def inputs(self, sizes, rng: np.random.Generator):
        """Contiguous torch tensors where a parameter is bf16, else NumPy arrays in any layout."""
        xs = []
        for p in self.params:
            shape = [1 if s == "1" else sizes[s] for s in p.lengths]
            x = (rng.uniform(-1, 1, shape) if p.dtype in FLOATS else
                 rng.integers(0 if p.dtype in ("u8", "bool") else -4, 2 if p.dtype == "bool"
                              else 5, shape))
            xs.append(x.astype(NUMPY[p.dtype]))
        if self.takes_torch:
            return [torch.from_numpy(x).to(torch.bfloat16) if p.dtype == "bf16" else
                    torch.from_numpy(x) for p, x in zip(self.params, xs)]
        return [in_some_layout(x, rng) for x in xs]


def in_some_layout(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """x as it is, or a view of x's values laid out otherwise along a random dim: backwards (a
    negative stride), every other element of a wider array, in transposed storage, or one
    slice of x broadcast along the dim (stride 0, read-only)."""
    d, every = int(rng.integers(x.ndim)), [slice(None)] * x.ndim
    kind = rng.choice(["as it is", "backwards", "every other", "transposed", "broadcast"])
    if kind == "backwards":
        return np.flip(np.flip(x, d).copy(), d)
    if kind == "every other":
        wide = np.zeros(x.shape[:d] + (2 * x.shape[d],) + x.shape[d + 1:], x.dtype)
        every[d] = slice(None, None, 2)
        wide[tuple(every)] = x
        return wide[tuple(every)]
    if kind == "transposed":
        return x.T.copy().T
    if kind == "broadcast" and x.shape[d] > 0:
        return np.broadcast_to(np.take(x, [0], axis=d), x.shape)
    return x


def as_numpy(x):
    """x as NumPy and its dtype's name as NumPy spells it ("float32", "bool"; "bfloat16"): a
    torch tensor's bf16 widens to f32 exactly."""
    if isinstance(x, np.ndarray):
        return x, str(x.dtype)
    x = x.cpu()
    name = str(x.dtype).removeprefix("torch.")
    return (x.float() if x.dtype == torch.bfloat16 else x).numpy(), name


def mismatch(expected, actual, rtol):
    """"" when `actual` matches `expected` (bit for bit where rtol is None, NaN matching NaN),
    else where and how it differs."""
    (expected, want_dtype), (actual, got_dtype) = as_numpy(expected), as_numpy(actual)
    if expected.shape != actual.shape or want_dtype != got_dtype:
        return f"{got_dtype}{list(actual.shape)} for {want_dtype}{list(expected.shape)}"
    if expected.size == 0:
        return ""
    if expected.dtype.kind != "f" or rtol is None:
        bytes_of = lambda a: np.ascontiguousarray(a).view(np.uint8).reshape(a.shape + (-1,))
        equal = (bytes_of(expected) == bytes_of(actual)).all(axis=-1)
    else:
        finite = np.isfinite(expected)
        scale = max(1.0, float(np.mean(np.abs(expected[finite])))) if finite.any() else 1.0
        # Past the largest finite value a sum rounds to inf: one in another order may not yet.
        largest = float(torch.finfo(torch.bfloat16).max if want_dtype == "bfloat16" else
                        np.finfo(expected.dtype).max)
        saturated = lambda a: np.clip(a.astype(np.float64), -largest, largest)
        with np.errstate(invalid="ignore"):
            close = np.abs(saturated(expected) - saturated(actual)) <= rtol * scale
        equal = (expected == actual) | (np.isnan(expected) & np.isnan(actual)) | close
    if equal.all():
        return ""
    i = tuple(int(k) for k in np.argwhere(~equal)[0])
    return f"at {i}: {actual[i]} for {expected[i]}"


@functools.cache
def onnx_export_built() -> bool:
    try:
        scanc.loads("program p(x: f32[1]) { return x }").lower(emit="onnx")
        return True
    except scanc.CompileError:  # a build without it (pip install .)
        return False


@functools.cache
def nvrtc_there() -> bool:
    try:
        scanc.loads("program p(x: f32[N]) { return x }").emit(ptx=True)
        return True
    except scanc.CompileError:  # no libnvrtc, or a build without the CUDA backend
        return False


def onnx_results(model: bytes, program: RandomProgram, xs):
    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}
    return session.run(None, {p.name: x for p, x in zip(program.params, xs) if p.name in names})


def runs_of(module, program: RandomProgram, xs, sizes, rng: random.Random, lowered: bool):
    """{what: (results, whether it may associate differently, its floats' own functions)}:
    the CPU backend's at 1-3 threads and ordered, CUDA's where there is a GPU, and where
    `lowered`, the program lowered at these sizes by one of the algorithms."""
    threads = rng.randint(1, 3)
    cpu = functools.partial(module.run, "p", *xs, backend="cpu", num_threads=threads)
    runs = {f"cpu at {threads} threads": (cpu(), True, False),
            "cpu ordered": (cpu(ordered=True), False, False)}
    if CUDA:
        # Fresh copies: torch takes no negative strides, which NumPy keeps on dims of length 1.
        on_gpu = [(x if torch.is_tensor(x) else torch.from_numpy(x.copy())).cuda() for x in xs]
        got = module.run("p", *on_gpu, backend="cuda")
        runs["cuda"] = (got, True, True)
    if lowered:
        # At these sizes by any algorithm, or for every length up to a bound (the program's,
        # or one past these sizes) by the algorithms that lower a dynamic length.
        dynamic = rng.random() < 0.5
        algorithm = rng.choice(["hillis-steele", "auto"] + ([] if dynamic else ["work-efficient"]))
        shape = ({"bounds": None if program.bound else {s: 2 * n + 1 for s, n in sizes.items()}}
                 if dynamic else {"sizes": sizes})
        what = f"{algorithm}, {'dynamic' if dynamic else 'static'}"
        text = module.lower("p", algorithm=algorithm, **shape)
        runs[f"lowered {what}"] = (scanc.loads(text).run("p", *xs, backend="reference"),
                                   True, False)
        onnx = onnxruntime and onnx_export_built() and not program.takes_torch
        if rng.random() < 0.4 and onnx:
            model = module.lower("p", algorithm=algorithm, emit="onnx", **shape)
            runs[f"ONNX {what}"] = (onnx_results(model, program, xs), True, True)
    return runs


@pytest.mark.parametrize("seed", range(48))
def test_random_whole_programs_match_the_reference(seed):
    for number in range(seed * 4, seed * 4 + 4):
        rng, data = random.Random(number), np.random.default_rng(number)
        program = RandomProgram(rng)
        if program.takes_torch and torch is None:
            continue  # the program's bf16 parameters need torch tensors
        module = scanc.loads(program.text, file=f"random{number}.scan")
        module.check()
        assert scanc.loads(module.print()).print() == module.print()  # DESIGN §2's round trip
        if not CUDA and number % 12 == 0 and nvrtc_there():
            assert ".entry" in module.emit(ptx=True)  # every kernel of the program compiles
        rtol = max((TOLERANCE[t] for t in program.float_dtypes), default=None)
        for trial in range(3):
            sizes = {s: rng.choice(SIZES) for s in program.symbols}
            if rng.random() < 0.15:  # one long line, every other extent small
                sizes = {s: rng.choice([0, 1, 2, 3]) for s in program.symbols}
                sizes[rng.choice(program.symbols)] = rng.choice(LONG_LINES)
            xs = program.inputs(sizes, data)
            contiguous = [x.copy() if isinstance(x, np.ndarray) else x for x in xs]
            want = module.run("p", *contiguous, backend="reference")  # the others take the views
            for what, (got, reassociated, own_functions) in runs_of(
                    module, program, xs, sizes, rng, trial == 0).items():
                for i, (value, w, g) in enumerate(zip(program.results, want, got)):
                    if reassociated and value.exactness == UNSTABLE:
                        continue
                    loose = own_functions or (reassociated and value.exactness == APPROXIMATE)
                    case = f"{what}, result {i} ({value.name}), sizes {sizes}"
                    assert mismatch(w, g, rtol if loose else None) == "", f"{case}\n{program.text}"


@pytest.mark.skipif(torch is None, reason="torch is not installed")
def test_results_compare_across_frameworks_by_dtype_and_value():
    """A CUDA run's torch results meet the reference's NumPy ones (a GPU runs this file)."""
    for dtype in (np.float32, np.float16, np.int8, np.uint8, np.bool_):
        values = np.arange(-3, 4).astype(dtype)
        assert mismatch(values, torch.from_numpy(values.copy()), None) == ""
        assert mismatch(values, torch.from_numpy(values.astype(np.int64)), None) != ""
    halves = torch.tensor([0.5, 1e38], dtype=torch.bfloat16)
    assert mismatch(halves, halves.clone(), 3e-2) == ""
    assert mismatch(halves, halves.float(), 3e-2) == "float32[2] for bfloat16[2]"
