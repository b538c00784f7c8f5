"""CSINodes: named after their node, the CSI drivers a kubelet registered there."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.storage.common import StorageStrategy, mapping
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


class CSINodeStrategy(StorageStrategy):
    top_fields = frozenset({"spec"})
    columns: tuple[Column, ...] = (NAME, ("Drivers", "integer", 0), AGE)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        drivers = mapping(obj.get("spec")).get("drivers")
        return [
            meta_of(obj).get("name"),
            len(drivers) if isinstance(drivers, list) else 0,
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = CSINodeStrategy(Resource("storage.k8s.io", "v1", "csinodes", "csinode", "CSINode", False))
