"""Gradients of scanc.torch.associative_scan, derived symbolically from the combine: checked
with torch.autograd.gradcheck in float64 (finite differences, independent of our derivation)
and against autograd through the sequential loop."""

import pytest
import torch
from torch.autograd import gradcheck

import scanc.torch as st
import torch_scan_loops as loops


def leaf(*shape, seed, positive=False):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (x.abs() + 0.5 if positive else x).requires_grad_()


SINGLE_LEAF = {"sum": (loops.add, False), "prod": (loops.mul, True),
               "max": (loops.maximum, False), "logaddexp": (loops.logaddexp, False)}


@pytest.mark.parametrize("name", list(SINGLE_LEAF))
@pytest.mark.parametrize("reverse", [False, True])
def test_gradcheck_passes_for_single_leaf_combines(name, reverse):
    combine, positive = SINGLE_LEAF[name]
    x = leaf(3, 7, seed=1, positive=positive)
    assert gradcheck(lambda v: st.associative_scan(combine, v, 1, reverse=reverse), (x,))


@pytest.mark.parametrize("reverse", [False, True])
def test_gradcheck_passes_for_the_affine_recurrence(reverse):
    a, b = leaf(2, 9, seed=2).sigmoid().detach().requires_grad_(), leaf(2, 9, seed=3)
    assert gradcheck(lambda u, v: st.associative_scan(loops.affine, (u, v), 1, reverse=reverse),
                     (a, b))


@pytest.mark.parametrize("reverse", [False, True])
def test_gradcheck_passes_for_the_2x2_matrix_product(reverse):
    xs = [(leaf(2, 6, seed=s) * 0.5).detach().requires_grad_() for s in range(4)]

    def scan(a, b, c, d):
        ys = st.associative_scan(loops.matrix2x2, {"a": a, "b": b, "c": c, "d": d}, 1,
                                 reverse=reverse)
        return tuple(ys[k] for k in "abcd")

    assert gradcheck(scan, tuple(xs))


@pytest.mark.parametrize("reverse", [False, True])
def test_gradcheck_passes_for_captured_arguments(reverse):
    x, tau = leaf(3, 8, seed=4), leaf(3, seed=5, positive=True)

    def scan(v, t):
        return st.associative_scan(lambda a, b: t * torch.logaddexp(a / t, b / t), v, 1,
                                   reverse=reverse)

    assert gradcheck(scan, (x, tau))


def test_captured_gradients_reduce_over_broadcast_dims_like_the_loop():
    x, tau = leaf(4, 6, 5, seed=6), leaf(5, seed=7, positive=True)  # tau: per channel

    def smooth_max(a, b):
        return tau * torch.logaddexp(a / tau, b / tau)

    y = st.associative_scan(smooth_max, x, 1)
    grads = torch.autograd.grad(y.sin().sum(), (x, tau))
    expected = torch.autograd.grad(loops.loop_scan(smooth_max, x, 1).sin().sum(), (x, tau))
    for g, e in zip(grads, expected):
        torch.testing.assert_close(g, e)


@pytest.mark.parametrize("length", [0, 1, 2, 33])
def test_short_scans_have_gradients_of_the_right_shape(length):
    x, tau = leaf(2, length, seed=8), leaf(2, seed=9, positive=True)
    y = st.associative_scan(lambda a, b: tau * torch.logaddexp(a / tau, b / tau), x, 1)
    gx, gt = torch.autograd.grad(y.sum(), (x, tau), allow_unused=True)
    assert gx.shape == x.shape and gt.shape == tau.shape
    if length == 1:
        torch.testing.assert_close(gt, torch.zeros_like(tau))


