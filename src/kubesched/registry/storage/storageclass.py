"""StorageClasses: a provisioner and its parameters at the top level, Delete and Immediate unless
given, fixed once made but for their labels and annotations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.storage import (
    BETA_IS_DEFAULT_CLASS_ANNOTATION,
    BINDING_IMMEDIATE,
    IS_DEFAULT_CLASS_ANNOTATION,
)
from kubesched.api.storage_rules import DELETE, default_storage_class
from kubesched.registry.storage.common import StorageStrategy, mapping
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


def is_default_class(obj: Mapping[str, Any]) -> bool:
    """Upstream ``IsDefaultAnnotation``: either annotation says "true"."""
    annotations = mapping(meta_of(obj).get("annotations"))
    return (
        annotations.get(IS_DEFAULT_CLASS_ANNOTATION) == "true"
        or annotations.get(BETA_IS_DEFAULT_CLASS_ANNOTATION) == "true"
    )


class StorageClassStrategy(StorageStrategy):
    default = staticmethod(default_storage_class)
    top_fields = frozenset(
        {
            "provisioner",
            "parameters",
            "reclaimPolicy",
            "mountOptions",
            "allowVolumeExpansion",
            "volumeBindingMode",
            "allowedTopologies",
        }
    )
    columns: tuple[Column, ...] = (
        NAME,
        ("Provisioner", "string", 0),
        ("ReclaimPolicy", "string", 0),
        ("VolumeBindingMode", "string", 0),
        ("AllowVolumeExpansion", "string", 0),
        AGE,
    )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        meta = meta_of(obj)
        name = str(meta.get("name", ""))
        return [
            f"{name} (default)" if is_default_class(obj) else name,
            obj.get("provisioner", ""),
            obj.get("reclaimPolicy") or DELETE,
            obj.get("volumeBindingMode") or BINDING_IMMEDIATE,
            obj.get("allowVolumeExpansion") is True,
            age(meta.get("creationTimestamp"), now),
        ]


STRATEGY = StorageClassStrategy(
    Resource("storage.k8s.io", "v1", "storageclasses", "storageclass", "StorageClass", False, ("sc",))
)
