"""Builders for allocator tests, named after upstream's ``allocatortesting`` helpers so a case
reads like its upstream original: objects are written as manifests and parsed by the real views.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubesched.api.objects import Node
from kubesched.api.resource import (
    AllocationResult,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceToleration,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.plugins.dynamicresources.allocated_state import AllocatedState, DeviceID
from kubesched.plugins.dynamicresources.allocator import AllocationError, Allocator, AllocatorFeatures

REGION1, REGION2 = "region-1", "region-2"
NODE1, NODE2 = "node-1", "node-2"
CLASS_A, CLASS_B = "class-a", "class-b"
DRIVER_A, DRIVER_B = "driver-a", "driver-b"
POOL1, POOL2, POOL3, POOL4 = "pool-1", "pool-2", "pool-3", "pool-4"
REQ0, REQ1, REQ2, REQ3 = "req-0", "req-1", "req-2", "req-3"
SUB_REQ0, SUB_REQ1 = "subReq-0", "subReq-1"
CLAIM0, CLAIM1 = "claim-0", "claim-1"
SLICE1, SLICE2, SLICE3, SLICE4 = "slice-1", "slice-2", "slice-3", "slice-4"
DEVICE0, DEVICE1, DEVICE2, DEVICE3, DEVICE4 = "device-0", "device-1", "device-2", "device-3", "device-4"
COUNTER_SET1, COUNTER_SET2 = "counter-set-1", "counter-set-2"
CAPACITY0, CAPACITY1 = "capacity-0", "capacity-1"
REGION_KEY, PLANET_KEY, PLANET_EARTH = "region", "planet", "earth"
FIELD_NAME_KEY = "metadata.name"
NODE_SELECTION_ALL = "nodeSelectionAll"
NODE_SELECTION_PER_DEVICE = "nodeSelectionPerDevice"
FIXED_SHARE_ID = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"


def node(name: str, region: str) -> Node:
    return Node.from_dict(
        {"metadata": {"name": name, "labels": {REGION_KEY: region, PLANET_KEY: PLANET_EARTH}}}
    )


def cel(expression: str) -> dict[str, Any]:
    return {"cel": {"expression": expression}}


def device_class(name: str, driver: str, *, config_attribute: str | None = None) -> DeviceClass:
    spec: dict[str, Any] = {"selectors": [cel(f'device.driver == "{driver}"')]}
    if config_attribute is not None:
        spec["config"] = [device_configuration(driver, config_attribute)]
    return DeviceClass.from_dict({"metadata": {"name": name}, "spec": spec})


def class_with_allow_multiple_allocations(name: str, driver: str, multi: bool) -> DeviceClass:
    expression = f'device.driver == "{driver}" && device.allowMultipleAllocations == {str(multi).lower()}'
    return DeviceClass.from_dict({"metadata": {"name": name}, "spec": {"selectors": [cel(expression)]}})


def device_configuration(driver: str, attribute: str) -> dict[str, Any]:
    return {"opaque": {"driver": driver, "parameters": {attribute: attribute + "Value"}}}


def request(
    name: str,
    cls: str,
    count: int = 1,
    *selectors: Mapping[str, Any],
    mode: str = "ExactCount",
    admin_access: bool | None = None,
    tolerations: Sequence[Mapping[str, Any]] = (),
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        exactly["count"] = count
    if selectors:
        exactly["selectors"] = list(selectors)
    if admin_access is not None:
        exactly["adminAccess"] = admin_access
    if tolerations:
        exactly["tolerations"] = list(tolerations)
    if capacity is not None:
        exactly["capacity"] = {"requests": dict(capacity)}
    return {"name": name, "exactly": exactly}


def all_device_request(
    name: str, cls: str, *, selectors: Sequence[Mapping[str, Any]] = (), **kwargs: Any
) -> dict[str, Any]:
    return request(name, cls, 0, *selectors, mode="All", **kwargs)


def sub_request(
    name: str,
    cls: str,
    count: int = 1,
    *selectors: Mapping[str, Any],
    mode: str = "ExactCount",
    tolerations: Sequence[Mapping[str, Any]] = (),
    capacity: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    sub: dict[str, Any] = {"name": name, "deviceClassName": cls, "allocationMode": mode}
    if mode == "ExactCount":
        sub["count"] = count
    if selectors:
        sub["selectors"] = list(selectors)
    if tolerations:
        sub["tolerations"] = list(tolerations)
    if capacity is not None:
        sub["capacity"] = {"requests": dict(capacity)}
    return sub


def request_with_prioritized_list(name: str, *subs: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "firstAvailable": list(subs)}


def claim(
    name: str,
    *requests: dict[str, Any],
    constraints: Sequence[Mapping[str, Any]] = (),
    config: Sequence[Mapping[str, Any]] = (),
) -> ResourceClaim:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    if config:
        devices["config"] = list(config)
    return ResourceClaim.from_dict({"metadata": {"name": name}, "spec": {"devices": devices}})


def claim_with_request(name: str, req: str, cls: str, *constraints: Mapping[str, Any]) -> ResourceClaim:
    return claim(name, request(req, cls, 1), constraints=constraints)


def match_attribute(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"matchAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def distinct_attribute(attribute: str, *requests: str) -> dict[str, Any]:
    out: dict[str, Any] = {"distinctAttribute": attribute}
    if requests:
        out["requests"] = list(requests)
    return out


def device(
    name: str,
    capacity: Mapping[str, str] | None = None,
    attributes: Mapping[str, Mapping[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, **extra}
    if capacity:
        out["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    if attributes:
        out["attributes"] = dict(attributes)
    return out


def slice_(
    name: str,
    node_selection: str | Mapping[str, Any],
    pool: str | Mapping[str, Any],
    driver: str,
    *devices: dict[str, Any],
    shared_counters: Sequence[Mapping[str, Any]] = (),
    generation: int = 1,
) -> ResourceSlice:
    if isinstance(pool, str):
        pool = {"name": pool, "resourceSliceCount": 1, "generation": generation}
    spec: dict[str, Any] = {"driver": driver, "pool": dict(pool)}
    if isinstance(node_selection, Mapping):
        spec["nodeSelector"] = dict(node_selection)
    elif node_selection == NODE_SELECTION_ALL:
        spec["allNodes"] = True
    elif node_selection == NODE_SELECTION_PER_DEVICE:
        spec["perDeviceNodeSelection"] = True
    else:
        spec["nodeName"] = node_selection
    if devices:
        spec["devices"] = list(devices)
    if shared_counters:
        spec["sharedCounters"] = list(shared_counters)
    return ResourceSlice.from_dict({"metadata": {"name": name}, "spec": spec})


def slice_with_one_device(
    name: str, node_selection: str | Mapping[str, Any], pool: Any, driver: str
) -> ResourceSlice:
    return slice_(name, node_selection, pool, driver, device(DEVICE1))


def slice_with_multiple_devices(
    name: str, node_selection: str | Mapping[str, Any], pool: Any, driver: str, count: int
) -> ResourceSlice:
    return slice_(name, node_selection, pool, driver, *(device(f"device-{i}") for i in range(count)))


def counter_device(name: str, *consumptions: Mapping[str, Any], from_counters: bool = True) -> dict[str, Any]:
    """A device consuming counters; with ``from_counters`` its capacity is what it consumes (upstream's
    ``device(name, fromCounters, nil).withDeviceCounterConsumption(...)``)."""
    out: dict[str, Any] = {"name": name, "consumesCounters": list(consumptions)}
    if from_counters:
        out["capacity"] = {k: dict(v) for c in consumptions for k, v in c["counters"].items()}
    return out


def capacity_with_range_policy(value: str) -> dict[str, Any]:
    """Upstream's ``withCapacityRequestPolicyRange``: default 2, range 2..4 in steps of 2."""
    return {
        "value": value,
        "requestPolicy": {"default": "2", "validRange": {"min": "2", "step": "2", "max": "4"}},
    }


