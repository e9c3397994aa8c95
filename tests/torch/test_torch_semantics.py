"""A combine's operations mean what they mean in torch: type promotion, true division of
integers, floor remainder, rounding modes, NaN-ignoring fmax, keywords by name, tensor
attributes. Each case is checked against a Python loop of the same combine on real tensors
(torch's own semantics), in eager calls, exported programs and their lowered form; and what
scanc cannot do exactly is refused with a message."""

import math
import re

import pytest
import torch
from torch._higher_order_ops.associative_scan import associative_scan as torch_associative_scan

import scanc.torch as st
from torch_scan_loops import FLOATS, INTEGERS, assert_same, images, loop_scan, specials

LENGTHS = (0, 1, 2, 7, 33, 127)


def integers(n, seed=0, low=-9, high=10):
    return torch.randint(low, high, (3, n), generator=torch.Generator().manual_seed(seed))


def assert_scan_matches_torch(combine, xs, dim=1, reverse=False, exact=True):
    got = st.associative_scan(combine, xs, dim, reverse=reverse)
    want = loop_scan(combine, xs, dim, reverse=reverse)
    if exact:
        assert torch.equal(got, want), (got, want)
    else:
        torch.testing.assert_close(got, want, equal_nan=True)


def last_where_half_exceeds_one(a, b):  # the latest element whose half exceeds 1
    return torch.where(b / 2 > 1, b, a)


def last_odd(a, b):  # the latest odd element (torch's % takes the divisor's sign)
    return torch.where(b % 2 == 1, b, a)


def last_even_floor(a, b):
    return torch.where(torch.div(b, 2, rounding_mode="floor") * 2 == b, b, a)


def last_halving_to_zero(a, b):  # the latest element that truncates to 0 when halved
    return torch.where(torch.div(b, 2, rounding_mode="trunc") == 0, b, a)


@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("combine", [last_where_half_exceeds_one, last_odd, last_even_floor,
                                     last_halving_to_zero])
def test_integer_division_and_remainder_round_as_in_torch(combine, n):
    assert_scan_matches_torch(combine, integers(n, seed=n))
    assert_scan_matches_torch(combine, integers(n, seed=n + 1), reverse=True)


