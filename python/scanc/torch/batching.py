"""torch.vmap rules for scanc's ops: a batch dim becomes one more leading dim of the scan.

Under vmap each op sees tensors with a batch dim somewhere (or none, for an input the vmapped
function does not batch). The rules move that dim to the front and scan along dim + 1, which is
what the op does for each batch element. A tensor without a batch dim is either broadcast to it
(a view: leaves share one shape, and the backward's gradient for a captured value must stay per
element of the batch, which is vmap's meaning, instead of summing over it) or given a leading
size 1 that broadcasts by itself (captured values of the scan and of its tangent program).
"""

from __future__ import annotations

import torch
from torch import Tensor

EXPAND, BROADCAST = "expand", "broadcast"


def _batch_first(t: Tensor, bdim: int | None, size: int, unbatched: str) -> Tensor:
    if bdim is not None:
        return t.movedim(bdim, 0)
    if unbatched == EXPAND:
        return t.unsqueeze(0).expand(size, *t.shape)
    return t.unsqueeze(0)


def register(op, unbatched: tuple[str, ...]) -> None:
    """A vmap rule for `op(program, list, ..., list, dim, reverse) -> list`, whose tensor lists
    treat tensors without a batch dim as `unbatched` says (EXPAND or BROADCAST), one per list."""
    def rule(info, in_dims, program, *args):
        *lists, dim, reverse = args
        batched = [[_batch_first(t, d, info.batch_size, how) for t, d in zip(ts, ds)]
                   for ts, ds, how in zip(lists, in_dims[1:], unbatched)]
        out = op(program, *batched, dim + 1, reverse)
        return out, [0] * len(out)

    torch.library.register_vmap(op, rule)
