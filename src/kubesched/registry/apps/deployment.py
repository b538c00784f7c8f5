"""Deployments: validated through their pod template, scaled through ``/scale``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import invalid
from kubesched.registry.podtemplate import PodTemplateStrategy, selector_causes
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


class DeploymentStrategy(PodTemplateStrategy):
    columns: tuple[Column, ...] = (
        NAME,
        ("Ready", "string", 0),
        ("Up-to-date", "integer", 0),
        ("Available", "integer", 0),
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
            f"{status.get('readyReplicas', 0)}/{spec.get('replicas', 1)}",
            status.get("updatedReplicas", 0),
            status.get("availableReplicas", 0),
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = DeploymentStrategy(
    Resource(
        "apps",
        "v1",
        "deployments",
        "deployment",
        "Deployment",
        True,
        ("deploy",),
        ("status", "scale"),
        ("all",),
    )
)
