"""A simulated DRA driver, ``gpu.kubesched.io``: what a GPU vendor's kubelet plugin publishes for
the nodes ``serve`` and ``simulate`` invent.

Every node with GPUs — ``nvidia.com/gpu`` in its allocatable (else ``kubesched.io/gpu-milli`` /
1000), at most 8 cards, the model from its ``kubesched.io/gpu-model`` label, as
:mod:`kubesched.gpu.cards` reads a node — gets a pool named after the node, in ResourceSlices
bound to that node:

- one device per card, ``gpu-0`` … ``gpu-<n-1>``, with the attributes ``model`` (string),
  ``index`` (int), ``uuid`` (string, stable per node and card) and ``driverVersion`` (version),
  and the capacity ``memory`` from the model (:data:`MODEL_MEMORY`; 16Gi for a model not listed);
- with ``partitions``, also two half-card devices per card (``gpu-<i>-half-0``, ``-half-1``)
  with the attribute ``partition`` (``whole`` or ``half``). A card is a counter set
  ``gpu-<i>-counters`` holding its memory; the whole card consumes all of it and each half
  half of it, so a card is given either whole or as up to two halves. As v1.35 requires, the
  counters are published in a slice of their own in the same pool (``resourceSliceCount: 2``);
- with ``sharing``, instead, each card is one device that allows multiple allocations
  (``allowMultipleAllocations``) with the consumable capacity ``milli``: 1000, taken 1 to 1000 at a
  time (all of it when a request names no amount). This is the per-card model of
  :mod:`kubesched.gpu.cards` through DRA (:mod:`kubesched.gpu.dra`): a share of a card is one
  device with ``capacity.requests.milli``, whole cards are devices with all of it. It needs the
  scheduler's ``DRAConsumableCapacity`` gate (alpha, off by default in v1.35).

Slices are named ``<node>-gpu.kubesched.io`` (and ``…-counters``), so each node's are found
without a list. When a node's cards change the pool's slices are rewritten with the pool's
generation one higher; when the node goes, they go.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Final

from kubesched.api.objects import Node
from kubesched.api.quantity import parse_quantity
from kubesched.errors import InputError
from kubesched.gpu.cards import GPU_MILLI_RESOURCE, GPU_RESOURCE, LABEL_GPU_MODEL, MAX_CARDS, MILLI
from kubesched.gpu.dra import CAPACITY_MILLI, DRIVER, device_name
from kubesched.store.base import AlreadyExists, ClusterStore, Conflict, EventType, NotFound, Obj
from kubesched.store.informers import Change, InformerFactory

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_MEMORY",
    "DRIVER",
    "DRIVER_VERSION",
    "MODEL_MEMORY",
    "DraDriverOptions",
    "SimulatedDraDriver",
    "card_memory",
    "counters_slice_name",
    "desired_slices",
    "gpu_cards",
    "slice_name",
]

DRIVER_VERSION: Final = "1.0.0"
#: Each card's memory by model (the Alibaba trace's models among them); others get 16Gi.
MODEL_MEMORY: Final[Mapping[str, str]] = {
    "H100": "80Gi",
    "A100": "80Gi",
    "A10": "24Gi",
    "V100": "32Gi",
    "V100M32": "32Gi",
    "V100M16": "16Gi",
    "P100": "16Gi",
    "T4": "16Gi",
    "G2": "16Gi",
    "G3": "16Gi",
}
DEFAULT_MEMORY: Final = "16Gi"
_UUID_NAMESPACE: Final = uuid.UUID("3f0d1a52-6a44-4f3c-9b1e-3c6d2f8e5a11")


@dataclass(frozen=True, slots=True)
class DraDriverOptions:
    """Whether ``serve`` / ``simulate`` run the simulated driver, with half-card partitions or
    with cards shared by milli-GPU (``sharing`` wins when both are set)."""

    partitions: bool = False
    sharing: bool = False


def gpu_cards(node: Node) -> tuple[int, str]:
    """How many cards a node has and their model, as the GPU card model reads a node."""
    count = int(node.allocatable.get(GPU_RESOURCE, 0))
    if not count:
        count = int(node.allocatable.get(GPU_MILLI_RESOURCE, 0)) // MILLI
    return min(count, MAX_CARDS), node.labels.get(LABEL_GPU_MODEL, "")


def slice_name(node: str) -> str:
    return f"{node}-{DRIVER}"


def counters_slice_name(node: str) -> str:
    return f"{node}-{DRIVER}-counters"


def card_memory(model: str) -> str:
    return MODEL_MEMORY.get(model, DEFAULT_MEMORY)


def _half(memory: str) -> str:
    """Half of a card's memory, in the largest binary unit that holds it whole."""
    half = Fraction(parse_quantity(memory)) / 2
    for suffix, unit in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if half % unit == 0:
            return f"{half // unit}{suffix}"
    return str(int(half))


def _device(
    node: str, index: int, model: str, memory: str, name: str, partition: str | None
) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "model": {"string": model or "unknown"},
        "index": {"int": index},
        "uuid": {"string": f"GPU-{uuid.uuid5(_UUID_NAMESPACE, f'{node}/{index}')}"},
        "driverVersion": {"version": DRIVER_VERSION},
    }
    if partition is not None:
        attributes["partition"] = {"string": partition}
    return {"name": name, "attributes": attributes, "capacity": {"memory": {"value": memory}}}


