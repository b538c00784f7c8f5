"""The DRA state one scheduler shares between its profiles (upstream ``DefaultDRAManager`` with
``dra_manager.go`` and ``allocateddevices.go``): the ResourceClaim assume cache, the claims whose
allocation is in flight, and the devices allocated by claims, kept up to date from the cache's
events so that a cycle does not walk every claim.

- The **assume cache** holds every claim as the informer delivered it, or as PreBind wrote it
  before the informer caught up: the next pod's cycle already sees that allocation.
- **In-flight allocations** are claims Reserve allocated in memory whose PreBind has not written
  them yet: their devices count as taken, and a second pod sharing such a claim waits for the
  write ("is in the process of being allocated") instead of racing it.
- **Allocated devices** are the devices of every allocated claim (admin access excepted: such a
  device stays available to others), plus, with consumable capacity, the shared allocations and the
  capacity they consume.

One manager serves every framework built over one set of informers (:func:`dra_manager`), so
profiles of one scheduler never hand out one device twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from fractions import Fraction
from typing import Any

from kubesched.api.resource import AllocationResult, DeviceClass, ResourceClaim, ResourceSlice
from kubesched.plugins.dynamicresources.allocated_state import AllocatedState, DeviceID, SharedDeviceID
from kubesched.plugins.dynamicresources.allocator import DeviceCache
from kubesched.plugins.dynamicresources.node_cache import DraStamps, NodeAnswers
from kubesched.plugins.dynamicresources.pools import SliceIndex
from kubesched.plugins.helper.assume_cache import AssumeCache, AssumeCacheError, NotFoundError
from kubesched.store.base import EventType
from kubesched.store.informers import Change, InformerFactory

#: How upstream's scheduler names the claim cache's objects in its errors.
CLAIM_DESCRIPTION = "ResourceClaim"


def foreach_allocated_device(
    allocation: AllocationResult | None,
    on_device: Callable[[DeviceID], None],
    on_shared: Callable[[SharedDeviceID], None] | None = None,
    on_capacity: Callable[[DeviceID, dict[str, Fraction]], None] | None = None,
) -> None:
    """Every device an allocation takes: admin access takes none (upstream
    ``foreachAllocatedDevice``). A result with a share id is a shared allocation of a device with
    consumable capacity: it takes its share and its capacity, not the whole device. Without the
    ``on_shared`` callback (consumable capacity off) every result takes its whole device."""
    if allocation is None:
        return
    for result in allocation.results:
        if result.admin_access:
            continue
        device = DeviceID(result.driver, result.pool, result.device)
        if result.share_id is not None and on_shared is not None:
            on_shared(SharedDeviceID(*device, result.share_id))
            if on_capacity is not None and result.consumed_capacity:
                on_capacity(device, dict(result.consumed_capacity))
            continue
        on_device(device)


class AllocatedDevices:
    """The devices of allocated claims, counted per device so that two claims naming one device
    (which only an API user can write) and the removal of one of them keep the other's."""

    def __init__(self, consumable_capacity: bool) -> None:
        self.consumable_capacity = consumable_capacity
        self._lock = threading.Lock()
        self._devices: dict[DeviceID, int] = {}
        self._shared: dict[SharedDeviceID, int] = {}
        self._capacity: dict[DeviceID, dict[str, Fraction]] = {}

    def _apply(self, claim: object, sign: int) -> None:
        if not isinstance(claim, ResourceClaim) or claim.allocation is None:
            return

        def device(d: DeviceID) -> None:
            _count(self._devices, d, sign)

        def shared(s: SharedDeviceID) -> None:
            _count(self._shared, s, sign)

        def capacity(d: DeviceID, consumed: dict[str, Fraction]) -> None:
            held = self._capacity.setdefault(d, {})
            for name, amount in consumed.items():
                left = held.get(name, Fraction(0)) + sign * amount
                if left:
                    held[name] = left
                else:
                    held.pop(name, None)
            if not held:
                del self._capacity[d]

        if self.consumable_capacity:
            foreach_allocated_device(claim.allocation, device, shared, capacity)
        else:
            foreach_allocated_device(claim.allocation, device)

    # The assume cache's EventHandler.
    def on_add(self, obj: Any, initial_list: bool) -> None:
        with self._lock:
            self._apply(obj, 1)

    def on_update(self, old: Any, new: Any) -> None:
        with self._lock:
            self._apply(old, -1)
            self._apply(new, 1)

    def on_delete(self, obj: Any) -> None:
        with self._lock:
            self._apply(obj, -1)

    def snapshot(self) -> tuple[set[DeviceID], set[SharedDeviceID], dict[DeviceID, dict[str, Fraction]]]:
        with self._lock:
            return (
                set(self._devices),
                set(self._shared),
                {d: dict(c) for d, c in self._capacity.items()},
            )


def _count(counts: dict[Any, int], key: Any, sign: int) -> None:
    n = counts.get(key, 0) + sign
    if n > 0:
        counts[key] = n
    else:
        counts.pop(key, None)


