"""Raw Score results kept between cycles, per node row.

Upstream scores at least 5% of the nodes every cycle (``numFeasibleNodesToFind``), so at 100,000
nodes a cycle scores 5,000 rows, and the rotating start brings a row back every 20 cycles or so.
For a Score plugin whose raw score (before NormalizeScore) of a row depends only on a key it draws
from the pod (:class:`~kubesched.framework.interfaces.RowScorePlugin`) and on that row of the
:class:`~kubesched.cache.node_table.NodeTable`, the score of a row that has not changed since it
was last computed for the same key is the same number: it is kept, and only the rows written since
(the table's ``change_log``: a pod assumed, bound, forgotten or removed, the node updated, deleted
or replaced) are scored again. NormalizeScore and the weights still run over the cycle's rows.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

import numpy as np

from kubesched.cache.node_table import NodeTable
from kubesched.framework.types import BoolArray, IntArray

__all__ = ["KeptScores"]

#: Keys kept per plugin: pods of a few shapes alternate in a queue, and each key holds one score
#: and one flag per row (9 bytes a row: 9 MB at 1,000,000 nodes), within a budget of bytes.
MAX_KEYS_PER_PLUGIN = 16
MIN_KEYS_PER_PLUGIN = 2
BYTES_PER_PLUGIN = 64 << 20


#: While most lookups miss, one miss in this many still takes a key.
_ADMIT_EVERY = 8

#: Changed rows a key of ``eager`` lookups collects before it scores them again, all at once.
_RESCORE_AFTER = 32


def keys_per_plugin(capacity: int) -> int:
    """How many keys a plugin keeps at this many rows."""
    return max(MIN_KEYS_PER_PLUGIN, min(MAX_KEYS_PER_PLUGIN, BYTES_PER_PLUGIN // (9 * max(capacity, 1))))


@dataclass
class _Entry:
    table: weakref.ref[NodeTable]
    capacity: int
    num_resources: int
    scores: IntArray
    #: Whether the row's kept score is current.
    current: BoolArray
    #: Position in the table's change log up to which changes are applied to ``current``.
    read: int
    #: Rows changed since they were last scored (``eager`` lookups only), not current meanwhile,
    #: and how many rows the list names.
    changed: list[int | IntArray] = field(default_factory=list)
    num_changed: int = 0


class KeptScores:
    """Raw scores per (plugin, key) and row, and which of them are still current."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[Hashable, _Entry]] = {}
        #: Per plugin, a running share of lookups that found their key, and a count of misses:
        #: when pods of more shapes than the kept keys come in turn, every lookup misses and keeping
        #: costs more than it saves, so most misses then score without keeping (one in
        #: ``_ADMIT_EVERY`` still takes a key, so a workload that settles on a few shapes gets them).
        self._found: dict[str, float] = {}
        self._misses = 0

    def clear(self) -> None:
        self._entries.clear()
        self._found.clear()

    def raw_scores(
        self,
        plugin: str,
        key: Hashable,
        table: NodeTable,
        slots: IntArray,
        score: Callable[[IntArray], IntArray],
        *,
        eager: bool = False,
    ) -> IntArray:
        """The raw scores of ``slots`` for ``key``; ``score(rows)`` computes the rows whose kept
        score is missing or stale. Returns a new array (callers normalize it in place).

        ``eager``: ``score`` may be given any valid rows, not only the cycle's. Then the rows that
        change are collected and scored again together, a few dozen at once, rather than a row or
        two whenever a cycle's rows include them: the rotating window comes back to a row only
        every N / ``numFeasibleNodesToFind`` cycles, by when its new score is usually kept already,
        and most lookups are one check that the cycle's rows are current and one gather."""
        per_key = self._entries.setdefault(plugin, {})
        entry = per_key.get(key)
        found = self._found.get(plugin, 1.0) * 0.875
        self._found[plugin] = found + 0.125 if entry is not None else found
        if entry is None and len(per_key) >= keys_per_plugin(table.capacity) and found < 0.5:
            self._misses += 1
            if self._misses % _ADMIT_EVERY:
                return score(slots)
        start = table.change_log_start
        log = table.change_log
        if (
            entry is None
            # Another table (a rebuilt snapshot) has other rows; a new resource column changes what
            # "absent" means for a resource on every row; a reader that fell behind a restarted log
            # cannot tell which rows changed.
            or entry.table() is not table
            or entry.capacity != table.capacity
            or entry.num_resources != table.num_resources
            or entry.read < start
        ):
            old = entry
            if old is None and len(per_key) >= keys_per_plugin(table.capacity):
                old = per_key.pop(next(iter(per_key)))  # the key used longest ago
            else:
                per_key.pop(key, None)
            if old is not None and old.capacity == table.capacity:
                # Pods of many shapes in turn: reuse the arrays rather than allocate rows' worth.
                scores, current = old.scores, old.current
                current.fill(False)
            else:
                scores = np.zeros(table.capacity, dtype=np.int64)
                current = np.zeros(table.capacity, dtype=np.bool_)
            entry = _Entry(
                weakref.ref(table),
                table.capacity,
                table.num_resources,
                scores,
                current,
                start + len(log),
            )
            per_key[key] = entry
        else:
            if len(per_key) > 1:
                per_key[key] = per_key.pop(key)  # the most recently used last
            if entry.read < start + len(log):
                changed = log[entry.read - start :]
                entry.read = start + len(log)
                current = entry.current
                for rows in changed:
                    current[rows] = False
                if eager:
                    entry.changed.extend(changed)
                    entry.num_changed += sum(1 if isinstance(r, int) else len(r) for r in changed)
                    if entry.num_changed >= _RESCORE_AFTER:
                        self._rescore(entry, table, score)
        ok = entry.current.take(slots)
        if ok.all():
            return entry.scores.take(slots)
        if entry.changed:
            self._rescore(entry, table, score)
            ok = entry.current.take(slots)
            if ok.all():
                return entry.scores.take(slots)
        stale = np.flatnonzero(~ok)
        rows = slots.take(stale) if len(stale) != len(slots) else slots
        fresh = score(rows)
        entry.scores[rows] = fresh
        entry.current[rows] = True
        if len(stale) == len(slots):
            return fresh
        return entry.scores.take(slots)

    @staticmethod
    def _rescore(entry: _Entry, table: NodeTable, score: Callable[[IntArray], IntArray]) -> None:
        """Score the entry's changed rows that hold a node again (a deleted node's row stays not
        current)."""
        changed = entry.changed
        if all(isinstance(rows, int) for rows in changed):
            rows = np.array(sorted(set(changed)), dtype=np.int64)
        else:
            rows = np.unique(np.concatenate([np.atleast_1d(r) for r in changed]))
        entry.changed = []
        entry.num_changed = 0
        rows = rows[table.valid.take(rows)]
        if len(rows):
            entry.scores[rows] = score(rows)
            entry.current[rows] = True
