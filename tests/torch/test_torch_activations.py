"""torch.nn.functional's activations and torch's elementwise functions scanc has no operation
for (hyperbolic functions, tan, logit, rounding, frac, heaviside, sinc, angle conversions,
xlog1py, ldexp) run inside a combine with torch's meaning: each is checked against torch itself
on special values (NaN, the infinities, both zeros, extremes, ties) of every dtype torch takes,
exactly where the composition is exact, in place, under torch.compile and in lowered exports,
with gradients, and refused by name where torch refuses."""

import math

import pytest
import torch
import torch.nn.functional as F

import scanc.torch as st
from torch_scan_loops import FLOATS, INTEGERS, assert_same, images, loop_scan, specials

NAN, INF = math.nan, math.inf
ANY = FLOATS + INTEGERS


def awkward(dtype):
    """specials, then values where these functions turn: ties of rounding, the ends of the
    hyperbolic and inverse branches, logit's and atanh's domain ends."""
    turns = [0.5, 1.5, 2.5, -2.5, -0.5, 0.49999997, -1.5, 1e-30, 20.5, -20.5, 89.0, -89.0,
             700.0, 1e10, -3e9, 0.999, -0.999, 1.0000001, 2.0 ** 28, 3.0, -3.0, 6.0, 6.5]
    x = specials(dtype, n=120)
    if dtype not in FLOATS:
        return x
    return torch.cat([x, torch.tensor(turns, dtype=torch.float64).to(dtype)])


# name: (fn, exact, dtypes). Exact: the same bits as torch, the sign of a zero included.
UNARY = {
    "silu": (F.silu, False, FLOATS),
    "mish": (F.mish, False, FLOATS),
    "gelu": (F.gelu, False, FLOATS),
    "gelu tanh": (lambda x: F.gelu(x, approximate="tanh"), False, FLOATS),
    "elu": (F.elu, False, FLOATS),
    "elu alpha 2": (lambda x: F.elu(x, alpha=2.0), False, FLOATS),
    "selu": (torch.selu, False, FLOATS),
    "celu alpha 0.5": (lambda x: F.celu(x, 0.5), False, FLOATS),
    "leaky_relu": (F.leaky_relu, True, FLOATS),
    "leaky_relu 0.2": (lambda x: F.leaky_relu(x, negative_slope=0.2), True, FLOATS),
    "hardtanh": (F.hardtanh, True, FLOATS + [torch.int32, torch.int64, torch.int8]),
    "hardtanh cut limits": (lambda x: F.hardtanh(x, -2.5, 3.5), True,
                            FLOATS + [torch.int32, torch.int8]),
    "relu6": (F.relu6, True, ANY),
    "hardsigmoid": (F.hardsigmoid, False, FLOATS),
    "hardswish": (F.hardswish, False, FLOATS),
    "logsigmoid": (F.logsigmoid, False, FLOATS),
    "softsign": (F.softsign, False, ANY),
    "tanhshrink": (F.tanhshrink, False, ANY),
    "softshrink": (F.softshrink, False, FLOATS),  # torch's own zeros' signs vary by position
    "hardshrink": (lambda x: x.hardshrink(0.7), True, FLOATS),
    "threshold": (lambda x: F.threshold(x, 0.5, -3), True, FLOATS + INTEGERS),  # -3 is 253 in u8
    "softplus beta 2": (lambda x: F.softplus(x, beta=2.0, threshold=10.0), False, FLOATS),
    "softplus": (F.softplus, False, FLOATS),  # its default threshold 20 shows in f64
    # pow by the exponents torch computes otherwise (sqrt(-0) is -0, sqrt(-inf) NaN, x x x
    # rounds twice); torch's CPU kernel for f16 takes pow itself, its CUDA one these forms.
    "pow 0.5": (lambda x: x ** 0.5, True, [torch.float64, torch.bfloat16]),
    "pow 0.5 in f32": (lambda x: x ** 0.5, False, [torch.float32]),  # torch's f32 sqrt: an ulp
    "pow -0.5": (lambda x: torch.pow(x, -0.5), True, [torch.float32, torch.float64, torch.bfloat16]),
    "pow 2": (lambda x: x ** 2.0, True, FLOATS),
    "pow 3": (lambda x: x.pow(3), True, [torch.float32, torch.float64]),
    "pow 3 in bf16": (lambda x: x.pow(3), False, [torch.bfloat16]),  # torch rounds x x first
    "pow -1": (lambda x: x ** -1, True, FLOATS),
    "pow -2": (lambda x: x ** -2, True, [torch.float32, torch.float64]),
    "pow -2 in bf16": (lambda x: x ** -2, False, [torch.bfloat16]),
    "sinh": (torch.sinh, False, ANY),
    "cosh": (torch.cosh, False, ANY),
    "tan": (torch.tan, False, ANY),
    "asinh": (torch.asinh, False, ANY),
    "arccosh": (torch.arccosh, False, ANY),
    "atanh": (torch.atanh, False, ANY),
    "logit": (torch.logit, False, ANY),
    "logit eps": (lambda x: torch.special.logit(x, eps=0.01), False, FLOATS),
    "sinc": (torch.sinc, False, ANY),
    "deg2rad": (torch.deg2rad, True, ANY),
    "rad2deg": (torch.rad2deg, True, ANY),
    "frac": (torch.frac, True, FLOATS),
    "round": (torch.round, True, ANY),
    "round to hundredths": (lambda x: x.round(decimals=2), True, FLOATS),
    "round to tens": (lambda x: torch.round(x, decimals=-1), True, FLOATS),
}


