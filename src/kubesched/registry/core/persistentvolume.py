"""PersistentVolumes: cluster-scoped, Pending from the moment they are made, with a status
subresource the PV controller writes (the phase's last transition kept as upstream keeps it)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from kubesched.api.storage import BETA_STORAGE_CLASS_ANNOTATION, PV_PENDING
from kubesched.api.storage_rules import default_persistent_volume
from kubesched.registry.storage.common import StorageStrategy, access_modes, mapping, quantity_cell
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of
from kubesched.store.base import Obj
from kubesched.store.memory import format_timestamp


class PersistentVolumeStrategy(StorageStrategy):
    default = staticmethod(default_persistent_volume)
    columns: tuple[Column, ...] = (
        NAME,
        ("Capacity", "string", 0),
        ("Access Modes", "string", 0),
        ("Reclaim Policy", "string", 0),
        ("Status", "string", 0),
        ("Claim", "string", 0),
        ("StorageClass", "string", 0),
        ("VolumeAttributesClass", "string", 0),
        ("Reason", "string", 0),
        AGE,
        ("VolumeMode", "string", 1),
    )

    def prepare_for_create(self, obj: dict[str, Any]) -> None:
        """A new volume's status is the server's: Pending, since now."""
        super().prepare_for_create(obj)
        obj["status"] = {"phase": PV_PENDING, "lastPhaseTransitionTime": format_timestamp(time.time())}

    def prepare_for_status_update(self, old: Obj, new: dict[str, Any]) -> None:
        """The phase's transition time moves when the phase does, unless the writer set it."""
        before, after = mapping(old.get("status")), new.get("status")
        if not isinstance(after, dict):
            return
        written = after.get("lastPhaseTransitionTime")
        if before.get("phase") == after.get("phase"):
            if written is None and before.get("lastPhaseTransitionTime") is not None:
                after["lastPhaseTransitionTime"] = before["lastPhaseTransitionTime"]
        elif written is None or written == before.get("lastPhaseTransitionTime"):
            after["lastPhaseTransitionTime"] = format_timestamp(time.time())

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        meta, spec, status = meta_of(obj), mapping(obj.get("spec")), mapping(obj.get("status"))
        ref = mapping(spec.get("claimRef"))
        claim = (
            f"{ref.get('namespace', '')}/{ref.get('name', '')}" if spec.get("claimRef") is not None else ""
        )
        phase = "Terminating" if meta.get("deletionTimestamp") else status.get("phase", "")
        annotations = mapping(meta.get("annotations"))
        storage_class = annotations.get(BETA_STORAGE_CLASS_ANNOTATION, spec.get("storageClassName", ""))
        attributes_class = spec.get("volumeAttributesClassName")
        return [
            meta.get("name"),
            quantity_cell(mapping(spec.get("capacity")).get("storage")),
            access_modes(spec.get("accessModes")),
            spec.get("persistentVolumeReclaimPolicy", ""),
            phase,
            claim,
            storage_class,
            "<unset>" if attributes_class is None else attributes_class,
            status.get("reason", ""),
            age(meta.get("creationTimestamp"), now),
            spec.get("volumeMode") or "<unset>",
        ]


STRATEGY = PersistentVolumeStrategy(
    Resource(
        "", "v1", "persistentvolumes", "persistentvolume", "PersistentVolume", False, ("pv",), ("status",)
    )
)
