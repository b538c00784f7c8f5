"""Upstream's allocator table (``allocatortesting/allocator_testing.go``), the consumable-capacity
cases after the first ones in ``test_allocator.py`` (DRAConsumableCapacity): shares of devices
that allow multiple allocations, request policies, capacity already allocated or being allocated,
dedicated devices, and ``distinctAttribute`` constraints. Case names verbatim."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from kubesched.api.resource import ResourceSlice
from kubesched.plugins.dynamicresources.allocated_state import AllocatedState, DeviceID
from kubesched.plugins.dynamicresources.allocator import AllocatorFeatures
from kubesched.plugins.dynamicresources.allocator_testing import (
    CAPACITY0,
    CAPACITY1,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    COUNTER_SET1,
    COUNTER_SET2,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DEVICE4,
    DRIVER_A,
    FIXED_SHARE_ID,
    NODE1,
    POOL1,
    REGION1,
    REQ0,
    REQ1,
    REQ2,
    REQ3,
    SLICE1,
    SLICE2,
    SUB_REQ0,
    SUB_REQ1,
    Case,
    all_device_request,
    capacity_with_range_policy,
    capacity_with_valid_values,
    cel,
    claim,
    class_with_allow_multiple_allocations,
    counter_consumption,
    counter_device,
    counter_set,
    device,
    device_allocation_result,
    device_class,
    distinct_attribute,
    local_allocation,
    match_attribute,
    memory_selector,
    node,
    request,
    request_with_prioritized_list,
    resource_pool,
    run_case,
    slice_,
    sub_request,
    with_attribute,
)

CONSUMABLE = AllocatorFeatures(admin_access=False, prioritized_list=False, consumable_capacity=True)
CONSUMABLE_PRIORITIZED = AllocatorFeatures(
    admin_access=False, prioritized_list=True, consumable_capacity=True
)
ALL_THREE = AllocatorFeatures(
    admin_access=False, prioritized_list=True, partitionable_devices=True, consumable_capacity=True
)
BOOL_ATTRIBUTE = f"{DRIVER_A}/boolAttribute"
STRING_ATTRIBUTE = f"{DRIVER_A}/stringAttribute"
VERSION_ATTRIBUTE = f"{DRIVER_A}/driverVersion"
INT_ATTRIBUTE = f"{DRIVER_A}/numa"
MULTI = class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, True)
DEDICATED = class_with_allow_multiple_allocations(CLASS_A, DRIVER_A, False)
PLAIN = device_class(CLASS_A, DRIVER_A)


def _multi(name: str, capacity: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A device that allows multiple allocations, with its capacity entries as written."""
    out: dict[str, Any] = {"name": name, "allowMultipleAllocations": True, **extra}
    if capacity:
        out["capacity"] = capacity
    return out


def _value(amount: str) -> dict[str, Any]:
    return {"value": amount}


def _on_node(*devices: dict[str, Any], pool: Any = POOL1) -> ResourceSlice:
    return slice_(SLICE1, NODE1, pool, DRIVER_A, *devices)


def _share(req: str, name: str, consumed: dict[str, str] | None) -> Any:
    """One share of a device for a request, consuming ``consumed`` (None: nothing recorded)."""
    return device_allocation_result(req, DRIVER_A, POOL1, name, consumed=consumed, share_id=FIXED_SHARE_ID)


def _cap(amount: str) -> dict[str, str]:
    return {CAPACITY0: amount}


def _in_use(amount: int) -> AllocatedState:
    """device-1 already shared, its shares consuming ``amount`` of capacity-0."""
    return AllocatedState(
        aggregated_capacity={DeviceID(DRIVER_A, POOL1, DEVICE1): {CAPACITY0: Fraction(amount)}}
    )


def _attrs(**values: tuple[str, bool | int | str]) -> dict[str, Any]:
    """Attributes written as ``name=(kind, value)``."""
    return {name: {kind: value} for name, (kind, value) in values.items()}


def _capacity0_at_least(amount: str) -> dict[str, Any]:
    return cel(f'device.capacity["{DRIVER_A}"]["{CAPACITY0}"].compareTo(quantity("{amount}")) >= 0')


def _capacity_claim(name: str, req: str, amount: str) -> Any:
    return claim(name, request(req, CLASS_A, 1, capacity=_cap(amount)))


