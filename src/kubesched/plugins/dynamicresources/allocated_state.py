"""What is already allocated: the devices claims hold, the shares of devices that allow multiple
allocations, and the capacity those shares consume (upstream ``structured/internal``'s
``AllocatedState``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from kubesched.api.resource import ResourceClaim


class DeviceID(NamedTuple):
    """A device is named by its driver, its pool and its name in the pool."""

    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


class SharedDeviceID(NamedTuple):
    """One share of a device that allows multiple allocations ("" share for an unshared one)."""

    driver: str
    pool: str
    device: str
    share_id: str

    def __str__(self) -> str:
        text = f"{self.driver}/{self.pool}/{self.device}"
        return f"{text}/{self.share_id}" if self.share_id else text


#: Capacity name (as the device publishes it) → amount.
ConsumedCapacity = dict[str, Fraction]


def add_capacity(into: ConsumedCapacity, amounts: Mapping[str, Fraction]) -> None:
    for name, amount in amounts.items():
        into[name] = into.get(name, Fraction(0)) + amount


def sub_capacity(into: ConsumedCapacity, amounts: Mapping[str, Fraction]) -> None:
    """Subtract; names not present are ignored, as upstream's ``ConsumedCapacity.Sub``."""
    for name, amount in amounts.items():
        if name in into:
            into[name] -= amount


@dataclass(slots=True)
class AllocatedState:
    allocated_devices: set[DeviceID] = field(default_factory=set)
    allocated_shared: set[SharedDeviceID] = field(default_factory=set)
    #: Per device allowing multiple allocations: the capacity its current shares consume.
    aggregated_capacity: dict[DeviceID, ConsumedCapacity] = field(default_factory=dict)

    def add_claim(self, claim: ResourceClaim, *, consumable_capacity: bool = True) -> None:
        """Account for an allocated claim (upstream's ``foreachAllocatedDevice``): an admin-access
        result adds nothing (it does not make a device unavailable), a shared one (with
        DRAConsumableCapacity) its share and consumed capacity, any other its device."""
        if claim.allocation is None:
            return
        for result in claim.allocation.results:
            if result.admin_access:
                continue
            device = DeviceID(result.driver, result.pool, result.device)
            if consumable_capacity and result.share_id is not None:
                self.allocated_shared.add(SharedDeviceID(*device, result.share_id))
                if result.consumed_capacity is not None:
                    add_capacity(self.aggregated_capacity.setdefault(device, {}), result.consumed_capacity)
                continue
            self.allocated_devices.add(device)

    @classmethod
    def from_claims(
        cls, claims: Iterable[ResourceClaim], *, consumable_capacity: bool = True
    ) -> AllocatedState:
        state = cls()
        for claim in claims:
            state.add_claim(claim, consumable_capacity=consumable_capacity)
        return state