def test_floor_division_operator_and_remainder_method_follow_torch_on_negative_integers():
    x = torch.tensor([[-7, 5, -3, 4, -8, 9, -1]])
    assert_scan_matches_torch(lambda a, b: torch.where((b // 3) * 3 == b, b, a), x)
    assert_scan_matches_torch(lambda a, b: torch.where(b.remainder(4) == 1, b, a), x)
    assert_scan_matches_torch(lambda a, b: torch.where(torch.fmod(b, 4) == -3, b, a), x)


def test_truncating_division_of_floats_rounds_toward_zero():
    x = torch.tensor([[-2.5, 3.5, -1.5, 0.5, -0.5, 7.0]])
    assert_scan_matches_torch(lambda a, b: torch.where(torch.div(b, 2, rounding_mode="trunc")
                                                       == 0, b, a), x)


@pytest.mark.parametrize("spelling", [lambda a, b: a % b, lambda a, b: a // b,
                                      lambda a, b: torch.fmod(a, b),
                                      lambda a, b: torch.div(a, b, rounding_mode="floor")])
def test_a_floating_point_remainder_or_floor_division_is_refused_by_name(spelling):
    with pytest.raises(ValueError, match="floating-point operands is not supported"):
        st.associative_scan(spelling, torch.ones(2, 5), 1)


@pytest.mark.parametrize("op", [torch.fmax, torch.fmin])
def test_fmax_and_fmin_ignore_nan_as_torch_does(op):
    x = torch.tensor([[1.0, math.nan, 3.0, 2.0, math.nan, -1.0, 5.0]])
    assert_scan_matches_torch(op, x)
    assert_scan_matches_torch(op, x.flip(1), reverse=True)


@pytest.mark.parametrize("op", [torch.fmax, torch.fmin])
def test_fmax_and_fmin_keep_the_first_of_equal_operands_as_torch_does(op):
    x = torch.tensor([[-0.0, 0.0, -0.0, 1.0, 1.0]])
    got = st.associative_scan(op, x, 1)
    want = loop_scan(op, x, 1)
    assert torch.equal(got, want) and torch.equal(got.signbit(), want.signbit())


@pytest.mark.parametrize("dtype", [torch.complex64, torch.uint16, torch.float8_e4m3fn])
def test_leaves_of_a_dtype_scanc_lacks_are_refused_by_name_before_tracing(dtype):
    with pytest.raises(ValueError, match=f"dtype {dtype} is not supported"):
        st.associative_scan(lambda a, b: a + b, torch.ones(2, 4).to(dtype), 1)


def test_a_captured_tensor_of_a_dtype_scanc_lacks_is_refused_by_name():
    c = torch.tensor(1 + 1j)
    with pytest.raises(ValueError, match="dtype torch.complex64 is not supported"):
        st.associative_scan(lambda a, b: a + b * c, torch.ones(2, 4), 1)


def test_a_combine_may_return_a_captured_tensor_it_used_nowhere_else():
    reset = torch.tensor(-1.0)
    x = torch.arange(6.0).reshape(1, 6)
    assert_scan_matches_torch(lambda a, b: reset, x)


def test_a_running_mean_with_an_integer_count_is_associative():
    def running_mean(left, right):
        n1, m1 = left
        n2, m2 = right
        n = n1 + n2
        return n, m1 + (m2 - m1) * n2 / n

    x = torch.randn(2, 17, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    counts = torch.ones_like(x, dtype=torch.int64)
    n, mean = st.associative_scan(running_mean, (counts, x), 1)
    assert torch.equal(n, counts.cumsum(1))
    torch.testing.assert_close(mean, x.cumsum(1) / counts.cumsum(1))


def test_f64_statistics_weighted_by_torchs_f32_division_of_integer_counts_are_accepted():
    # `n2 / n` of int64 counts is true division in torch's default dtype, f32: the combine is
    # associative to f32's rounding, though its value leaves are f64 (found by fuzzing).
    def welford(left, right):
        n1, m1, s1 = left
        n2, m2, s2 = right
        n = n1 + n2
        d = m2 - m1
        return n, m1 + d * (n2 / n).to(m1.dtype), s1 + s2 + d * d * (n1 * n2 / n).to(m1.dtype)

    x = torch.randn(3, 33, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    xs = (torch.ones_like(x, dtype=torch.int64), x, torch.zeros_like(x))
    got = st.associative_scan(welford, xs, 1)
    want = loop_scan(welford, xs, 1)
    assert torch.equal(got[0], want[0])
    torch.testing.assert_close(got[1], want[1], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got[2], want[2], rtol=1e-5, atol=1e-6)


def test_mixed_dtypes_promote_as_in_torch():
    ints = integers(33, seed=3).to(torch.int32)
    step = torch.tensor(3, dtype=torch.int64)  # zero-dim: does not widen int32 leaves

    def latest_above_step(a, b):
        return torch.where(b > step, b, a)

    assert_scan_matches_torch(latest_above_step, ints)
    assert st.associative_scan(latest_above_step, ints, 1).dtype == torch.int32
    scale = torch.tensor(0.5, dtype=torch.float64)  # zero-dim: does not widen float32 leaves
    floats = torch.randn(3, 33, generator=torch.Generator().manual_seed(4))

    def latest_scaled_above(a, b):
        return torch.where(b * scale > 0.2, b, a)

    assert_scan_matches_torch(latest_scaled_above, floats)
    assert st.associative_scan(latest_scaled_above, floats, 1).dtype == torch.float32
    # Python numbers: a float one makes integer operands floats; an int one keeps their dtype.
    assert_scan_matches_torch(lambda a, b: torch.where(b * 0.5 > 1, b, a), ints)
    assert_scan_matches_torch(lambda a, b: torch.where(b * 2 > 5, b, a), ints)


def test_bitwise_not_of_integers_is_the_complement():
    x = integers(33, seed=5, low=0, high=64)
    assert_scan_matches_torch(lambda a, b: ~(~a & ~b), x)  # a | b, spelled by De Morgan



@pytest.mark.parametrize("n", LENGTHS)
@pytest.mark.parametrize("combine", [lambda a, b: a + b, lambda a, b: a * b,
                                     lambda a, b: a + b * True], ids=["or", "and", "or-and"])
def test_plus_and_times_of_bools_are_or_and_and_as_in_torch(combine, n):
    flags = integers(n, seed=6, low=0, high=2).bool()
    assert_scan_matches_torch(combine, flags)
    assert st.associative_scan(combine, flags, 1).dtype == torch.bool


def test_subtraction_of_bools_is_refused_as_torch_refuses_it():
    with pytest.raises(ValueError, match="subtraction of bool operands"):
        st.associative_scan(lambda a, b: a - b, torch.tensor([[True, False]]), 1)

def test_a_combine_may_branch_on_its_operands_dtype():
    def running_max_or_sum(a, b):
        return torch.maximum(a, b) if a.dtype == torch.float32 else a + b

    assert_scan_matches_torch(running_max_or_sum, torch.tensor([[1.0, 5.0, 2.0, 7.0]]))
    assert_scan_matches_torch(running_max_or_sum, torch.tensor([[1, 5, 2, 7]]))


@pytest.mark.parametrize("attribute", ["shape", "device", "T", "requires_grad"])
def test_tensor_attributes_other_than_dtype_are_refused_by_name(attribute):
    with pytest.raises(ValueError, match=rf"`\.{attribute}` of an operand"):
        st.associative_scan(lambda a, b: getattr(a, attribute) and a + b, torch.ones(2, 5), 1)


@pytest.mark.parametrize("spelling", [
    lambda a, b: b.where(b > 0, a), lambda a, b: b.where(condition=b > 0, other=a),
    lambda a, b: torch.where(b > 0, b, a)], ids=["method", "method by keywords", "function"])
def test_the_method_where_keeps_its_tensor_where_the_condition_holds(spelling):
    x = torch.randn(3, 21, generator=torch.Generator().manual_seed(12))
    want = loop_scan(lambda a, b: torch.where(b > 0, b, a), x, 1)
    assert torch.equal(loop_scan(spelling, x, 1), want)
    assert torch.equal(st.associative_scan(spelling, x, 1), want)
    compiled = torch.compile(lambda v: st.associative_scan(spelling, v, 1), backend="eager",
                             fullgraph=True, dynamic=True)
    assert torch.equal(compiled(x), want)
    torch._dynamo.reset()


def test_keyword_arguments_bind_by_name():
    x = torch.randn(3, 17, generator=torch.Generator().manual_seed(6))
    assert_scan_matches_torch(lambda a, b: torch.where(b > a, other=a, input=b), x)
    assert_scan_matches_torch(lambda a, b: torch.maximum(input=a, other=b), x)
    assert_scan_matches_torch(lambda a, b: torch.add(input=a, other=b), x, exact=False)


def test_clamp_keeps_the_gradient_of_a_value_on_its_bound_as_torch_does():
    def clamped_max(a, b):
        return torch.clamp(torch.maximum(a, b), min=-1.0, max=1.0)

    x = torch.tensor([[-1.0, 0.5, 1.0, -0.5, 2.0]], dtype=torch.float64, requires_grad=True)
    got = torch.autograd.grad(st.associative_scan(clamped_max, x, 1).sum(), x)[0]
    want = torch.autograd.grad(loop_scan(clamped_max, x, 1).sum(), x)[0]
    assert torch.equal(got, want)
    assert got[0, 2] == 2  # 1.0 sits on the upper bound and is the result of two steps


def test_a_float_closure_under_compile_with_dynamic_shapes_follows_its_value():
    x = torch.tensor([[0.3, 2.0, 0.7, 5.0]])
    for cap in (1.0, 0.5):
        def model(v):
            return st.associative_scan(lambda a, b: torch.clamp(torch.maximum(a, b), max=cap), v, 1)

        compiled = torch.compile(model, backend="eager", fullgraph=True, dynamic=True)
        assert torch.equal(compiled(x), model(x))
        torch._dynamo.reset()


NUMBER_BOUND = {  # associative for their numbers only, and what they scan to
    "l2-norm": (lambda a, b: (a * a + b * b) ** 0.5, lambda x: x.square().cumsum(1).sqrt()),
    "tanh-addition": (lambda a, b: (a + b) / (1.0 + a * b), lambda x: x.atanh().cumsum(1).tanh()),
}


class Scan(torch.nn.Module):
    def __init__(self, combine):
        super().__init__()
        self.combine = combine

    def forward(self, x):
        return st.associative_scan(self.combine, x, 1)


def small_positive(n, seed=0):
    return torch.rand(2, n, dtype=torch.float64, generator=torch.Generator().manual_seed(seed)) * 0.3 + 0.1


@pytest.mark.parametrize("name", list(NUMBER_BOUND))
@pytest.mark.parametrize("dynamic", [False, True])
def test_a_combine_associative_for_its_float_literal_only_compiles(name, dynamic):
    # Under Dynamo its floats travel as captured values; the check must use their values.
    combine, want = NUMBER_BOUND[name]
    compiled = torch.compile(Scan(combine), backend="eager", fullgraph=True, dynamic=dynamic)
    for n in (8, 13):
        x = small_positive(n, seed=n)
        torch.testing.assert_close(compiled(x), want(x))
    torch._dynamo.reset()


@pytest.mark.parametrize("name", list(NUMBER_BOUND))
def test_a_combine_associative_for_its_float_literal_only_exports_and_lowers(name):
    combine, want = NUMBER_BOUND[name]
    exported = torch.export.export(Scan(combine), (small_positive(8),),
                                   dynamic_shapes={"x": {1: torch.export.Dim("L", min=2, max=40)}})
    lowered = st.lower_associative_scans(exported)
    # The numbers became literals of the lowered ops: nothing is left of their captured tensors.
    assert all(n.target is not torch.ops.aten.scalar_tensor.default for n in lowered.graph.nodes)
    for n in (2, 8, 33):
        x = small_positive(n, seed=n)
        torch.testing.assert_close(exported.module()(x), want(x))
        torch.testing.assert_close(lowered.module()(x), want(x))


def test_a_combine_with_a_float_literal_that_is_not_associative_is_refused_compiled_and_lowered():
    scan = Scan(lambda a, b: a - 0.5 * b)
    x = small_positive(8)
    with pytest.raises(ValueError, match="not associative"):
        torch.compile(scan, backend="eager", fullgraph=True, dynamic=True)(x)
    torch._dynamo.reset()
    with pytest.raises(ValueError, match="not associative"):
        st.lower_associative_scans(torch.export.export(scan, (x,)))


@pytest.mark.parametrize("combine", [
    lambda n: lambda a, b: torch.clamp(torch.maximum(a, b), max=n),
    lambda n: lambda a, b: torch.where(torch.gt(b, n), b, a),
    lambda n: lambda a, b: torch.maximum(a, b) + n - n,
], ids=["clamp", "torch.gt", "arithmetic"])
def test_a_combine_may_use_a_size_of_its_input_under_dynamic_shapes(combine):
    def model(v):  # v.shape[1] is a symbolic int under dynamic=True
        return st.associative_scan(combine(v.shape[1]), v, 1)

    compiled = torch.compile(model, backend="eager", fullgraph=True, dynamic=True)
    for x in (torch.tensor([[3.0, 9.0, 1.0, 12.0, 2.0, 4.0, 8.0]]), torch.arange(12.0).flip(0)[None]):
        assert torch.equal(compiled(x), model(x))
    torch._dynamo.reset()


class Halving(torch.nn.Module):
    def forward(self, x):
        return st.associative_scan(last_where_half_exceeds_one, x, 1)


class TorchsOwnScan(torch.nn.Module):
    def forward(self, x):
        return torch_associative_scan(lambda a, b: torch.where(b / 2 > 1, b, a), x, 1,
                                      combine_mode="generic")


@pytest.mark.parametrize("model", [Halving(), TorchsOwnScan()], ids=["scanc", "torch"])
def test_exported_and_lowered_programs_keep_torch_s_integer_division(model):
    x = integers(9, seed=7)
    want = loop_scan(last_where_half_exceeds_one, x, 1)
    exported = torch.export.export(model, (x,))
    assert torch.equal(exported.module()(x), want)
    assert torch.equal(st.lower_associative_scans(exported).module()(x), want)


def test_lowering_torch_s_own_scan_takes_a_clamp_with_one_bound():
    class Capped(torch.nn.Module):
        def forward(self, x):
            return torch_associative_scan(lambda a, b: torch.clamp(torch.maximum(a, b), None, 0.5),
                                          x, 1, combine_mode="generic")

    x = torch.randn(3, 9, generator=torch.Generator().manual_seed(8))
    lowered = st.lower_associative_scans(torch.export.export(Capped(), (x,)))
    assert torch.equal(lowered.module()(x), loop_scan(lambda a, b: torch.clamp(
        torch.maximum(a, b), None, 0.5), x, 1))


def test_export_refuses_a_combine_that_is_not_associative():
    class Difference(torch.nn.Module):
        def forward(self, x):
            return st.associative_scan(lambda a, b: a - b, x, 0)

    with pytest.raises(ValueError, match="not associative"):
        torch.export.export(Difference(), (torch.ones(8),))


def test_strict_export_traces_python_operators_in_a_combine():
    class SmoothMax(torch.nn.Module):
        def forward(self, x, t):
            return st.associative_scan(lambda a, b: t * torch.logaddexp(a / t, b / t), x, 1)

    x, t = torch.randn(3, 9, generator=torch.Generator().manual_seed(9)), torch.tensor(0.5)
    exported = torch.export.export(SmoothMax(), (x, t), strict=True)
    torch.testing.assert_close(exported.module()(x, t), SmoothMax()(x, t))


SHIFT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]


@pytest.mark.parametrize("dtype", SHIFT_DTYPES)
@pytest.mark.parametrize("count", [0, 1, 3, 7, 8, 15, 31, 32, 63, 64, 70, -1, -9])
def test_shifts_by_a_constant_count_follow_torch_past_the_bit_width(dtype, count):
    x = integers(33, seed=7, low=0 if dtype == torch.uint8 else -100, high=100).to(dtype)
    assert_scan_matches_torch(lambda a, b: torch.where((b << count) > 20, b, a), x)
    assert_scan_matches_torch(lambda a, b: torch.where((b >> count) == -1, b, a), x)
    assert_scan_matches_torch(lambda a, b: torch.where(torch.bitwise_left_shift(b, count) < 0, b, a), x)


@pytest.mark.parametrize("dtype", SHIFT_DTYPES)
def test_shifts_by_a_traced_or_captured_count_follow_torch_for_every_count(dtype):
    x = integers(127, seed=8, low=0 if dtype == torch.uint8 else -100, high=100).to(dtype)
    counts = torch.tensor(70, dtype=dtype)
    # counts from the operands themselves: -100..99 covers negative, in-range and too-large ones
    assert_scan_matches_torch(lambda a, b: torch.where((b << (b % 80)) > 20, b, a), x)
    assert_scan_matches_torch(lambda a, b: torch.where((b >> (b - 3)) == 0, b, a), x)
    assert_scan_matches_torch(lambda a, b: torch.where((1 << (b % 9)) == 128, b, a), x)
    assert_scan_matches_torch(lambda a, b: torch.where((b << counts) == 0, b, a), x)
    if dtype != torch.uint8:  # a negative number shifted: its sign fills in
        assert_scan_matches_torch(lambda a, b: torch.where(((-3) >> (b % 40)) == -1, b, a), x)


def test_a_shift_of_floats_is_refused_as_torch_refuses_it():
    with pytest.raises(ValueError, match="`<<` needs integer operands"):
        st.associative_scan(lambda a, b: a + (b << 1), torch.ones(2, 5), 1)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64, torch.uint8])
@pytest.mark.parametrize("exponent", [0, 1, 2, 3, 5, 13])
def test_an_integer_power_by_a_constant_wraps_as_torch_s_does(dtype, exponent):
    x = integers(33, seed=9, low=0 if dtype == torch.uint8 else -100, high=100).to(dtype)
    assert_scan_matches_torch(lambda a, b: torch.where(b ** exponent > 7, b, a), x)
    assert_scan_matches_torch(lambda a, b: torch.where(torch.pow(b, exponent) < 0, b, a), x)


@pytest.mark.parametrize("spelling", [lambda a, b: a ** b, lambda a, b: a ** -1],
                         ids=["traced exponent", "negative exponent"])
def test_an_integer_power_by_other_than_a_constant_natural_exponent_is_refused(spelling):
    with pytest.raises(ValueError, match=r"`\*\*` \(torch.pow\) of torch.int64 operands"):
        st.associative_scan(spelling, integers(5, seed=10), 1)


def test_an_integer_power_by_a_float_exponent_is_a_float_as_in_torch():
    x = integers(17, seed=10, low=0)
    assert_scan_matches_torch(lambda a, b: torch.where(b ** 0.5 > 2.5, b, a), x)


def test_alpha_scales_a_number_in_the_result_dtype_as_torch_does():
    ints = integers(33, seed=11)
    floats = torch.randn(3, 33, generator=torch.Generator().manual_seed(11))
    assert_scan_matches_torch(lambda a, b: torch.where(torch.add(b, 3, alpha=2) > 7, b, a), ints)
    assert_scan_matches_torch(lambda a, b: torch.where(torch.sub(b, 0.3, alpha=2.2) > 0, b, a), floats)


def test_the_functions_a_refusal_suggests_all_run_inside_a_combine():
    with pytest.raises(ValueError) as refusal:
        st.associative_scan(lambda a, b: a + float(b), torch.ones(2, 5), 1)
    suggested = re.findall(r"torch\.(\w+)", str(refusal.value))
    assert suggested
    x = torch.rand(2, 5) + 1
    for name in suggested:
        fn = getattr(torch, name)
        assert_scan_matches_torch(lambda a, b: torch.where(fn(b) > 1, b, a), x)


def last_with_high_bits(a, b):  # the latest element with a bit set past its shifts and cube
    return torch.where(((b << (b % 70)) > 20) | ((b >> 3) == -1) | ((1 << (b % 9)) == 128)
                       | (b ** 3 > 100), b, a)


class LastWithHighBits(torch.nn.Module):
    def forward(self, x):
        return st.associative_scan(last_with_high_bits, x, 1)


@pytest.mark.parametrize("dtype", [torch.int8, torch.int32, torch.int64])
def test_shifts_and_integer_powers_compile_export_and_lower_with_torch_s_meaning(dtype):
    x, longer = (integers(n, seed=n, low=-100, high=100).to(dtype) for n in (37, 50))
    compiled = torch.compile(LastWithHighBits(), backend="eager", fullgraph=True, dynamic=True)
    exported = torch.export.export(LastWithHighBits(), (x,),
                                   dynamic_shapes=({1: torch.export.Dim("T", max=64)},))
    lowered = st.lower_associative_scans(exported).module()
    for inputs in (x, longer):
        want = loop_scan(last_with_high_bits, inputs, 1)
        assert torch.equal(compiled(inputs), want)
        assert torch.equal(lowered(inputs), want)
    torch._dynamo.reset()


class LatestEqualToAWrappedNumber(torch.nn.Module):
    def forward(self, x):  # 200 beside int8 is -56 in torch
        return st.associative_scan(lambda a, b: torch.where(b == 200, b, a), x, 1)


def test_a_number_beyond_an_integer_dtype_wraps_as_in_torch_eager_compiled_and_lowered():
    x = torch.tensor([[5, -56, 3, 100, -56, 7]], dtype=torch.int8)
    want = loop_scan(lambda a, b: torch.where(b == 200, b, a), x, 1)
    assert want[0, 1] == -56  # torch's own wrap, which the loop shows
    compiled = torch.compile(LatestEqualToAWrappedNumber(), backend="eager", fullgraph=True,
                             dynamic=True)
    exported = torch.export.export(LatestEqualToAWrappedNumber(), (x,))
    assert torch.equal(LatestEqualToAWrappedNumber()(x), want)
    assert torch.equal(compiled(x), want)
    assert torch.equal(st.lower_associative_scans(exported).module()(x), want)
    torch._dynamo.reset()


NEWER_FUNCTIONS = {  # scanc's functions added after the first ones
    "log2": torch.log2, "exp2": torch.exp2, "special.exp2": torch.special.exp2,
    "log10": torch.log10, "log2_ in place": lambda x: x.double().clone().log2_(),
    "erf": torch.erf, "special.erf": torch.special.erf, "erfc": torch.erfc,
    "special.erfc": torch.special.erfc, "atan": torch.atan, "arctan": torch.arctan,
    "atan_ in place": lambda x: x.double().clone().atan_()}


@pytest.mark.parametrize("name, dtype", [(n, d) for n in NEWER_FUNCTIONS for d in FLOATS + INTEGERS],
                         ids=str)
def test_base_two_and_ten_erf_and_atan_functions_give_torch_s_values(name, dtype):
    fn = NEWER_FUNCTIONS[name]
    x = specials(dtype)
    assert_same(images(fn, x), fn(x[1:]), exact=False)


@pytest.mark.parametrize("dtype, low, high", [(torch.float32, -149, 128), (torch.float64, -1074, 1024)],
                         ids=["f32", "f64"])
def test_log2_is_exact_at_every_power_of_two_and_exp2_at_every_integer(dtype, low, high):
    k = torch.arange(low, high, dtype=dtype)
    powers = torch.ldexp(torch.ones_like(k), k)  # 2^k, subnormals included
    assert torch.equal(images(torch.log2, torch.cat([k[:1], powers])), k)
    assert torch.equal(images(torch.exp2, torch.cat([k[:1], k])), powers)


def base_two_logaddexp(a, b):
    return torch.log2(torch.exp2(a) + torch.exp2(b))


@pytest.mark.parametrize("combine", [base_two_logaddexp, torch.logaddexp2])
def test_a_base_two_logcumsumexp_matches_the_loop_and_its_gradient(combine):
    x = torch.randn(3, 37, generator=torch.Generator().manual_seed(13), dtype=torch.float64)
    torch.testing.assert_close(st.associative_scan(combine, x, 1), loop_scan(combine, x, 1))
    torch.testing.assert_close(st.associative_scan(combine, x, 1, reverse=True),
                               loop_scan(combine, x, 1, reverse=True))
    assert torch.autograd.gradcheck(lambda v: st.associative_scan(combine, v, 1),
                                    (x[:, :11].clone().requires_grad_(),))



class BaseTwoLogCumSumExp(torch.nn.Module):
    def forward(self, x):
        return (st.associative_scan(torch.logaddexp2, x, 1),
                torch_associative_scan(base_two_logaddexp, x, 1, combine_mode="generic"))


def test_base_two_functions_export_and_lower_to_aten():
    x = torch.randn(2, 19, generator=torch.Generator().manual_seed(14))
    want = loop_scan(base_two_logaddexp, x, 1)
    lowered = st.lower_associative_scans(torch.export.export(BaseTwoLogCumSumExp(), (x,)))
    for got in lowered.module()(x):
        torch.testing.assert_close(got, want)
    assert not any("scanc" in str(n.target) or "associative_scan" in str(n.target)
                   for n in lowered.graph.nodes)


@pytest.mark.parametrize("dtype", FLOATS + INTEGERS, ids=str)
def test_atan2_gives_torch_s_values_at_every_pair_of_special_values(dtype):
    x, y = specials(dtype, seed=1), specials(dtype, seed=2).flip(0)
    x, y = torch.cat([x, x.roll(3)]), torch.cat([y, y.roll(5)])
    for fn in (torch.atan2, torch.arctan2, lambda a, b: a.atan2(b),
               lambda a, b: torch.atan2(a, torch.tensor(2.0, dtype=torch.float64))):
        assert_same(images(fn, x, y), fn(x[1:], y[1:]), exact=False)


def test_atan2_of_a_number_is_refused_as_torch_refuses_it():  # by torch's own argument parser
    with pytest.raises(TypeError, match="must be Tensor"):
        torch.atan2(torch.ones(3), 2.0)
    with pytest.raises(TypeError, match="must be Tensor"):
        st.associative_scan(lambda a, b: (b[0], torch.atan2(b[0], 2.0)), (torch.ones(1, 3),) * 2, 1)


def test_erfc_keeps_its_relative_precision_in_the_tail():
    x = torch.tensor([0.0, 5.0, 9.0, 10.0, 26.0, 27.0], dtype=torch.float64)
    got = images(torch.erfc, x)
    torch.testing.assert_close(got, torch.erfc(x[1:]), rtol=4e-16, atol=0)
    assert (got > 0).all()  # where 1 - erf(x) is long 0


def tangent_sum(a, b):  # a sum in tan's image: atan(tan(atan(y))) is atan(y) for every y
    return torch.atan(torch.tan(a) + torch.tan(b))


def test_a_sum_of_angles_through_atan_matches_the_loop_and_its_gradient():
    x = torch.rand(3, 29, generator=torch.Generator().manual_seed(15), dtype=torch.float64) * 0.1
    torch.testing.assert_close(st.associative_scan(tangent_sum, x, 1), loop_scan(tangent_sum, x, 1))
    assert torch.autograd.gradcheck(lambda v: st.associative_scan(tangent_sum, v, 1),
                                    (x[:, :9].clone().requires_grad_(),))
    for fn in (torch.erf, torch.erfc, torch.atan):
        assert torch.autograd.gradcheck(lambda v: images(fn, v), (x[0].clone().requires_grad_(),))
    y = (x[1] - 0.05).requires_grad_()
    assert torch.autograd.gradcheck(lambda u, v: images(torch.atan2, u, v),
                                    (x[0].clone().requires_grad_(), y))


class ErfAndAngles(torch.nn.Module):
    def forward(self, x):
        return (st.associative_scan(tangent_sum, x, 1),
                st.associative_scan(lambda a, b: (b[0], torch.erfc(b[0]) + torch.atan2(
                    b[0], torch.full_like(b[0], 0.5))), (x, x), 1)[1])


def test_erf_and_atan_compile_export_and_lower_to_aten():
    x = torch.rand(2, 19, generator=torch.Generator().manual_seed(16)) * 0.1
    want = ErfAndAngles()(x)
    compiled = torch.compile(ErfAndAngles(), backend="eager", fullgraph=True, dynamic=True)
    lowered = st.lower_associative_scans(torch.export.export(ErfAndAngles(), (x,)))
    for got in (compiled(x), lowered.module()(x)):
        for g, w in zip(got, want):
            torch.testing.assert_close(g, w)
    assert not any("scanc" in str(n.target) for n in lowered.graph.nodes)
    torch._dynamo.reset()
