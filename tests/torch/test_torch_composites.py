"""torch operations scanc has no operation for — the NaN and infinity tests, nan_to_num, sign,
relu, masked_fill, addcmul, addcdiv, lerp, hypot, xlogy, zeros_like / ones_like / full_like,
type_as, and the in-place
forms of every operation — run inside a combine with torch's meaning. Each is checked against
torch itself on special values (NaN, the infinities, both zeros, extremes) of every dtype it
takes, in eager calls, under torch.compile and in lowered exports, and in the scans people
write with them."""

import math

import pytest
import torch
from torch._higher_order_ops.associative_scan import associative_scan as torch_associative_scan

import scanc.torch as st
from torch_scan_loops import FLOATS, INTEGERS, assert_same, images, loop_scan, specials

NAN, INF = math.nan, math.inf


UNARY = {
    "isnan": (torch.isnan, FLOATS + INTEGERS + [torch.bool]),
    "isinf": (torch.isinf, FLOATS + INTEGERS + [torch.bool]),
    "isposinf": (torch.isposinf, FLOATS + INTEGERS),
    "isneginf": (torch.isneginf, FLOATS + INTEGERS),
    "isfinite": (torch.isfinite, FLOATS + INTEGERS + [torch.bool]),
    "nan_to_num": (torch.nan_to_num, FLOATS + INTEGERS),
    "nan_to_num with values": (lambda x: torch.nan_to_num(x, nan=7.0, posinf=-1.0, neginf=2.0),
                               FLOATS),
    "Tensor.nan_to_num to infinities": (lambda x: x.nan_to_num(INF, posinf=NAN, neginf=INF),
                                        FLOATS),
    "sign": (torch.sign, FLOATS + INTEGERS + [torch.bool]),
    "sgn": (torch.sgn, FLOATS + INTEGERS),
    "relu": (torch.relu, FLOATS + INTEGERS),
    "functional relu": (torch.nn.functional.relu, FLOATS),
    "masked_fill": (lambda x: x.masked_fill(x > 1, 7.5), FLOATS + INTEGERS),
    "masked_fill by a tensor": (lambda x: torch.masked_fill(x, x < 1, torch.tensor(3)),
                                FLOATS + INTEGERS),
    "type_as": (lambda x: (x > 0).type_as(x), FLOATS + INTEGERS),
    "to a tensor's dtype": (lambda x: (x < 2).to(x) * 3, FLOATS + INTEGERS),
    "zeros_like": (torch.zeros_like, FLOATS + INTEGERS + [torch.bool]),
    "ones_like as f64": (lambda x: torch.ones_like(x, dtype=torch.float64), FLOATS + INTEGERS),
    "full_like": (lambda x: torch.full_like(x, 5), FLOATS + INTEGERS),
    "full_like of -inf": (lambda x: torch.full_like(x, fill_value=-INF), FLOATS),
}


@pytest.mark.parametrize("name, dtype", [(n, d) for n, (_, ds) in UNARY.items() for d in ds],
                         ids=str)
def test_a_unary_composite_gives_torch_s_value_on_special_values(name, dtype):
    fn, _ = UNARY[name]
    x = specials(dtype)
    assert_same(images(fn, x), fn(x[1:]), exact=True)


BINARY = {  # name: (fn, exact, dtypes)
    "hypot": (torch.hypot, False, FLOATS),
    "logaddexp2": (torch.logaddexp2, False, FLOATS),
    "xlogy": (torch.xlogy, False, FLOATS + INTEGERS),
    "xlogy of a number": (lambda x, y: torch.xlogy(x, 2.5), False, FLOATS + INTEGERS),
    "xlogy by a number": (lambda x, y: torch.special.xlogy(3, y), False, FLOATS + INTEGERS),
    "xlogy of zero": (lambda x, y: torch.xlogy(0, y), False, FLOATS),
    "lerp by a tensor weight": (lambda x, y: torch.lerp(x, y, y / 8), False, FLOATS),
    "lerp by 0.25": (lambda x, y: torch.lerp(x, y, 0.25), False, FLOATS),
    "lerp by 0.75": (lambda x, y: x.lerp(y, 0.75), False, FLOATS),
    "addcmul": (lambda x, y: torch.addcmul(x, y, x, value=3), False, FLOATS + INTEGERS),
    "addcdiv": (lambda x, y: torch.addcdiv(y, x, y, value=0.5), False, FLOATS),
}


@pytest.mark.parametrize("name, dtype", [(n, d) for n, (*_, ds) in BINARY.items() for d in ds],
                         ids=str)