@pytest.mark.parametrize("name, dtype", [(n, d) for n, (*_, ds) in UNARY.items() for d in ds],
                         ids=str)
def test_an_activation_or_function_gives_torch_s_value_on_awkward_values(name, dtype):
    fn, exact, _ = UNARY[name]
    x = awkward(dtype)
    if name == "gelu":  # torch's kernel overflows there: inf gives NaN, 3e38 inf (scanc: x)
        x = x[x.isnan() | (x.abs() < 1e30)]
    want = fn(x[1:])
    if name in ("softsign", "tanhshrink") and dtype in (torch.float16, torch.bfloat16):
        want = fn(x[1:].float()).to(dtype)  # torch rounds between its Python-level ops
    assert_same(images(fn, x), want, exact)


def test_softplus_past_its_default_threshold_is_x_itself_in_f64():
    # torch returns x beyond beta x > 20; scanc's native softplus would add log1p(e^-x), which
    # only f64 can hold (7.6e-10 at 21).
    x = torch.tensor([0.0, 19.5, 20.0, 21.0, 25.0, 700.0, -30.0], dtype=torch.float64)
    assert torch.equal(images(F.softplus, x), F.softplus(x[1:]))


BINARY = {  # name: (fn, exact, dtypes)
    "xlog1py": (torch.special.xlog1py, False, ANY),
    "xlog1py of a number": (lambda x, y: torch.special.xlog1py(2, y), False, ANY),
    "heaviside": (torch.heaviside, True, ANY),
    "ldexp by floats": (lambda x, y: x.ldexp(y), False, FLOATS),
}


@pytest.mark.parametrize("name, dtype", [(n, d) for n, (*_, ds) in BINARY.items() for d in ds],
                         ids=str)
def test_a_binary_function_gives_torch_s_value_on_special_values(name, dtype):
    fn, exact, _ = BINARY[name]
    x, y = specials(dtype, seed=1), specials(dtype, seed=2).flip(0)
    x, y = torch.cat([x, x.roll(3)]), torch.cat([y, y.roll(5)])
    assert_same(images(fn, x, y), fn(x[1:], y[1:]), exact)


@pytest.mark.parametrize("dtype", ANY, ids=str)
def test_ldexp_by_integer_exponents_is_torch_s(dtype):
    x = specials(dtype, n=80)
    exponents = torch.arange(80, dtype=torch.int32) % 41 - 20
    assert_same(images(torch.ldexp, x, exponents), torch.ldexp(x[1:], exponents[1:]), exact=True)


def test_round_ties_to_even_and_keeps_the_sign_of_zero():
    x = torch.tensor([0.0, 0.5, 1.5, 2.5, -0.5, -1.5, -0.3, 0.49999997, 8388609.0, -INF, NAN])
    got = images(torch.round, x)
    assert got.tolist()[:8] == [0.0, 2.0, 2.0, -0.0, -2.0, -0.0, 0.0, 8388609.0]
    assert got[3].signbit() and got[5].signbit() and got[8] == -INF and got[9].isnan()


