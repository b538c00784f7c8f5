"""Consumable capacity (DRAConsumableCapacity): how much of each capacity a request consumes on a
device, rounded up by the capacity's ``requestPolicy``, and whether it still fits beside what is
allocated and what this allocation already took (upstream ``consumable_capacity.go``).

Amounts are exact fractions, so a range with a fractional step rounds exactly as upstream's
milli-value arithmetic does for the values the API accepts.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction

from kubesched.api.resource import CapacityRequestPolicy, CapacityRequestPolicyRange, Device, DeviceCapacity

_ZERO = Fraction(0)


def resolve_device_capacity(driver: str, device: Device) -> dict[str, str]:
    """Fully-qualified capacity name → the name the device published it under. A name qualified
    with the driver's own domain wins over the same name without a domain."""
    resolved: dict[str, str] = {}
    prefix = driver + "/"
    for name in device.capacity:
        if name.startswith(prefix):
            resolved[name] = name
    for name in device.capacity:
        if "/" in name:
            if not name.startswith(prefix):
                resolved.setdefault(name, name)
            continue
        resolved.setdefault(prefix + name, name)
    return resolved


def resolve_capacity_requests(
    requests: Mapping[str, Fraction] | None, driver: str, device: Device
) -> dict[str, Fraction] | None:
    """The requested amounts keyed by the device's published capacity name; None when the device
    lacks a requested capacity (or the request names one capacity twice) and so cannot serve it."""
    if not requests:
        return {}
    out: dict[str, Fraction] = {}
    capacity = device.capacity
    for name, amount in requests.items():
        published: str | None = None
        if name in capacity:
            published = name
        else:
            domain, sep, ident = name.partition("/")
            if sep:
                if domain == driver and ident in capacity:
                    published = ident
            elif f"{driver}/{name}" in capacity:
                published = f"{driver}/{name}"
        if published is None or published in out:
            return None
        out[published] = amount
    return out


def _round_up_range(requested: Fraction, valid_range: CapacityRequestPolicyRange) -> Fraction:
    if requested < valid_range.min:
        return valid_range.min
    if valid_range.step is None or valid_range.step <= 0:
        return requested
    steps = math.ceil((requested - valid_range.min) / valid_range.step)
    return valid_range.min + steps * valid_range.step


def consumed_amount(requested: Fraction | None, capacity: DeviceCapacity) -> Fraction:
    """What a request consumes of one capacity: the default (or everything) when it asks for
    nothing, else its amount rounded up to the next value the policy allows."""
    policy = capacity.request_policy
    if requested is None:
        if policy is not None and policy.default is not None:
            return policy.default
        return capacity.value
    if policy is None:
        return requested
    if policy.valid_range is not None:
        return _round_up_range(requested, policy.valid_range)
    if policy.valid_values:
        for value in policy.valid_values:
            if requested <= value:
                return value
    return requested


def violates_policy(consumed: Fraction, policy: CapacityRequestPolicy | None) -> bool:
    if policy is None:
        return False
    if policy.default is not None and consumed == policy.default:
        return False
    if policy.valid_range is not None:
        valid_range = policy.valid_range
        if valid_range.max is not None and consumed > valid_range.max:
            return True
        step = valid_range.step
        return step is not None and step > 0 and (consumed - valid_range.min) % step != 0
    if policy.valid_values:
        return consumed not in policy.valid_values
    return False


def request_fits(
    requests: Mapping[str, Fraction] | None,
    driver: str,
    device: Device,
    allocated: Mapping[str, Fraction] | None,
    allocating: Mapping[str, Fraction] | None,
) -> bool:
    """Upstream ``CmpRequestOverCapacity``: every capacity of the device can take what the request
    consumes of it on top of the allocated and the in-flight amounts, within its policy."""
    resolved = resolve_capacity_requests(requests, driver, device)
    if resolved is None:
        return False
    for name, capacity in device.capacity.items():
        consumed = consumed_amount(resolved.get(name), capacity)
        if violates_policy(consumed, capacity.request_policy):
            return False
        total = consumed
        if allocated:
            total += allocated.get(name, _ZERO)
        if allocating:
            total += allocating.get(name, _ZERO)
        if total > capacity.value:
            return False
    return True


def consumed_capacity(
    requests: Mapping[str, Fraction] | None, driver: str, device: Device
) -> dict[str, Fraction]:
    """Upstream ``GetConsumedCapacityFromRequest``: what one allocation consumes of every capacity
    of the device, by the name the device publishes it under."""
    resolved = resolve_capacity_requests(requests, driver, device) or {}
    return {name: consumed_amount(resolved.get(name), capacity) for name, capacity in device.capacity.items()}
