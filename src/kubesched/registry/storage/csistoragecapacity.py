"""CSIStorageCapacities: how much a class can still provision where; namespaced, fields at the top
level, and no Age column (upstream prints none)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.storage.common import StorageStrategy, quantity_cell
from kubesched.registry.strategy import NAME, Column, Resource, Row, meta_of


class CSIStorageCapacityStrategy(StorageStrategy):
    top_fields = frozenset({"nodeTopology", "storageClassName", "capacity", "maximumVolumeSize"})
    columns: tuple[Column, ...] = (NAME, ("StorageClassName", "string", 0), ("Capacity", "string", 0))

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        capacity = obj.get("capacity")
        return [
            meta_of(obj).get("name"),
            obj.get("storageClassName", ""),
            "<unset>" if capacity is None else quantity_cell(capacity),
        ]


STRATEGY = CSIStorageCapacityStrategy(
    Resource("storage.k8s.io", "v1", "csistoragecapacities", "csistoragecapacity", "CSIStorageCapacity", True)
)
