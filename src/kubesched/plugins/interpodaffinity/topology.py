"""Per-slot counts folded into per-topology-domain counts, and domain values spread back over nodes.

A topology domain is one value of a node label (the term's topology key). Label values are already
dictionary-encoded per key in the NodeTable, so a domain is a label code: folding per-slot counts into
domains is one ``bincount`` over the key's codes, and reading a domain's count for every node is one
gather. Slots without the label (code -1) belong to no domain and read 0: every domain array carries
one trailing zero entry that code -1 indexes.
"""

from __future__ import annotations

import numpy as np

from kubesched.cache.node_table import LabelColumn, NodeTable
from kubesched.framework.types import IntArray

__all__ = ["DomainCounts", "add_at_slot", "fold_into_domains", "per_node"]

#: Topology key → count (or score) per label code of that key, plus a trailing zero.
DomainCounts = dict[str, IntArray]


def _fit(values: IntArray, n: int) -> IntArray:
    if len(values) == n:
        return values
    if len(values) > n:
        return values[:n]
    out = np.zeros(n, dtype=np.int64)
    out[: len(values)] = values
    return out


def _domain_size(column: LabelColumn) -> int:
    # One entry per label value plus the trailing zero read for code -1 (no label).
    return len(column.values) + 1


def fold_into_domains(
    into: DomainCounts, table: NodeTable, topology_key: str, per_slot: IntArray, weight: int = 1
) -> bool:
    """Add ``weight * per_slot[slot]`` to the domain of every slot that has ``topology_key``.

    Returns whether any pod counted (a non-zero slot on a node with the key), whatever the weight:
    that is what makes upstream create a topology entry."""
    column = table.labels.get(topology_key)
    if column is None:
        return False
    codes = column.codes
    values = _fit(per_slot, len(codes))
    # Counts are sparse: work on the non-zero slots only.
    nonzero = np.flatnonzero(values)
    if len(nonzero) == 0:
        return False
    domain_codes = codes[nonzero]
    amounts = values[nonzero]
    if domain_codes.min() < 0:
        keep = domain_codes >= 0
        domain_codes = domain_codes[keep]
        amounts = amounts[keep]
        if len(domain_codes) == 0:
            return False
    size = _domain_size(column)
    if amounts.min() == 1 and amounts.max() == 1:
        sums: IntArray = np.bincount(domain_codes, minlength=size)
    else:
        sums = np.bincount(domain_codes, weights=amounts, minlength=size).astype(np.int64)
    if weight != 1:
        sums *= weight
    current = into.get(topology_key)
    if current is None:
        into[topology_key] = sums
    else:
        if len(current) < size:
            current = _fit(current, size)
            into[topology_key] = current
        current[:size] += sums
    return True


def per_node(
    table: NodeTable, topology_key: str, domains: IntArray, slots: IntArray | None = None
) -> IntArray:
    """The domain value of every slot (or of ``slots``); 0 where the node lacks the key."""
    column = table.labels.get(topology_key)
    size = table.capacity if slots is None else len(slots)
    if column is None:
        return np.zeros(size, dtype=np.int64)
    codes = column.codes if slots is None else column.codes[slots]
    want = _domain_size(column)
    if len(domains) != want:
        domains = _fit(domains, want).copy()
        domains[-1] = 0
    result: IntArray = domains[codes]
    return result


def add_at_slot(into: DomainCounts, table: NodeTable, topology_key: str, slot: int, amount: int) -> None:
    """Add ``amount`` to the domain of the node in ``slot`` (nothing if it lacks the key)."""
    column = table.labels.get(topology_key)
    if column is None or slot >= len(column.codes):
        return
    code = int(column.codes[slot])
    if code < 0:
        return
    current = into.get(topology_key)
    want = _domain_size(column)
    if current is None or len(current) < want:
        current = _fit(current if current is not None else np.zeros(0, dtype=np.int64), want)
        into[topology_key] = current
    current[code] += amount