def test_sinh_and_cosh_stay_finite_up_to_their_largest_float():
    x = torch.tensor([0.0, 89.0, -89.0, 88.5, 1e-20, -1e-20, 89.5])  # e^89 / 2 fits f32
    got_sinh, got_cosh = images(torch.sinh, x), images(torch.cosh, x)
    want = torch.tensor([89.0, -89.0, 88.5, 1e-20, -1e-20, 89.5], dtype=torch.float64)
    torch.testing.assert_close(got_sinh, torch.sinh(want).float())
    torch.testing.assert_close(got_cosh, torch.cosh(want).float())
    assert got_sinh[:3].isfinite().all() and got_sinh[-1] == INF


def clone_then(in_place):  # each in-place form on a copy, whose alias `c` changes with it
    return lambda x: (lambda c: (in_place(c), c)[1])(x.clone())


@pytest.mark.parametrize("in_place, out_of_place", [
    (clone_then(lambda c: F.elu(c, inplace=True)), F.elu),
    (clone_then(lambda c: F.leaky_relu_(c, 0.5)), lambda x: F.leaky_relu(x, 0.5)),
    (clone_then(lambda c: F.hardtanh_(c, -0.5, 0.5)), lambda x: F.hardtanh(x, -0.5, 0.5)),
    (clone_then(lambda c: F.threshold_(c, 0.25, 9.0)), lambda x: F.threshold(x, 0.25, 9.0)),
    (clone_then(lambda c: c.sinh_()), torch.sinh),
    (clone_then(torch.round_), torch.round),
    (clone_then(lambda c: c.logit_()), torch.logit),
    (lambda x: (x.clone().frac_(), x)[1], lambda x: x),  # the clone changes alone
], ids=["F.elu inplace", "F.leaky_relu_", "F.hardtanh_", "F.threshold_", "Tensor.sinh_",
        "torch.round_", "Tensor.logit_", "frac_ of a clone"])
def test_in_place_forms_give_their_operations_value(in_place, out_of_place):
    x = torch.randn(40, generator=torch.Generator().manual_seed(3), dtype=torch.float64) * 3
    assert_same(images(in_place, x), out_of_place(x[1:]), exact=False)


@pytest.mark.parametrize("spelling, message", [
    (lambda a, b: F.gelu(b, approximate="fast") + a, "approximate= is 'none' or 'tanh'"),
    (lambda a, b: F.celu(b, alpha=0.0) + a, "alpha cannot be 0"),
    (lambda a, b: F.hardtanh(b, 2.0, 1.0) + a, "max_val cannot be less than min_val"),
    (lambda a, b: F.softshrink(b, -1.0) + a, r"lambd must be in \[0, the dtype.s largest\]"),
    (lambda a, b: F.silu(b.int()) + a, "silu needs a floating-point operand"),
    (lambda a, b: torch.frac(b.int()) + a, "frac needs a floating-point"),
    (lambda a, b: torch.round(b.int(), decimals=1) + a, "round of torch.int32 operands with decimals"),
    (lambda a, b: torch.heaviside(b, b.double()) + a, "heaviside of operands of different"),
    (lambda a, b: F.hardtanh(b.to(torch.uint8), -1.0, 1.0) + a, "unsigned type with negative"),
], ids=["gelu approximate", "celu alpha 0", "hardtanh limits", "softshrink lambd", "silu of ints",
        "frac of ints", "round decimals of ints", "heaviside mixed", "hardtanh unsigned"])
def test_what_torch_refuses_is_refused_by_name(spelling, message):
    with pytest.raises(ValueError, match=message):
        st.associative_scan(spelling, torch.ones(2, 5), 1)


def asinh_sum(a, b):  # a sum in the image of a bijection: associative as the sum is
    return torch.asinh(torch.sinh(a) + torch.sinh(b))


def logit_mean(left, right):  # probabilities combined as log-odds, counted
    (n1, p1), (n2, p2) = left, right
    n = n1 + n2
    return n, torch.sigmoid((n1 * torch.logit(p1) + n2 * torch.logit(p2)) / n)


