"""ReplicaSets: a spec whose changes bump the generation, scaled through ``/scale``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import invalid
from kubesched.registry.podtemplate import selector_causes
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, Strategy, age, meta_of


class ReplicaSetStrategy(Strategy):
    generation = True
    columns: tuple[Column, ...] = (
        NAME,
        ("Desired", "integer", 0),
        ("Current", "integer", 0),
        ("Ready", "integer", 0),
        AGE,
    )

    def validate(self, body: dict[str, Any]) -> None:
        causes = selector_causes(body.get("spec") or {})
        if causes:
            res = self.resource
            raise invalid(res.kind, res.group, str(body["metadata"].get("name", "")), causes)
        super().validate(body)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        return [
            meta_of(obj).get("name"),
            spec.get("replicas", 1),
            status.get("replicas", 0),
            status.get("readyReplicas", 0),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = ReplicaSetStrategy(
    Resource(
        "apps", "v1", "replicasets", "replicaset", "ReplicaSet", True, ("rs",), ("status", "scale"), ("all",)
    )
)
