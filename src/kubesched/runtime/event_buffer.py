"""Events handed over at once and written later, many to one commit.

Upstream's schedulers do not write an Event on the scheduling path: the event recorder hands it to
the broadcaster, which writes it to the API server from its own goroutine. A
:class:`BufferedEventRecorder` does the same for a scheduler that writes to a store in this process:
``record`` keeps the event and returns; :meth:`BufferedEventRecorder.flush` writes what was kept,
in one transaction when the store offers them (one commit instead of one per event). A full buffer,
or one whose oldest event has waited ``max_delay`` seconds, is flushed by the ``record`` call that
finds it so, or by the driver when it runs out of work (:meth:`BufferedEventRecorder.flush_due`);
whatever is left is flushed when the driver stops.

As upstream's, events are best effort: an event whose write fails is logged and dropped, and the
events still kept when the process is killed are lost. Nothing else depends on them.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from kubesched.runtime.batch_window import BatchWindow
from kubesched.store.base import Obj
from kubesched.store.ports import EventRecorder

log = logging.getLogger(__name__)

#: Events kept before a ``record`` call writes them itself.
DEFAULT_MAX_BATCH = 64
#: Seconds the oldest kept event may wait before a ``record`` call writes it.
DEFAULT_MAX_DELAY = 0.2

_Recorded = tuple[Obj, str, str, str, str, str]


class BufferedEventRecorder:
    """An :class:`~kubesched.store.ports.EventRecorder` that keeps events for ``sink`` and writes
    them in batches; safe to call from several threads."""

    def __init__(
        self,
        sink: EventRecorder,
        *,
        transaction: Callable[[], AbstractContextManager[Any]] | None = None,
        max_batch: int = DEFAULT_MAX_BATCH,
        max_delay: float = DEFAULT_MAX_DELAY,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.sink = sink
        self._transaction = transaction or nullcontext
        self._lock = threading.Lock()
        self._kept: list[_Recorded] = []
        self._window = BatchWindow(max_batch, max_delay, now)
        #: Events whose write failed (logged and dropped).
        self.dropped = 0

    def __len__(self) -> int:
        return len(self._kept)

    def record(
        self, regarding: Obj, event_type: str, reason: str, action: str, note: str, reporter: str
    ) -> None:
        with self._lock:
            self._kept.append((regarding, event_type, reason, action, note, reporter))
            due = self._window.add()
        if due:
            self.flush()

    def flush_due(self) -> float | None:
        """Write the kept events if the oldest has waited ``max_delay`` seconds; returns in how
        many seconds they will be due otherwise (None: none is kept)."""
        with self._lock:
            left = self._window.left()
        if left is None or left > 0:
            return left
        self.flush()
        return None

    def flush(self) -> int:
        """Write every kept event; returns how many were written."""
        with self._lock:
            if not self._kept:
                return 0
            kept, self._kept = self._kept, []
            self._window.clear()
        written = 0
        with self._transaction():
            for args in kept:
                try:
                    self.sink.record(*args)
                    written += 1
                except Exception as exc:  # an event is not worth a scheduling failure
                    self.dropped += 1
                    meta = args[0].get("metadata") or {}
                    log.warning(
                        "dropping %s event about %s/%s: %s",
                        args[2],
                        meta.get("namespace"),
                        meta.get("name"),
                        exc,
                    )
        return written


__all__ = ["BufferedEventRecorder"]
