"""scanc.torch.associative_scan in eager mode, under torch.compile and through torch.export,
compared with sequential loops (torch_scan_loops.py) and torch's own cumulative ops."""

import io
import math

import numpy as np
import pytest
import torch
import torch._dynamo.testing

import scanc
import scanc.torch as st
import torch_scan_loops as loops
from lower_models import ScancOpModel  # an affine scan, then a reverse smooth max over tau.exp()

SIZES = [0, 1, 2, 7, 17, 33, 127, 5003]


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=dtype)


@pytest.mark.parametrize("length", SIZES)
@pytest.mark.parametrize("reverse", [False, True])
def test_a_sum_matches_cumsum_for_awkward_lengths(length, reverse):
    x = randn(3, length, dtype=torch.float64)
    y = st.associative_scan(loops.add, x, 1, reverse=reverse)
    expected = x.flip(1).cumsum(1).flip(1) if reverse else x.cumsum(1)
    torch.testing.assert_close(y, expected)


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
@pytest.mark.parametrize("reverse", [False, True])
def test_every_dim_of_a_3d_tensor_scans_like_the_loop(dim, reverse):
    x = randn(5, 6, 7)
    y = st.associative_scan(loops.maximum, x, dim, reverse=reverse)
    torch.testing.assert_close(y, loops.loop_scan(loops.maximum, x, dim, reverse))


@pytest.mark.parametrize("reverse", [False, True])
def test_a_tuple_pytree_affine_recurrence_matches_the_loop(reverse):
    a, b = randn(4, 33, seed=1).sigmoid(), randn(4, 33, seed=2)
    ya, yb = st.associative_scan(loops.affine, (a, b), 1, reverse=reverse)
    ea, eb = loops.loop_scan(loops.affine, (a, b), 1, reverse)
    torch.testing.assert_close(ya, ea)
    torch.testing.assert_close(yb, eb)


def test_a_dict_pytree_of_2x2_matrices_is_a_non_commutative_product():
    xs = {k: randn(2, 17, seed=i, dtype=torch.float64) for i, k in enumerate("abcd")}
    ys = st.associative_scan(loops.matrix2x2, xs, 1)
    expected = loops.loop_scan(loops.matrix2x2, xs, 1)
    assert set(ys) == set("abcd")
    for k in "abcd":
        torch.testing.assert_close(ys[k], expected[k])


@pytest.mark.parametrize("tau_shape", [(), (1,), (5,), (3, 1, 5)])
def test_closure_tensors_broadcast_against_one_slice_of_the_leaves(tau_shape):
    x = randn(3, 9, 5, dtype=torch.float64)  # a slice along dim 1 is (3, 5)
    tau = randn(*tau_shape, seed=3, dtype=torch.float64).abs() + 0.5
    if len(tau_shape) == 3:  # (3, 1, 5) has more dims than a slice
        with pytest.raises(ValueError, match="does not broadcast"):
            st.associative_scan(lambda a, b: tau * torch.logaddexp(a / tau, b / tau), x, 1)
        return

    def smooth_max(a, b):
        return tau * torch.logaddexp(a / tau, b / tau)

    y = st.associative_scan(smooth_max, x, 1, reverse=True)
    torch.testing.assert_close(y, loops.loop_scan(smooth_max, x, 1, reverse=True))


def test_a_value_computed_from_a_closure_tensor_at_each_use_is_one_captured_value():
    # log_tau.exp() is a new tensor at each of its three uses; taken as three captured values,
    # the associativity check drew them apart and refused the combine.
    x = randn(3, 9, dtype=torch.float64)
    log_tau = randn(3, seed=5, dtype=torch.float64)
    tau = log_tau.exp()[:, None]
    y = st.associative_scan(lambda a, b: log_tau.exp() * torch.logaddexp(a / log_tau.exp(), b / log_tau.exp()), x, 1)
    torch.testing.assert_close(y, tau * torch.logcumsumexp(x / tau, 1))


def test_a_view_of_a_closure_tensor_taken_at_each_use_is_one_captured_value():
    x = randn(3, 9, dtype=torch.float64)
    taus = randn(3, 2, seed=6, dtype=torch.float64).abs() + 0.5
    y = st.associative_scan(lambda a, b: taus[:, 0] * torch.logaddexp(a / taus[:, 0], b / taus[:, 0]), x, 1)
    tau = taus[:, :1]
    torch.testing.assert_close(y, tau * torch.logcumsumexp(x / tau, 1))


