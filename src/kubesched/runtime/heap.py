"""Giving free heap memory back to the system, now and then, in a long-running kubesched process.

Objects Python allocates beyond its small-object allocator (dicts and lists past a few hundred
bytes, SQLite's pages, JSON buffers) come from the C library's ``malloc``. glibc keeps the memory
they free for later, and gives back to the system only what lies at the top of its heap; a server
that makes and drops pods for weeks leaves free pages between chunks that live on, and its
resident memory creeps up with them though the memory in use stays level. ``malloc_trim`` hands
those free pages back (a Go control plane's runtime does the same on its own, its scavenger
returning idle heap to the system in the background). Elsewhere than glibc it is a no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from collections.abc import Callable

__all__ = ["TRIM_INTERVAL", "HeapTrimmer"]

#: Seconds between trims: each walks glibc's free lists (milliseconds for a heap of some hundred MiB).
TRIM_INTERVAL = 30.0


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None  # not glibc (musl, macOS, Windows): nothing to trim
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


class HeapTrimmer:
    """Calls glibc's ``malloc_trim(0)`` at most once every ``interval`` seconds, from whichever
    loop of the process calls :meth:`maybe_trim`."""

    def __init__(self, interval: float = TRIM_INTERVAL, now: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self._now = now
        self._trim = _malloc_trim()
        self._next = now() + interval
        #: Trims done so far.
        self.trims = 0

    @property
    def available(self) -> bool:
        return self._trim is not None

    def maybe_trim(self) -> bool:
        """Trim if the interval has passed since the last; True when it did."""
        now = self._now()
        if self._trim is None or now < self._next:
            return False
        self._next = now + self.interval
        self._trim(0)
        self.trims += 1
        return True
