"""Building blocks for plugins' ``sign_pod`` (opportunistic batching signatures)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any


def frozen(value: Any) -> Hashable:
    """A hashable, order-independent (for mappings) copy of a parsed YAML/JSON value."""
    if isinstance(value, Mapping):
        return tuple(sorted((str(k), frozen(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(frozen(v) for v in value)
    if isinstance(value, set | frozenset):
        return frozenset(frozen(v) for v in value)
    if isinstance(value, Hashable):
        return value
    return repr(value)
