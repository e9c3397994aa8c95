"""lower_associative_scans: PyTorch's associative_scan op and scanc's op in exported programs
become slice/cat/elementwise aten ops (Hillis-Steele, clamped slices for a bounded dynamic
length), which run correctly and export to ONNX models that onnxruntime runs."""

import numpy as np
import pytest
import torch
from torch._higher_order_ops.associative_scan import associative_scan as torch_associative_scan
from torch._higher_order_ops.associative_scan import associative_scan_op
from torch.export import Dim

import scanc.torch as st
import torch_scan_loops as loops
from lower_models import ScancOpModel, TorchOpModel, assert_primitive, randn, reference, targets


def export(model, max_length=100):
    x, tau = randn(3, 10), randn(3, seed=1)
    dims = {"x": {1: Dim("L", min=2, max=max_length)}, "tau": None}
    return torch.export.export(model, (x, tau), dynamic_shapes=dims)


@pytest.mark.parametrize("model", [TorchOpModel(), ScancOpModel()], ids=["torch", "scanc"])
def test_a_bounded_dynamic_length_lowers_to_one_graph_for_every_length(model):
    lowered = st.lower_associative_scans(export(model))
    assert_primitive(lowered)
    assert any("slice" in t for t in targets(lowered))
    tau = randn(3, seed=1)
    for n in (2, 3, 16, 17, 63, 64, 65, 100):
        x = randn(3, n, seed=n)
        torch.testing.assert_close(lowered.module()(x, tau), reference(x, tau))


def test_a_static_length_lowers_with_ceil_log2_levels():
    x, tau = randn(3, 33), randn(3, seed=1)
    lowered = st.lower_associative_scans(torch.export.export(TorchOpModel(), (x, tau)),
                                         algorithm="hillis-steele")
    assert_primitive(lowered)
    # Two scans of length 33: ceil(log2 33) = 6 levels, one cat per leaf per level.
    assert targets(lowered).count("aten.cat.default") == 6 * 2 + 6 * 1
    torch.testing.assert_close(lowered.module()(x, tau), reference(x, tau))


def test_an_unbounded_dynamic_length_needs_a_bound():
    x, tau = randn(3, 10), randn(3, seed=1)
    ep = torch.export.export(ScancOpModel(), (x, tau),
                             dynamic_shapes={"x": {1: Dim("L", min=2)}, "tau": None})
    with pytest.raises(ValueError, match="unbounded"):
        st.lower_associative_scans(ep)
    lowered = st.lower_associative_scans(ep, bounds=50)
    x = randn(3, 50, seed=2)
    torch.testing.assert_close(lowered.module()(x, tau), reference(x, tau))


def checks(program):
    return [n for n in program.graph.nodes if n.target is torch.ops.aten._assert_async.msg]


@pytest.mark.parametrize("model", [TorchOpModel(), ScancOpModel()], ids=["torch", "scanc"])
def test_a_bound_below_the_exported_maximum_refuses_a_longer_length_when_it_runs(model):
    ep = export(model)  # L in [2, 100]
    lowered = st.lower_associative_scans(ep, bounds=16)
    assert len(checks(lowered)) == 2  # one a scan
    tau = randn(3, seed=1)
    # Tracing it again (as run_decompositions and torch.onnx do, which also pins lengths that
    # torch's slices guard on: 10 is the example's) keeps the check, and leaves the exported
    # program's own range to its later lowerings.
    for program, lengths in ((lowered, (2, 16)), (lowered.run_decompositions(), (10,))):
        for n in lengths:
            x = randn(3, n, seed=n)
            torch.testing.assert_close(program.module()(x, tau), reference(x, tau))
        with pytest.raises(RuntimeError, match=r"the scan length s\d+ exceeds 16, the bound "
                                               r"lower_associative_scans lowered it for"):
            program.module()(randn(3, 17), tau)
    whole = st.lower_associative_scans(ep)
    assert checks(whole) == []  # the export bounds the length already
    x = randn(3, 100, seed=5)
    torch.testing.assert_close(whole.module()(x, tau), reference(x, tau))


