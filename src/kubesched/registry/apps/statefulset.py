"""StatefulSets: a spec whose changes bump the generation, scaled through ``/scale``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of


class StatefulSetStrategy(Strategy):
    generation = True
    columns: tuple[Column, ...] = (NAME, ("Ready", "string", 0), AGE)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [
            meta_of(obj).get("name"),
            f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = StatefulSetStrategy(
    Resource(
        "apps",
        "v1",
        "statefulsets",
        "statefulset",
        "StatefulSet",
        True,
        ("sts",),
        ("status", "scale"),
        ("all",),
    )
)
