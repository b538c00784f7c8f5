"""Extended resources backed by a DeviceClass (KEP-5004, feature gate ``DRAExtendedResource``;
upstream ``dynamicresources/extended`` and the extended-resource half of ``dynamicresources.go``).

A pod asking for ``example.com/gpu: 1`` on a node that does not advertise ``example.com/gpu`` is
served from devices of the DeviceClass whose ``spec.extendedResourceName`` is ``example.com/gpu``
(every class also answers to ``deviceclass.resource.kubernetes.io/<class name>``). The scheduler
allocates them through a claim of its own, one request per container and resource, named
``container-<i>-request-<j>`` (``i`` counts init containers, then containers; ``j`` is the
resource's place among the container's requests in name order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.resources import parse_resource_list
from kubesched.errors import InputError
from kubesched.plugins.helper.extended_resources import device_class_mapping, is_dra_extended_resource_name

__all__ = [
    "SPECIAL_CLAIM_IN_MEM_NAME",
    "device_class_mapping",
    "device_requests",
    "dra_requests",
    "request_mappings",
]

#: The name the extended-resource claim has while it exists only in the scheduler's memory; not a
#: valid object name, so it can never be a real claim's.
SPECIAL_CLAIM_IN_MEM_NAME = "<extended-resources>"


def dra_requests(pod: Pod, mapping: Mapping[str, str]) -> dict[str, int]:
    """The pod's requests of extended resources some DeviceClass backs (non-zero only)."""
    return {
        name: value
        for name, value in pod.requests.items()
        if value and is_dra_extended_resource_name(name) and name in mapping
    }


def _containers(pod: Pod) -> list[Mapping[str, Any]]:
    spec = pod.raw.get("spec") or {}
    out: list[Mapping[str, Any]] = []
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            if isinstance(c, Mapping):
                out.append(c)
    return out


def _container_requests(container: Mapping[str, Any], where: str) -> dict[str, int]:
    resources = container.get("resources") or {}
    try:
        return parse_resource_list(resources.get("requests"), f"{where}.resources.requests")
    except InputError:
        return {}


def device_requests(pod: Pod, wanted: Mapping[str, int], mapping: Mapping[str, str]) -> list[dict[str, Any]]:
    """The extended-resource claim's ``spec.devices.requests`` for the resources in ``wanted``
    (those this node serves through DRA): one ExactCount request per container and resource."""
    requests: list[dict[str, Any]] = []
    for resource in sorted(wanted):
        if not wanted[resource]:
            continue
        class_name = mapping.get(resource)
        if not class_name:
            continue
        for i, container in enumerate(_containers(pod)):
            creqs = _container_requests(container, f"spec.containers[{i}]")
            count = creqs.get(resource, 0)
            if count <= 0:
                continue
            index = sorted(creqs).index(resource)
            requests.append(
                {
                    "name": f"container-{i}-request-{index}",
                    "exactly": {
                        "deviceClassName": class_name,
                        "allocationMode": "ExactCount",
                        "count": count,
                    },
                }
            )
    return requests


def request_mappings(pod: Pod, request_names: Iterable[str]) -> list[dict[str, str]]:
    """``status.extendedResourceClaimStatus.requestMappings``: which container's which resource
    each request of the claim serves."""
    names = set(request_names)
    out: list[dict[str, str]] = []
    for i, container in enumerate(_containers(pod)):
        creqs = _container_requests(container, f"spec.containers[{i}]")
        ordered = sorted(creqs)
        for index, resource in enumerate(ordered):
            request = f"container-{i}-request-{index}"
            if request in names:
                out.append(
                    {
                        "containerName": str(container.get("name") or ""),
                        "resourceName": resource,
                        "requestName": request,
                    }
                )
    return out