def test_a_bound_given_for_an_unbounded_length_is_checked_when_it_runs():
    tau = randn(3, seed=1)
    ep = torch.export.export(ScancOpModel(), (randn(3, 10), tau),
                             dynamic_shapes={"x": {1: Dim("L", min=2)}, "tau": None})
    lowered = st.lower_associative_scans(ep, bounds=50)
    with pytest.raises(RuntimeError, match="exceeds 50"):
        lowered.module()(randn(3, 51), tau)


@pytest.mark.parametrize("bounds, error", [
    (0, ValueError), (-3, ValueError), (1, ValueError), ({"s27": 0}, ValueError),
    (16.5, TypeError), ("16", TypeError), (True, TypeError), ({"s27": 8.0}, TypeError),
], ids=["zero", "negative", "below-the-dim-min", "zero-by-name", "float", "str", "bool",
        "float-by-name"])
def test_a_bound_that_is_no_length_or_below_the_smallest_is_refused(bounds, error):
    ep = export(ScancOpModel())  # L in [2, 100]
    with pytest.raises(error, match="lower_associative_scans: bound"):
        st.lower_associative_scans(ep, bounds=bounds)


def test_a_bound_named_for_no_dynamic_scan_length_is_refused_with_the_lengths_there_are():
    ep = export(ScancOpModel())
    with pytest.raises(ValueError, match=r"bounds names 'zz', which is no dynamic scan length "
                                         r"of the program \(its dynamic scan lengths: s\d+\)"):
        st.lower_associative_scans(ep, bounds={"zz": 8})
    static = torch.export.export(ScancOpModel(), (randn(3, 10), randn(3, seed=1)))
    with pytest.raises(ValueError, match=r"\(its dynamic scan lengths: none\)"):
        st.lower_associative_scans(static, bounds={"s0": 8})


class Harmonic(torch.nn.Module):
    def forward(self, x):  # 1 / (1/a + 1/b): parallel resistances
        return st.associative_scan(lambda a, b: 1 / (1 / a + 1 / b), x, 0)


class TorchsReciprocal(torch.nn.Module):
    def forward(self, x):
        (y,) = associative_scan_op(
            lambda a, b: (torch.reciprocal(torch.reciprocal(a) + torch.reciprocal(b)),), [x], ())
        return y


@pytest.mark.parametrize("model", [Harmonic(), TorchsReciprocal()], ids=["scanc", "torch"])
@pytest.mark.parametrize("algorithm", ["hillis-steele", "work-efficient"])
def test_a_number_divided_by_a_value_lowers_without_a_pad(model, algorithm):
    x = torch.rand(9, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4)) + 0.5
    lowered = st.lower_associative_scans(torch.export.export(model, (x,)), algorithm=algorithm)
    assert_primitive(lowered)
    torch.testing.assert_close(lowered.module()(x), 1 / (1 / x).cumsum(0))


class ChainedNorms(torch.nn.Module):
    def forward(self, x):  # (a*a + b*b) ** 0.5 is associative for its 0.5 only: a pinned number
        l2 = lambda a, b: (a * a + b * b) ** 0.5  # noqa: E731
        return st.associative_scan(l2, st.associative_scan(l2, x, 0), 0)


@pytest.mark.parametrize("dynamic", [False, True])
def test_a_scan_of_a_scans_result_with_a_number_in_its_combine_lowers(dynamic):
    x = torch.rand(8, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5)) + 0.1
    shapes = {"x": {0: Dim("L", min=2, max=40)}} if dynamic else None
    lowered = st.lower_associative_scans(torch.export.export(ChainedNorms(), (x,), dynamic_shapes=shapes))
    assert_primitive(lowered)
    torch.testing.assert_close(lowered.module()(x), x.square().cumsum(0).cumsum(0).sqrt())


class Constant(torch.nn.Module):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def forward(self, x):
        return st.associative_scan(lambda a, b: self.value, x, 1)


