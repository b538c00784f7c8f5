"""VolumeAttachments: a volume an attacher is to attach to a node; the spec is read-only and the
status (the attacher's) has its own subresource."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.registry.storage.common import StorageStrategy, mapping
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


class VolumeAttachmentStrategy(StorageStrategy):
    columns: tuple[Column, ...] = (
        NAME,
        ("Attacher", "string", 0),
        ("PV", "string", 0),
        ("Node", "string", 0),
        ("Attached", "boolean", 0),
        AGE,
    )

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """The status is the attacher's to write: a new attachment is not attached."""
        super().prepare_for_create(obj)
        obj["status"] = {"attached": False}

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec = mapping(obj.get("spec"))
        return [
            meta_of(obj).get("name"),
            spec.get("attacher", ""),
            mapping(spec.get("source")).get("persistentVolumeName") or "",
            spec.get("nodeName", ""),
            mapping(obj.get("status")).get("attached") is True,
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = VolumeAttachmentStrategy(
    Resource(
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        "volumeattachment",
        "VolumeAttachment",
        False,
        (),
        ("status",),
    )
)
