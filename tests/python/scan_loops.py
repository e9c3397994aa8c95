"""Independent NumPy loops that say what a scan should give, for comparing scanc's results.

Each loop walks the scan dimension one step at a time, exactly as DESIGN §1 defines an
inclusive scan: y[0] = x[0], y[t] = y[t-1] ∘ x[t] (reverse: from the end, the later element on
the left). With `compute_dtype` (f32 for f16 leaves) the running value is carried in that dtype
and only the stores are rounded, as scanc's reference executor does.
"""

import numpy as np


def scan(combine, leaves, dim, reverse=False, compute_dtype=None):
    """Scans the tuple of arrays `leaves` along `dim` with combine(left, right) -> tuple."""
    leaves = [np.moveaxis(np.asarray(x), dim, 0) for x in leaves]
    outs = [np.empty_like(x) for x in leaves]
    steps = range(leaves[0].shape[0])
    if reverse:
        steps = reversed(steps)
    acc = None
    for t in steps:
        elem = tuple(x[t].astype(compute_dtype or x.dtype) for x in leaves)
        # the running value is the left operand: the earlier element, or the later in reverse
        acc = elem if acc is None else combine(acc, elem)
        for out, a in zip(outs, acc):
            out[t] = a  # rounds to the stored dtype
    return tuple(np.moveaxis(o, 0, dim) for o in outs)


def add(l, r):
    return (l[0] + r[0],)


def logical_or(l, r):
    return (np.logical_or(l[0], r[0]),)