@pytest.mark.parametrize("dtype,value", [(torch.int32, 2), (torch.float16, 2.0), (torch.bool, True)])
def test_a_combine_that_returns_a_number_keeps_the_leaf_dtype_when_lowered(dtype, value):
    x = torch.tensor([[1, 3, 0, 5]]).to(dtype)
    lowered = st.lower_associative_scans(torch.export.export(Constant(value), (x,))).module()(x)
    assert lowered.dtype == dtype
    assert torch.equal(lowered, torch.tensor([[1, value, value, value]]).to(dtype))



class NarrowSums(torch.nn.Module):
    def forward(self, x, c):
        return (st.associative_scan(lambda a, b: a + b + c, x, 1),
                st.associative_scan(torch.logaddexp2, x, 1, reverse=True))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_f16_and_bf16_scans_lower_to_f32_arithmetic_rounding_each_output_once(dtype):
    # One combine: 1 + 0.0004 + 0.0004 is 1.0009765625 in f16 rounded once, 1 after two f16
    # adds; and bf16 logaddexp2 over 1025 zeros read 9.9375 through bf16 operations, 10 eager.
    x = torch.tensor([[1.0, 0.0004], [0.0, 0.0]], dtype=dtype)
    c = torch.tensor(0.0004, dtype=dtype)
    lowered = st.lower_associative_scans(torch.export.export(NarrowSums(), (x, c))).module()
    for got, want in zip(lowered(x, c), NarrowSums()(x, c)):
        assert got.dtype == dtype
        assert torch.equal(got, want)
    zeros = torch.zeros(1, 1025, dtype=dtype)
    lowered = st.lower_associative_scans(torch.export.export(NarrowSums(), (zeros, c))).module()
    got, want = lowered(zeros, c)[1], NarrowSums()(zeros, c)[1]
    assert torch.equal(got[0, 0], torch.tensor(10.0, dtype=dtype))
    torch.testing.assert_close(got, want, rtol=2 ** -7, atol=0)  # the sums reassociate


class LatestFinite(torch.nn.Module):
    def forward(self, x):  # b * 0 is NaN for an infinite b; b + 0 is +0 for b = -0
        return (st.associative_scan(lambda a, b: torch.where(b * 0 == 0, b, a), x, 1),
                st.associative_scan(lambda a, b: torch.maximum(a, b) + 0 * b, x, 1),
                st.associative_scan(lambda a, b: torch.where(0 / b == 0, b, a), x, 1))


def test_a_lowered_combine_keeps_what_times_zero_plus_zero_and_zero_over_compute():
    # The lowering's reading of a combine folded b * 0 and 0 / b to 0 and b + 0 to b, which
    # lets infinities through and loses -0's sign.
    x = torch.tensor([[1.0, float("inf"), -0.0, 2.0, float("-inf"), 0.0, float("nan"), -3.0]])
    lowered = st.lower_associative_scans(torch.export.export(LatestFinite(), (x,))).module()
    for got, want in zip(lowered(x), LatestFinite()(x)):
        torch.testing.assert_close(got, want, equal_nan=True, rtol=0, atol=0)
        numbers = ~torch.isnan(want)  # a NaN's sign means nothing
        assert torch.equal(torch.signbit(got[numbers]), torch.signbit(want[numbers]))


class LogAddExp(torch.nn.Module):
    def forward(self, x):
        return st.associative_scan(torch.logaddexp, x, 1)


def test_a_lowered_logaddexp_of_equal_infinities_is_that_infinity():
    # max + log1p(exp(-|a - b|)) took inf - inf: NaN, which then spread along the scan.
    x = torch.tensor([[float("inf"), float("inf"), 1.0], [float("-inf"), float("-inf"), 2.0]])
    lowered = st.lower_associative_scans(torch.export.export(LogAddExp(), (x,))).module()
    assert torch.equal(lowered(x), LogAddExp()(x))
    assert torch.equal(lowered(x)[:, 1], torch.tensor([float("inf"), float("-inf")]))


class AnyAndAll(torch.nn.Module):
    def forward(self, x):
        return (st.associative_scan(lambda a, b: a + b, x, 1),
                st.associative_scan(lambda a, b: a * b, x, 1))


