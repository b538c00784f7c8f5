"""CSIDrivers: how the cluster talks to one CSI driver, with upstream's defaults."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kubesched.api.storage_rules import default_csi_driver
from kubesched.registry.storage.common import StorageStrategy, mapping
from kubesched.registry.strategy import AGE, NAME, Column, Resource, Row, age, meta_of


class CSIDriverStrategy(StorageStrategy):
    default = staticmethod(default_csi_driver)
    top_fields = frozenset({"spec"})
    columns: tuple[Column, ...] = (
        NAME,
        ("AttachRequired", "boolean", 0),
        ("PodInfoOnMount", "boolean", 0),
        ("StorageCapacity", "boolean", 0),
        ("TokenRequests", "string", 0),
        ("RequiresRepublish", "boolean", 0),
        ("Modes", "string", 0),
        AGE,
    )

    def row(self, obj: Mapping[str, Any], now: float) -> Row:
        spec = mapping(obj.get("spec"))
        requests = spec.get("tokenRequests")
        tokens = "<unset>"
        if isinstance(requests, list):
            tokens = ",".join(str(mapping(r).get("audience", "")) for r in requests)
        modes = spec.get("volumeLifecycleModes")
        return [
            meta_of(obj).get("name"),
            spec.get("attachRequired") is not False,
            spec.get("podInfoOnMount") is True,
            spec.get("storageCapacity") is True,
            tokens,
            spec.get("requiresRepublish") is True,
            ",".join(str(m) for m in modes) if isinstance(modes, list) and modes else "<none>",
            age(meta_of(obj).get("creationTimestamp"), now),
        ]


STRATEGY = CSIDriverStrategy(Resource("storage.k8s.io", "v1", "csidrivers", "csidriver", "CSIDriver", False))