def test_a_binary_composite_gives_torch_s_value_on_special_values(name, dtype):
    fn, exact, _ = BINARY[name]
    x, y = specials(dtype, seed=1), specials(dtype, seed=2).flip(0)
    x, y = torch.cat([x, x.roll(3)]), torch.cat([y, y.roll(5)])  # more pairs of specials
    assert_same(images(fn, x, y), fn(x[1:], y[1:]), exact)


def test_hypot_neither_overflows_nor_underflows_where_its_result_fits():
    x = torch.tensor([0.0, 3e30, 3e-30, 1e38, 0.0, INF, NAN], dtype=torch.float32)
    y = torch.tensor([0.0, 4e30, 4e-30, 1e38, -0.0, NAN, INF], dtype=torch.float32)
    got = images(torch.hypot, x, y)
    torch.testing.assert_close(got, torch.tensor([5e30, 5e-30, 1.4142135e38, 0.0, INF, INF]))


def nan_skipping_sum(a, b):  # NaN is a missing value: the sum of the others, NaN if none
    return torch.where(torch.isnan(b), a, torch.where(torch.isnan(a), b, a + b))


def guarded_logaddexp(a, b):  # log(e^a + e^b) with -inf (an empty sum) and +inf kept exact
    m = torch.maximum(a, b)
    safe = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
    return torch.where(torch.isinf(m), m, safe + torch.log(torch.exp(a - safe) + torch.exp(b - safe)))


def merged_mean(left, right):  # (count, mean): the later mean weighs by its share of the count
    n1, m1 = left
    n2, m2 = right
    n = n1 + n2
    return n, torch.lerp(m1, m2, n2 / n)


def sum_of_positive_parts(a, b):
    return torch.relu(a) + torch.relu(b)


def sum_of_positive_parts_in_place(a, b):
    return torch.relu_(a.clone()) + torch.nn.functional.relu(b.clone(), inplace=True)


def accumulated_in_place(a, b):  # torch's aliasing: `total` is `a`'s copy, grown in place
    total = a.clone()
    alias = total
    alias += b
    alias.mul_(1)
    return total


def with_holes(shape, seed):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    x[..., ::3] = NAN
    x[..., 1::7] = -INF
    return x


@pytest.mark.parametrize("n", [0, 1, 2, 17, 64, 65, 257])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_people_write_with_composites_match_the_loop(n, reverse):
    holes = with_holes((3, n), seed=n)
    finite = torch.randn(3, n, generator=torch.Generator().manual_seed(n + 1))
    counts = torch.randint(1, 5, (3, n), generator=torch.Generator().manual_seed(n + 2)).double()
    for combine, xs in ((nan_skipping_sum, torch.where(holes.isinf(), 0.0, holes)),
                        (guarded_logaddexp, holes.nan_to_num(nan=-INF)),
                        (merged_mean, (counts, finite.double())),
                        (sum_of_positive_parts, finite),
                        (sum_of_positive_parts_in_place, finite),
                        (accumulated_in_place, finite)):
        got = st.associative_scan(combine, xs, 1, reverse=reverse)
        want = loop_scan(combine, xs, 1, reverse=reverse)
        torch.testing.assert_close(got, want, equal_nan=True)


def test_an_all_missing_prefix_of_a_nan_skipping_sum_stays_nan():
    x = torch.tensor([[NAN, NAN, 2.0, NAN, 3.0]])
    got = st.associative_scan(nan_skipping_sum, x, 1)
    torch.testing.assert_close(got, torch.tensor([[NAN, NAN, 2.0, 2.0, 5.0]]), equal_nan=True)


def test_in_place_operations_act_on_every_name_bound_to_the_operand():
    def summed_through_an_alias(a, b):
        c = a * 1
        d = c
        d += b            # c is d: both now a + b
        d.mul_(2)         # both 2 (a + b)
        d.sub_(c / 2)     # both a + b again
        return c

    x = torch.randn(2, 9, generator=torch.Generator().manual_seed(3))
    got = st.associative_scan(summed_through_an_alias, x, 1)
    torch.testing.assert_close(got, loop_scan(lambda a, b: a + b, x, 1))


def test_an_in_place_operation_casts_its_result_back_as_torch_does():
    x = torch.randint(0, 9, (2, 11), generator=torch.Generator().manual_seed(4))

    def latest_above_three(a, b):  # b.gt_(3) stores the comparison as b's int64
        flag = b.clone()
        flag.gt_(3)
        return torch.where(flag == 1, b, a)

    assert torch.equal(st.associative_scan(latest_above_three, x, 1),
                       loop_scan(latest_above_three, x, 1))