def test_plus_and_times_of_bools_lower_to_or_and_and():
    x = torch.tensor([[False, True, False, True, True], [True, True, False, True, False]])
    lowered = st.lower_associative_scans(torch.export.export(AnyAndAll(), (x,)))
    assert_primitive(lowered)
    seen_any, seen_all = lowered.module()(x)
    assert torch.equal(seen_any, x.cummax(1).values)
    assert torch.equal(seen_all, x.cummin(1).values)

@pytest.mark.parametrize("mode", ["real", "fake"])
def test_a_graph_module_made_by_make_fx_is_lowered(mode):
    from torch.fx.experimental.proxy_tensor import make_fx
    x = randn(2, 9)
    gm = make_fx(lambda v: st.associative_scan(lambda a, b: a + b, v, 1), tracing_mode=mode)(x)
    torch.testing.assert_close(st.lower_associative_scans(gm)(x), x.cumsum(1))


def test_a_graph_module_is_lowered_too():
    x, tau = randn(3, 12), randn(3, seed=1)
    gm = torch.export.export(TorchOpModel(), (x, tau)).module()
    lowered = st.lower_associative_scans(gm)
    assert_primitive(lowered)
    torch.testing.assert_close(lowered(x, tau), reference(x, tau))


def test_the_generic_mode_of_torch_exports_without_a_scan_and_is_left_correct():
    class Generic(torch.nn.Module):
        def forward(self, x):
            return torch_associative_scan(loops.add, x, 1, combine_mode="generic")

    x = randn(3, 12)
    lowered = st.lower_associative_scans(torch.export.export(Generic(), (x,)))
    assert_primitive(lowered)
    torch.testing.assert_close(lowered.module()(x), x.cumsum(1))


@pytest.mark.parametrize("model", [TorchOpModel(), ScancOpModel()], ids=["torch", "scanc"])
def test_the_lowered_program_exports_to_onnx_that_onnxruntime_runs(model, tmp_path):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    # A static length (a bounded dynamic one: the next test).
    x, tau = randn(3, 10), randn(3, seed=1)
    lowered = st.lower_associative_scans(torch.export.export(model, (x, tau)))
    onnx_program = torch.onnx.export(lowered, (x, tau), dynamo=True)
    path = tmp_path / "scan.onnx"
    onnx_program.save(str(path))
    session = ort.InferenceSession(str(path))
    assert [i.name for i in session.get_inputs()] == ["x", "tau"]
    for seed in (3, 4):
        x = randn(3, 10, seed=seed)
        (y,) = session.run(None, {"x": x.numpy(), "tau": tau.numpy()})
        np.testing.assert_allclose(y, reference(x, tau).numpy(), rtol=1e-4, atol=1e-5)


def test_a_bounded_dynamic_lowering_exports_to_one_onnx_model_for_every_length(tmp_path):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    # The guards that re-tracing adds (run_decompositions, inside torch.onnx.export) stay in
    # torch's shape environment: the ONNX model keeps the symbolic length and its clamped slices.
    lowered = st.lower_associative_scans(export(ScancOpModel(), max_length=32))
    onnx_program = torch.onnx.export(lowered, (randn(3, 10), randn(3, seed=1)), dynamo=True)
    path = tmp_path / "scan.onnx"
    onnx_program.save(str(path))
    session = ort.InferenceSession(str(path))
    assert isinstance(session.get_inputs()[0].shape[1], str)  # a named, symbolic length
    tau = randn(3, seed=1)
    for n in (2, 3, 17, 31, 32):
        x = randn(3, n, seed=n)
        (y,) = session.run(None, {"x": x.numpy(), "tau": tau.numpy()})
        np.testing.assert_allclose(y, reference(x, tau).numpy(), rtol=1e-4, atol=1e-5)


def test_the_emitter_takes_the_branch_of_a_where_whose_operands_are_all_constants():
    from scanc.torch import aten_emit
    emit = aten_emit.Emitter(torch.fx.Graph())
    assert emit("where", [True, 2.0, 3.0]) == 2.0
    assert emit("where", [False, 2.0, 3.0]) == 3.0
    constant = emit("cast:i8", [300])  # a typed constant: a zero-dim tensor, wrapped as scanc casts
    assert constant.target is torch.ops.aten.scalar_tensor.default and constant.args == (44,)
