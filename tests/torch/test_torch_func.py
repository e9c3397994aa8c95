"""scanc.torch.associative_scan under torch.func (vmap, grad, vjp, jacrev, jvp, jacfwd) and
forward-mode AD: each transform of a scan equals the same transform of the sequential loop
(torch differentiating and batching ordinary indexing), in float64."""

import pytest
import torch
import torch.autograd.forward_ad as fwad

import scanc.torch as st
import torch_scan_loops as loops

LENGTHS = [0, 1, 2, 7, 17, 31]


def draw(*shape, seed, low=None):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return x if low is None else x.abs() + low


def smooth_max(t):
    return lambda a, b: t * torch.logaddexp(a / t, b / t)


# (name, combine, leaves drawn for a shape): each combine beside its loop, the same function.
CASES = {
    "sum": (loops.add, lambda s, seed: draw(*s, seed=seed)),
    "prod": (loops.mul, lambda s, seed: draw(*s, seed=seed, low=0.5)),
    "max": (loops.maximum, lambda s, seed: draw(*s, seed=seed)),
    "logaddexp": (loops.logaddexp, lambda s, seed: draw(*s, seed=seed)),
    "affine": (loops.affine, lambda s, seed: (draw(*s, seed=seed).sigmoid(),
                                               draw(*s, seed=seed + 1))),
    "matrix2x2": (loops.matrix2x2, lambda s, seed: {k: draw(*s, seed=seed + i) * 0.5
                                                     for i, k in enumerate("abcd")}),
}


def scan_pair(combine, dim, reverse=False):
    """The scanc scan and the loop, as functions of the leaves as separate arguments."""
    def make(scan):
        def f(*leaves):
            xs = leaves[0] if len(leaves) == 1 else leaves
            if isinstance(xs, tuple) and len(xs) == 4:  # matrix2x2's dict
                xs = dict(zip("abcd", xs))
            out = scan(combine, xs, dim, reverse=reverse)
            return tuple(out[k] for k in "abcd") if isinstance(out, dict) else out
        return f
    return make(st.associative_scan), make(loops.loop_scan)


def case_on_rows(name, reverse, seed):
    """A case's leaves (2 rows of 5), its scan and loop along the rows, and every leaf's
    argnum."""
    combine, leaves = CASES[name]
    xs = leaves_of(leaves((2, 5), seed=seed))
    return (xs, *scan_pair(combine, 1, reverse), tuple(range(len(xs))))


def leaves_of(xs):
    if isinstance(xs, dict):
        return tuple(xs[k] for k in "abcd")
    return xs if isinstance(xs, tuple) else (xs,)


def assert_close_trees(got, want):
    got, want = torch.utils._pytree.tree_leaves(got), torch.utils._pytree.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", LENGTHS)
def test_vmap_of_a_scan_equals_vmap_of_the_loop(name, reverse, length):
    combine, leaves = CASES[name]
    xs = leaves_of(leaves((length, 3, 4), seed=length))  # batch dim 1, scanned dim 1 of each
    scan, loop = scan_pair(combine, 1, reverse)
    in_dims = (1,) * len(xs)
    assert_close_trees(torch.func.vmap(scan, in_dims)(*xs), torch.func.vmap(loop, in_dims)(*xs))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("length", LENGTHS)
def test_jvp_of_a_scan_equals_the_loop_s(name, reverse, length):
    combine, leaves = CASES[name]
    xs = leaves_of(leaves((2, length), seed=length))
    tangents = tuple(draw(*x.shape, seed=50 + i) for i, x in enumerate(xs))
    scan, loop = scan_pair(combine, 1, reverse)
    assert_close_trees(torch.func.jvp(scan, xs, tangents), torch.func.jvp(loop, xs, tangents))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reverse", [False, True])
def test_jacrev_and_jacfwd_of_a_scan_equal_the_loop_s_jacobian(name, reverse):
    xs, scan, loop, argnums = case_on_rows(name, reverse, seed=3)
    want = torch.func.jacrev(loop, argnums)(*xs)
    assert_close_trees(torch.func.jacrev(scan, argnums)(*xs), want)
    assert_close_trees(torch.func.jacfwd(scan, argnums)(*xs), want)


def test_ties_of_a_running_max_split_tangents_as_the_loop_does_over_a_long_scan():
    # Rounded values tie often; a scan of dual numbers would split each tie in the order the
    # scan combines, the loop splits it step by step, and so does scanc's forward mode.
    x = draw(3, 4001, seed=1).round()
    t = draw(3, 4001, seed=2)
    scan, loop = scan_pair(loops.maximum, 1)
    assert_close_trees(torch.func.jvp(scan, (x,), (t,)), torch.func.jvp(loop, (x,), (t,)))
    # Forward and reverse mode agree: <u, J t> = <J^T u, t>.
    u = draw(3, 4001, seed=3)
    _, vjp = torch.func.vjp(scan, x)
    torch.testing.assert_close((u * torch.func.jvp(scan, (x,), (t,))[1]).sum(),
                               (vjp(u)[0] * t).sum())