def test_closure_tensors_of_equal_values_but_other_signs_of_zero_stay_apart():
    # 1 / +0 and 1 / -0 differ, so the two captured values must not be merged.
    x = torch.tensor([[1.0, 2.0, 3.0]])
    plus, minus = torch.tensor([0.0]), torch.tensor([-0.0])
    y = st.associative_scan(lambda a, b: a + b + (1 / plus).clamp(max=1) + (1 / minus).clamp(min=-1), x, 1)
    torch.testing.assert_close(y, x.cumsum(1))


def test_integer_leaves_scan_exactly():
    x = torch.randint(-100, 100, (4, 50), generator=torch.Generator().manual_seed(4))
    torch.testing.assert_close(st.associative_scan(loops.add, x, 1), x.cumsum(1))


def test_methods_python_numbers_and_casts_inside_a_combine_are_traced():
    x = randn(3, 20)

    def combine(a, b):  # logaddexp computed in float64, stored as float32
        return (a.double().exp() + 1.0 * b.to(torch.float64).exp()).log().float()

    torch.testing.assert_close(st.associative_scan(combine, x, 1),
                               loops.loop_scan(combine, x, 1))


# ---- torch.compile ----

def test_the_4x8_sum_along_dim_0_under_dynamic_compile_equals_eager():
    x = randn(4, 8)
    fn = torch.compile(lambda v: st.associative_scan(loops.add, v, 0), dynamic=True,
                       fullgraph=True)
    torch.testing.assert_close(fn(x), st.associative_scan(loops.add, x, 0))
    torch.testing.assert_close(fn(x), x.cumsum(0))


def test_the_2x64x65_float64_product_along_dim_1_under_dynamic_compile_equals_eager():
    x = randn(2, 64, 65, dtype=torch.float64) * 0.1 + 1
    fn = torch.compile(lambda v: st.associative_scan(loops.mul, v, 1), dynamic=True,
                       fullgraph=True)
    torch.testing.assert_close(fn(x), st.associative_scan(loops.mul, x, 1))
    torch.testing.assert_close(fn(x), x.cumprod(1))


def model_with_an_in_graph_closure(x, tau):
    t = tau.exp()  # created inside the compiled function

    def smooth_max(a, b):
        return t * torch.logaddexp(a / t, b / t)

    return st.associative_scan(smooth_max, x * 2, 1, reverse=True)


def test_five_shapes_compile_once_with_closures_created_in_the_graph():
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    fn = torch.compile(model_with_an_in_graph_closure, dynamic=True, fullgraph=True,
                       backend=counter)
    for i, shape in enumerate([(3, 5), (4, 9), (2, 17), (6, 33), (5, 100)]):
        x, tau = randn(*shape, seed=i), randn(shape[0], seed=10 + i)
        torch.testing.assert_close(fn(x, tau), model_with_an_in_graph_closure(x, tau))
    assert counter.frame_count == 1


def add_after_a_graph_break(a, b):
    print(end="")  # Python that Dynamo cannot trace: the combine's trace resumes in a new frame
    return a + b


def test_a_graph_break_inside_a_combine_under_dynamic_compile_gives_the_eager_result():
    fn = torch.compile(lambda v: st.associative_scan(add_after_a_graph_break, v, 1), dynamic=True,
                       backend="eager")
    for shape in ((2, 9), (3, 17)):
        x = randn(*shape).requires_grad_()
        y = fn(x)
        torch.testing.assert_close(y, x.detach().cumsum(1))
        y.sum().backward()
        torch.testing.assert_close(x.grad, torch.arange(shape[1], 0, -1.0).expand(shape))
    torch._dynamo.reset()


def test_static_compile_gives_the_same_results():
    fn = torch.compile(model_with_an_in_graph_closure, dynamic=False, fullgraph=True)
    x, tau = randn(3, 12), randn(3, seed=1)
    torch.testing.assert_close(fn(x, tau), model_with_an_in_graph_closure(x, tau))


