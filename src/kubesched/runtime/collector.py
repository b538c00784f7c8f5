"""Garbage-collector settings for a kubesched process.

A scheduler keeps a large, long-lived heap (nodes, pods, parsed objects, the cache) and allocates
many short-lived objects per pod. With CPython's default thresholds (a young collection every 700
net allocations, a full one whenever the objects promoted since the last exceed a quarter of the
old generation) the collector walks that whole heap again and again while pods arrive: about a
tenth of the CPU of ``kubesched bench basic`` went to collections. Larger thresholds make young
collections rarer and full ones much rarer; reference counting still frees everything that is not
part of a cycle at once, so memory grows only by the cyclic garbage waiting for the next pass.

``KUBESCHED_GC=default`` keeps Python's own settings (to compare, or where memory is tight).
"""

from __future__ import annotations

import gc
import os

__all__ = ["SCHEDULER_THRESHOLDS", "tune_collector"]

#: (young, middle, old) collection thresholds for a scheduling process.
SCHEDULER_THRESHOLDS = (10_000, 50, 100)


def tune_collector(environ: os._Environ[str] | dict[str, str] | None = None) -> bool:
    """Apply :data:`SCHEDULER_THRESHOLDS` unless ``KUBESCHED_GC=default``; True when applied."""
    env = os.environ if environ is None else environ
    if env.get("KUBESCHED_GC", "").strip().lower() == "default":
        return False
    gc.set_threshold(*SCHEDULER_THRESHOLDS)
    return True
