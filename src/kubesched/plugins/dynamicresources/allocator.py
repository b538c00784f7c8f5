"""Upstream's structured allocator (``k8s.io/dynamic-resource-allocation/structured``): which
devices a pod's unallocated claims get on one node.

The search is upstream's: claims in order, each claim's requests in order, each request's devices
one after the other; for every device the pools are walked in order (driver, pool, slice name,
device order in the slice) and the first device that is free, matches the class's and the
request's CEL selectors, reaches the node, fits the counters and the capacity, tolerates the
device's taints and keeps the claim's constraints satisfied is taken tentatively, then the search
recurses; a dead end undoes the choice and tries the next device. The first complete solution wins,
so the same inputs give the same devices as kube-scheduler. ``firstAvailable`` tries each
sub-request in order; ``allocationMode: All`` takes every matching device or nothing.

An :class:`Allocator` is built once per scheduling cycle (the allocated devices, the classes and
the slices) and asked once per candidate node. Per-device work that does not depend on the node
or the pod is done once and shared through a :class:`DeviceCache`: the CEL view of each device
and each selector's verdict on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Final

from kubesched.api.dra_cel import CELDevice, CELError, compile_selector
from kubesched.api.objects import Node
from kubesched.api.resource import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    ALLOCATION_RESULTS_MAX_SIZE,
    CONFIG_SOURCE_CLAIM,
    CONFIG_SOURCE_CLASS,
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    AllocationResult,
    Device,
    DeviceClass,
    DeviceRequestAllocationResult,
    DeviceSubRequest,
    ExactDeviceRequest,
    ResourceClaim,
    ResourceSlice,
)
from kubesched.plugins.dynamicresources import capacity
from kubesched.plugins.dynamicresources.allocated_state import (
    AllocatedState,
    ConsumedCapacity,
    DeviceID,
    add_capacity,
    sub_capacity,
)
from kubesched.plugins.dynamicresources.constraints import Constraint, DistinctAttribute, MatchAttribute
from kubesched.plugins.dynamicresources.pools import Pool, SliceIndex, gather_pools, node_matches

__all__ = [
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "AllocatorFeatures",
    "DeviceCache",
    "DeviceID",
    "NodeAllocationFailure",
]


class AllocationError(Exception):
    """Allocation cannot proceed for the pod on any node (an unknown class, a CEL error, …); the
    message is upstream's."""


class NodeAllocationFailure(AllocationError):
    """Allocation failed on this node for a reason worth telling the user (upstream wraps these
    in ``ErrFailedAllocationOnNode``); other nodes may still work."""


@dataclass(frozen=True, slots=True)
class AllocatorFeatures:
    """One flag per feature gate the allocator honours."""

    #: DRAAdminAccess
    admin_access: bool = True
    #: DRAPrioritizedList
    prioritized_list: bool = True
    #: DRAPartitionableDevices
    partitionable_devices: bool = False
    #: DRADeviceTaints
    device_taints: bool = False
    #: DRADeviceBindingConditions together with DRAResourceClaimDeviceStatus
    device_binding_and_status: bool = False
    #: DRAConsumableCapacity
    consumable_capacity: bool = False


class DeviceCache:
    """What a selector says about a device, kept across allocations (and scheduling cycles, while
    the same slice objects are in use): the CEL view of each device, built once, and each
    expression's verdict on it. Keyed by object identity; the cache holds the device, so an id is
    never reused while its entry lives."""

    __slots__ = ("_devices", "_verdicts")

    def __init__(self) -> None:
        self._devices: dict[int, tuple[Device, CELDevice]] = {}
        self._verdicts: dict[tuple[str, int], bool] = {}

    def cel_device(self, driver: str, device: Device) -> CELDevice:
        entry = self._devices.get(id(device))
        if entry is None:
            cel = CELDevice(
                driver,
                device.attributes,
                {name: cap.value for name, cap in device.capacity.items()},
                device.allow_multiple_allocations,
            )
            self._devices[id(device)] = (device, cel)
            return cel
        return entry[1]

    def matches(self, expression: str, driver: str, device: Device) -> bool:
        """Raises :class:`CELError` (compile or runtime) with ``compile_error`` set accordingly."""
        key = (expression, id(device))
        verdict = self._verdicts.get(key)
        if verdict is None:
            try:
                selector = compile_selector(expression)
            except CELError as exc:
                raise _CompileError(str(exc)) from exc
            verdict = selector.matches(self.cel_device(driver, device))
            self._verdicts[key] = verdict
        return verdict

    def forget(self, slices: Sequence[ResourceSlice]) -> None:
        """Drop the entries of devices in ``slices`` (replaced or deleted slices)."""
        gone = {id(d) for s in slices for d in s.devices}
        for key in gone:
            self._devices.pop(key, None)
        if gone:
            self._verdicts = {k: v for k, v in self._verdicts.items() if k[1] not in gone}


