"""ReplicationControllers (core/v1): the ReplicaSet's predecessor, whose selector is a plain label
map; upstream's defaults fill the selector and the labels from the template's labels."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.errors import invalid
from kubesched.registry.podtemplate import PodTemplateStrategy
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


def set_defaults(obj: dict[str, Any]) -> None:
    """Upstream ``SetDefaults_ReplicationController``: a missing selector, and missing labels, are
    the template's labels; ``replicas`` is 1."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    template = spec.get("template")
    labels = ((template.get("metadata") or {}).get("labels") or {}) if isinstance(template, dict) else {}
    if labels:
        if not spec.get("selector"):
            spec["selector"] = dict(labels)
        meta = obj.setdefault("metadata", {})
        if isinstance(meta, dict) and not meta.get("labels"):
            meta["labels"] = dict(labels)
    if spec.get("replicas") is None:
        spec["replicas"] = 1


def spec_causes(spec: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``ValidateReplicationControllerSpec``: a non-empty selector that the template's labels match."""
    selector = spec.get("selector")
    if not isinstance(selector, Mapping) or not selector:
        return [("FieldValueRequired", "spec.selector", "Required value")]
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return [("FieldValueRequired", "spec.template", "Required value")]
    labels = (template.get("metadata") or {}).get("labels") or {}
    if any(labels.get(k) != v for k, v in selector.items()):
        shown = ", ".join(f'"{k}":"{v}"' for k, v in sorted(labels.items()))
        return [
            (
                "FieldValueInvalid",
                "spec.template.metadata.labels",
                f"Invalid value: map[string]string{{{shown}}}: `selector` does not match template `labels`",
            )
        ]
    return []


class ReplicationControllerStrategy(PodTemplateStrategy):
    columns: tuple[Column, ...] = (
        NAME,
        ("Desired", "integer", 0),
        ("Current", "integer", 0),
        ("Ready", "integer", 0),
        AGE,
        ("Containers", "string", 1),
        ("Images", "string", 1),
        ("Selector", "string", 1),
    )

    defaults_on_decode = True

    def defaults(self, obj: dict[str, Any]) -> None:
        set_defaults(obj)

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        super().prepare_for_create(obj)
        # The status a new controller starts with (``replicas`` is never omitted upstream).
        obj["status"] = {"replicas": 0}

    def validate(self, body: dict[str, Any]) -> None:
        causes = spec_causes(body.get("spec") or {})
        if causes:
            raise invalid("ReplicationController", "", str(body["metadata"].get("name", "")), causes)
        super().validate(body)

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        return [
            meta_of(obj).get("name"),
            spec.get("replicas", 1),
            status.get("replicas", 0),
            status.get("readyReplicas", 0),
            age(meta_of(obj).get("creationTimestamp"), now),
            ",".join(str(c.get("name", "")) for c in containers),
            ",".join(str(c.get("image", "")) for c in containers),
            ",".join(f"{k}={v}" for k, v in sorted((spec.get("selector") or {}).items())),
        ]


STRATEGY = ReplicationControllerStrategy(
    Resource(
        "",
        "v1",
        "replicationcontrollers",
        "replicationcontroller",
        "ReplicationController",
        True,
        ("rc",),
        ("status", "scale"),
        ("all",),
    )
)
