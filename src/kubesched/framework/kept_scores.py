"""Raw Score results kept between cycles, per node row.

Upstream scores at least 5% of the nodes every cycle (``numFeasibleNodesToFind``), so at 100,000
nodes a cycle scores 5,000 rows, and the rotating start brings a row back every 20 cycles or so.
For a Score plugin whose raw score (before NormalizeScore) of a row depends only on a key it draws
from the pod (:class:`~kubesched.framework.interfaces.RowScorePlugin`) and on that row of the
:class:`~kubesched.cache.node_table.NodeTable`, the score of a row that has not changed since it
was last computed for the same key is the same number: it is kept, and only the rows written since
(their ``row_stamp`` moved: a pod assumed, bound, forgotten or removed, the node updated, deleted
or replaced) are scored again. NormalizeScore and the weights still run over the cycle's rows.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from kubesched.cache.node_table import NodeTable
from kubesched.framework.types import IntArray

__all__ = ["KeptScores"]

#: Keys kept per plugin: pods of a few shapes alternate in a queue, and each key holds two arrays
#: of one value per row (16 bytes a row: 16 MB at 1,000,000 nodes).
KEYS_PER_PLUGIN = 2


@dataclass
class _Entry:
    table: weakref.ref[NodeTable]
    capacity: int
    num_resources: int
    scores: IntArray
    #: The row's ``row_stamp`` when its score was computed; -1: never.
    stamps: IntArray = field(repr=False)

    def fits(self, table: NodeTable) -> bool:
        # Stamps count per table, so another table (a rebuilt snapshot) shares none of them; a new
        # resource column changes what "absent" means for a resource on every row.
        return (
            self.table() is table
            and self.capacity == table.capacity
            and self.num_resources == table.num_resources
        )


class KeptScores:
    """Raw scores per (plugin, key) and row, with the row stamp each was computed at."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[Hashable, _Entry]] = {}

    def clear(self) -> None:
        self._entries.clear()

    def raw_scores(
        self,
        plugin: str,
        key: Hashable,
        table: NodeTable,
        slots: IntArray,
        score: Callable[[IntArray], IntArray],
    ) -> IntArray:
        """The raw scores of ``slots`` for ``key``; ``score(rows)`` computes the rows whose kept
        score is missing or stale. Returns a new array (callers normalize it in place)."""
        per_key = self._entries.setdefault(plugin, {})
        entry = per_key.get(key)
        if entry is None or not entry.fits(table):
            if entry is None and len(per_key) >= KEYS_PER_PLUGIN:
                del per_key[next(iter(per_key))]
            entry = _Entry(
                weakref.ref(table),
                table.capacity,
                table.num_resources,
                np.zeros(table.capacity, dtype=np.int64),
                np.full(table.capacity, -1, dtype=np.int64),
            )
            per_key[key] = entry
        current = table.row_stamp.take(slots)
        stale = np.flatnonzero(current != entry.stamps.take(slots))
        if len(stale):
            rows = slots.take(stale) if len(stale) != len(slots) else slots
            fresh = score(rows)
            entry.scores[rows] = fresh
            entry.stamps[rows] = current.take(stale) if len(stale) != len(slots) else current
            if len(stale) == len(slots):
                return fresh
        return entry.scores.take(slots)