class _CompileError(Exception):
    pass


_RequestSpec = ExactDeviceRequest | DeviceSubRequest


@dataclass(slots=True, eq=False)
class _Candidate:
    device: Device
    id: DeviceID
    slice: ResourceSlice
    pool: Pool


@dataclass(slots=True, eq=False)
class _RequestData:
    #: The request's name, or the sub-request's (then ``parent`` is the request's).
    name: str
    parent: str
    spec: _RequestSpec
    admin: bool
    device_class: DeviceClass
    num_devices: int = 0
    all_devices: list[_Candidate] = field(default_factory=list)
    selected_sub: int = 0

    @property
    def result_name(self) -> str:
        return f"{self.parent}/{self.name}" if self.parent else self.name


@dataclass(slots=True, eq=False)
class _Result:
    candidate: _Candidate
    request: str
    parent: str
    spec: _RequestSpec
    admin: bool
    share_id: str | None = None
    consumed: dict[str, Fraction] | None = None


class _MaxSizeExceeded(Exception):
    pass


def _kobj(claim: ResourceClaim) -> str:
    """``klog.KObj``: namespace/name, or just the name when the object names no namespace."""
    namespace = (claim.raw.get("metadata") or {}).get("namespace")
    return f"{namespace}/{claim.name}" if namespace else claim.name


_METADATA_NAME: Final = "metadata.name"
#: Where the search for a request's first device begins: the first device of the first pool.
_FIRST_DEVICE: Final = (0, 0, 0)


class Allocator:
    def __init__(
        self,
        features: AllocatorFeatures,
        allocated: AllocatedState,
        classes: Mapping[str, DeviceClass],
        slices: Sequence[ResourceSlice] | SliceIndex,
        *,
        cache: DeviceCache | None = None,
        new_share_id: Callable[[], str] = lambda: str(uuid.uuid4()),
    ) -> None:
        self.features = features
        self.allocated = allocated
        self.classes = classes
        self.index = slices if isinstance(slices, SliceIndex) else SliceIndex(slices)
        self.cache = cache if cache is not None else DeviceCache()
        self.new_share_id = new_share_id
        #: Per pool: the counters left after the devices already allocated (the same for every node).
        self._available_counters: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}
        #: How often the search tried to place one device (upstream's ``NumAllocateOneInvocations``).
        self.allocate_one_calls = 0

    def allocate(self, node: Node | None, claims: Sequence[ResourceClaim]) -> list[AllocationResult] | None:
        """One allocation per claim, in order, or None when the claims do not fit on ``node``.

        Raises :class:`AllocationError` when allocation cannot work anywhere and
        :class:`NodeAllocationFailure` when it failed here for a reason worth reporting."""
        return _Run(self, node, claims).run()


