"""Upstream's ``consumable_capacity_test.go`` (``TestConsumableCapacity``), the sub-tests that
exist for whole-number quantities, names verbatim: shares added and removed, what a request
consumes of each capacity of a device, and which amounts a request policy refuses."""

from __future__ import annotations

from fractions import Fraction

import pytest

from kubesched.api.resource import CapacityRequestPolicy, CapacityRequestPolicyRange, Device, DeviceCapacity
from kubesched.plugins.dynamicresources import capacity
from kubesched.plugins.dynamicresources.allocated_state import ConsumedCapacity, add_capacity, sub_capacity

DRIVER_A = "driver-a"
CAPACITY0, CAPACITY1 = "capacity-0", "capacity-1"
ONE, TWO, THREE = Fraction(1), Fraction(2), Fraction(3)


def _policy(
    default: Fraction | None = None,
    *,
    minimum: Fraction | None = None,
    maximum: Fraction | None = None,
    step: Fraction | None = None,
    valid_values: tuple[Fraction, ...] = (),
) -> CapacityRequestPolicy:
    valid_range = None
    if minimum is not None:
        valid_range = CapacityRequestPolicyRange(min=minimum, max=maximum, step=step)
    return CapacityRequestPolicy(default=default, valid_values=valid_values, valid_range=valid_range)


def test_add_sub_allocating_consumed_capacity() -> None:
    """add-sub-allocating-consumed-capacity"""
    allocated: ConsumedCapacity = {}
    one = {f"{DRIVER_A}/{CAPACITY0}": ONE}
    add_capacity(allocated, one)
    assert any(allocated.values()), "capacity is added"
    sub_capacity(allocated, one)
    assert not any(allocated.values()), "capacity is subtracted to zero"


def test_insert_remove_allocating_consumed_capacity_collection() -> None:
    """insert-remove-allocating-consumed-capacity-collection"""
    aggregated: dict[str, ConsumedCapacity] = {}
    share = {CAPACITY0: ONE}
    add_capacity(aggregated.setdefault("device-1", {}), share)
    add_capacity(aggregated.setdefault("device-1", {}), share)
    assert aggregated["device-1"][CAPACITY0] == TWO
    sub_capacity(aggregated["device-1"], share)
    assert aggregated["device-1"][CAPACITY0] == ONE


def test_get_consumed_capacity_from_request() -> None:
    """get-consumed-capacity-from-request: the requested amount where the request names the
    capacity (fully qualified with the driver's domain), else the policy's default, else all of it."""
    device = Device(
        name="device-1",
        capacity={
            CAPACITY0: DeviceCapacity(value=TWO, request_policy=_policy(TWO, minimum=ONE)),
            CAPACITY1: DeviceCapacity(value=TWO, request_policy=_policy(ONE, minimum=ONE)),
            "dummy": DeviceCapacity(value=ONE),
        },
    )
    requests = {f"{DRIVER_A}/{CAPACITY0}": ONE, f"{DRIVER_A}/dummy": ONE}
    consumed = capacity.consumed_capacity(requests, DRIVER_A, device)
    assert consumed == {CAPACITY0: ONE, CAPACITY1: ONE, "dummy": ONE}


VIOLATE_CAPACITY_SHARING: dict[str, tuple[Fraction, CapacityRequestPolicy | None, bool]] = {
    "no constraint": (ONE, None, False),
    "less than maximum": (ONE, _policy(ONE, minimum=ONE, maximum=TWO), False),
    "more than maximum": (TWO, _policy(ONE, minimum=ONE, maximum=ONE), True),
    "in set": (ONE, _policy(ONE, valid_values=(ONE,)), False),
    "not in set": (TWO, _policy(ONE, valid_values=(ONE,)), True),
}


@pytest.mark.parametrize("name", list(VIOLATE_CAPACITY_SHARING))
def test_violate_capacity_sharing(name: str) -> None:
    requested, policy, violates = VIOLATE_CAPACITY_SHARING[name]
    assert capacity.violates_policy(requested, policy) is violates


CALCULATE_CONSUMED_CAPACITY: dict[str, tuple[Fraction | None, Fraction, CapacityRequestPolicy, Fraction]] = {
    "empty": (None, ONE, _policy(), ONE),
    "min in range": (None, TWO, _policy(ONE, minimum=ONE), ONE),
    "default in set": (None, TWO, _policy(ONE, valid_values=(ONE,)), ONE),
    "more than min in range": (TWO, TWO, _policy(ONE, minimum=ONE), TWO),
    "less than min in range": (ONE, TWO, _policy(ONE, minimum=TWO), TWO),
    "with step (round up)": (TWO, THREE, _policy(ONE, minimum=ONE, step=TWO), THREE),
    "with step (no remaining)": (TWO, TWO, _policy(ONE, minimum=ONE, step=ONE), TWO),
    "valid value in set": (TWO, THREE, _policy(ONE, valid_values=(ONE, TWO, THREE)), TWO),
    "set (round up)": (TWO, THREE, _policy(ONE, valid_values=(ONE, THREE)), THREE),
    "larger than set": (THREE, THREE, _policy(ONE, valid_values=(ONE, TWO)), THREE),
}


@pytest.mark.parametrize("name", list(CALCULATE_CONSUMED_CAPACITY))
def test_calculate_consumed_capacity(name: str) -> None:
    requested, value, policy, expected = CALCULATE_CONSUMED_CAPACITY[name]
    consumed = capacity.consumed_amount(requested, DeviceCapacity(value=value, request_policy=policy))
    assert consumed == expected