def capacity_with_valid_values(default: str, value: str, *more: str) -> dict[str, Any]:
    """Upstream's ``withCapacityRequestPolicyValidValues``: the default first, then ``more``."""
    return {"value": value, "requestPolicy": {"default": default, "validValues": [default, *more]}}


def resource_pool(name: str, count: int, generation: int = 1) -> dict[str, Any]:
    return {"name": name, "resourceSliceCount": count, "generation": generation}


def counter_set(name: str, counters: Mapping[str, str]) -> dict[str, Any]:
    return {"name": name, "counters": {k: {"value": v} for k, v in counters.items()}}


def counter_consumption(counter_set_name: str, counters: Mapping[str, str]) -> dict[str, Any]:
    return {"counterSet": counter_set_name, "counters": {k: {"value": v} for k, v in counters.items()}}


def node_label_selector(key: str, *values: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}]
    }


def local_node_selector(node_name: str) -> dict[str, Any]:
    return {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": FIELD_NAME_KEY, "operator": "In", "values": [node_name]}]}
        ]
    }


def toleration(**fields: Any) -> dict[str, Any]:
    return dict(fields)


def device_allocation_result(
    req: str,
    driver: str,
    pool: str,
    dev: str,
    admin_access: bool = False,
    *tolerations: Mapping[str, Any],
    consumed: Mapping[str, str] | None = None,
    share_id: str | None = None,
    binding_conditions: Sequence[str] = (),
    binding_failure_conditions: Sequence[str] = (),
) -> DeviceRequestAllocationResult:
    raw: dict[str, Any] = {"request": req, "driver": driver, "pool": pool, "device": dev}
    if admin_access:
        raw["adminAccess"] = True
    if tolerations:
        raw["tolerations"] = list(tolerations)
    if consumed is not None:
        raw["consumedCapacity"] = dict(consumed)
    if share_id is not None:
        raw["shareID"] = share_id
    if binding_conditions:
        raw["bindingConditions"] = list(binding_conditions)
    if binding_failure_conditions:
        raw["bindingFailureConditions"] = list(binding_failure_conditions)
    result = DeviceRequestAllocationResult.from_dict(raw, "result")
    # Tolerations are compared as parsed: the operator's default spelled out.
    return result


