"""ResourceSlices: a driver's devices (or shared counters) in one pool, for one node, a set of
nodes or all of them. Selectable by ``spec.nodeName`` and ``spec.driver`` as upstream's index."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.resource.common import ResourceStrategy
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


class ResourceSliceStrategy(ResourceStrategy):
    generation = True
    field_paths = frozenset({"spec.nodeName", "spec.driver"})
    columns: tuple[Column, ...] = (
        NAME,
        ("Node", "string", 0),
        ("Driver", "string", 0),
        ("Pool", "string", 0),
        AGE,
    )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        meta = meta_of(obj)
        spec = obj.get("spec") or {}
        pool = spec.get("pool") or {}
        return [
            meta.get("name"),
            spec.get("nodeName") or "",
            spec.get("driver") or "",
            pool.get("name") or "" if isinstance(pool, Mapping) else "",
            age(meta.get("creationTimestamp"), now),
        ]


STRATEGY = ResourceSliceStrategy(
    Resource("resource.k8s.io", "v1", "resourceslices", "resourceslice", "ResourceSlice", False)
)
