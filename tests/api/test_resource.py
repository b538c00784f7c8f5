"""The resource.k8s.io/v1 views: what they read, the API's defaults, and located errors."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubesched.api.objects import Pod
from kubesched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    DeviceClass,
    DeviceTaint,
    DeviceToleration,
    DeviceVersion,
    ResourceClaim,
    ResourceClaimTemplate,
    ResourceSlice,
    pod_claim_name,
    pod_claim_ref,
)
from kubesched.errors import InputError


def _claim(spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
        "spec": spec,
        "status": status or {},
    }


def test_claim_requests_get_the_api_defaults() -> None:
    claim = ResourceClaim.from_dict(
        _claim(
            {
                "devices": {
                    "requests": [
                        {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}},
                        {
                            "name": "nic",
                            "firstAvailable": [
                                {"name": "fast", "deviceClassName": "nic", "allocationMode": "All"},
                                {"name": "slow", "deviceClassName": "nic", "count": 2},
                            ],
                        },
                    ],
                    "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "example.com/numa"}],
                }
            }
        )
    )
    gpu, nic = claim.requests
    assert gpu.exactly is not None
    assert (gpu.exactly.allocation_mode, gpu.exactly.count) == (ALLOCATION_MODE_EXACT_COUNT, 1)
    assert [(s.name, s.allocation_mode, s.count) for s in nic.first_available] == [
        ("fast", ALLOCATION_MODE_ALL, 0),
        ("slow", ALLOCATION_MODE_EXACT_COUNT, 2),
    ]
    assert claim.constraints[0].match_attribute == "example.com/numa"
    assert claim.allocation is None and not claim.deleting


def test_claim_allocation_and_reservations_round_trip() -> None:
    result = {
        "request": "gpu",
        "driver": "d",
        "pool": "p",
        "device": "dev-0",
        "consumedCapacity": {"memory": "4Gi"},
        "shareID": "abc",
    }
    claim = ResourceClaim.from_dict(
        _claim(
            {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "c"}}]}},
            {
                "allocation": {"devices": {"results": [result]}},
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "pod-uid"}],
            },
        )
    )
    assert claim.allocation is not None
    (r,) = claim.allocation.results
    assert r.consumed_capacity == {"memory": Fraction(4 * 2**30)}
    assert r.to_dict() == {**result, "consumedCapacity": {"memory": "4294967296"}}
    assert claim.reserved_for_uid("pod-uid")


def test_claim_errors_name_the_field() -> None:
    with pytest.raises(InputError) as err:
        ResourceClaim.from_dict(_claim({"devices": {"requests": [{"name": "gpu"}]}}))
    assert err.value.field == "spec.devices.requests[0]"
    with pytest.raises(InputError) as err:
        ResourceClaim.from_dict(
            _claim(
                {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "c", "count": "2"}}]}}
            )
        )
    assert err.value.field == "spec.devices.requests[0].exactly.count"


def test_slice_devices_keep_attribute_types_and_quantities() -> None:
    obj = {
        "metadata": {"name": "s"},
        "spec": {
            "driver": "gpu.example.com",
            "pool": {"name": "node-1", "generation": 3, "resourceSliceCount": 1},
            "nodeName": "node-1",
            "devices": [
                {
                    "name": "gpu-0",
                    "attributes": {
                        "model": {"string": "a100"},
                        "driverVersion": {"version": "1.2.3"},
                        "numa": {"int": 1},
                        "healthy": {"bool": True},
                    },
                    "capacity": {"memory": {"value": "40Gi"}},
                    "taints": [{"key": "k", "effect": "NoSchedule"}],
                }
            ],
        },
    }
    s = ResourceSlice.from_dict(obj)
    assert (s.driver, s.pool.name, s.pool.generation, s.node_name) == (
        "gpu.example.com",
        "node-1",
        3,
        "node-1",
    )
    (dev,) = s.devices
    assert dev.attributes["model"] == "a100" and not isinstance(dev.attributes["model"], DeviceVersion)
    assert isinstance(dev.attributes["driverVersion"], DeviceVersion)
    assert dev.attributes["numa"] == 1 and dev.attributes["healthy"] is True
    assert dev.capacity["memory"].value == 40 * 2**30
    assert dev.taints == (DeviceTaint("k", "", "NoSchedule"),)

    obj["spec"]["devices"][0]["attributes"]["bad"] = {"int": 1, "string": "x"}
    with pytest.raises(InputError) as err:
        ResourceSlice.from_dict(obj)
    assert err.value.field == "spec.devices[0].attributes.bad"


def test_device_class_and_template() -> None:
    dc = DeviceClass.from_dict(
        {
            "metadata": {"name": "gpu"},
            "spec": {
                "selectors": [{"cel": {"expression": "device.driver == 'x'"}}],
                "extendedResourceName": "x/gpu",
            },
        }
    )
    assert dc.selectors == ("device.driver == 'x'",) and dc.extended_resource_name == "x/gpu"
    t = ResourceClaimTemplate.from_dict(
        {
            "metadata": {"name": "t", "namespace": "ns"},
            "spec": {
                "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}}
            },
        }
    )
    assert t.devices.requests[0].name == "r"


def test_tolerations_match_like_upstream() -> None:
    taint = DeviceTaint("k", "v", "NoExecute")
    assert DeviceToleration(key="k", operator="Exists").tolerates(taint)
    assert DeviceToleration(key="k", value="v", effect="NoExecute").tolerates(taint)
    assert not DeviceToleration(key="k", value="w").tolerates(taint)
    assert not DeviceToleration(key="k", operator="Exists", effect="NoSchedule").tolerates(taint)


def _pod(spec_extra: dict[str, Any], status: dict[str, Any] | None = None) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c"}], **spec_extra},
            "status": status or {},
        }
    )


def test_pod_claims_and_generated_names() -> None:
    assert _pod({}).resource_claims == () and _pod({}).claim_statuses == {}
    pod = _pod(
        {
            "resourceClaims": [
                {"name": "a", "resourceClaimName": "shared"},
                {"name": "b", "resourceClaimTemplateName": "tmpl"},
                {"name": "c", "resourceClaimTemplateName": "tmpl"},
            ]
        },
        {"resourceClaimStatuses": [{"name": "b", "resourceClaimName": "p-b-xyz"}]},
    )
    a, b, c = pod.resource_claims
    assert pod_claim_name(pod, a) == "shared"
    assert pod_claim_name(pod, b) == "p-b-xyz" and pod_claim_ref(pod, b).must_check_owner
    assert pod_claim_name(pod, c) is None and not pod_claim_ref(pod, c).generated
    with pytest.raises(InputError) as err:
        _pod({"resourceClaims": [{"name": "a"}]})
    assert err.value.field == "spec.resourceClaims[0]"
