"""Volcano PodGroups: a gang's spec (generation bumped on change) and its table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of


class PodGroupStrategy(Strategy):
    generation = True
    columns: tuple[Column, ...] = (
        NAME,
        ("Status", "string", 0),
        ("minMember", "integer", 0),
        ("RUNNINGS", "integer", 0),
        AGE,
        ("QUEUE", "string", 1),
    )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [
            meta_of(obj).get("name"),
            status.get("phase", ""),
            spec.get("minMember", 0),
            status.get("running", 0),
            age(meta_of(obj).get("creationTimestamp"), now),
            spec.get("queue", "default"),
        ]


STRATEGY = PodGroupStrategy(
    Resource(
        "scheduling.volcano.sh",
        "v1beta1",
        "podgroups",
        "podgroup",
        "PodGroup",
        True,
        ("pg", "podgroup-v1beta1"),
        ("status",),
    )
)
