"""Per-cycle scratch space plugins share (upstream CycleState)."""

from __future__ import annotations

from typing import Any


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