def test_captured_values_batch_and_carry_tangents_and_per_sample_gradients():
    x, tau = draw(4, 6, 3, seed=4), draw(4, 3, seed=5, low=0.5)  # per sample: x (6, 3), tau (3,)

    def scan(v, t):
        return st.associative_scan(smooth_max(t), v, 0)

    def loop(v, t):
        return loops.loop_scan(smooth_max(t), v, 0)

    # tau batched with x, and one tau for every sample.
    assert_close_trees(torch.func.vmap(scan)(x, tau), torch.func.vmap(loop)(x, tau))
    assert_close_trees(torch.func.vmap(scan, (0, None))(x, tau[0]),
                       torch.func.vmap(loop, (0, None))(x, tau[0]))
    # One x for every tau: the leaves broadcast to the batch.
    assert_close_trees(torch.func.vmap(scan, (None, 0))(x[0], tau),
                       torch.stack([loop(x[0], t) for t in tau]))
    # vmap of vmap: two leading dims.
    xx = draw(2, 4, 6, 3, seed=24)
    assert_close_trees(torch.func.vmap(torch.func.vmap(lambda v: scan(v, tau[0])))(xx),
                       torch.func.vmap(torch.func.vmap(lambda v: loop(v, tau[0])))(xx))
    # A tangent on the captured value alone, and on both.
    assert_close_trees(torch.func.jvp(lambda t: scan(x[0], t), (tau[0],), (tau[1],)),
                       torch.func.jvp(lambda t: loop(x[0], t), (tau[0],), (tau[1],)))
    assert_close_trees(torch.func.jvp(scan, (x[0], tau[0]), (x[1], tau[1])),
                       torch.func.jvp(loop, (x[0], tau[0]), (x[1], tau[1])))
    # Per-sample gradients for a tau shared by the batch: one gradient per sample, not a sum.
    def loss(f):
        return lambda v, t: f(v, t).sin().sum()

    per_sample = torch.func.vmap(torch.func.grad(loss(scan), argnums=(0, 1)), (0, None))
    got = per_sample(x, tau[0])
    assert got[1].shape == (4, 3)
    assert_close_trees(got, torch.func.vmap(torch.func.grad(loss(loop), argnums=(0, 1)),
                                            (0, None))(x, tau[0]))


def test_integer_leaves_carry_no_tangent_and_the_float_leaves_get_the_loop_s():
    def running_max_with_index(a, b):
        later = b[0] >= a[0]
        return torch.where(later, b[0], a[0]), torch.where(later, b[1], a[1])

    x = draw(3, 9, seed=6).round(decimals=1)
    index = torch.arange(9).expand(3, 9).contiguous()
    t = draw(3, 9, seed=7)

    def scan(v):
        return st.associative_scan(running_max_with_index, (v, index), 1)

    def loop(v):
        return loops.loop_scan(running_max_with_index, (v, index), 1)

    (values, indices), (dvalues, dindices) = torch.func.jvp(scan, (x,), (t,))
    (want_values, want_indices), (want_dvalues, want_dindices) = torch.func.jvp(loop, (x,), (t,))
    assert torch.equal(indices, want_indices)
    torch.testing.assert_close(values, want_values)
    torch.testing.assert_close(dvalues, want_dvalues)
    assert torch.equal(dindices, want_dindices) and not dindices.any()


@pytest.mark.parametrize("reverse", [False, True])
def test_a_leaf_vmap_does_not_batch_is_shared_by_every_batch_element(reverse):
    def segmented_sum(a, b):
        return a[0] | b[0], torch.where(b[0], b[1], a[1] + b[1])

    flags = torch.rand(13, generator=torch.Generator().manual_seed(13)) < 0.3
    x = draw(5, 13, seed=14)

    def scan(v):
        return st.associative_scan(segmented_sum, (flags, v), 0, reverse=reverse)[1]

    def loop(v):
        return loops.loop_scan(segmented_sum, (flags, v), 0, reverse)[1]

    torch.testing.assert_close(torch.func.vmap(scan)(x), torch.func.vmap(loop)(x))


def test_forward_mode_dual_tensors_get_the_loop_s_tangent():
    x, t = draw(2, 11, seed=8), draw(2, 11, seed=9)
    with fwad.dual_level():
        y = st.associative_scan(loops.logaddexp, fwad.make_dual(x, t), 1)
        got = fwad.unpack_dual(y).tangent
    torch.testing.assert_close(got, torch.func.jvp(
        lambda v: loops.loop_scan(loops.logaddexp, v, 1), (x,), (t,))[1])


def test_a_float32_scan_s_tangent_is_float32_and_close_to_the_float64_loop():
    x, t = draw(3, 33, seed=10), draw(3, 33, seed=11)
    y, dy = torch.func.jvp(lambda v: st.associative_scan(loops.logaddexp, v, 1),
                           (x.float(),), (t.float(),))
    assert dy.dtype == torch.float32
    want = torch.func.jvp(lambda v: loops.loop_scan(loops.logaddexp, v, 1), (x,), (t,))[1]
    torch.testing.assert_close(dy.double(), want, rtol=1e-5, atol=1e-5)