class DraManager:
    """Claims, slices and classes as the plugin reads them, and the allocations it has in flight."""

    def __init__(self, informers: InformerFactory, consumable_capacity: bool = False) -> None:
        self.informers = informers
        self.consumable_capacity = consumable_capacity
        self.claims = AssumeCache(informers.informer("ResourceClaim"), CLAIM_DESCRIPTION)
        self.allocated = AllocatedDevices(consumable_capacity)
        self.claims.add_event_handler(self.allocated)
        #: What selectors say about devices, kept while their slices stay the same objects.
        self.device_cache = DeviceCache()
        #: The allocator's answers per node, and the stamps that say when one is out of date.
        self.stamps = DraStamps()
        self.node_answers = NodeAnswers()
        self.claims.add_event_handler(self.stamps)
        #: The slices sorted by how they select nodes, and the nodes named by slices (None: some
        #: slice may serve any node), rebuilt after a slice changed.
        self._slice_index: tuple[SliceIndex, frozenset[str] | None] | None = None
        self._slices_generation = 0
        self._slice_lock = threading.Lock()
        informers.informer("ResourceSlice").add_handler(self._on_slice)
        informers.informer("DeviceClass").add_handler(self._on_class)
        self._lock = threading.Lock()
        #: claim uid → the claim as Reserve allocated it, until PreBind wrote it (or Unreserve).
        self._in_flight: dict[str, ResourceClaim] = {}

    def _on_slice(self, change: Change[Any]) -> None:
        gone = change.old_view if change.type != EventType.ADDED else None
        if isinstance(gone, ResourceSlice):
            self.device_cache.forget([gone])
        with self._slice_lock:
            self._slices_generation += 1
            self._slice_index = None
        if change.type == EventType.DELETED:
            old, new = change.old_view or change.view, None
        else:
            old, new = change.old_view, change.view
        self.stamps.slice_changed(
            old if isinstance(old, ResourceSlice) else None, new if isinstance(new, ResourceSlice) else None
        )

    def _on_class(self, change: Change[Any]) -> None:
        self.stamps.class_changed()

    # -- claims -----------------------------------------------------------------------------------
    def get_claim(self, namespace: str, name: str) -> ResourceClaim:
        """The latest version of a claim; raises the cache's ``NotFoundError`` (upstream's error
        text) when there is none."""
        claim = self.claims.get(f"{namespace}/{name}")
        if not isinstance(claim, ResourceClaim):
            raise NotFoundError(CLAIM_DESCRIPTION, f"{namespace}/{name}")
        return claim

    def find_claim(self, namespace: str, name: str) -> ResourceClaim | None:
        try:
            return self.get_claim(namespace, name)
        except AssumeCacheError:
            return None

    def list_claims(self) -> list[ResourceClaim]:
        return [c for c in self.claims.list() if isinstance(c, ResourceClaim)]

    def api_claim(self, claim: ResourceClaim) -> ResourceClaim | None:
        """The informer's version of a claim (not an assumed one)."""
        try:
            api = self.claims.get_api_obj(claim.key)
        except AssumeCacheError:
            return None
        return api if isinstance(api, ResourceClaim) else None

    def assume_claim_after_api_call(self, claim: ResourceClaim) -> None:
        """Remember a claim as PreBind wrote it until the informer delivers it."""
        self.claims.assume(claim)

    def assumed_claim_restore(self, namespace: str, name: str) -> None:
        self.claims.restore(f"{namespace}/{name}")

    # -- in-flight allocations --------------------------------------------------------------------
    def claim_has_pending_allocation(self, uid: str) -> bool:
        with self._lock:
            return uid in self._in_flight

    def signal_claim_pending_allocation(self, uid: str, claim: ResourceClaim) -> None:
        with self._lock:
            before = self._in_flight.get(uid)
            self._in_flight[uid] = claim
        self.stamps.allocation_changed(before.allocation if before is not None else None, claim.allocation)

    def remove_claim_pending_allocation(self, uid: str) -> bool:
        with self._lock:
            gone = self._in_flight.pop(uid, None)
        if gone is None:
            return False
        self.stamps.allocation_changed(gone.allocation)
        return True

    def in_flight_claims(self) -> list[ResourceClaim]:
        with self._lock:
            return list(self._in_flight.values())

    def allocated_state(self) -> AllocatedState:
        """Upstream ``GatherAllocatedState``: what allocated claims and in-flight allocations
        take, as the allocator starts from."""
        devices, shared, capacity = self.allocated.snapshot()

        def add_capacity(d: DeviceID, consumed: dict[str, Fraction]) -> None:
            held = capacity.setdefault(d, {})
            for name, amount in consumed.items():
                held[name] = held.get(name, Fraction(0)) + amount

        for claim in self.in_flight_claims():
            if self.consumable_capacity:
                foreach_allocated_device(claim.allocation, devices.add, shared.add, add_capacity)
            else:
                foreach_allocated_device(claim.allocation, devices.add)
        return AllocatedState(devices, shared, capacity)

    # -- classes and slices -----------------------------------------------------------------------
    def device_class(self, name: str) -> DeviceClass | None:
        view = self.informers.informer("DeviceClass").get(None, name)
        return view if isinstance(view, DeviceClass) else None

    def device_classes(self) -> dict[str, DeviceClass]:
        return {
            c.name: c for c in self.informers.informer("DeviceClass").list() if isinstance(c, DeviceClass)
        }

    def slice_index(self) -> tuple[SliceIndex, frozenset[str] | None]:
        """The slices indexed for the allocator, and the names of the nodes slices name (None
        when some slice serves nodes otherwise): the same objects until a slice changes."""
        with self._slice_lock:
            cached, generation = self._slice_index, self._slices_generation
        if cached is not None:
            return cached
        slices = self.resource_slices()
        named = frozenset(s.node_name for s in slices) if all(s.node_name for s in slices) else None
        built = (SliceIndex(slices), named)
        with self._slice_lock:
            if generation == self._slices_generation:
                self._slice_index = built
        return built

    def resource_slices(self) -> list[ResourceSlice]:
        return [s for s in self.informers.informer("ResourceSlice").list() if isinstance(s, ResourceSlice)]


def dra_manager(informers: InformerFactory, consumable_capacity: bool = False) -> DraManager:
    """The one manager of a set of informers (created on first use)."""
    return informers.shared(DraManager, lambda: DraManager(informers, consumable_capacity))