def _shared_device(node: str, index: int, model: str) -> dict[str, Any]:
    """A card shared by milli-GPU: its memory is not a capacity here, since every capacity of a
    shared device is consumed, and a share that names no memory would take all of it."""
    device = _device(node, index, model, "0", device_name(index), None)
    device["allowMultipleAllocations"] = True
    device["capacity"] = {
        CAPACITY_MILLI: {
            "value": str(MILLI),
            "requestPolicy": {
                "default": str(MILLI),
                "validRange": {"min": "1", "max": str(MILLI), "step": "1"},
            },
        }
    }
    return device


def desired_slices(
    node: str, count: int, model: str, partitions: bool, sharing: bool = False
) -> dict[str, dict[str, Any]]:
    """The specs (pool generation left out) of the slices the driver publishes for a node, by name."""
    if sharing:
        devices_ = [_shared_device(node, i, model) for i in range(count)]
        pool_ = {"name": node, "resourceSliceCount": 1}
        return {slice_name(node): {"driver": DRIVER, "pool": pool_, "nodeName": node, "devices": devices_}}
    memory = card_memory(model)
    slice_count = 2 if partitions else 1
    pool = {"name": node, "resourceSliceCount": slice_count}
    devices: list[dict[str, Any]] = []
    counter_sets: list[dict[str, Any]] = []
    for i in range(count):
        if not partitions:
            devices.append(_device(node, i, model, memory, f"gpu-{i}", None))
            continue
        counter_set = f"gpu-{i}-counters"
        counter_sets.append({"name": counter_set, "counters": {"memory": {"value": memory}}})
        whole = _device(node, i, model, memory, f"gpu-{i}", "whole")
        whole["consumesCounters"] = [{"counterSet": counter_set, "counters": {"memory": {"value": memory}}}]
        devices.append(whole)
        half = _half(memory)
        for h in range(2):
            part = _device(node, i, model, half, f"gpu-{i}-half-{h}", "half")
            part["consumesCounters"] = [{"counterSet": counter_set, "counters": {"memory": {"value": half}}}]
            devices.append(part)
    out = {slice_name(node): {"driver": DRIVER, "pool": pool, "nodeName": node, "devices": devices}}
    if partitions:
        out[counters_slice_name(node)] = {
            "driver": DRIVER,
            "pool": dict(pool),
            "nodeName": node,
            "sharedCounters": counter_sets,
        }
    return out


class SimulatedDraDriver:
    """Publishes the slices of every GPU node; ``sync`` brings due nodes' slices up to date."""

    def __init__(
        self,
        store: ClusterStore,
        informers: InformerFactory,
        options: DraDriverOptions | None = None,
        *,
        synchronous: bool = False,
    ) -> None:
        self.store = store
        self.options = options or DraDriverOptions()
        self.synchronous = synchronous
        self._due: dict[str, None] = {}
        self._syncing = False
        informers.informer("Node").add_handler(self._on_node)

    def _on_node(self, change: Change[Any]) -> None:
        name = str((change.obj.get("metadata") or {}).get("name"))
        if change.type == EventType.MODIFIED and change.old is not None:
            before, after = change.old, change.obj
            if (before.get("status") or {}).get("allocatable") == (after.get("status") or {}).get(
                "allocatable"
            ) and (
                (before.get("metadata") or {}).get("labels") == (after.get("metadata") or {}).get("labels")
            ):
                return  # heartbeats and conditions: the cards are the same
        self._due[name] = None
        if self.synchronous and not self._syncing:
            self.sync()

    def sync(self) -> None:
        if self._syncing:
            return
        self._syncing = True
        try:
            while self._due:
                name = next(iter(self._due))
                del self._due[name]
                try:
                    self.sync_node(name)
                except (Conflict, NotFound, AlreadyExists):
                    self._due[name] = None  # raced with another writer: read again
                    break
                except Exception:
                    log.exception("DRA driver %s: publishing the slices of node %s", DRIVER, name)
        finally:
            self._syncing = False

    def sync_node(self, name: str) -> None:
        obj = self.store.get("Node", None, name)
        wanted: dict[str, dict[str, Any]] = {}
        if obj is not None and not (obj.get("metadata") or {}).get("deletionTimestamp"):
            try:
                count, model = gpu_cards(Node.from_dict(obj))
            except InputError:
                count, model = 0, ""
            if count:
                wanted = desired_slices(name, count, model, self.options.partitions, self.options.sharing)
        current = {
            n: found
            for n in (slice_name(name), counters_slice_name(name))
            if (found := self.store.get("ResourceSlice", None, n)) is not None
        }
        if {n: _without_generation(o.get("spec")) for n, o in current.items()} == wanted:
            return
        generation = 1 + max((_generation(o) for o in current.values()), default=-1)
        for slice_name_, spec in wanted.items():
            spec = {**spec, "pool": {**spec["pool"], "generation": generation}}
            old = current.get(slice_name_)
            if old is None:
                self.store.create(
                    {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceSlice",
                        "metadata": {"name": slice_name_},
                        "spec": spec,
                    }
                )
            else:
                self.store.update({**old, "spec": spec})
        for slice_name_ in current.keys() - wanted.keys():
            self.store.delete("ResourceSlice", None, slice_name_)


def _generation(obj: Obj) -> int:
    pool = (obj.get("spec") or {}).get("pool") or {}
    value = pool.get("generation") if isinstance(pool, Mapping) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _without_generation(spec: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict(spec) if isinstance(spec, Mapping) else {}
    pool = out.get("pool")
    if isinstance(pool, Mapping):
        out["pool"] = {k: v for k, v in pool.items() if k != "generation"}
    return out
