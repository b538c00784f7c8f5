"""GPUs through DRA: the per-card model read from ResourceClaims and their allocations.

The simulated driver ``gpu.kubesched.io`` publishes each card of a node as one device ``gpu-<i>``
in the pool named after the node. In sharing mode the device allows multiple allocations and has
the consumable capacity ``milli`` (1000 per card): a share asks for one device with
``capacity.requests.milli: M``, whole cards for ``count: N`` devices with ``milli: 1000`` (the
capacity's default, so a request without it takes the whole card). The DeviceClass
``gpu.kubesched.io`` selects the driver's devices; a model restriction is a request selector on
``device.attributes["gpu.kubesched.io"].model``.

Two functions tie this to :mod:`kubesched.gpu.cards`, so that GPU filters and scores see a pod
asking through a claim as they see the same demand written as annotations:

* :func:`claims_demand`: a pod's GPU demand from its claims' requests for the class;
* :func:`allocated_cards`: the cards (and milli on each) an allocated claim holds on its node.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, Final

from kubesched.api.resource import ALLOCATION_MODE_EXACT_COUNT, AllocationResult, ResourceClaim
from kubesched.errors import InputError
from kubesched.gpu.cards import MILLI, NO_GPU, GpuDemand

__all__ = [
    "CAPACITY_MILLI",
    "DEVICE_CLASS",
    "DRIVER",
    "allocated_cards",
    "allocation_cards",
    "card_of_device",
    "claim_spec",
    "claims_demand",
    "device_class",
    "device_name",
    "gpu_claims",
    "model_selector",
    "models_of_selector",
]

DRIVER: Final = "gpu.kubesched.io"
#: The DeviceClass selecting the driver's devices; claims name it to ask for GPUs.
DEVICE_CLASS: Final = "gpu.kubesched.io"
#: The consumable capacity of a card in sharing mode: 1000 milli-GPU.
CAPACITY_MILLI: Final = "milli"
_QUALIFIED_MILLI: Final = f"{DRIVER}/{CAPACITY_MILLI}"
_MODEL_ATTRIBUTE: Final = f'device.attributes["{DRIVER}"].model'
_DEVICE = re.compile(r"gpu-(\d+)(-half-\d+)?")
_SELECTOR = re.compile(
    r'\s*device\.attributes\["' + re.escape(DRIVER) + r'"\]\.model\s*'
    r'(?:==\s*(?P<one>"[^"\\]*")|in\s*(?P<list>\[[^\]]*\]))\s*'
)


def device_name(card: int) -> str:
    return f"gpu-{card}"


def card_of_device(name: str) -> tuple[int, int] | None:
    """The card a device of the driver stands for and the milli it is worth: ``gpu-<i>`` is card
    ``i`` (1000), a half-card partition ``gpu-<i>-half-<h>`` half of it; None for another name."""
    m = _DEVICE.fullmatch(name)
    if m is None:
        return None
    return int(m.group(1)), MILLI // 2 if m.group(2) else MILLI


def model_selector(models: Sequence[str]) -> str:
    """The CEL selector restricting a request to GPU models."""
    if len(models) == 1:
        return f"{_MODEL_ATTRIBUTE} == {json.dumps(models[0])}"
    return f"{_MODEL_ATTRIBUTE} in [{', '.join(json.dumps(m) for m in models)}]"


def models_of_selector(expression: str) -> tuple[str, ...] | None:
    """The models a selector written as :func:`model_selector` writes it accepts; None for any
    other expression (the allocator still applies it; the card model cannot read it)."""
    m = _SELECTOR.fullmatch(expression)
    if m is None:
        return None
    try:
        if m.group("one") is not None:
            return (str(json.loads(m.group("one"))),)
        values = json.loads(m.group("list"))
    except ValueError:
        return None
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return None
    return tuple(values)


def device_class() -> dict[str, Any]:
    """The DeviceClass that selects the driver's devices."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
    }