def test_gradients_under_dynamic_compile_equal_eager():
    def loss(v, t):
        return st.associative_scan(lambda a, b: t * torch.logaddexp(a / t, b / t), v, 1).sum()

    compiled = torch.compile(loss, dynamic=True, fullgraph=True)
    for n in (5, 11):
        x, tau = leaf(3, n, seed=n), leaf(3, seed=20 + n, positive=True)
        expected = torch.autograd.grad(loss(x, tau), (x, tau))
        got = torch.autograd.grad(compiled(x, tau), (x, tau))
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", [1, 2, 33])
def test_integer_leaves_carry_no_gradient_and_the_float_leaves_get_torch_s(reverse, length):
    # A running max with the index of its (last) maximum: torch.cummax as a scan of two leaves.
    def running_max_with_index(a, b):
        later = b[0] >= a[0] if not reverse else b[0] > a[0]
        return torch.where(later, b[0], a[0]), torch.where(later, b[1], a[1])

    x = leaf(3, length, seed=length).detach().round(decimals=1).requires_grad_()
    index = torch.arange(length).expand(3, length).contiguous()
    values, indices = st.associative_scan(running_max_with_index, (x, index), 1, reverse=reverse)
    want_values, want_indices = loops.loop_scan(running_max_with_index, (x, index), 1, reverse)
    assert torch.equal(indices, want_indices)
    weights = leaf(3, length, seed=100 + length)
    got = torch.autograd.grad((values * weights).sum(), x)[0]
    want = torch.autograd.grad((want_values * weights).sum(), x)[0]
    torch.testing.assert_close(got, want)
    if not reverse:
        torch.testing.assert_close(got, torch.autograd.grad(
            (torch.cummax(x, 1).values * weights).sum(), x)[0])


@pytest.mark.parametrize("reverse", [False, True])
def test_a_gradient_of_a_gradient_equals_the_loop_s(reverse):
    x, tau = leaf(2, 9, seed=3), leaf(2, seed=4, positive=True)

    def second(scan):
        y = scan(lambda a, b: tau * torch.logaddexp(a / tau, b / tau), x, 1, reverse=reverse)
        gx, gt = torch.autograd.grad(y.sin().sum(), (x, tau), create_graph=True)
        return torch.autograd.grad((gx * gx).sum() + (gt * gt).sum(), (x, tau))

    got, want = second(st.associative_scan), second(loops.loop_scan)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("how", ["is_grads_batched", "vectorized jacobian"])
def test_batched_gradients_are_refused_by_name(how):
    x = leaf(2, 4, seed=5)
    with pytest.raises(NotImplementedError, match="batched gradients"):
        if how == "is_grads_batched":
            y = st.associative_scan(loops.mul, x, 1)
            torch.autograd.grad(y, x, torch.eye(8, dtype=x.dtype).reshape(8, 2, 4),
                                is_grads_batched=True)
        else:
            torch.autograd.functional.jacobian(lambda v: st.associative_scan(loops.add, v, 1),
                                               x, vectorize=True)

def _loop_grad(combine, x, weights):
    x = x.detach().requires_grad_()
    return torch.autograd.grad((loops.loop_scan(combine, x, 1) * weights).sum(), x)[0]


def _scan_grad(combine, x, weights):
    x = x.detach().requires_grad_()
    return torch.autograd.grad((st.associative_scan(combine, x, 1) * weights).sum(), x)[0]


@pytest.mark.parametrize("combine", [
    lambda a, b: torch.maximum(a.abs(), b.abs()),
    lambda a, b: torch.minimum(a.abs(), b.abs()),
    lambda a, b: torch.maximum(a.clamp(min=0), b.clamp(min=0)),
], ids=["max-abs", "min-abs", "max-clamp"])
def test_ties_split_the_gradient_evenly_through_abs_and_clamp_as_torch_does(combine):
    # Repeated values make the running value tie with the next element; the halves of a tie
    # must not round to zero (the derivatives of abs and clamp are integer-valued).
    x = torch.tensor([[1.0, 2.0, 2.0, -2.0, 3.0, 3.0]], dtype=torch.float64)
    w = torch.arange(1.0, 7.0, dtype=torch.float64)
    want = _loop_grad(combine, x, w)
    assert torch.equal(_scan_grad(combine, x, w), want)
    assert (want != 0).any()



