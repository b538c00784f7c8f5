"""DeviceClasses: cluster-scoped, CEL selectors and configuration for the devices a request of the
class may get, and the extended resource name it serves."""

from __future__ import annotations

from kubesched.registry.resource.common import ResourceStrategy
from kubesched.registry.strategy import Resource


class DeviceClassStrategy(ResourceStrategy):
    generation = True


STRATEGY = DeviceClassStrategy(
    Resource("resource.k8s.io", "v1", "deviceclasses", "deviceclass", "DeviceClass", False)
)
