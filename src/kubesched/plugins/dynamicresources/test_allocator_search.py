"""Upstream's allocator table (``allocatortesting/allocator_testing.go``), the cases that count
how often the search tries to place a device (``NumAllocateOneInvocations``): the devices of one
request are tried as combinations, never as permutations of the same set. Case names verbatim;
the counts are upstream's for its current allocators."""

from __future__ import annotations

from typing import Any

import pytest

from kubesched.plugins.dynamicresources.allocator import AllocatorFeatures
from kubesched.plugins.dynamicresources.allocator_testing import (
    CLAIM0,
    CLASS_A,
    DEVICE1,
    DEVICE2,
    DEVICE3,
    DEVICE4,
    DRIVER_A,
    NO_FEATURES,
    NODE1,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SLICE3,
    SLICE4,
    SUB_REQ0,
    SUB_REQ1,
    Case,
    cel,
    claim,
    device,
    device_allocation_result,
    device_class,
    local_allocation,
    node,
    request,
    request_with_prioritized_list,
    resource_pool,
    run_case,
    slice_,
    sub_request,
)

PRIORITIZED = AllocatorFeatures(admin_access=False, prioritized_list=True)
BINDING = AllocatorFeatures(admin_access=False, prioritized_list=False, device_binding_and_status=True)


def _typed(name: str, kind: str, **extra: Any) -> dict[str, Any]:
    return device(name, None, {"type": {"string": kind}}, **extra)


def _type_is(kind: str) -> dict[str, Any]:
    return cel(f'device.attributes["{DRIVER_A}"].type == "{kind}"')


def _five_of_four(*slices: Any) -> Case:
    """Five devices asked of four: no solution, found after trying each set of them once."""
    return Case(
        claims=[claim(CLAIM0, request(REQ0, CLASS_A, 5))],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=list(slices),
        node=node(NODE1, REGION1),
        expect=None,
        expect_allocate_one_calls=16,
    )


# The order of the devices makes the search first pick {device-1, device-2} for req-1, which fails
# because req-2 needs device-1; the solution is {device-2, device-3} for req-1 and device-1 for
# req-2, found without trying {device-2, device-1}.
_BACKTRACKING_CLAIM = claim(CLAIM0, request(REQ1, CLASS_A, 2), request(REQ2, CLASS_A, 1, _type_is("X")))

CASES: dict[str, Case] = {
    "check-combinations-within-single-request-single-pool-single-slice": _five_of_four(
        slice_(
            SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1), device(DEVICE2), device(DEVICE3), device(DEVICE4)
        )
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": _five_of_four(
        slice_(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1), device(DEVICE2)),
        slice_(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE3), device(DEVICE4)),
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": _five_of_four(
        slice_(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE1)),
        slice_(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, device(DEVICE2)),
        slice_(SLICE3, NODE1, POOL2, DRIVER_A, device(DEVICE3), device(DEVICE4)),
    ),
    "check-combinations-within-single-request-many-pools": _five_of_four(
        slice_(SLICE1, NODE1, POOL1, DRIVER_A, device(DEVICE1)),
        slice_(SLICE2, NODE1, POOL2, DRIVER_A, device(DEVICE2)),
        slice_(SLICE3, NODE1, POOL3, DRIVER_A, device(DEVICE3)),
        slice_(SLICE4, NODE1, POOL4, DRIVER_A, device(DEVICE4)),
    ),
    "check-combinations-with-backtracking": Case(
        features=NO_FEATURES,
        claims=[_BACKTRACKING_CLAIM],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                _typed(DEVICE1, "X"),
                _typed(DEVICE2, "Y"),
                _typed(DEVICE3, "Y"),
            )
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2),
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE3),
                device_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        expect_allocate_one_calls=12,
    ),
    # A binding condition puts pool-2 after pool-1 in the search, whatever the pool names.
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        features=BINDING,
        claims=[_BACKTRACKING_CLAIM],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(SLICE1, NODE1, resource_pool(POOL1, 2), DRIVER_A, _typed(DEVICE1, "X")),
            slice_(SLICE2, NODE1, resource_pool(POOL1, 2), DRIVER_A, _typed(DEVICE2, "Y")),
            slice_(
                SLICE3,
                NODE1,
                POOL2,
                DRIVER_A,
                _typed(DEVICE3, "Y", bindingConditions=["IsPrepare"], bindingFailureConditions=[]),
            ),
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                device_allocation_result(REQ1, DRIVER_A, POOL1, DEVICE2),
                device_allocation_result(REQ1, DRIVER_A, POOL2, DEVICE3, binding_conditions=["IsPrepare"]),
                device_allocation_result(REQ2, DRIVER_A, POOL1, DEVICE1),
            )
        ],
        expect_allocate_one_calls=12,
    ),
    "check-combinations-with-prioritized-list": Case(
        features=PRIORITIZED,
        claims=[
            claim(
                CLAIM0,
                # The first alternative cannot be satisfied (too few devices of type Y), which
                # the search finds out only after trying them all.
                request_with_prioritized_list(
                    REQ1, sub_request(SUB_REQ0, CLASS_A, 3, _type_is("Y")), sub_request(SUB_REQ1, CLASS_A, 2)
                ),
                # The first alternative asks for too many devices, so the second is chosen.
                request_with_prioritized_list(
                    REQ2, sub_request(SUB_REQ0, CLASS_A, 2), sub_request(SUB_REQ1, CLASS_A, 1, _type_is("X"))
                ),
            )
        ],
        classes=[device_class(CLASS_A, DRIVER_A)],
        slices=[
            slice_(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                _typed(DEVICE1, "X"),
                _typed(DEVICE2, "Y"),
                _typed(DEVICE3, "Y"),
            )
        ],
        node=node(NODE1, REGION1),
        expect=[
            local_allocation(
                device_allocation_result("req-1/subReq-1", DRIVER_A, POOL1, DEVICE2),
                device_allocation_result("req-1/subReq-1", DRIVER_A, POOL1, DEVICE3),
                device_allocation_result("req-2/subReq-1", DRIVER_A, POOL1, DEVICE1),
            )
        ],
        expect_allocate_one_calls=26,
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocator(name: str) -> None:
    run_case(CASES[name])