@pytest.mark.parametrize("spelling, message", [
    (lambda a, b: a.clone().add_(0.5) + b, "does not cast back"),
    (lambda a, b: a + b.clone().exp_(), "does not cast back"),
], ids=["int add_ of a float", "int exp_"])
def test_an_in_place_operation_torch_refuses_is_refused(spelling, message):
    with pytest.raises(ValueError, match=message):
        st.associative_scan(spelling, torch.ones(2, 5, dtype=torch.int64), 1)
    with pytest.raises(RuntimeError):  # what torch itself says of the same
        spelling(torch.ones(3, dtype=torch.int64), torch.ones(3, dtype=torch.int64))


def test_modifying_a_captured_tensor_in_place_is_refused():
    scale = torch.ones(5)
    with pytest.raises(ValueError, match="captured tensor in place"):
        st.associative_scan(lambda a, b: a + scale.add_(b), torch.ones(2, 5), 1)
    assert torch.equal(scale, torch.ones(5))
    with pytest.raises(ValueError, match="computed from captured tensors only"):
        st.associative_scan(lambda a, b: a + scale.clone().mul_(b), torch.ones(2, 5), 1)


@pytest.mark.parametrize("spelling, message", [
    (lambda a, b: torch.relu(a) | b, "relu of bool"),
    (lambda a, b: torch.addcdiv(a, a, b) * 0 + b, "addcdiv needs a floating-point"),
    (lambda a, b: torch.hypot(a, b), "hypot needs a floating-point"),
    (lambda a, b: torch.where(torch.signbit(b), b, a), "torch.signbit"),
    (lambda a, b: torch.lerp(a.float(), b.double(), 0.5), "lerp expects `end`"),
    (lambda a, b: torch.addcmul(a.double(), b, b) * 0 + b, "addcmul of operands of different"),
], ids=["relu of bool", "addcdiv of ints", "hypot of ints", "signbit", "lerp of mixed dtypes",
        "addcmul of mixed dtypes"])
def test_what_torch_refuses_or_scanc_cannot_do_exactly_is_refused_by_name(spelling, message):
    dtype = torch.bool if "relu" in message else torch.int32
    with pytest.raises(ValueError, match=message):
        st.associative_scan(spelling, torch.ones(2, 5, dtype=dtype), 1)


class MissingValues(torch.nn.Module):
    def forward(self, x, counts):
        sums = st.associative_scan(nan_skipping_sum, torch.where(torch.isinf(x), 0.0, x), 1)
        means = st.associative_scan(merged_mean, (counts, torch.nan_to_num(x)), 1)
        return sums, *means, st.associative_scan(accumulated_in_place, counts, 1)


class TorchsOwnMissingValues(torch.nn.Module):  # exported at one length: its op specializes
    def forward(self, x, counts):
        return (torch_associative_scan(nan_skipping_sum, torch.where(torch.isinf(x), 0.0, x), 1,
                                       combine_mode="generic"),
                torch_associative_scan(merged_mean, (counts, x.nan_to_num()), 1,
                                       combine_mode="generic"))


def test_composites_compile_with_dynamic_shapes_and_export_and_lower():
    model, torchs = MissingValues(), TorchsOwnMissingValues()
    compiled = torch.compile(model, backend="eager", fullgraph=True, dynamic=True)
    sizes = (9, 23, 40)
    inputs = [(with_holes((2, n), seed=n), torch.randint(
        1, 4, (2, n), generator=torch.Generator().manual_seed(n)).double()) for n in sizes]
    steps = torch.export.Dim("T", max=64)
    dims = ({1: steps}, {1: steps})
    exported = st.lower_associative_scans(
        torch.export.export(model, inputs[0], dynamic_shapes=dims)).module()
    torchs_lowered = st.lower_associative_scans(torch.export.export(torchs, inputs[0])).module()
    for g, w in zip(torchs_lowered(*inputs[0]), torchs(*inputs[0])):
        torch.testing.assert_close(g, w, equal_nan=True)
    for x, counts in inputs:
        want = model(x, counts)
        assert len(want) == 4
        for got in (compiled(x, counts), exported(x, counts)):
            for g, w in zip(got, want):
                torch.testing.assert_close(g, w, equal_nan=True)
    torch._dynamo.reset()


def hypot_norm(a, b):  # the Euclidean norm of everything so far
    return torch.hypot(a, b)


