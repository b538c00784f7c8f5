"""Properties of the allocator on random small clusters: a device is never handed out twice or
while allocated, every result satisfies its selectors, counts and constraints, and "no fit" is
only answered when no assignment exists at all (checked by brute force)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from kubesched.api.resource import ResourceClaim
from kubesched.plugins.dynamicresources.allocated_state import AllocatedState, DeviceID
from kubesched.plugins.dynamicresources.allocator import Allocator, AllocatorFeatures
from kubesched.plugins.dynamicresources.allocator_testing import (
    CLASS_A,
    DRIVER_A,
    NODE1,
    POOL1,
    REGION1,
    SLICE1,
    cel,
    claim,
    device,
    device_class,
    match_attribute,
    node,
    request,
    slice_,
)

MODELS = ("a", "b")
FEATURES = AllocatorFeatures(admin_access=False, prioritized_list=False)

device_specs = st.lists(st.tuples(st.sampled_from(MODELS), st.integers(0, 1)), min_size=0, max_size=5)
claim_specs = st.lists(
    st.tuples(
        st.integers(1, 2),  # count
        st.sampled_from((None, *MODELS)),  # model selector
        st.booleans(),  # same numa for all of the claim's devices
    ),
    min_size=1,
    max_size=3,
)


def _claims(specs: Sequence[tuple[int, str | None, bool]]) -> list[ResourceClaim]:
    out = []
    for i, (count, model, same_numa) in enumerate(specs):
        selectors = [cel(f'device.attributes["{DRIVER_A}"].model == "{model}"')] if model else []
        constraints = [match_attribute(f"{DRIVER_A}/numa")] if same_numa else []
        out.append(claim(f"claim-{i}", request("req-0", CLASS_A, count, *selectors), constraints=constraints))
    return out


def _fits(
    devices: Sequence[tuple[str, int]], spec: tuple[int, str | None, bool], chosen: Sequence[int]
) -> bool:
    count, model, same_numa = spec
    if len(chosen) != count:
        return False
    if model is not None and any(devices[d][0] != model for d in chosen):
        return False
    return not same_numa or len({devices[d][1] for d in chosen}) <= 1


def _solvable(
    devices: Sequence[tuple[str, int]], free: set[int], specs: Sequence[tuple[int, str | None, bool]]
) -> bool:
    if not specs:
        return True
    spec, rest = specs[0], specs[1:]
    for chosen in itertools.combinations(sorted(free), spec[0]):
        if _fits(devices, spec, chosen) and _solvable(devices, free - set(chosen), rest):
            return True
    return False


@settings(max_examples=150, deadline=None)
@given(
    devices=device_specs, specs=claim_specs, allocated_mask=st.lists(st.booleans(), min_size=5, max_size=5)
)
def test_allocations_are_exclusive_valid_and_complete(
    devices: list[tuple[str, int]], specs: list[tuple[int, str | None, bool]], allocated_mask: list[bool]
) -> None:
    names = [f"device-{i}" for i in range(len(devices))]
    raw_devices: list[dict[str, Any]] = [
        device(name, None, {"model": {"string": model}, "numa": {"int": numa}})
        for name, (model, numa) in zip(names, devices, strict=True)
    ]
    allocated = {DeviceID(DRIVER_A, POOL1, names[i]) for i in range(len(devices)) if allocated_mask[i]}
    free = {i for i in range(len(devices)) if not allocated_mask[i]}
    allocator = Allocator(
        FEATURES,
        AllocatedState(allocated_devices=set(allocated)),
        {CLASS_A: device_class(CLASS_A, DRIVER_A)},
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, *raw_devices)],
    )
    results = allocator.allocate(node(NODE1, REGION1), _claims(specs))

    if results is None:
        assert not _solvable(devices, free, specs)
        return
    assert len(results) == len(specs)
    taken: set[str] = set()
    for spec, result in zip(specs, results, strict=True):
        chosen = [names.index(r.device) for r in result.results]
        assert _fits(devices, spec, chosen)
        for r in result.results:
            assert r.device not in taken, "a device was handed out twice"
            assert DeviceID(r.driver, r.pool, r.device) not in allocated, "an allocated device was handed out"
            taken.add(r.device)


def test_taints_with_effect_none_do_not_prevent_allocation() -> None:
    # Only NoSchedule and NoExecute keep a device from being allocated; None is informational.
    taint = {"key": "k", "value": "v", "effect": "None"}
    allocator = Allocator(
        AllocatorFeatures(admin_access=False, prioritized_list=False, device_taints=True),
        AllocatedState(),
        {CLASS_A: device_class(CLASS_A, DRIVER_A)},
        [slice_(SLICE1, NODE1, POOL1, DRIVER_A, device("device-1", taints=[taint]))],
    )
    results = allocator.allocate(node(NODE1, REGION1), [claim("claim-0", request("req-0", CLASS_A, 1))])
    assert results is not None
    assert [r.device for r in results[0].results] == ["device-1"]


def test_allocated_state_from_claims() -> None:
    """Admin-access results leave a device free; shares count their consumed capacity."""
    allocated = ResourceClaim.from_dict(
        {
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": CLASS_A}}]}},
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {"request": "r", "driver": DRIVER_A, "pool": POOL1, "device": "d0"},
                            {
                                "request": "r",
                                "driver": DRIVER_A,
                                "pool": POOL1,
                                "device": "d1",
                                "adminAccess": True,
                            },
                            {
                                "request": "r",
                                "driver": DRIVER_A,
                                "pool": POOL1,
                                "device": "d2",
                                "shareID": "s",
                                "consumedCapacity": {"memory": "1Gi"},
                            },
                        ]
                    }
                }
            },
        }
    )
    state = AllocatedState.from_claims([allocated, allocated])
    assert state.allocated_devices == {DeviceID(DRIVER_A, POOL1, "d0")}
    assert state.aggregated_capacity == {DeviceID(DRIVER_A, POOL1, "d2"): {"memory": 2 * 2**30}}