@pytest.mark.parametrize("n", [0, 1, 2, 17, 65])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_through_a_bijection_s_image_match_the_loop(n, reverse):
    g = torch.Generator().manual_seed(n)
    x = torch.randn(3, n, generator=g, dtype=torch.float64) * 0.5
    counts = torch.randint(1, 4, (3, n), generator=g).double()
    probs = torch.rand(3, n, generator=g, dtype=torch.float64) * 0.9 + 0.05
    for combine, xs in ((asinh_sum, x), (logit_mean, (counts, probs))):
        got = st.associative_scan(combine, xs, 1, reverse=reverse)
        want = loop_scan(combine, xs, 1, reverse=reverse)
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("reverse", [False, True])
def test_gradients_flow_through_the_compositions(reverse):
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 11, generator=g, dtype=torch.float64, requires_grad=True)
    counts = torch.randint(1, 4, (2, 11), generator=g).double()
    probs = (torch.rand(2, 11, generator=g, dtype=torch.float64) * 0.8 + 0.1).requires_grad_()
    assert torch.autograd.gradcheck(
        lambda v: st.associative_scan(asinh_sum, v, 1, reverse=reverse), (x,))
    assert torch.autograd.gradcheck(
        lambda p: st.associative_scan(logit_mean, (counts, p), 1, reverse=reverse)[1], (probs,))

    def gated(a, b):  # a running sum of gated values: the gate applies to each element once
        return a + b
    assert torch.autograd.gradcheck(
        lambda v: st.associative_scan(gated, F.silu(v) * F.elu(v), 1, reverse=reverse), (x,))


def latest_activated(left, right):  # the latest value and an image of it
    x = right[0]
    return x, F.silu(x) + F.hardtanh(x, -0.5, 0.5) * torch.round(x * 4)


class Activated(torch.nn.Module):
    def forward(self, x, probs, counts):
        return (st.associative_scan(asinh_sum, x, 1),
                *st.associative_scan(logit_mean, (counts, probs), 1),
                st.associative_scan(latest_activated, (x, x), 1)[1])


def test_compositions_compile_with_dynamic_shapes_and_export_and_lower():
    model = Activated()
    compiled = torch.compile(model, backend="eager", fullgraph=True, dynamic=True)
    inputs = []
    for n in (9, 23, 40):
        g = torch.Generator().manual_seed(n)
        inputs.append((torch.randn(2, n, generator=g), torch.rand(2, n, generator=g) * 0.9 + 0.05,
                       torch.randint(1, 4, (2, n), generator=g).float()))
    steps = torch.export.Dim("T", max=64)
    exported = st.lower_associative_scans(torch.export.export(
        model, inputs[0], dynamic_shapes=({1: steps},) * 3)).module()
    for args in inputs:
        want = model(*args)
        assert len(want) == 4
        for got in (compiled(*args), exported(*args)):
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w)
    torch._dynamo.reset()


# torch lists these as not overridable, so Dynamo calls them on the traced operand itself
# (docs/python.md): they run in eager combines only.
NOT_UNDER_DYNAMO = ("hardsigmoid", "hardswish")
COMPILED = [fn for name, (fn, _, dtypes) in UNARY.items()
            if torch.float32 in dtypes and name not in NOT_UNDER_DYNAMO]


def latest_and_every_image(left, right):  # associative whatever the functions are
    x = right[0]
    return (x, *(fn(x) for fn in COMPILED))


def test_every_function_but_two_compiles_with_dynamic_shapes_to_its_eager_value():
    count = 1 + len(COMPILED)
    scan = lambda x: st.associative_scan(latest_and_every_image, (x,) * count, 1)  # noqa: E731
    compiled = torch.compile(scan, backend="eager", fullgraph=True, dynamic=True)
    for n in (5, 12):
        x = awkward(torch.float32)[None, :n * 10].repeat(2, 1)
        for got, want in zip(compiled(x), scan(x)):
            torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
    torch._dynamo.reset()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("limit", [0.1, 0.3, 0.7])
def test_narrow_floats_meet_limits_where_torch_rounds_them(dtype, limit):
    # hardshrink rounds lambd to the dtype; threshold compares in f32; both at the limit's
    # neighbours in the dtype.
    near = torch.tensor([limit], dtype=dtype)
    x = torch.cat([near, near.nextafter(torch.tensor(INF, dtype=dtype)),
                   near.nextafter(torch.tensor(-INF, dtype=dtype)), -near])
    x = torch.cat([x[:1], x])
    for fn in (lambda v: F.hardshrink(v, limit), lambda v: F.threshold(v, limit, 5.0)):
        assert_same(images(fn, x), fn(x[1:]), exact=True)