def with_attribute(s: ResourceSlice, device_index: int, name: str, value: object) -> ResourceSlice:
    """The slice with one device attribute set to a value no ResourceSlice can carry (an empty
    attribute, or a list while list-type attributes are off). The resource views refuse such a
    slice when they read it, so it is built here directly."""
    devices = list(s.devices)
    target = devices[device_index]
    attributes: dict[str, Any] = dict(target.attributes)
    attributes[name] = value
    devices[device_index] = dataclasses.replace(target, attributes=attributes)
    return dataclasses.replace(s, devices=tuple(devices))


def local_allocation(*results: DeviceRequestAllocationResult) -> AllocationResult:
    """An allocation for node-1 alone (upstream's ``allocationResult(localNodeSelector(node1), ...)``)."""
    return allocation_result(local_node_selector(NODE1), *results)


def memory_selector(amount: str, driver: str = DRIVER_A) -> dict[str, Any]:
    """Upstream's recurring selector: the device's ``memory`` capacity is at least ``amount``."""
    return cel(f'device.capacity["{driver}"].memory.compareTo(quantity("{amount}")) >= 0')


def _norm_selector(selector: Mapping[str, Any] | None) -> Any:
    if selector is None:
        return None
    terms = []
    for term in selector.get("nodeSelectorTerms") or []:
        parts = []
        for kind in ("matchExpressions", "matchFields"):
            reqs = frozenset(
                (r["key"], r["operator"], frozenset(r.get("values") or ())) for r in term.get(kind) or ()
            )
            parts.append(reqs)
        terms.append(tuple(parts))
    return sorted(terms, key=repr)


def _norm_result(r: DeviceRequestAllocationResult) -> Any:
    return (
        r.request,
        r.driver,
        r.pool,
        r.device,
        r.admin_access,
        r.tolerations,
        tuple(sorted((r.consumed_capacity or {}).items())),
        r.share_id,
        r.binding_conditions,
        r.binding_failure_conditions,
    )


def allocation_result(
    selector: Mapping[str, Any] | None,
    *results: DeviceRequestAllocationResult,
    config: Sequence[Mapping[str, Any]] = (),
) -> AllocationResult:
    return AllocationResult(results=tuple(results), config=tuple(config), node_selector=selector)


def normalize(result: AllocationResult) -> Any:
    """An allocation in a form where the order of results and of selector terms does not matter
    (upstream's matchers ignore both)."""
    return (
        sorted((_norm_result(r) for r in result.results), key=repr),
        [dict(c) for c in result.config],
        _norm_selector(result.node_selector),
    )


#: Upstream's zero ``Features``: every gate the allocator honours off.
NO_FEATURES = AllocatorFeatures(admin_access=False, prioritized_list=False)


@dataclass
class Case:
    """One row of upstream's table: the inputs, and either the allocations (one per claim, None or
    empty for "does not fit") or a substring of the error. ``expect_allocate_one_calls`` is how
    often the search may try to place a device, where upstream counts it."""

    claims: Sequence[ResourceClaim] = ()
    classes: Sequence[DeviceClass] = ()
    slices: Sequence[ResourceSlice] = ()
    node: Node | None = None
    features: AllocatorFeatures = NO_FEATURES
    allocated: Sequence[DeviceID] = ()
    state: AllocatedState | None = None
    expect: Sequence[AllocationResult] | None = None
    expect_error: str | None = None
    expect_allocate_one_calls: int | None = None


def run_case(case: Case) -> None:
    """Allocate as upstream's ``RunTestAllocator`` does (on node-1 when the case names no node)
    and compare with what the case expects."""
    state = case.state or AllocatedState(allocated_devices=set(case.allocated))
    allocator = Allocator(
        case.features,
        state,
        {c.name: c for c in case.classes},
        case.slices,
        new_share_id=lambda: FIXED_SHARE_ID,
    )
    target = case.node if case.node is not None else node(NODE1, REGION1)
    if case.expect_error is not None:
        try:
            allocator.allocate(target, case.claims)
        except AllocationError as exc:
            assert case.expect_error in str(exc), f"{case.expect_error!r} not in {str(exc)!r}"
        else:
            raise AssertionError(f"no error, expected one containing {case.expect_error!r}")
        return
    results = allocator.allocate(target, case.claims)
    if not case.expect:
        assert not results, f"expected no allocation, got {results}"
    else:
        assert results is not None, "expected an allocation, got none"
        assert [normalize(r) for r in results] == [normalize(r) for r in case.expect]
    if case.expect_allocate_one_calls is not None:
        assert allocator.allocate_one_calls == case.expect_allocate_one_calls


__all__ = ["DeviceToleration"]