@pytest.mark.parametrize("op", [torch.maximum, torch.minimum])
def test_a_nan_s_operands_each_take_the_whole_gradient_as_torch_does(op):
    x = torch.tensor([[1.0, float("nan"), 2.0, 2.0, -1.0]], dtype=torch.float64)
    w = torch.arange(1.0, 6.0, dtype=torch.float64)
    want = _loop_grad(op, x, w)
    assert torch.equal(_scan_grad(op, x, w), want)
    assert want[0, 0] == w.sum()  # 1 is the left operand of every max or min with the NaN


def _online_softmax(left, right):
    m = torch.maximum(left[0], right[0])
    return m, left[1] * torch.exp(left[0] - m) + right[1] * torch.exp(right[0] - m)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_an_unused_output_that_overflows_leaves_the_used_one_s_gradient_finite(mode):
    # The running sum is NaN from the inf on (exp(inf - inf)); only the running max is used, so
    # its zero gradient must not meet the sum's NaN Jacobian (0 * NaN) as torch never visits it.
    def running_max_sum(m, s):
        return st.associative_scan(_online_softmax, (m, s), 0)[0].sum()

    m = torch.tensor([0.5, float("inf"), 0.2, 0.3], dtype=torch.float64, requires_grad=True)
    s = torch.ones(4, dtype=torch.float64)
    fn = running_max_sum if mode == "eager" else torch.compile(running_max_sum, backend="aot_eager")
    (got,) = torch.autograd.grad(fn(m, s), m)
    acc, outs = (m[0], s[0]), [m[0]]
    for t in range(1, 4):
        acc = _online_softmax(acc, (m[t], s[t]))
        outs.append(acc[0])
    (want,) = torch.autograd.grad(torch.stack(outs).sum(), m)
    assert torch.equal(got, want), (got, want)
    assert torch.isfinite(got).all()


def test_gradients_of_some_outputs_equal_those_of_all_outputs_weighted_by_zero():
    a, b = leaf(3, 17, seed=7).sigmoid().detach().requires_grad_(), leaf(3, 17, seed=8)
    w = leaf(3, 17, seed=9).detach()
    _, h = st.associative_scan(loops.affine, (a, b), 1)
    only_h = torch.autograd.grad((h * w).sum(), (a, b))
    products, h = st.associative_scan(loops.affine, (a, b), 1)
    both = torch.autograd.grad((h * w).sum() + (products * 0).sum(), (a, b))
    for got, want in zip(only_h, both):
        torch.testing.assert_close(got, want)

@pytest.mark.parametrize("op", [torch.fmax, torch.fmin])
def test_fmax_and_fmin_send_a_tie_s_gradient_to_the_first_operand_as_torch_does(op):
    x = torch.tensor([[1.0, 1.0, float("nan"), 1.0, 0.5]], dtype=torch.float64)
    w = torch.arange(1.0, 6.0, dtype=torch.float64)
    assert torch.equal(_scan_grad(op, x, w), _loop_grad(op, x, w))


def test_the_backward_op_s_fake_and_real_outputs_agree_for_a_strided_integer_leaf():
    # A segmented sum: an int32 flag leaf, permuted so that its strides are not contiguous.
    from scanc.torch import pytrees
    from scanc.torch.trace import trace_combine

    def segmented(l, r):
        return torch.where(r[1] != 0, r[0], l[0] + r[0]), l[1] | r[1]

    values = torch.randn(4, 5, 2, dtype=torch.float64).permute(2, 1, 0)
    flags = (torch.rand(4, 5, 2, generator=torch.Generator().manual_seed(4)) > 0.6).to(torch.int32)
    flags = flags.permute(2, 1, 0)
    _, spec = pytrees.flatten((values, flags))
    text, _ = trace_combine(segmented, spec, [values.dtype, flags.dtype])
    ys = torch.ops.scanc.associative_scan(text, [values, flags], [], 1, False)
    grads = [torch.randn(2, 5, 4, dtype=torch.float64), torch.zeros_like(ys[1])]
    torch.library.opcheck(torch.ops.scanc.associative_scan_backward.default,
                          (text, [values, flags], list(ys), [], grads, 1, False),
                          test_utils=["test_faketensor"])