def test_scanc_op_nodes_format_on_one_line_in_the_graphs_inductor_compiles():
    # Inductor's Triton codegen writes each origin node of a fused kernel (here the kernel that
    # computes tau.exp() for the scan) with format_node() into a one-line `#` comment of the
    # wrapper; a newline in an argument ended the comment (IndentationError, torch 2.11 CUDA).
    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def record(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    fn = torch.compile(model_with_an_in_graph_closure, dynamic=True, fullgraph=True,
                       backend=aot_autograd(fw_compiler=record, bw_compiler=record))
    x, tau = randn(3, 9).requires_grad_(), randn(3, seed=1).requires_grad_()
    fn(x, tau).sum().backward()
    ops = [n for gm in graphs for n in gm.graph.nodes
           if n.op == "call_function" and "scanc" in str(n.target)]
    assert {str(n.target) for n in ops} == {"scanc.associative_scan.default",
                                            "scanc.associative_scan_backward.default"}
    for n in ops:
        assert "\n" not in n.format_node(include_tensor_metadata=True)
    expected = torch.autograd.grad(model_with_an_in_graph_closure(x, tau).sum(), (x, tau))
    torch.testing.assert_close((x.grad, tau.grad), expected)


def test_graph_tracers_record_the_op_that_plain_eager_calls_skip(monkeypatch):
    from torch.fx.experimental.proxy_tensor import make_fx

    import scanc.torch.op as op_module

    x = randn(3, 17)
    gm = make_fx(lambda v: st.associative_scan(loops.add, v, 1))(x)
    assert "scanc.associative_scan.default" in [str(n.target) for n in gm.graph.nodes]
    torch.testing.assert_close(gm(randn(3, 17, seed=1)), randn(3, 17, seed=1).cumsum(1))

    calls = []
    monkeypatch.setattr(op_module, "scan_op", lambda *args: calls.append(args))
    for v in (x, x.clone().requires_grad_()):  # without and with autograd
        torch.testing.assert_close(st.associative_scan(loops.add, v, 1), x.cumsum(1))
    assert calls == []


def test_plain_autograd_calls_bind_no_signature(monkeypatch):
    # A Function with setup_context binds forward's arguments through inspect.signature at
    # every apply (about 50 µs a call); plain autograd takes the old-style one, which does not.
    import inspect

    x = randn(3, 17).requires_grad_()
    st.associative_scan(loops.add, x, 1).sum().backward()  # compiled and cached
    calls = []
    real = inspect.signature
    monkeypatch.setattr(inspect, "signature", lambda *a, **k: calls.append(a) or real(*a, **k))
    st.associative_scan(loops.add, x, 1).sum().backward()
    assert calls == []
    torch.testing.assert_close(x.grad, 2 * torch.arange(17.0, 0, -1).expand(3, 17))


def test_the_multi_line_program_text_of_earlier_exports_still_runs():
    x = randn(2, 11)
    text = "combine combine_fn(l0 | r0) {\n  t0 = l0 + r0\n  return t0\n}\n"
    (y,) = st.scan_op(text, [x], [], 1, False)
    torch.testing.assert_close(y, x.cumsum(1))


# ---- torch.export ----

def test_an_exported_program_survives_save_and_load_and_runs_other_lengths():
    model = ScancOpModel()
    x, tau = randn(3, 10), randn(3, seed=1)
    length = torch.export.Dim("L", min=2, max=4096)
    ep = torch.export.export(model, (x, tau), dynamic_shapes={"x": {1: length}, "tau": None})
    buffer = io.BytesIO()
    torch.export.save(ep, buffer)
    buffer.seek(0)
    loaded = torch.export.load(buffer)
    for n in (2, 37, 1000):
        x = randn(3, n, seed=n)
        torch.testing.assert_close(loaded.module()(x, tau), model(x, tau))


# ---- errors ----

def test_a_non_associative_combine_is_a_value_error_with_a_counterexample():
    with pytest.raises(ValueError, match="not associative"):
        st.associative_scan(lambda a, b: a - b, randn(2, 8), 1)


def test_an_unsupported_operation_is_named_in_the_error():
    with pytest.raises(ValueError, match="cumsum"):
        st.associative_scan(lambda a, b: torch.cumsum(a, 0) + b, randn(2, 8), 1)


def test_indexing_inside_a_combine_is_a_value_error():
    with pytest.raises(ValueError, match="indexing"):
        st.associative_scan(lambda a, b: a[0] + b, randn(2, 8), 1)


def test_leaves_of_different_shapes_are_a_value_error():
    with pytest.raises(ValueError, match="one shape"):
        st.associative_scan(loops.affine, (randn(2, 8), randn(2, 9)), 1)


def test_a_combine_returning_the_wrong_number_of_leaves_is_a_value_error():
    with pytest.raises(ValueError, match="leaves"):
        st.associative_scan(lambda l, r: l[0] * r[0], (randn(2, 8), randn(2, 8)), 1)


def test_a_sparse_leaf_is_a_value_error_naming_its_layout():
    with pytest.raises(ValueError, match="sparse_coo"):
        st.associative_scan(loops.add, randn(2, 8).to_sparse(), 1)


def test_a_dim_out_of_range_is_a_value_error():
    with pytest.raises(ValueError, match="out of range"):
        st.associative_scan(loops.add, randn(2, 8), 2)


@pytest.mark.parametrize("dim", [1.0, "1", True, None])
def test_a_dim_that_is_not_an_int_is_a_type_error_naming_it(dim):
    with pytest.raises(TypeError, match=f"dim must be an int, not {type(dim).__name__}"):
        st.associative_scan(loops.add, randn(2, 8), dim)


def test_a_numpy_integer_dim_is_taken_as_its_int():
    x = randn(2, 8)
    torch.testing.assert_close(st.associative_scan(loops.add, x, np.int64(1)), x.cumsum(1))


@pytest.mark.parametrize("combine", [lambda a, b: a + float(b), lambda a, b: a + int(b),
                                     lambda a, b: a + round(b), lambda a, b: math.exp(a) + b,
                                     lambda a, b: a + b * range(4)[b]])
def test_turning_an_operand_into_a_python_number_is_a_value_error_that_points_to_torch(combine):
    with pytest.raises(ValueError, match="cannot turn its operands into Python numbers"):
        st.associative_scan(combine, randn(2, 8), 1)


def test_len_of_an_operand_is_a_value_error_saying_it_is_one_scalar():
    with pytest.raises(ValueError, match="one scalar of its leaf: it has no len"):
        st.associative_scan(lambda a, b: a + b * len(a), randn(2, 8), 1)


@pytest.mark.parametrize("combine,name", [(np.maximum, "maximum"), (np.logaddexp, "logaddexp"),
                                          (lambda a, b: np.where(a > b, a, b), "where"),
                                          (lambda a, b: np.asarray(a) + b, "asarray")])
def test_numpy_functions_of_operands_are_a_value_error_naming_the_torch_one(combine, name):
    with pytest.raises(ValueError, match=f"NumPy's {name} cannot run inside a combine.*torch\\.{name}"):
        st.associative_scan(combine, randn(2, 8), 1)


def test_numpy_scalars_in_a_combine_are_numbers_like_python_ones():
    x = randn(3, 9, dtype=torch.float64)
    y = st.associative_scan(lambda a, b: np.float64(0.5) * (a + b) + (a + b) * np.float32(0.5), x, 1)
    torch.testing.assert_close(y, x.cumsum(1))



def test_the_traced_one_line_combine_is_scan_text_the_parser_reads():
    from scanc.torch import pytrees
    from scanc.torch.trace import trace_combine

    def combine(l, r):
        return torch.logaddexp(l[0], r[0]), torch.maximum(l[1], r[1]) * 1.0

    x = torch.randn(2, 9)
    text, _ = trace_combine(combine, pytrees.flatten((x, x))[1], [torch.float32, torch.float32])
    assert "\n" not in text and "; return" in text
    program = ("\nprogram p(a: f32[N], b: f32[N]) {\n  (u, v) = scan combine_fn(a, b) dim=0\n"
               "  return u, v\n}\n")
    a, b = np.float32([0.5, 2.0, -1.0, 3.0]), np.float32([1.0, -3.0, 0.25, 4.0])
    u, v = scanc.loads(text + program).run("p", a, b, backend="reference")
    np.testing.assert_allclose(u, np.logaddexp.accumulate(a.astype(np.float64)), rtol=1e-6)
    np.testing.assert_array_equal(v, np.maximum.accumulate(b))