class _Run:
    """One ``allocate`` call: the tentative state of the search."""

    def __init__(self, allocator: Allocator, node: Node | None, claims: Sequence[ResourceClaim]) -> None:
        self.a = allocator
        self.features = allocator.features
        self.node = node
        self.claims = claims
        self.pools: list[Pool] = []
        self.request_data: dict[tuple[int, int, int], _RequestData] = {}
        self.constraints: list[list[Constraint]] = []
        self.matches: dict[tuple[int, tuple[int, int, int]], bool] = {}
        #: Devices taken by this search → the claims (indices) they were taken for.
        self.allocating: dict[DeviceID, set[int]] = {}
        self.allocating_capacity: dict[DeviceID, ConsumedCapacity] = {}
        #: Per pool: counter set → counter → amount taken by this search.
        self.consumed_counters: dict[tuple[str, str], dict[str, dict[str, Fraction]]] = {}
        self.results: list[list[_Result]] = [[] for _ in claims]

    # ------------------------------------------------------------------ setup

    def run(self) -> list[AllocationResult] | None:
        features = self.features
        self.pools = gather_pools(self.a.index, self.node, features.partitionable_devices)
        for claim_index, claim in enumerate(self.claims):
            min_devices = 0
            for request_index, request in enumerate(claim.requests):
                subs = request.first_available
                if not features.prioritized_list and subs:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {request.name}: has subrequests, but the "
                        "DRAPrioritizedList feature is disabled"
                    )
                if not features.consumable_capacity:
                    if request.exactly is not None and request.exactly.capacity_requests is not None:
                        raise AllocationError(
                            f"claim {_kobj(claim)}, request {request.name}: has capacity requests, but the "
                            "DRAConsumableCapacity feature is disabled"
                        )
                    for sub in subs:
                        if sub.capacity_requests is not None:
                            raise AllocationError(
                                f"claim {_kobj(claim)}, subrequest {sub.name}: has capacity requests, "
                                "but the DRAConsumableCapacity feature is disabled"
                            )
                if subs:
                    fewest = None
                    for sub_index, sub in enumerate(subs):
                        data = self._validate(
                            claim_index, request_index, sub_index, sub, sub.name, request.name
                        )
                        self.request_data[(claim_index, request_index, sub_index)] = data
                        fewest = data.num_devices if fewest is None else min(fewest, data.num_devices)
                    min_devices += fewest or 0
                elif request.exactly is not None:
                    data = self._validate(claim_index, request_index, 0, request.exactly, request.name, "")
                    self.request_data[(claim_index, request_index, 0)] = data
                    min_devices += data.num_devices
                else:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {request.name}: missing device class name "
                        "(unsupported request type?)"
                    )
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
                raise AllocationError(
                    f"claim {_kobj(claim)}: number of requested devices {min_devices} exceeds the claim "
                    f"limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                )
            constraints: list[Constraint] = []
            for i, c in enumerate(claim.constraints):
                names = frozenset(c.requests)
                if c.match_attribute is not None:
                    constraints.append(MatchAttribute(names, c.match_attribute))
                elif c.distinct_attribute is not None:
                    constraints.append(DistinctAttribute(names, c.distinct_attribute))
                else:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, constraint #{i}: empty constraint "
                        "(unsupported constraint type?)"
                    )
            self.constraints.append(constraints)

        if not self._allocate_one(0, 0, 0, 0, False):
            if any(pool.invalid for pool in self.pools):
                raise NodeAllocationFailure("invalid resource pools were encountered")
            return None
        return [self._result(i, claim) for i, claim in enumerate(self.claims)]

    def _validate(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        spec: _RequestSpec,
        request_name: str,
        parent: str,
    ) -> _RequestData:
        claim = self.claims[claim_index]
        for i, expression in enumerate(spec.selectors):
            if not expression:
                # A selector that is not a CEL expression: a selector type this version does not
                # know (the resource views refuse it, but a claim may come from elsewhere).
                raise AllocationError(
                    f"claim {_kobj(claim)}, request {request_name}, selector #{i}: "
                    "CEL expression empty (unsupported selector type?)"
                )
        admin_requested = isinstance(spec, ExactDeviceRequest) and spec.admin_access is not None
        if not self.features.admin_access and admin_requested:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request_name}: admin access is requested, "
                "but the feature is disabled"
            )
        if not spec.device_class_name:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request_name}: missing device class name "
                "(unsupported request type?)"
            )
        device_class = self.a.classes.get(spec.device_class_name)
        if device_class is None:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request_name}: could not retrieve device class "
                f'{spec.device_class_name}: deviceclass.resource.k8s.io "{spec.device_class_name}" not found'
            )
        data = _RequestData(
            name=request_name,
            parent=parent,
            spec=spec,
            admin=bool(spec.admin_access),
            device_class=device_class,
        )
        key = (claim_index, request_index, sub_index)
        if spec.allocation_mode == ALLOCATION_MODE_EXACT_COUNT:
            data.num_devices = spec.count
        elif spec.allocation_mode == ALLOCATION_MODE_ALL:
            for pool in self.pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {request_name}: asks for all devices, "
                        f"but resource pool {pool} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {_kobj(claim)}, request {request_name}: asks for all devices, "
                        f"but resource pool {pool} is currently invalid"
                    )
                for s in pool.slices:
                    for device in s.devices:
                        candidate = _Candidate(device, DeviceID(s.driver, s.pool.name, device.name), s, pool)
                        if not self._selectable(key, data, candidate):
                            continue
                        if self.features.consumable_capacity and not self._capacity_fits(data, candidate):
                            continue
                        data.all_devices.append(candidate)
            data.num_devices = len(data.all_devices)
        else:
            raise AllocationError(
                f"claim {_kobj(claim)}, request {request_name}: unsupported count mode {spec.allocation_mode}"
            )
        return data

    # ------------------------------------------------------------------ search

    def _allocate_one(
        self,
        claim_index: int,
        request_index: int,
        sub_index: int,
        device_index: int,
        in_sub: bool,
        start: tuple[int, int, int] = _FIRST_DEVICE,
    ) -> bool:
        """Place device ``device_index`` of the given (sub-)request and everything after it; True
        when a complete solution was found. Raises :class:`_MaxSizeExceeded` to backtrack past
        choices that cannot keep a claim within its result limit.

        ``start`` (pool, slice and device index) is where the search for this device begins: the
        devices of one request form a set, so after taking a device the next one of the same
        request is only looked for further on. Every combination is tried once instead of every
        permutation of it."""
        self.a.allocate_one_calls += 1
        if claim_index >= len(self.claims):
            return True
        claim = self.claims[claim_index]
        if request_index >= len(claim.requests):
            try:
                return self._allocate_one(claim_index + 1, 0, 0, 0, False)
            except _MaxSizeExceeded:
                # Another allocation of an earlier claim might let a later claim pick a
                # sub-request with fewer devices: not a reason to give up the earlier claim.
                return False
        key = (claim_index, request_index, sub_index)
        data = self.request_data[key]

        if not in_sub and data.parent:
            all_exceeded = True
            sub = 0
            while (claim_index, request_index, sub) in self.request_data:
                try:
                    done = self._allocate_one(claim_index, request_index, sub, device_index, True)
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if done:
                    data.selected_sub = sub
                    return True
                sub += 1
            if all_exceeded:
                raise _MaxSizeExceeded
            return False

        do_all = data.spec.allocation_mode == ALLOCATION_MODE_ALL
        if do_all and not data.all_devices:
            return False
        if device_index >= data.num_devices:
            return self._allocate_one(claim_index, request_index + 1, 0, 0, False)
        if len(self.results[claim_index]) + data.num_devices - device_index > ALLOCATION_RESULTS_MAX_SIZE:
            raise _MaxSizeExceeded

        if do_all:
            candidate = data.all_devices[device_index]
            undo = self._allocate_device(claim_index, key, data, candidate, must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(claim_index, request_index, sub_index, device_index + 1, in_sub)
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done

        admin = data.admin
        pools = self.pools
        start_pool, start_slice, start_device = start
        for pool_index in range(start_pool, len(pools)):
            pool = pools[pool_index]
            if pool.incomplete or pool.invalid:
                continue
            slices = pool.slices
            first_slice = start_slice if pool_index == start_pool else 0
            for slice_index in range(first_slice, len(slices)):
                s = slices[slice_index]
                driver, pool_name = s.driver, s.pool.name
                devices = s.devices
                if start_device and pool_index == start_pool and slice_index == start_slice:
                    indexed = enumerate(devices[start_device:], start_device)
                else:
                    indexed = enumerate(devices)
                for index, device in indexed:
                    device_id = DeviceID(driver, pool_name, device.name)
                    if admin:
                        if claim_index in self.allocating.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    candidate = _Candidate(device, device_id, s, pool)
                    if not self._selectable(key, data, candidate):
                        continue
                    if self.features.consumable_capacity and not self._capacity_fits(data, candidate):
                        continue
                    undo = self._allocate_device(claim_index, key, data, candidate, must=False)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(
                            claim_index,
                            request_index,
                            sub_index,
                            device_index + 1,
                            in_sub,
                            (pool_index, slice_index, index + 1),
                        )
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated.allocated_devices or bool(self.allocating.get(device_id))

    def _selectable(self, key: tuple[int, int, int], data: _RequestData, candidate: _Candidate) -> bool:
        device = candidate.device
        if not self.features.device_binding_and_status and device.binding_conditions:
            return False
        match_key = (id(device), key)
        verdict = self.matches.get(match_key)
        if verdict is not None:
            return verdict
        driver = candidate.id.driver
        verdict = self._selectors_match(data.device_class.selectors, driver, device, key, data.device_class)
        if verdict:
            verdict = self._selectors_match(data.spec.selectors, driver, device, key, None)
        if verdict and candidate.slice.per_device_node_selection:
            verdict = node_matches(self.node, device.node_name, device.all_nodes, device.node_selector)
        self.matches[match_key] = verdict
        return verdict

    def _selectors_match(
        self,
        selectors: Sequence[str],
        driver: str,
        device: Device,
        key: tuple[int, int, int],
        device_class: DeviceClass | None,
    ) -> bool:
        cache = self.a.cache
        for i, expression in enumerate(selectors):
            try:
                if not cache.matches(expression, driver, device):
                    return False
            except _CompileError as exc:
                raise AllocationError(
                    f"{self._selector_owner(key, device_class)}: selector #{i}: CEL compile error: {exc}"
                ) from None
            except CELError as exc:
                raise AllocationError(
                    f"{self._selector_owner(key, device_class)}: selector #{i}: CEL runtime error: {exc}"
                ) from None
        return True

    def _selector_owner(self, key: tuple[int, int, int], device_class: DeviceClass | None) -> str:
        if device_class is not None:
            return f"class {device_class.name}"
        return f"claim {_kobj(self.claims[key[0]])}"

    def _capacity_fits(self, data: _RequestData, candidate: _Candidate) -> bool:
        device_id = candidate.id
        return capacity.request_fits(
            data.spec.capacity_requests,
            device_id.driver,
            candidate.device,
            self.a.allocated.aggregated_capacity.get(device_id),
            self.allocating_capacity.get(device_id),
        )

    def _allocate_device(
        self,
        claim_index: int,
        key: tuple[int, int, int],
        data: _RequestData,
        candidate: _Candidate,
        *,
        must: bool,
    ) -> Callable[[], None] | None:
        """Take ``candidate`` tentatively for the request; None if it cannot be (in use, counters,
        taints, constraints, capacity), else the function that undoes it."""
        features = self.features
        device = candidate.device
        device_id = candidate.id
        multiple = features.consumable_capacity and device.allow_multiple_allocations
        admin = data.admin
        if not multiple and admin and claim_index in self.allocating.get(device_id, ()):
            return None
        if not admin and self._in_use(device_id):
            return None
        if device.consumes_counters and not features.partitionable_devices:
            return None
        took_counters = False
        if device.consumes_counters and not (multiple and self._capacity_in_use(device_id)):
            if not self._take_counters(candidate):
                return None
            took_counters = True

        request, sub = (data.parent, data.name) if data.parent else (data.name, "")

        def give_back_counters() -> None:
            if took_counters:
                self._return_counters(candidate)

        if features.device_taints and _taint_prevents_allocation(device, data.spec):
            give_back_counters()
            return None

        constraints = self.constraints[claim_index]
        for i, constraint in enumerate(constraints):
            if not constraint.add(request, sub, device.attributes, device_id.driver):
                if must:
                    give_back_counters()
                    raise AllocationError(
                        f"claim {_kobj(self.claims[claim_index])}, request {data.name}: cannot add device "
                        f"{device_id} because a claim constraint would not be satisfied"
                    )
                for earlier in constraints[:i]:
                    earlier.remove(request, sub)
                give_back_counters()
                return None

        def undo_constraints() -> None:
            for constraint in constraints:
                constraint.remove(request, sub)

        consumed: dict[str, Fraction] | None = None
        share_id: str | None = None
        if features.consumable_capacity:
            if not self._capacity_fits(data, candidate):
                undo_constraints()
                give_back_counters()
                return None
            if multiple:
                consumed = capacity.consumed_capacity(data.spec.capacity_requests, device_id.driver, device)
                share_id = self.a.new_share_id()
                add_capacity(self.allocating_capacity.setdefault(device_id, {}), consumed)
        if not multiple:
            self.allocating.setdefault(device_id, set()).add(claim_index)

        results = self.results[claim_index]
        results.append(
            _Result(
                candidate,
                data.name,
                data.parent,
                data.spec,
                admin,
                share_id,
                consumed if consumed else None,
            )
        )
        position = len(results) - 1

        def undo() -> None:
            undo_constraints()
            if multiple:
                if consumed:
                    taken = self.allocating_capacity.get(device_id)
                    if taken is not None:
                        sub_capacity(taken, consumed)
                        if all(v == 0 for v in taken.values()):
                            del self.allocating_capacity[device_id]
            else:
                self.allocating[device_id].discard(claim_index)
            give_back_counters()
            del results[position:]

        return undo

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated.aggregated_capacity or device_id in self.allocating_capacity

    # ------------------------------------------------------------------ counters

    def _available(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        cached = self.a._available_counters.get(pool.id)
        if cached is not None:
            return cached
        available = {name: dict(counters) for name, counters in pool.counter_sets.items()}
        allocated = self.a.allocated.allocated_devices
        for slices in (pool.slices, pool.other_slices):
            for s in slices:
                for device in s.devices:
                    if (
                        not device.consumes_counters
                        or DeviceID(s.driver, s.pool.name, device.name) not in allocated
                    ):
                        continue
                    for consumption in device.consumes_counters:
                        counters = available.get(consumption.counter_set)
                        if counters is None:
                            continue
                        for name, amount in consumption.counters.items():
                            if name in counters:
                                counters[name] -= amount
        self.a._available_counters[pool.id] = available
        return available

    def _take_counters(self, candidate: _Candidate) -> bool:
        pool = candidate.pool
        available = self._available(pool)
        consumed = self.consumed_counters.setdefault(pool.id, {})
        for consumption in candidate.device.consumes_counters:
            counters = consumed.setdefault(consumption.counter_set, {})
            for name, amount in consumption.counters.items():
                counters[name] = counters.get(name, Fraction(0)) + amount
        for set_name, counters in available.items():
            taken = consumed.get(set_name)
            if not taken:
                continue
            for name, amount in counters.items():
                if taken.get(name, 0) > amount:
                    self._return_counters(candidate)
                    return False
        return True

    def _return_counters(self, candidate: _Candidate) -> None:
        consumed = self.consumed_counters[candidate.pool.id]
        for consumption in candidate.device.consumes_counters:
            counters = consumed[consumption.counter_set]
            for name, amount in consumption.counters.items():
                counters[name] -= amount

    # ------------------------------------------------------------------ results

    def _result(self, claim_index: int, claim: ResourceClaim) -> AllocationResult:
        features = self.features
        results: list[DeviceRequestAllocationResult] = []
        for r in self.results[claim_index]:
            device = r.candidate.device
            device_id = r.candidate.id
            results.append(
                DeviceRequestAllocationResult(
                    request=f"{r.parent}/{r.request}" if r.parent else r.request,
                    driver=device_id.driver,
                    pool=device_id.pool,
                    device=device_id.device,
                    admin_access=r.admin,
                    tolerations=r.spec.tolerations,
                    consumed_capacity=r.consumed,
                    share_id=r.share_id,
                    binding_conditions=device.binding_conditions
                    if features.device_binding_and_status
                    else (),
                    binding_failure_conditions=(
                        device.binding_failure_conditions if features.device_binding_and_status else ()
                    ),
                )
            )
        config: list[Mapping[str, Any]] = []
        # Each class's configuration once, naming the requests (or sub-requests) it served.
        by_class: dict[str, tuple[DeviceClass, list[str]]] = {}
        for request_index in range(len(claim.requests)):
            data = self.request_data[(claim_index, request_index, 0)]
            if data.parent:
                data = self.request_data[(claim_index, request_index, data.selected_sub)]
            entry_class = by_class.setdefault(data.device_class.name, (data.device_class, []))
            entry_class[1].append(data.result_name)
        for device_class, served in by_class.values():
            for entry in device_class.config:
                class_entry = {k: v for k, v in entry.items() if k != "requests"}
                config.append({"source": CONFIG_SOURCE_CLASS, "requests": list(served), **class_entry})
        for entry in claim.config:
            requests = entry.get("requests") or []
            if not requests:
                config.append({"source": CONFIG_SOURCE_CLAIM, **entry})
                continue
            for request_index, request in enumerate(claim.requests):
                if request.name in requests:
                    config.append({"source": CONFIG_SOURCE_CLAIM, **entry})
                    continue
                data = self.request_data[(claim_index, request_index, 0)]
                if not data.parent:
                    continue
                sub = request.first_available[data.selected_sub]
                if f"{request.name}/{sub.name}" in requests:
                    config.append({"source": CONFIG_SOURCE_CLAIM, **entry})
        return AllocationResult(
            results=tuple(results),
            config=tuple(config),
            node_selector=self._node_selector(self.results[claim_index], claim),
        )

    def _node_selector(self, results: Sequence[_Result], claim: ResourceClaim) -> Mapping[str, Any] | None:
        """Upstream ``createNodeSelector``: the node itself when some device is local to it or
        binds to it, else the requirements of the slices' (or devices') node selectors in one
        term, else None (usable everywhere)."""
        fields: list[Mapping[str, Any]] = []
        expressions: list[Mapping[str, Any]] = []
        node_name = self.node.name if self.node is not None else ""
        for r in results:
            s = r.candidate.slice
            device = r.candidate.device
            if s.per_device_node_selection:
                local, selector = bool(device.node_name), device.node_selector_raw
            else:
                local, selector = bool(s.node_name), s.node_selector_raw
            if local or device.binds_to_node:
                return {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": _METADATA_NAME, "operator": "In", "values": [node_name]}]}
                    ]
                }
            if selector is None:
                continue
            terms = selector.get("nodeSelectorTerms") or []
            if len(terms) == 1:
                _add_requirements(terms[0].get("matchFields") or [], fields)
                _add_requirements(terms[0].get("matchExpressions") or [], expressions)
            elif len(terms) > 1:
                raise AllocationError(
                    f"create NodeSelector for claim {claim.name}: unsupported ResourceSlice.NodeSelector "
                    f"with {len(terms)} terms"
                )
        if not fields and not expressions:
            return None
        term: dict[str, Any] = {}
        if expressions:
            term["matchExpressions"] = expressions
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


def _add_requirements(new: Sequence[Mapping[str, Any]], into: list[Mapping[str, Any]]) -> None:
    for requirement in new:
        values = set(requirement.get("values") or ())
        if not any(
            r.get("key") == requirement.get("key")
            and r.get("operator") == requirement.get("operator")
            and set(r.get("values") or ()) == values
            for r in into
        ):
            into.append(requirement)


def _taint_prevents_allocation(device: Device, spec: _RequestSpec) -> bool:
    """Only NoSchedule and NoExecute taints keep a device from being allocated, unless the request
    tolerates them; other effects (None, unknown ones) are informational."""
    for taint in device.taints:
        if taint.effect in (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE) and not any(
            toleration.tolerates(taint) for toleration in spec.tolerations
        ):
            return True
    return False
