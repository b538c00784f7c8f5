"""Upstream's allocator table (``allocatortesting/allocator_testing.go``), the resource-pool
cases: pools whose slices target several nodes, pools being replaced by a newer generation,
incomplete pools (never allocated from), invalid pools (an error only when nothing else fits) and
counter sets that are duplicated, missing or in another pool. Case names verbatim."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.api.resource import ResourceSlice
from kubesched.plugins.dynamicresources.allocated_state import DeviceID
from kubesched.plugins.dynamicresources.allocator import AllocatorFeatures
from kubesched.plugins.dynamicresources.allocator_testing import (
    CLAIM0,
    CLASS_A,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DRIVER_A,
    NODE1,
    NODE2,
    POOL1,
    POOL2,
    REGION1,
    REQ0,
    SLICE1,
    SLICE2,
    SLICE3,
    SLICE4,
    SUB_REQ0,
    SUB_REQ1,
    Case,
    all_device_request,
    claim,
    claim_with_request,
    counter_consumption,
    counter_device,
    counter_set,
    device,
    device_allocation_result,
    device_class,
    local_allocation,
    memory_selector,
    node,
    request,
    request_with_prioritized_list,
    resource_pool,
    run_case,
    slice_,
    sub_request,
)

PARTITIONABLE = AllocatorFeatures(admin_access=False, prioritized_list=False, partitionable_devices=True)
PARTITIONABLE_PRIORITIZED = AllocatorFeatures(
    admin_access=False, prioritized_list=True, partitionable_devices=True
)
INVALID_POOLS = "invalid resource pools were encountered"


def _one(name: str, node_name: str, dev: str, generation: int, count: int = 2) -> ResourceSlice:
    """A slice of pool-1 with one device, of the given generation in a pool of ``count`` slices."""
    return slice_(name, node_name, resource_pool(POOL1, count, generation), DRIVER_A, device(dev))


def _counters(name: str, pool: Any, *sets: dict[str, Any], node_name: str = NODE1) -> ResourceSlice:
    return slice_(name, node_name, pool, DRIVER_A, shared_counters=sets)


def _consuming(name: str, counter_set_name: str, counters: dict[str, str] | None) -> dict[str, Any]:
    """A device consuming counters of a set, with no capacity of its own."""
    return counter_device(name, counter_consumption(counter_set_name, counters or {}), from_counters=False)


def _partitionable_one(*slices: ResourceSlice) -> Case:
    return Case(
        features=PARTITIONABLE,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=list(slices),
        node=node(NODE1, REGION1),
        expect_error=INVALID_POOLS,
    )


def _one_device(*slices: ResourceSlice, **kwargs: Any) -> Case:
    return Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=list(slices),
        node=node(NODE1, REGION1),
        **kwargs,
    )


CASES: dict[str, Case] = {
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[claim(CLAIM0, all_device_request(REQ0, CLASS_A))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_one(SLICE1, NODE1, DEVICE1, 1), _one(SLICE2, NODE2, DEVICE2, 1)],
        node=node(NODE1, REGION1),
        expect=[local_allocation(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[_one(SLICE1, NODE1, DEVICE1, 1), _one(SLICE2, NODE2, DEVICE2, 2)],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    # Moving a pool from one node to another is something drivers should not do: the scheduler
    # may not have seen the change yet. The old generation is used while the node still sees it
    # complete, as it would be before the update arrived.
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _one(SLICE1, NODE1, DEVICE1, 1),
            _one(SLICE1, NODE1, DEVICE2, 1),
            _one(SLICE2, NODE2, DEVICE1, 2),
            _one(SLICE2, NODE2, DEVICE2, 2),
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _one(SLICE1, NODE2, DEVICE1, 1),
            _one(SLICE1, NODE2, DEVICE2, 1),
            _one(SLICE2, NODE1, DEVICE1, 2),
            _one(SLICE2, NODE1, DEVICE2, 2),
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _one(SLICE1, NODE1, DEVICE1, 1),
            _one(SLICE1, NODE1, DEVICE2, 1),
            _one(SLICE2, NODE2, DEVICE1, 2),
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    # The new generation on node-1 is incomplete: nothing is allocated from it.
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _one(SLICE1, NODE2, DEVICE1, 1),
            _one(SLICE1, NODE2, DEVICE2, 1),
            _one(SLICE2, NODE1, DEVICE1, 2),
        ],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": _partitionable_one(
        slice_(SLICE1, NODE1, resource_pool(POOL1, 4), DRIVER_A, device(DEVICE1)),
        _counters(SLICE2, resource_pool(POOL1, 4), counter_set(COUNTER_SET1, {})),
        slice_(SLICE3, NODE1, resource_pool(POOL1, 4), DRIVER_A, device(DEVICE2)),
        _counters(SLICE4, resource_pool(POOL1, 4), counter_set(COUNTER_SET1, {})),
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": _partitionable_one(
        slice_(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, _consuming(DEVICE1, COUNTER_SET2, None)),
        _counters(SLICE2, resource_pool(POOL1, 2), counter_set(COUNTER_SET1, {})),
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": (
        _partitionable_one(
            slice_(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                _consuming(DEVICE1, COUNTER_SET1, {"memory": "8Gi"}),
            ),
            _counters(SLICE2, resource_pool(POOL1, 2), counter_set(COUNTER_SET1, {"other-memory": "8Gi"})),
        )
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": (
        _partitionable_one(
            slice_(SLICE1, NODE1, POOL1, DRIVER_A, _consuming(DEVICE1, COUNTER_SET1, {"memory": "8Gi"})),
            _counters(SLICE2, POOL2, counter_set(COUNTER_SET1, {"memory": "8Gi"})),
        )
    ),
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        features=PARTITIONABLE_PRIORITIZED,
        claims=[
            claim(
                CLAIM0,
                request_with_prioritized_list(
                    REQ0,
                    sub_request(SUB_REQ0, CLASS_A, 1, memory_selector("6Gi")),
                    sub_request(SUB_REQ1, CLASS_A, 1, memory_selector("2Gi")),
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            _counters(SLICE1, resource_pool(POOL1, 3), counter_set(COUNTER_SET1, {"memory": "8Gi"})),
            slice_(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 3),
                DRIVER_A,
                counter_device(DEVICE1, counter_consumption(COUNTER_SET1, {"memory": "6Gi"})),
                counter_device(DEVICE2, counter_consumption(COUNTER_SET1, {"memory": "2Gi"})),
            ),
            slice_(
                SLICE3,
                NODE2,
                resource_pool(POOL1, 3),
                DRIVER_A,
                _consuming(DEVICE3, COUNTER_SET1, {"memory": "6Gi"}),
            ),
        ],
        # The device on the other node uses up most of the shared counters.
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE3)],
        node=node(NODE1, REGION1),
        expect=[local_allocation(device_allocation_result("req-0/subReq-1", DRIVER_A, POOL1, DEVICE2))],
    ),
    "partitionable-devices-validation-error-on-non-targeting-slice": _partitionable_one(
        _counters(SLICE1, resource_pool(POOL1, 3), counter_set(COUNTER_SET1, {"memory": "8Gi"})),
        slice_(
            SLICE2,
            NODE1,
            resource_pool(POOL1, 3),
            DRIVER_A,
            counter_device(DEVICE1, counter_consumption(COUNTER_SET1, {"memory": "6Gi"})),
        ),
        slice_(
            SLICE3,
            NODE2,
            resource_pool(POOL1, 3),
            DRIVER_A,
            _consuming(DEVICE3, COUNTER_SET2, {"memory": "6Gi"}),
        ),
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": _one_device(
        _one(SLICE1, NODE2, DEVICE1, 1),
        _one(SLICE2, NODE1, DEVICE2, 1),
        expect=[local_allocation(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2))],
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": _one_device(
        _one(SLICE1, NODE1, DEVICE1, 1),
        _one(SLICE2, NODE1, DEVICE1, 1),
        slice_(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE2)),
        expect=[local_allocation(device_allocation_result(REQ0, DRIVER_A, POOL2, DEVICE2))],
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": _one_device(
        _one(SLICE1, NODE1, DEVICE1, 1),
        _one(SLICE2, NODE1, DEVICE1, 1),
        slice_(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE2)),
        allocated=[DeviceID(DRIVER_A, POOL2, DEVICE2)],
        expect_error=INVALID_POOLS,
    ),
    "no-allocation-from-incomplete-pools": _one_device(_one(SLICE1, NODE1, DEVICE1, 1), expect=None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocator(name: str) -> None:
    run_case(CASES[name])