@pytest.mark.parametrize("eps", [0.9, 1.0, math.nan, -0.25, 0.5])
def test_logit_selects_its_eps_bounds_as_torch_does_where_they_cross(eps):
    x = torch.cat([torch.tensor([0.0, 0.0, 1.0, 0.5, NAN, -1.0, 2.0]), torch.rand(20)])
    assert_same(images(lambda v: torch.logit(v, eps=eps), x), torch.logit(x[1:], eps=eps),
                exact=False)


@pytest.mark.parametrize("decimals", [309, 400, -400, 2 ** 31])
def test_round_to_more_decimals_than_a_double_scales_by_gives_torch_s_nan(decimals):
    x = torch.tensor([0.0, 1.5, -2.25, 0.0])
    assert_same(images(lambda v: torch.round(v, decimals=decimals), x),
                torch.round(x[1:], decimals=decimals), exact=True)


@pytest.mark.parametrize("dtype, mantissa, exponent", [
    (torch.float64, 1e-300, 1200), (torch.float64, 1e300, -1500), (torch.float64, 1.5, -1074),
    (torch.float64, 1.75, -1075), (torch.float64, 0.0, 5000), (torch.float32, 1e-30, 200),
    (torch.float32, 1.75, -150), (torch.float32, 3e38, -300), (torch.float16, 1e-4, 20),
    (torch.bfloat16, 1e30, -230), (torch.float32, INF, -3000), (torch.float64, -0.0, 7)])
def test_ldexp_by_an_integer_rounds_once_however_far_it_scales(dtype, mantissa, exponent):
    x = torch.tensor([mantissa, mantissa, -mantissa], dtype=dtype)
    e = torch.tensor([exponent] * 3, dtype=torch.int64)
    assert_same(images(torch.ldexp, x, e), torch.ldexp(x[1:], e[1:]), exact=True)


def test_ldexp_by_a_narrow_float_exponent_takes_its_power_in_that_dtype():
    x = torch.tensor([1.0, 1.0, 2.0 ** -10, 3.0])
    e = torch.tensor([-30.0, -30.0, 16.0, 0.5], dtype=torch.float16)
    assert_same(images(torch.ldexp, x, e), torch.ldexp(x[1:], e[1:]), exact=True)
    assert_same(images(torch.ldexp, x.half(), e), torch.ldexp(x[1:].half(), e[1:]), exact=True)


def test_a_positional_inplace_changes_the_operand_under_compile_too():
    def images_in_place(v):
        def latest_elu_in_place(left, right):
            c = right[0].clone()
            F.elu(c, 2.0, True)  # alpha, inplace by position
            F.leaky_relu(c, 0.2, True)
            return right[0], c
        return st.associative_scan(latest_elu_in_place, (v, v), 1)[1]
    x = torch.tensor([[-1.0, -2.0, -3.0, 4.0]])
    want = F.leaky_relu(F.elu(x, 2.0), 0.2)[:, 1:]
    compiled = torch.compile(images_in_place, backend="eager", fullgraph=True, dynamic=True)
    for got in (images_in_place(x), compiled(x)):
        torch.testing.assert_close(got[:, 1:], want)
    torch._dynamo.reset()


def test_a_number_that_overflows_xlogy_s_dtype_is_inf_as_in_torch():
    x = torch.tensor([0.5, 2.0, 0.0, -1.0], dtype=torch.float16)
    for fn in (lambda v: torch.xlogy(v, 1e5), lambda v: torch.special.xlog1py(v, 1e5)):
        assert_same(images(fn, x), fn(x[1:]), exact=False)

    def weighted(v, p):  # p a float argument: symbolic under dynamic=True
        return st.associative_scan(lambda a, b: (b[0], torch.special.xlog1py(b[0], p)),
                                   (v, v), 1)[1]
    v = torch.rand(2, 9)
    compiled = torch.compile(weighted, backend="eager", fullgraph=True, dynamic=True)
    torch.testing.assert_close(compiled(v, 0.5), weighted(v, 0.5))
    torch._dynamo.reset()


