"""Shared by the lowering tests: models that scan with PyTorch's own higher-order op and with
scanc's op (an affine recurrence, then a reverse smooth max over a captured tensor), their
independent reference (sequential loops), and checks on a lowered graph's operations."""

import torch
from torch._higher_order_ops.associative_scan import associative_scan_op

import scanc.torch as st
import torch_scan_loops as loops

BANNED = ("ones_like", "zeros_like", "full", "associative_scan")


def randn(*shape, seed=0):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


class TorchOpModel(torch.nn.Module):
    """Uses PyTorch's own higher-order op, as associative_scan's pointwise mode captures it
    (dim moved to 0, reverse as flips, closure tensors as additional inputs)."""

    def forward(self, x, tau):
        def affine(a1, b1, a2, b2):
            return a1 * a2, a2 * b1 + b2

        def smooth_max(a, b, t):
            return (t * torch.logaddexp(a / t, b / t),)

        xs = [torch.sigmoid(x).movedim(1, 0), x.movedim(1, 0)]
        _, h = associative_scan_op(affine, xs, ())
        (y,) = associative_scan_op(smooth_max, [h.flip(0)], (tau.exp(),))
        return y.flip(0).movedim(0, 1)


def reference(x, tau):
    _, h = loops.loop_scan(loops.affine, (torch.sigmoid(x), x), 1)
    t = tau.exp()
    return loops.loop_scan(lambda a, b: t * torch.logaddexp(a / t, b / t), h, 1, reverse=True)


class ScancOpModel(torch.nn.Module):
    def forward(self, x, tau):
        t = tau.exp()
        _, h = st.associative_scan(loops.affine, (torch.sigmoid(x), x), 1)
        return st.associative_scan(lambda a, b: t * torch.logaddexp(a / t, b / t), h, 1,
                                   reverse=True)


def targets(program):
    return [str(n.target) for n in program.graph.nodes if n.op == "call_function"]


def assert_primitive(program):
    for target in targets(program):
        assert not any(word in target for word in BANNED), target
