"""torch.utils._pytree's flatten/unflatten with a fast path for the pytrees scans usually get:
one leaf, or a flat tuple or list of leaves. torch's generic walk (node-type lookups, namedtuple
and structseq probes per node) costs more than a whole small scan; the specs returned here are
torch's own (cached per structure), so results compare equal to pytree's and go back through
it. Under Dynamo everything goes to pytree, which Dynamo knows how to trace.

A leaf of the fast path is a tensor or one of `leaf_types`; anything else takes pytree's walk,
with `leaf_types` still counted as leaves.
"""

from __future__ import annotations

from typing import Any

import torch
from torch.utils import _pytree as pytree

_LEAF = pytree.tree_flatten(0)[1]
_FLAT: dict[tuple[type, int], Any] = {}  # (tuple or list, length) -> spec
_KIND: dict[int, type | None] = {id(_LEAF): None}  # id(spec) -> its container (None: a leaf)


def _flat_spec(kind: type, n: int):
    spec = _FLAT.get((kind, n))
    if spec is None:
        spec = _FLAT[(kind, n)] = pytree.tree_flatten(kind([0] * n))[1]
        _KIND[id(spec)] = kind
    return spec


def flatten(tree, leaf_types: tuple[type, ...] = ()) -> tuple[list, Any]:
    """(leaves, spec), like pytree.tree_flatten(tree) with leaf_types as leaves."""
    leaf = (torch.Tensor,) + leaf_types
    if not torch.compiler.is_compiling():
        if isinstance(tree, leaf):
            return [tree], _LEAF
        kind = type(tree)
        if (kind is tuple or kind is list) and all(isinstance(t, leaf) for t in tree):
            return list(tree), _flat_spec(kind, len(tree))
    if not leaf_types:
        return pytree.tree_flatten(tree)
    return pytree.tree_flatten(tree, is_leaf=lambda v: isinstance(v, leaf_types))


def unflatten(leaves: list, spec):
    """The pytree of `leaves` shaped like `spec` (pytree.tree_unflatten)."""
    if not torch.compiler.is_compiling() and id(spec) in _KIND:
        kind = _KIND[id(spec)]
        return leaves[0] if kind is None else kind(leaves)
    return pytree.tree_unflatten(leaves, spec)
