"""scanc for PyTorch: a drop-in `associative_scan` and an export lowering.

    import scanc.torch
    y = scanc.torch.associative_scan(lambda a, b: a * tau + b, x, dim=1)   # tau: a closure
    ep = scanc.torch.lower_associative_scans(torch.export.export(model, args))

associative_scan has the signature and semantics of torch._higher_order_ops.associative_scan
(pytrees, reverse, closure-captured tensors), is differentiable (leaves and captured tensors),
and works in eager, under torch.compile (dynamic=True or False, no graph break) and in
torch.export, on CPU and CUDA tensors, through the torch.library op scanc::associative_scan.

lower_associative_scans replaces PyTorch's associative_scan higher-order op and scanc's op in an
exported program by slice/cat/elementwise aten ops (Hillis-Steele, or work-efficient odd/even for
static lengths), for export to ONNX and other runtimes that have no scan.
"""

from .lower import lower_associative_scans
from .op import associative_scan
from .ops import scan_backward_op, scan_jvp_op, scan_op

__all__ = ["associative_scan", "lower_associative_scans", "scan_backward_op", "scan_jvp_op",
           "scan_op"]