@pytest.mark.parametrize("reverse", [False, True])
def test_gradients_flow_through_composites(reverse):
    g = torch.Generator().manual_seed(5)
    counts = torch.randint(1, 5, (2, 13), generator=g).double().requires_grad_()
    means = torch.randn(2, 13, generator=g, dtype=torch.float64, requires_grad=True)
    x = torch.randn(2, 13, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda n, m: st.associative_scan(merged_mean, (n, m), 1, reverse=reverse), (counts, means))
    for combine in (guarded_logaddexp, hypot_norm, nan_skipping_sum):
        assert torch.autograd.gradcheck(
            lambda v: st.associative_scan(combine, v, 1, reverse=reverse), (x,))


@pytest.mark.parametrize("cast", [lambda s, b: s.to(s.dtype), lambda s, b: s.to(b),
                                  lambda s, b: s.type_as(b), lambda s, b: s.float()],
                         ids=["to(dtype)", "to(tensor)", "type_as", "float()"])
def test_a_cast_to_the_operand_s_own_dtype_is_the_operand_itself(cast):
    def running_sum(a, b):  # as in torch, the in-place add through the cast changes `total`
        total = a * 1
        cast(total, b).add_(b)
        return total

    x = torch.randn(2, 17, generator=torch.Generator().manual_seed(6))
    torch.testing.assert_close(st.associative_scan(running_sum, x, 1), loop_scan(running_sum, x, 1))


@pytest.mark.parametrize("spelling", [
    lambda b, c: torch.clamp(b, min=c), lambda b, c: torch.clamp(b, max=c),
    lambda b, c: torch.clamp_min(b, c), lambda b, c: (b * 1).clamp_(min=c),
    lambda b, c: torch.clamp(b, min=NAN), lambda b, c: b.clamp(-1.0, NAN)],
    ids=["min", "max", "clamp_min", "clamp_ in place", "min=nan", "max=nan"])
def test_a_nan_bound_makes_clamp_nan_as_in_torch(spelling):
    bounds = torch.tensor([NAN, 0.0, 2.0, -INF])
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(7))
    latest_clamped = lambda a, b: spelling(b, bounds)  # noqa: E731 (the latest element, clamped)
    torch.testing.assert_close(st.associative_scan(latest_clamped, x, 0),
                               loop_scan(latest_clamped, x, 0), equal_nan=True)


@pytest.mark.parametrize("spelling", [
    lambda b, c: c.clamp(max=b), lambda b, c: b.sub(c, alpha=2), lambda b, c: (b * 1).sub_(c, alpha=2),
    lambda b, c: torch.add(b, c, alpha=-0.5)],
    ids=["captured clamped by a traced keyword", "sub alpha", "sub_ alpha", "add alpha"])
def test_a_captured_first_operand_beside_a_traced_keyword_or_alpha_traces(spelling):
    c = torch.tensor([0.5, 2.0, -1.0])
    latest_above_zero = lambda a, b: torch.where(spelling(b, c) > 0, b, a)  # noqa: E731
    x = torch.randn(6, 3, generator=torch.Generator().manual_seed(0))
    assert torch.equal(st.associative_scan(latest_above_zero, x, 0), loop_scan(latest_above_zero, x, 0))


@pytest.mark.parametrize("dtype, number", [(torch.bfloat16, 0.1), (torch.float16, -1e-30),
                                           (torch.float16, 70000.0), (torch.bfloat16, 1.00390625)])
def test_a_number_compared_with_a_narrow_float_is_rounded_to_its_dtype_first(dtype, number):
    rounded = torch.tensor(number, dtype=dtype)
    x = torch.stack([torch.tensor(5.0, dtype=dtype), rounded, rounded.abs(), -rounded])[None]
    for compare in (torch.gt, torch.ge, torch.lt, torch.eq):
        latest = lambda a, b: torch.where(compare(b, number), b, a)  # noqa: E731
        assert torch.equal(st.associative_scan(latest, x, 1), loop_scan(latest, x, 1))


def latest_where_a_constant_holds(a, b):  # operations on constants alone, and a condition of them
    scale = torch.exp(torch.zeros_like(b)) * torch.abs(torch.full_like(b, -2.0))
    return torch.where(torch.isfinite(torch.ones_like(b)), b * scale / 2, a)


class Constants(torch.nn.Module):
    def forward(self, x):
        return (st.associative_scan(lambda a, b: a + b + torch.zeros_like(b), x, 1),
                st.associative_scan(lambda a, b: (a[0] + b[0], torch.full_like(b[1], 2.7, dtype=torch.int32)),
                                    (x, x.int()), 1)[1],
                st.associative_scan(latest_where_a_constant_holds, x, 1))


