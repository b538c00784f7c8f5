"""Creating objects in a served cluster's store through admission, as serve does."""

from __future__ import annotations

from typing import Any

from kubesched.registry.admission import admit, apply_defaults
from kubesched.store.sqlite import SqliteStore


def create(store: SqliteStore, obj: dict[str, Any]) -> Any:
    apply_defaults(obj)
    admit(store, obj)
    return store.create(obj)
