"""Upstream's allocator table (``allocatortesting/allocator_testing.go``), the device-binding
cases (DRADeviceBindingConditions): devices with binding conditions are only allocated with the
feature on, the conditions travel into the result, and a device that binds to its node pins the
allocation to it. Case names verbatim."""

from __future__ import annotations

from typing import Any

import pytest

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
    PLANET_EARTH,
    PLANET_KEY,
    POOL1,
    REGION1,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SLICE3,
    SLICE4,
    Case,
    claim,
    claim_with_request,
    counter_consumption,
    counter_device,
    counter_set,
    device,
    device_allocation_result,
    device_class,
    local_allocation,
    node,
    node_label_selector,
    request,
    resource_pool,
    run_case,
    slice_,
)

BINDING = AllocatorFeatures(admin_access=False, prioritized_list=False, device_binding_and_status=True)
PARTITIONABLE_BINDING = AllocatorFeatures(
    admin_access=False, prioritized_list=False, partitionable_devices=True, device_binding_and_status=True
)
PARTITIONABLE_BINDING_TAINTS = AllocatorFeatures(
    admin_access=False,
    prioritized_list=False,
    partitionable_devices=True,
    device_binding_and_status=True,
    device_taints=True,
)
TOLERATION_NO_SCHEDULE_KEY1 = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}
TAINT_KEY1 = {"key": "key1", "value": "value1", "effect": "NoSchedule"}


def _binding(name: str, conditions: str = "IsPrepare", failures: str = "BindingFailed") -> dict[str, Any]:
    """Upstream's ``device(name, nil, nil).withBindingConditions([conditions], [failures])``."""
    return device(name, bindingConditions=[conditions], bindingFailureConditions=[failures])


def _counter_binding(name: str, memory: str, *conditions: str, **extra: Any) -> dict[str, Any]:
    """A device consuming ``memory`` of counter-set-1, with binding and failure conditions (in
    pairs) when given."""
    out = {**counter_device(name, counter_consumption(COUNTER_SET1, {"memory": memory})), **extra}
    if conditions:
        out["bindingConditions"] = [conditions[0]]
        out["bindingFailureConditions"] = [conditions[1]]
    return out


def _with_conditions(
    req: str, dev: str, conditions: str = "IsPrepare", failures: str = "BindingFailed", *tolerations: Any
) -> Any:
    return device_allocation_result(
        req,
        DRIVER_A,
        POOL1,
        dev,
        False,
        *tolerations,
        binding_conditions=[conditions],
        binding_failure_conditions=[failures],
    )


def _memory_counters(name: str, pool: Any, counter_set_name: str = COUNTER_SET1) -> Any:
    return slice_(
        name, NODE1, pool, DRIVER_A, shared_counters=[counter_set(counter_set_name, {"memory": "8Gi"})]
    )


CASES: dict[str, Case] = {
    "device-binding-conditions": Case(
        features=BINDING,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, _binding(DEVICE1))],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_with_conditions(REQ0, DEVICE1))],
    ),
    "binding-conditions-multiple-devices": Case(
        features=BINDING,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2), request(REQ1, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                _binding(DEVICE1),
                _binding(DEVICE2, "IsPrepare2", "BindingFailed2"),
                _binding(DEVICE3, "IsPrepare3", "BindingFailed3"),
            )
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _with_conditions(REQ0, DEVICE1),
                _with_conditions(REQ0, DEVICE2, "IsPrepare2", "BindingFailed2"),
                _with_conditions(REQ1, DEVICE3, "IsPrepare3", "BindingFailed3"),
            )
        ],
    ),
    "binding-conditions-with-and-without": Case(
        features=BINDING,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1), request(REQ1, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), _binding(DEVICE2))],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1),
                _with_conditions(REQ1, DEVICE2),
            )
        ],
    ),
    "binding-conditions-without-feature-gate": Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[slice_(SLICE1, NODE1, POOL1, DRIVER_A, _binding(DEVICE1))],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "node-restriction": Case(
        features=BINDING,
        claims=[claim_with_request(CLAIM0, REQ0, CLASS_A)],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                node_label_selector(PLANET_KEY, PLANET_EARTH),
                POOL1,
                DRIVER_A,
                device(DEVICE1, bindsToNode=True),
            )
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "partitionable-devices-with-binding-conditions": Case(
        features=PARTITIONABLE_BINDING,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 1))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                _counter_binding(DEVICE1, "4Gi", "IsPrepare", "BindingFailed"),
            ),
            _memory_counters(SLICE2, resource_pool(POOL1, 2)),
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_with_conditions(REQ0, DEVICE1))],
    ),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        features=PARTITIONABLE_BINDING,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                _counter_binding(DEVICE1, "4Gi", "IsPrepare", "BindingFailed"),
                _counter_binding(DEVICE2, "4Gi", "IsPrepare2", "BindingFailed2"),
            ),
            _memory_counters(SLICE2, resource_pool(POOL1, 2)),
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _with_conditions(REQ0, DEVICE1),
                _with_conditions(REQ0, DEVICE2, "IsPrepare2", "BindingFailed2"),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        features=PARTITIONABLE_BINDING,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 3))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                _counter_binding(DEVICE1, "2Gi", "IsPrepare", "BindingFailed"),
                _counter_binding(DEVICE2, "2Gi"),
                _counter_binding(DEVICE3, "4Gi", "IsReady", "BindingTimeout"),
            ),
            _memory_counters(SLICE2, resource_pool(POOL1, 2)),
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _with_conditions(REQ0, DEVICE1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2),
                _with_conditions(REQ0, DEVICE3, "IsReady", "BindingTimeout"),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        features=PARTITIONABLE_BINDING,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE4,
                NODE1,
                resource_pool(POOL1, 4),
                DRIVER_A,
                _counter_binding(DEVICE1, "4Gi", "IsPrepare", "BindingFailed"),
            ),
            _memory_counters(SLICE3, resource_pool(POOL1, 4)),
            slice_(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 4),
                DRIVER_A,
                counter_device(DEVICE2, counter_consumption(COUNTER_SET2, {"memory": "4Gi"})),
            ),
            _memory_counters(SLICE1, resource_pool(POOL1, 4), COUNTER_SET2),
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2),
                _with_conditions(REQ0, DEVICE1),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-and-taints": Case(
        features=PARTITIONABLE_BINDING_TAINTS,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                _counter_binding(DEVICE1, "4Gi", "IsPrepare", "BindingFailed", taints=[TAINT_KEY1]),
                _counter_binding(DEVICE2, "4Gi"),
            ),
            _memory_counters(SLICE2, POOL1),
        ],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": Case(
        features=PARTITIONABLE_BINDING_TAINTS,
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 2, tolerations=[TOLERATION_NO_SCHEDULE_KEY1]))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                _counter_binding(DEVICE1, "4Gi", "IsPrepare", "BindingFailed", taints=[TAINT_KEY1]),
                _counter_binding(DEVICE2, "4Gi"),
            ),
            _memory_counters(SLICE2, resource_pool(POOL1, 2)),
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _with_conditions(REQ0, DEVICE1, "IsPrepare", "BindingFailed", TOLERATION_NO_SCHEDULE_KEY1),
                device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE2, False, TOLERATION_NO_SCHEDULE_KEY1),
            )
        ],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocator(name: str) -> None:
    run_case(CASES[name])