def claim_spec(demand: GpuDemand, request: str = "gpu") -> dict[str, Any]:
    """A claim's (or template's) ``spec`` asking for ``demand`` through the class."""
    exactly: dict[str, Any] = {"deviceClassName": DEVICE_CLASS, "count": demand.count}
    if demand.milli != MILLI:
        exactly["capacity"] = {"requests": {CAPACITY_MILLI: str(demand.milli)}}
    if demand.models:
        exactly["selectors"] = [{"cel": {"expression": model_selector(demand.models)}}]
    return {"devices": {"requests": [{"name": request, "exactly": exactly}]}}


def _milli(amounts: Any, default: int) -> int:
    if not amounts:
        return default
    for key in (CAPACITY_MILLI, _QUALIFIED_MILLI):
        value = amounts.get(key)
        if value is not None:
            return int(Fraction(value))
    return default


def gpu_claims(claims: Iterable[ResourceClaim]) -> list[ResourceClaim]:
    """The claims with a request (or sub-request) for the GPU class."""
    out = []
    for claim in claims:
        for request in claim.requests:
            classes = [s.device_class_name for s in request.first_available]
            if request.exactly is not None:
                classes.append(request.exactly.device_class_name)
            if DEVICE_CLASS in classes:
                out.append(claim)
                break
    return out


def claims_demand(claims: Iterable[ResourceClaim]) -> GpuDemand:
    """The GPU demand of a pod's claims that are still to be allocated: each ``exactly`` request
    of the class with ``ExactCount`` is ``count`` cards of ``milli`` each (``capacity.requests``,
    else a whole card), restricted to the models of its model selectors. Several requests are
    added up when all are whole cards; a share beside other GPU requests is an input error (a
    share never spans cards). Allocated claims ask for nothing more: their cards are held already.
    """
    parts: list[GpuDemand] = []
    where = ""
    for claim in claims:
        if claim.allocation is not None:
            continue
        for request in claim.requests:
            exact = request.exactly
            if exact is None or exact.device_class_name != DEVICE_CLASS:
                continue
            if exact.allocation_mode != ALLOCATION_MODE_EXACT_COUNT:
                continue
            models: tuple[str, ...] = ()
            for expression in exact.selectors:
                found = models_of_selector(expression)
                if found is not None:
                    models = found if not models else tuple(m for m in models if m in found)
            milli = _milli(exact.capacity_requests, MILLI)
            where = f"ResourceClaim {claim.key}: request {request.name}"
            try:
                parts.append(GpuDemand(exact.count, milli, models))
            except InputError as exc:
                raise InputError(f"{where}: {exc}") from None
    if not parts:
        return NO_GPU
    if len(parts) == 1:
        return parts[0]
    if any(p.is_share for p in parts):
        raise InputError(f"{where}: a GPU share cannot be asked for beside other GPU requests")
    models = parts[0].models
    for p in parts[1:]:
        if p.models:
            models = tuple(m for m in models if m in p.models) if models else p.models
    return GpuDemand(sum(p.count for p in parts), MILLI, models)


def allocated_cards(claim: ResourceClaim) -> tuple[str, tuple[tuple[int, int], ...]] | None:
    """The node (the pool: the driver publishes one pool per node) and the (card, milli) pairs an
    allocated claim holds of the driver's devices; None when it holds none. A device allowing
    multiple allocations is held for the ``milli`` it consumed; any other device for all of it."""
    return allocation_cards(claim.allocation)


def allocation_cards(allocation: AllocationResult | None) -> tuple[str, tuple[tuple[int, int], ...]] | None:
    """:func:`allocated_cards` of one allocation."""
    if allocation is None:
        return None
    node = ""
    held: list[tuple[int, int]] = []
    for result in allocation.results:
        if result.driver != DRIVER or result.admin_access:
            continue
        card = card_of_device(result.device)
        if card is None:
            continue
        index, worth = card
        node = result.pool
        held.append((index, _milli(result.consumed_capacity, worth)))
    if not held:
        return None
    return node, tuple(held)