def test_vmap_under_dynamic_compile_equals_eager_for_two_lengths():
    def batched(v):
        return torch.func.vmap(lambda r: st.associative_scan(loops.logaddexp, r, 0))(v)

    compiled = torch.compile(batched, dynamic=True, fullgraph=True)
    for n in (5, 12):
        x = draw(3, n, seed=n)
        torch.testing.assert_close(compiled(x), torch.func.vmap(
            lambda r: loops.loop_scan(loops.logaddexp, r, 0))(x))


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("reverse", [False, True])
def test_hessians_equal_the_loop_s(name, reverse):
    xs, scan, loop, argnums = case_on_rows(name, reverse, seed=15)

    def loss(f):
        return lambda *v: sum(y.sin().sum() for y in torch.utils._pytree.tree_leaves(f(*v)))

    assert_close_trees(torch.func.hessian(loss(scan), argnums)(*xs),
                       torch.func.hessian(loss(loop), argnums)(*xs))


@pytest.mark.parametrize("reverse", [False, True])
def test_second_and_third_derivatives_through_a_captured_value_equal_the_loop_s(reverse):
    x, tau = draw(2, 7, seed=16), draw(2, seed=17, low=0.5)

    def loss(scan):
        return lambda v, t: scan(smooth_max(t), v, 1, reverse=reverse).sin().sum()

    got, want = loss(st.associative_scan), loss(loops.loop_scan)
    assert_close_trees(torch.func.hessian(got, (0, 1))(x, tau),
                       torch.func.hessian(want, (0, 1))(x, tau))
    assert_close_trees(torch.func.jacrev(torch.func.jacrev(torch.func.grad(got, 1), 1), 1)(x, tau),
                       torch.func.jacrev(torch.func.jacrev(torch.func.grad(want, 1), 1), 1)(x, tau))


def test_hessian_vector_products_equal_the_loop_s():
    x, v = draw(3, 9, seed=18), draw(3, 9, seed=19)

    def loss(scan):
        return lambda w: scan(loops.logaddexp, w, 1).sin().sum()

    got, want = loss(st.associative_scan), loss(loops.loop_scan)
    torch.testing.assert_close(torch.func.jvp(torch.func.grad(got), (x,), (v,))[1],
                               torch.func.jvp(torch.func.grad(want), (x,), (v,))[1])
    torch.testing.assert_close(torch.autograd.functional.hvp(got, x, v)[1],
                               torch.autograd.functional.hvp(want, x, v)[1])


def test_a_hessian_through_a_running_max_with_an_integer_index_equals_the_loop_s():
    def running_max_with_index(a, b):
        later = b[0] >= a[0]
        return torch.where(later, b[0], a[0]), torch.where(later, b[1], a[1])

    x = draw(2, 8, seed=20)
    index = torch.arange(8).expand(2, 8).contiguous()

    def loss(scan):
        return lambda v: scan(running_max_with_index, (v, index), 1)[0].sin().sum()

    torch.testing.assert_close(torch.func.hessian(loss(st.associative_scan))(x),
                               torch.func.hessian(loss(loops.loop_scan))(x))


@pytest.mark.parametrize("nested", [
    lambda f, x: torch.func.jacfwd(torch.func.jacfwd(lambda v: f(v).sum()))(x),
    lambda f, x: torch.func.jvp(lambda v: torch.func.jvp(f, (v,), (v,))[1], (x,), (x,)),
    lambda f, x: torch.func.jacfwd(torch.func.hessian(lambda v: f(v).sum()))(x),
], ids=["jacfwd of jacfwd", "jvp of jvp", "jacfwd of hessian"])
def test_forward_mode_over_forward_mode_is_refused_by_name(nested):
    with pytest.raises(NotImplementedError, match="forward mode over forward mode"):
        nested(lambda v: st.associative_scan(loops.mul, v, 0), draw(6, seed=21))


def test_a_second_derivative_of_the_fused_backward_is_refused_by_name():
    # torch.autograd.grad(create_graph=True) inside torch.func.grad runs at grad's own level,
    # where the backward is the fused op's, which has no derivative.
    def squared_gradient(v):
        y = st.associative_scan(loops.logaddexp, v, 1)
        (g,) = torch.autograd.grad(y.sin().sum(), v, create_graph=True)
        return (g * g).sum()

    with pytest.raises(NotImplementedError, match="fused op that has no derivative"):
        torch.func.grad(squared_gradient)(draw(2, 5, seed=22))


def test_vmap_of_vjp_gives_the_batched_gradients_that_autograd_s_legacy_vmap_refuses():
    x = draw(2, 4, seed=23)
    _, vjp = torch.func.vjp(lambda v: st.associative_scan(loops.mul, v, 1), x)
    cotangents = torch.eye(8, dtype=x.dtype).reshape(8, 2, 4)
    jacobian = torch.autograd.functional.jacobian(lambda v: loops.loop_scan(loops.mul, v, 1), x)
    torch.testing.assert_close(torch.func.vmap(vjp)(cotangents)[0], jacobian.reshape(8, 2, 4))
