"""PersistentVolumeClaims: Pending when made (admission gives a claim without a class the default
one), a spec that only binding and expansion may change, and a status subresource the PV controller
writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.storage import BETA_STORAGE_CLASS_ANNOTATION
from kubesched.api.storage_rules import default_persistent_volume_claim
from kubesched.registry.storage.common import StorageStrategy, access_modes, mapping, quantity_cell
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


class PersistentVolumeClaimStrategy(StorageStrategy):
    default = staticmethod(default_persistent_volume_claim)
    columns: tuple[Column, ...] = (
        NAME,
        ("Status", "string", 0),
        ("Volume", "string", 0),
        ("Capacity", "string", 0),
        ("Access Modes", "string", 0),
        ("StorageClass", "string", 0),
        ("VolumeAttributesClass", "string", 0),
        AGE,
        ("VolumeMode", "string", 1),
    )

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """A new claim's status is the server's (the defaults make it Pending)."""
        super().prepare_for_create(obj)
        obj["status"] = {}

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        meta, spec, status = meta_of(obj), mapping(obj.get("spec")), mapping(obj.get("status"))
        phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "")
        volume = spec.get("volumeName") or ""
        capacity = modes = ""
        if volume:
            # What the claim got, once it names its volume; nothing before.
            modes = access_modes(status.get("accessModes"))
            capacity = quantity_cell(mapping(status.get("capacity")).get("storage"))
        annotations = mapping(meta.get("annotations"))
        storage_class = annotations.get(BETA_STORAGE_CLASS_ANNOTATION, spec.get("storageClassName") or "")
        attributes_class = spec.get("volumeAttributesClassName")
        return [
            meta.get("name"),
            phase,
            volume,
            capacity,
            modes,
            storage_class,
            "<unset>" if attributes_class is None else attributes_class,
            age(meta.get("creationTimestamp"), now),
            spec.get("volumeMode") or "<unset>",
        ]


STRATEGY = PersistentVolumeClaimStrategy(
    Resource(
        "",
        "v1",
        "persistentvolumeclaims",
        "persistentvolumeclaim",
        "PersistentVolumeClaim",
        True,
        ("pvc",),
        ("status",),
    )
)
