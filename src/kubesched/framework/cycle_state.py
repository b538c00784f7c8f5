"""Per-cycle scratch space plugins share (upstream CycleState)."""

from __future__ import annotations

from typing import Any

#: Where a PostFilter plugin leaves what ``--explain`` should record about its outcome (a JSON-ready
#: dict; DefaultPreemption: ``{"nominatedNode": ..., "victims": [...]}``).
POST_FILTER_EXPLAIN_KEY = "kubesched.io/post-filter-explain"


class CycleState:
    __slots__ = ("_data", "skip_filter_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        #: PreFilter plugins that returned Skip: their Filter is not run this cycle.
        self.skip_filter_plugins: set[str] = set()
        #: PreScore plugins that returned Skip: their Score is not run this cycle.
        self.skip_score_plugins: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"{key!r} not found in cycle state (did its PreFilter run?)") from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def clone(self) -> CycleState:
        """A copy for "what if" evaluations (preemption, nominated pods): values with a ``clone()``
        method are cloned through it, other values are shared (plugins treat them as read-only);
        the skip sets are copied."""
        out = CycleState()
        data = out._data
        for key, value in self._data.items():
            clone = getattr(value, "clone", None)
            data[key] = clone() if callable(clone) else value
        out.skip_filter_plugins = set(self.skip_filter_plugins)
        out.skip_score_plugins = set(self.skip_score_plugins)
        return out
