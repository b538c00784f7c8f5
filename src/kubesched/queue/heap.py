"""A keyed binary heap with lazy deletion, for the active and backoff queues."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

#: ``KeyedHeap._width`` before the first push: no key seen yet.
_UNDECIDED = -1


class KeyedHeap(Generic[T]):
    """Items keyed by a string id; ordered by ``key_fn(item)``; O(log n) push/pop, O(1) delete.

    Every entry ends with ``(seq, item_id, item)``. While every key is a tuple of one length (a
    QueueSort key), the key's fields lead the entry themselves: a pop compares entries some thirty
    times, and one flat tuple compares in one pass where a key nested in the entry takes two (its
    equality, then its order) and one more object to reach. The order is the same: tuples of one
    length compare field by field, then by ``seq``. The first key of any other shape turns every
    entry into ``(key, seq, item_id, item)`` for good.
    """

    def __init__(self, key_fn: Callable[[T], Any]) -> None:
        self._key_fn = key_fn
        self._heap: list[tuple[Any, ...]] = []
        self._items: dict[str, tuple[int, T]] = {}
        self._seq = itertools.count()
        #: The length of every key, flattened into the entries; None: keys are nested.
        self._width: int | None = _UNDECIDED

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._items

    def __iter__(self) -> Iterator[T]:
        return iter([item for _, item in self._items.values()])

    def get(self, item_id: str) -> T | None:
        entry = self._items.get(item_id)
        return entry[1] if entry else None

    def push(self, item_id: str, item: T) -> None:
        seq = next(self._seq)
        self._items[item_id] = (seq, item)
        key = self._key_fn(item)
        width = self._width
        if width is not None and type(key) is tuple:
            if width == _UNDECIDED:
                width = self._width = len(key)
            if len(key) == width:
                heapq.heappush(self._heap, (*key, seq, item_id, item))
                return
        if width is not None:
            self._nest()
        heapq.heappush(self._heap, (key, seq, item_id, item))

    def _nest(self) -> None:
        """From now on every key is kept nested in its entry, as ``(key, seq, item_id, item)``."""
        width, self._width = self._width, None
        if width is not None and width != _UNDECIDED:
            # The same order, so the list stays a heap.
            self._heap = [(entry[:width], *entry[width:]) for entry in self._heap]

    def delete(self, item_id: str) -> T | None:
        entry = self._items.pop(item_id, None)
        return entry[1] if entry else None

    def _drop_stale(self) -> None:
        heap = self._heap
        items = self._items
        while heap:
            entry = heap[0]
            live = items.get(entry[-2])
            if live is not None and live[0] == entry[-3]:
                return
            heapq.heappop(heap)

    def peek(self) -> T | None:
        self._drop_stale()
        return self._heap[0][-1] if self._heap else None

    def pop(self) -> T | None:
        self._drop_stale()
        if not self._heap:
            return None
        entry = heapq.heappop(self._heap)
        del self._items[entry[-2]]
        item: T = entry[-1]
        return item
