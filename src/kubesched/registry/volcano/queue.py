"""Volcano Queues: weight 1 and Open unless given, and their table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of


class QueueStrategy(Strategy):
    generation = True
    columns: tuple[Column, ...] = (NAME, ("Weight", "integer", 0), ("State", "string", 0), AGE)

    def defaults(self, obj: dict[str, Any]) -> None:
        spec = obj.setdefault("spec", {})
        if isinstance(spec, dict):
            spec.setdefault("weight", 1)
        status = obj.setdefault("status", {})
        if isinstance(status, dict):
            status.setdefault("state", "Open")

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [
            meta_of(obj).get("name"),
            spec.get("weight", 1),
            status.get("state", "Open"),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = QueueStrategy(
    Resource(
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        "queue",
        "Queue",
        False,
        ("q", "queue-v1beta1"),
        ("status",),
    )
)
