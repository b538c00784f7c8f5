"""Deployments: validated through their pod template, scaled through ``/scale``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import invalid
from kubesched.registry.podtemplate import PodTemplateStrategy, selector_causes
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of
from kubesched.store.base import Obj


class DeploymentStrategy(PodTemplateStrategy):
    columns: tuple[Column, ...] = (
        NAME,
        ("Ready", "string", 0),
        ("Up-to-date", "integer", 0),
        ("Available", "integer", 0),
        AGE,
    )

    def defaults(self, obj: dict[str, Any]) -> None:
        """Upstream's ``SetDefaults_Deployment`` (apps/v1): one replica, a rolling update with 25%
        surge and unavailability, ten old revisions kept, a ten-minute progress deadline."""
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        spec.setdefault("replicas", 1)
        strategy = spec.setdefault("strategy", {})
        if isinstance(strategy, dict):
            strategy.setdefault("type", "RollingUpdate")
            if strategy["type"] == "RollingUpdate":
                rolling = strategy.setdefault("rollingUpdate", {})
                if isinstance(rolling, dict):
                    rolling.setdefault("maxUnavailable", "25%")
                    rolling.setdefault("maxSurge", "25%")
        spec.setdefault("revisionHistoryLimit", 10)
        spec.setdefault("progressDeadlineSeconds", 600)

    def prepare_for_update(self, old: Obj, new: dict[str, Any]) -> None:
        # Every write is read with the defaults, as upstream decodes each body.
        self.defaults(new)
        super().prepare_for_update(old, new)

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
