"""ConfigMaps: data without a spec or a status."""

from __future__ import annotations

from kubesched.registry.strategy import Resource, Strategy


class ConfigMapStrategy(Strategy):
    top_fields = frozenset({"data", "binaryData", "immutable"})


STRATEGY = ConfigMapStrategy(Resource("", "v1", "configmaps", "configmap", "ConfigMap", True, ("cm",)))