CASES: dict[str, Case] = {
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "2")],
        classes=[MULTI],
        # The capacity's value must be listed explicitly to be reachable.
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: capacity_with_valid_values("1", "3", "3")}))],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share(REQ0, DEVICE1, _cap("3")))],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "1"), _capacity_claim(CLAIM1, REQ0, "2")],
        classes=[MULTI],
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: capacity_with_range_policy("2")}))],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    # The range's maximum is 4: 6 is refused although the device has 10.
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "6")],
        classes=[MULTI],
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: capacity_with_range_policy("10")}))],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "2")],
        state=_in_use(2),
        classes=[MULTI],
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: capacity_with_range_policy("4")}))],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share(REQ0, DEVICE1, _cap("2")))],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "2")],
        state=_in_use(2),
        classes=[MULTI],
        slices=[
            _on_node(
                _multi(DEVICE1, {CAPACITY0: capacity_with_range_policy("2")}),
                _multi(DEVICE2, {CAPACITY0: capacity_with_range_policy("2")}),
            )
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share(REQ0, DEVICE2, _cap("2")))],
    ),
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        features=CONSUMABLE,
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, capacity=_cap("2")),
                request(REQ1, CLASS_A, 1, capacity=_cap("2")),
                constraints=[match_attribute(STRING_ATTRIBUTE)],
            ),
            _capacity_claim(CLAIM1, REQ0, "2"),
        ],
        classes=[PLAIN],
        slices=[
            _on_node(
                _multi(
                    DEVICE2,
                    {CAPACITY0: capacity_with_range_policy("2")},
                    attributes=_attrs(stringAttribute=("string", "stringAttributeValue1")),
                ),
                _multi(
                    DEVICE1,
                    {CAPACITY0: capacity_with_range_policy("4")},
                    attributes=_attrs(stringAttribute=("string", "stringAttributeValue2")),
                ),
            )
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(_share(REQ0, DEVICE1, _cap("2")), _share(REQ1, DEVICE1, _cap("2"))),
            local_allocation(_share(REQ0, DEVICE2, _cap("2"))),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        features=CONSUMABLE_PRIORITIZED,
        claims=[
            claim(
                CLAIM0,
                request_with_prioritized_list(
                    REQ0,
                    sub_request(SUB_REQ0, CLASS_A, 1, capacity=_cap("4")),
                    sub_request(SUB_REQ1, CLASS_A, 1, capacity=_cap("2")),
                    sub_request(SUB_REQ1, CLASS_A, 1),
                ),
            )
        ],
        classes=[MULTI],
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: capacity_with_range_policy("2")}))],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share("req-0/subReq-1", DEVICE1, _cap("2")))],
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "2")],
        state=_in_use(2),
        classes=[MULTI],
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: capacity_with_range_policy("2")}))],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    # Only the device that has the capacity is allocated.
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        features=CONSUMABLE,
        claims=[claim(CLAIM0, all_device_request(REQ0, CLASS_A, capacity=_cap("2")))],
        classes=[MULTI],
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: _value("2")}), _multi(DEVICE2))],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share(REQ0, DEVICE1, _cap("2")))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(
        features=CONSUMABLE,
        claims=[claim(CLAIM0, all_device_request(REQ0, CLASS_A, capacity=_cap("2")))],
        classes=[MULTI],
        slices=[
            _on_node(_multi(DEVICE1, {CAPACITY0: _value("2")}), _multi(DEVICE2, {CAPACITY0: _value("1")}))
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share(REQ0, DEVICE1, _cap("2")))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        features=CONSUMABLE,
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, capacity=_cap("1")),
                all_device_request(REQ1, CLASS_A, capacity=_cap("1")),
            )
        ],
        classes=[PLAIN],
        slices=[
            _on_node(_multi(DEVICE1, {CAPACITY0: _value("2")}), _multi(DEVICE2, {CAPACITY0: _value("1")}))
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _share(REQ0, DEVICE1, _cap("1")),
                _share(REQ1, DEVICE1, _cap("1")),
                _share(REQ1, DEVICE2, _cap("1")),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        features=CONSUMABLE,
        state=_in_use(1),
        claims=[claim(CLAIM0, all_device_request(REQ0, CLASS_A, capacity=_cap("1")))],
        classes=[PLAIN],
        slices=[
            _on_node(_multi(DEVICE1, {CAPACITY0: _value("2")}), _multi(DEVICE2, {CAPACITY0: _value("1")}))
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share(REQ0, DEVICE1, _cap("1")), _share(REQ0, DEVICE2, _cap("1")))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(
        features=CONSUMABLE,
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, capacity=_cap("1")),
                all_device_request(REQ1, CLASS_A, capacity=_cap("1")),
            )
        ],
        classes=[PLAIN],
        slices=[
            _on_node(_multi(DEVICE1, {CAPACITY0: _value("1")}), _multi(DEVICE2, {CAPACITY0: _value("1")}))
        ],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        features=CONSUMABLE,
        state=_in_use(1),
        claims=[claim(CLAIM0, all_device_request(REQ0, CLASS_A, capacity=_cap("1")))],
        classes=[PLAIN],
        slices=[
            _on_node(_multi(DEVICE1, {CAPACITY0: _value("1")}), _multi(DEVICE2, {CAPACITY0: _value("1")}))
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share(REQ0, DEVICE2, _cap("1")))],
    ),
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "1")],
        classes=[DEDICATED],
        slices=[_on_node(device(DEVICE1, {CAPACITY0: "1"}))],
        node=node(NODE1, REGION1),
        expect=[local_allocation(device_allocation_result(REQ0, DRIVER_A, POOL1, DEVICE1))],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "1"), _capacity_claim(CLAIM1, REQ0, "1")],
        classes=[DEDICATED],
        slices=[_on_node({"name": DEVICE1, "capacity": {CAPACITY0: capacity_with_range_policy("2")}})],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "1")],
        classes=[DEDICATED],
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: _value("1")}))],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(
        features=CONSUMABLE,
        allocated=[DeviceID(DRIVER_A, POOL1, DEVICE1)],
        claims=[_capacity_claim(CLAIM0, REQ0, "1")],
        classes=[MULTI],
        slices=[_on_node(_multi(DEVICE1, {CAPACITY0: capacity_with_range_policy("2")}))],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(
        features=CONSUMABLE,
        claims=[_capacity_claim(CLAIM0, REQ0, "1")],
        state=_in_use(1),
        classes=[MULTI],
        slices=[_on_node({"name": DEVICE1, "capacity": {CAPACITY0: capacity_with_range_policy("2")}})],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "allow-multiple-allocations-with-partitionable-device": Case(
        features=ALL_THREE,
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1),
                request_with_prioritized_list(
                    REQ1,
                    sub_request(SUB_REQ0, CLASS_A, 1, memory_selector("6Gi")),
                    sub_request(SUB_REQ1, CLASS_A, 1, memory_selector("4Gi")),
                ),
            )
        ],
        classes=[MULTI],
        slices=[
            _on_node(
                *(
                    {
                        **counter_device(name, counter_consumption(COUNTER_SET1, {"memory": memory})),
                        "allowMultipleAllocations": True,
                    }
                    for name, memory in ((DEVICE1, "4Gi"), (DEVICE2, "6Gi"), (DEVICE3, "4Gi"))
                ),
                pool=resource_pool(POOL1, 2),
            ),
            slice_(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                shared_counters=[counter_set(COUNTER_SET1, {"memory": "8Gi"})],
            ),
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _share(REQ0, DEVICE1, {"memory": "4Gi"}),
                _share("req-1/subReq-1", DEVICE3, {"memory": "4Gi"}),
            )
        ],
    ),
    # Three devices draw on two counter sets of 4 (capacity-0) and 8 (capacity-1): device-1 and
    # device-3 fit together, device-2 only alone. capacity-1 is consumed in steps of the range
    # policy (2, 2, 4). req-0 gets 1 of device-1's capacity-0; req-2 needs 2 of capacity-0, which
    # device-1 no longer has and device-2's counters cannot give, so it gets device-3; req-1's
    # first alternative needs device-2, so its second takes device-1's last unit of capacity-0.
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        features=ALL_THREE,
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, capacity=_cap("1")),
                request(REQ2, CLASS_A, 1, capacity=_cap("2")),
                request_with_prioritized_list(
                    REQ1,
                    *(
                        sub_request(
                            sub,
                            CLASS_A,
                            1,
                            _capacity0_at_least(n),
                            capacity=_cap("1"),
                        )
                        for sub, n in ((SUB_REQ0, "4"), (SUB_REQ1, "2"))
                    ),
                ),
            )
        ],
        classes=[PLAIN],
        slices=[
            _on_node(
                *(
                    {
                        **counter_device(
                            name,
                            counter_consumption(COUNTER_SET1, {CAPACITY0: capacity0}),
                            counter_consumption(COUNTER_SET2, {CAPACITY1: "4"}),
                        ),
                        "allowMultipleAllocations": True,
                        "capacity": {
                            CAPACITY0: _value(capacity0),
                            CAPACITY1: capacity_with_range_policy("4"),
                        },
                    }
                    for name, capacity0 in ((DEVICE1, "2"), (DEVICE2, "4"), (DEVICE3, "2"))
                ),
                pool=resource_pool(POOL1, 2),
            ),
            slice_(
                SLICE2,
                NODE1,
                resource_pool(POOL1, 2),
                DRIVER_A,
                shared_counters=[
                    counter_set(COUNTER_SET1, {CAPACITY0: "4"}),
                    counter_set(COUNTER_SET2, {CAPACITY1: "8"}),
                ],
            ),
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _share(REQ0, DEVICE1, {CAPACITY0: "1", CAPACITY1: "2"}),
                _share(REQ2, DEVICE3, {CAPACITY0: "2", CAPACITY1: "2"}),
                _share("req-1/subReq-1", DEVICE1, {CAPACITY0: "1", CAPACITY1: "2"}),
            )
        ],
    ),
    "with-distinct-constraints": Case(
        features=CONSUMABLE,
        claims=[
            claim(
                CLAIM0,
                *(request(r, CLASS_A, 1) for r in (REQ0, REQ1, REQ2, REQ3)),
                constraints=[
                    distinct_attribute(BOOL_ATTRIBUTE, REQ0, REQ1),
                    distinct_attribute(VERSION_ATTRIBUTE, REQ0, REQ1, REQ2),
                    distinct_attribute(INT_ATTRIBUTE, REQ0, REQ1, REQ2, REQ3),
                ],
            )
        ],
        classes=[PLAIN],
        slices=[
            _on_node(
                *(
                    _multi(
                        name,
                        attributes=_attrs(
                            driverVersion=("version", version),
                            numa=("int", numa),
                            boolAttribute=("bool", flag),
                        ),
                    )
                    for name, version, numa, flag in (
                        (DEVICE1, "1.0.0", 0, True),
                        (DEVICE2, "1.0.1", 1, False),
                        (DEVICE3, "1.0.2", 2, True),
                        (DEVICE4, "1.0.0", 3, True),
                    )
                )
            )
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _share(REQ0, DEVICE1, None),
                _share(REQ1, DEVICE2, None),
                _share(REQ2, DEVICE3, None),
                _share(REQ3, DEVICE4, None),
            )
        ],
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        features=CONSUMABLE,
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1), constraints=[distinct_attribute(BOOL_ATTRIBUTE, REQ0)])
        ],
        classes=[PLAIN],
        slices=[_on_node(_multi(DEVICE1))],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "with-distinct-constraints-unknown-type-attribute": Case(
        features=CONSUMABLE,
        claims=[
            claim(CLAIM0, request(REQ0, CLASS_A, 1), constraints=[distinct_attribute(BOOL_ATTRIBUTE, REQ0)])
        ],
        classes=[PLAIN],
        slices=[with_attribute(_on_node(_multi(DEVICE1)), 0, "boolAttribute", None)],
        node=node(NODE1, REGION1),
        expect_error="unsupported attribute value",
    ),
    # All three requests prefer a device with boolAttribute, but the constraint only covers the
    # first two: req-1 falls back to device-2, req-2 may share device-1.
    "with-distinct-constraints-with-subrequests": Case(
        features=CONSUMABLE_PRIORITIZED,
        claims=[
            claim(
                CLAIM0,
                *(
                    request_with_prioritized_list(
                        r,
                        sub_request(
                            SUB_REQ0, CLASS_A, 1, cel(f'device.attributes["{DRIVER_A}"].boolAttribute')
                        ),
                        sub_request(SUB_REQ1, CLASS_A, 1),
                    )
                    for r in (REQ0, REQ1, REQ2)
                ),
                constraints=[distinct_attribute(BOOL_ATTRIBUTE, REQ0, REQ1)],
            )
        ],
        classes=[PLAIN],
        slices=[
            _on_node(
                _multi(DEVICE1, attributes=_attrs(boolAttribute=("bool", True))),
                _multi(DEVICE2, attributes=_attrs(boolAttribute=("bool", False))),
            )
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                _share("req-0/subReq-0", DEVICE1, None),
                _share("req-1/subReq-1", DEVICE2, None),
                _share("req-2/subReq-0", DEVICE1, None),
            )
        ],
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        features=CONSUMABLE,
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, capacity=_cap("1")),
                request(REQ1, CLASS_A, 1, capacity=_cap("1")),
                constraints=[distinct_attribute(STRING_ATTRIBUTE)],
            )
        ],
        classes=[MULTI],
        slices=[
            _on_node(
                _multi(
                    DEVICE1,
                    {CAPACITY0: capacity_with_range_policy("2")},
                    attributes=_attrs(stringAttribute=("string", "stringAttributeValue")),
                )
            )
        ],
        node=node(NODE1, REGION1),
        expect=None,
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        features=CONSUMABLE,
        claims=[
            claim(
                CLAIM0,
                request(REQ0, CLASS_A, 1, capacity=_cap("2")),
                request(REQ1, CLASS_A, 1, capacity=_cap("2")),
                constraints=[distinct_attribute(STRING_ATTRIBUTE)],
            )
        ],
        classes=[MULTI],
        slices=[
            _on_node(
                _multi(
                    name,
                    {CAPACITY0: capacity_with_range_policy("4")},
                    attributes=_attrs(stringAttribute=("string", value)),
                ),
                pool=resource_pool(POOL1, 2),
            )
            for name, value in ((DEVICE1, "stringAttributeValue1"), (DEVICE2, "stringAttributeValue2"))
        ],
        node=node(NODE1, REGION1),
        expect=[local_allocation(_share(REQ0, DEVICE1, _cap("2")), _share(REQ1, DEVICE2, _cap("2")))],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocator(name: str) -> None:
    run_case(CASES[name])