def test_constants_from_zeros_like_and_full_like_lower():
    x = torch.randn(2, 9, generator=torch.Generator().manual_seed(8))
    lowered = st.lower_associative_scans(torch.export.export(
        Constants(), (x,), dynamic_shapes=({1: torch.export.Dim("T", max=32)},))).module()
    for n in (9, 20):
        v = torch.randn(2, n, generator=torch.Generator().manual_seed(n))
        for got, want in zip(lowered(v), Constants()(v)):
            torch.testing.assert_close(got, want)  # the sum reassociated: not bit for bit
    assert torch.equal(Constants()(x)[1][:, 1:], torch.full((2, 8), 2, dtype=torch.int32))


@pytest.mark.parametrize("dtype, bound", [(torch.int8, 300), (torch.uint8, -256), (torch.float16, 1e30),
                                          (torch.float32, 1e300)])
def test_a_clamp_bound_that_overflows_the_operand_s_dtype_is_refused_as_torch_refuses_it(dtype, bound):
    x = torch.ones(2, 5, dtype=dtype)
    with pytest.raises(RuntimeError, match="without overflow"):
        torch.clamp(x, min=bound)
    with pytest.raises(ValueError, match="without overflow"):
        st.associative_scan(lambda a, b: torch.clamp(torch.maximum(a, b), max=bound), x, 1)
    assert torch.equal(st.associative_scan(lambda a, b: torch.clamp(torch.maximum(a, b), max=INF if
                       dtype.is_floating_point else 7), x, 1), x)


@pytest.mark.parametrize("dtype, value", [(torch.uint8, -256), (torch.int8, 128),
                                          (torch.float16, 1e6), (torch.bfloat16, 1e39)])
@pytest.mark.parametrize("spelling", [
    lambda b, v: torch.full_like(b, v), lambda b, v: b.masked_fill(b != b, v),
    lambda b, v: torch.nn.functional.threshold(b, 0, v)], ids=["full_like", "masked_fill", "threshold"])
def test_a_fill_value_that_overflows_the_operand_s_dtype_is_refused_as_torch_refuses_it(
        dtype, value, spelling):
    x = torch.ones(2, 5, dtype=dtype)
    with pytest.raises(RuntimeError, match="without overflow"):
        spelling(x, value)
    with pytest.raises(ValueError, match="without overflow"):
        st.associative_scan(lambda a, b: torch.maximum(a, spelling(b, value)), x, 1)


def test_a_negative_clamp_bound_of_an_unsigned_operand_wraps_as_in_torch():
    x = torch.randint(0, 255, (2, 9), dtype=torch.uint8, generator=torch.Generator().manual_seed(9))
    latest_clamped = lambda a, b: torch.clamp(b, min=-6)  # noqa: E731 (-6 is 250 in uint8)
    assert torch.equal(st.associative_scan(latest_clamped, x, 1), loop_scan(latest_clamped, x, 1))


def test_a_narrow_float_compared_with_a_number_beyond_its_range_compiles():
    x = torch.tensor([[1.0, 70000.0, -3.0, 65504.0]]).half()
    latest_above = lambda a, b: torch.where(b > 1e30, b, a)  # noqa: E731 (1e30 is inf in f16)
    compiled = torch.compile(lambda v: st.associative_scan(latest_above, v, 1), backend="eager",
                             fullgraph=True)
    assert torch.equal(compiled(x), loop_scan(latest_above, x, 1))
    assert torch.equal(st.associative_scan(latest_above, x, 1), loop_scan(latest_above, x, 1))
    torch._dynamo.reset()


NARROW_CARRIES = {  # each combine's scan of ones in f32 is sqrt(n), log2(n) and n - 1
    "hypot": (torch.hypot, 1.0),
    "logaddexp2": (torch.logaddexp2, 0.0),
    "affine through addcmul": (lambda a, b: torch.addcmul(b, a, torch.ones_like(a)), 1.0),
}


@pytest.mark.parametrize("name", NARROW_CARRIES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_a_composite_of_narrow_floats_keeps_the_carry_in_f32_whatever_the_columns(name, dtype):
    # Rounded at the composite's end, the carry rounded at every step: bf16 hypot over 1025
    # ones read 16 (64 columns), 31.6 (1) or 32 (16), as the scan happened to associate.
    combine, fill = NARROW_CARRIES[name]
    results = [st.associative_scan(combine, torch.full((1025, columns), fill, dtype=dtype), 0)
               for columns in (1, 16, 64)]
    want = loop_scan(combine, torch.full((1025, 1), fill), 0).to(dtype)
    for got in results:
        torch.testing.assert_close(got[:, :1], want, rtol=2 ** -7, atol=0)
        assert torch.equal(got, got[:, :1].expand_as(got))