GRADIENT_POINTS = {  # name: (fn, points where torch's gradient is the tricky one)
    "silu far left": (F.silu, [-50.0, -100.0, -1e4, 0.0, 30.0]),
    "mish far right": (F.mish, [89.0, 100.0, 1e4, -50.0, 0.0]),
    "hardtanh at its limits": (F.hardtanh, [-1.0, 1.0, 0.0, -0.0, 2.0, NAN]),
    "relu6 at its limits": (F.relu6, [0.0, -0.0, 6.0, 3.0, -1.0, NAN, INF]),
    "hardsigmoid at its pieces": (F.hardsigmoid, [-3.0, 3.0, 0.0, NAN, INF, -INF, -4.0]),
    "hardswish at its pieces": (F.hardswish, [-3.0, 3.0, 1.0, NAN, INF, -INF, -4.0]),
    "sinc near 0": (torch.sinc, [1e-20, -1e-30, 0.0, 0.5, 1e-9]),
    "xlog1py at x = 0": (lambda v: torch.special.xlog1py(v, torch.full_like(v, 0.5)),
                         [0.0, -0.0, 1.0]),
}


@pytest.mark.parametrize("name", GRADIENT_POINTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
def test_gradients_at_the_edges_are_torch_s(name, dtype):
    fn, points = GRADIENT_POINTS[name]
    x = torch.tensor(points[:1] + points, dtype=dtype, requires_grad=True)
    got, = torch.autograd.grad(images(fn, x).sum(), x)
    want, = torch.autograd.grad(fn(x[1:]).sum(), x)
    torch.testing.assert_close(got, want, equal_nan=True)


@pytest.mark.parametrize("spelling, dtype, message", [
    (lambda b: F.softsign(b), torch.bool, "softsign of bool"),
    (lambda b: F.tanhshrink(b), torch.bool, "tanhshrink of bool"),
    (lambda b: F.threshold(b, 0, 1), torch.bool, "threshold of bool"),
    (lambda b: torch.round(b), torch.bool, "round of torch.bool"),
    (lambda b: torch.round(b, decimals=0), torch.int32, "round of torch.int32 operands with"),
    (lambda b: F.softplus(b), torch.int32, "softplus of integer"),
    (lambda b: F.leaky_relu(b, 1e39), torch.float32, "negative_slope 1e\\+39 cannot be"),
    (lambda b: F.hardshrink(b, 1e5), torch.float16, "value 100000.0 cannot be"),
    (lambda b: F.softshrink(b, NAN), torch.float32, "lambd must be in"),
    (lambda b: F.hardtanh(b, -1e5, 1.0), torch.float16, "value -100000.0 cannot be"),
    (lambda b: F.celu(b, 1e-39), torch.float32, "input_scale 1.0*1e\\+39 cannot be"),
    (lambda b: F.softplus(b, beta=1e39), torch.float32, "beta 1e\\+39 cannot be"),
], ids=["softsign", "tanhshrink", "threshold", "round", "round decimals=0", "softplus",
        "leaky_relu slope", "hardshrink f16", "softshrink NaN", "hardtanh f16", "celu tiny alpha",
        "softplus beta"])
def test_operands_and_parameters_torch_refuses_are_refused(spelling, dtype, message):
    x = torch.ones(2, 5, dtype=dtype)
    with pytest.raises((RuntimeError, NotImplementedError, TypeError, ValueError)):
        spelling(x)  # torch refuses it too
    with pytest.raises(ValueError, match=message):
        st.associative_scan(lambda a, b: (b[0], spelling(b[0])), (x, x), 1)


def test_a_float_fill_value_may_reach_the_largest_integer_as_a_float():
    # torch takes 2.0 ** 63 for int64 (the largest int64 as a double); its conversion is then
    # undefined in C++ (x86 gives the smallest), where scanc's float-to-int casts saturate.
    x = torch.zeros(1, 4, dtype=torch.int64)
    torch.full_like(x, 2.0 ** 63)
    latest_filled = lambda a, b: (b[0], torch.full_like(b[0], 2.0 ** 63))  # noqa: E731
    filled = st.associative_scan(latest_filled, (x, x), 1)[1][:, 1:]
    assert torch.equal(filled, torch.full((1, 3), torch.iinfo(torch.int64).max))
