"""lower_associative_scans(algorithm="work-efficient"): the odd/even recursion as aten slice/cat/
stack/elementwise ops for static lengths, compared with sequential loops on awkward lengths, in
both directions, with several leaves and captured values; "auto" picks it above 64; a dynamic
length is refused; the result exports to ONNX that onnxruntime runs."""

import numpy as np
import pytest
import torch
from torch.export import Dim

import scanc.torch as st
import torch_scan_loops as loops
from lower_models import ScancOpModel, TorchOpModel, assert_primitive, randn, reference, targets

LENGTHS = [0, 1, 2, 3, 5, 7, 13, 31, 33, 63, 65, 127, 129, 257]


def lower(model, *args, algorithm="work-efficient"):
    return st.lower_associative_scans(torch.export.export(model, args), algorithm=algorithm)


class Scan(torch.nn.Module):
    """One scanc scan of the leaves with `combine` (which may close over a captured tensor)."""

    def __init__(self, combine, dim, reverse):
        super().__init__()
        self.combine, self.dim, self.reverse = combine, dim, reverse

    def forward(self, *xs):
        return st.associative_scan(self.combine, xs if len(xs) > 1 else xs[0], self.dim,
                                   reverse=self.reverse)


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("reverse", [False, True])
def test_a_sum_lowers_to_the_cumulative_sum_for_awkward_lengths(length, reverse):
    x = randn(3, length).double()
    lowered = lower(Scan(loops.add, 1, reverse), x)
    assert_primitive(lowered)
    expected = x.flip(1).cumsum(1).flip(1) if reverse else x.cumsum(1)
    torch.testing.assert_close(lowered.module()(x), expected)


@pytest.mark.parametrize("length", [2, 3, 17, 64, 65, 100])
@pytest.mark.parametrize("model", [TorchOpModel(), ScancOpModel()], ids=["torch", "scanc"])
def test_multi_leaf_and_captured_scans_in_both_directions_match_the_loops(model, length):
    # Both models: a forward two-leaf affine scan, then a reverse smooth max over tau.exp().
    x, tau = randn(3, length, seed=length), randn(3, seed=1)
    lowered = lower(model, x, tau)
    assert_primitive(lowered)
    torch.testing.assert_close(lowered.module()(x, tau), reference(x, tau))


@pytest.mark.parametrize("dim", [0, 1, 2])
@pytest.mark.parametrize("reverse", [False, True])
def test_every_dim_of_a_3d_tensor_lowers_like_the_loop(dim, reverse):
    x = randn(9, 11, 5, seed=dim)  # 9, 11 and 5: odd lengths on every dim
    lowered = lower(Scan(loops.maximum, dim, reverse), x)
    torch.testing.assert_close(lowered.module()(x), loops.loop_scan(loops.maximum, x, dim,
                                                                     reverse))


@pytest.mark.parametrize("length", [5, 33, 129])
def test_a_non_commutative_product_keeps_its_operand_order(length):
    xs = [randn(2, length, seed=s).double() * 0.5 for s in range(4)]

    def matrix(left, right):
        return tuple(loops.matrix2x2(dict(zip("abcd", left)), dict(zip("abcd", right))).values())

    for reverse in (False, True):
        lowered = lower(Scan(matrix, 1, reverse), *xs)
        expected = loops.loop_scan(matrix, tuple(xs), 1, reverse)
        for got, want in zip(lowered.module()(*xs), expected):
            torch.testing.assert_close(got, want)


def combined_elements(lowered, op):
    """How many elements the lowered graph combines: the sizes of its `op` nodes' results."""
    return sum(n.meta["val"].numel() for n in lowered.graph.nodes
               if n.op == "call_function" and str(n.target) == op)


@pytest.mark.parametrize("length", [65, 257, 1000])
def test_work_efficient_combines_fewer_than_two_elements_per_element(length):
    x = randn(1, length)
    efficient = lower(Scan(loops.add, 1, False), x)
    doubling = lower(Scan(loops.add, 1, False), x, algorithm="hillis-steele")
    assert combined_elements(efficient, "aten.add.Tensor") < 2 * length
    # Hillis-Steele combines sum over levels k of (S - k) elements.
    levels = (length - 1).bit_length()
    assert combined_elements(doubling, "aten.add.Tensor") == sum(
        length - (1 << k) for k in range(levels))


@pytest.mark.parametrize("length, chosen", [(64, "hillis-steele"), (65, "work-efficient")])
def test_auto_takes_work_efficient_for_static_lengths_above_64(length, chosen):
    x = randn(2, length)
    auto = lower(Scan(loops.add, 1, False), x, algorithm="auto")
    uses_stack = "aten.stack.default" in targets(auto)  # the odd/even interleave
    assert uses_stack == (chosen == "work-efficient")
    torch.testing.assert_close(auto.module()(x), x.cumsum(1))


def test_auto_keeps_hillis_steele_for_a_bounded_dynamic_length():
    x = randn(2, 100)
    ep = torch.export.export(Scan(loops.add, 1, False), (x,),
                             dynamic_shapes=(({1: Dim("L", min=2, max=300)},),))
    lowered = st.lower_associative_scans(ep, algorithm="auto")
    assert "aten.stack.default" not in targets(lowered)
    for n in (2, 77, 300):
        x = randn(2, n, seed=n)
        torch.testing.assert_close(lowered.module()(x), x.cumsum(1))


def test_work_efficient_on_a_dynamic_length_is_a_value_error():
    ep = torch.export.export(Scan(loops.add, 1, False), (randn(2, 100),),
                             dynamic_shapes=(({1: Dim("L", min=2, max=300)},),))
    with pytest.raises(ValueError, match="work-efficient.*static"):
        st.lower_associative_scans(ep, algorithm="work-efficient")


def test_an_unknown_algorithm_is_a_value_error():
    with pytest.raises(ValueError, match="work-efficient"):
        lower(Scan(loops.add, 1, False), randn(2, 8), algorithm="blelloch")


@pytest.mark.parametrize("model", [TorchOpModel(), ScancOpModel()], ids=["torch", "scanc"])
def test_the_work_efficient_program_exports_to_onnx_that_onnxruntime_runs(model, tmp_path):
    pytest.importorskip("onnxscript")
    ort = pytest.importorskip("onnxruntime")
    x, tau = randn(3, 67), randn(3, seed=1)  # 67: odd at the first two recursion levels
    lowered = lower(model, x, tau)
    assert_primitive(lowered)
    path = tmp_path / "scan.onnx"
    torch.onnx.export(lowered, (x, tau), dynamo=True).save(str(path))
    session = ort.InferenceSession(str(path))
    for seed in (3, 4):
        x = randn(3, 67, seed=seed)
        (y,) = session.run(None, {"x": x.numpy(), "tau": tau.numpy()})
        np.testing.assert_allclose(y, reference(x, tau).numpy(), rtol=1e-4, atol=1e-5)
