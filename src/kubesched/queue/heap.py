"""A keyed binary heap with lazy deletion, for the active and backoff queues."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """Items keyed by a string id; ordered by ``key_fn(item)``; O(log n) push/pop, O(1) delete."""

    def __init__(self, key_fn: Callable[[T], Any]) -> None:
        self._key_fn = key_fn
        self._heap: list[tuple[Any, int, str, T]] = []
        self._items: dict[str, tuple[int, T]] = {}
        self._seq = itertools.count()

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
        heapq.heappush(self._heap, (self._key_fn(item), seq, item_id, item))

    def delete(self, item_id: str) -> T | None:
        entry = self._items.pop(item_id, None)
        return entry[1] if entry else None

    def _drop_stale(self) -> None:
        heap = self._heap
        while heap:
            _, seq, item_id, _ = heap[0]
            live = self._items.get(item_id)
            if live is not None and live[0] == seq:
                return
            heapq.heappop(heap)

    def peek(self) -> T | None:
        self._drop_stale()
        return self._heap[0][3] if self._heap else None

    def pop(self) -> T | None:
        self._drop_stale()
        if not self._heap:
            return None
        _, _, item_id, item = heapq.heappop(self._heap)
        del self._items[item_id]
        return item
