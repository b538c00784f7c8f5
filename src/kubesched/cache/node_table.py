"""The columnar node state every plugin filters and scores in one go.

Rows are node *slots*; a slot keeps its number for the node's lifetime and is reused after the node
is gone. Resource columns are fixed for cpu (milli), memory (bytes), ephemeral-storage (bytes) and
pods (count); extended resources get columns as they appear. Labels are dictionary-encoded per key
(-1 = label absent) and taint lists are interned: nodes share a *taint signature* id, so a
toleration check costs one Python evaluation per distinct taint list, then one gather.

Host ports in use get one boolean column per ``(ip, protocol, port)`` and one per ``(protocol, port)``
(used with any IP), so a NodePorts check costs a few mask operations per wanted port. Images get one
size column per image name (0 = the node does not have it) and a count of the nodes holding it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import HostPort
from kubesched.api.resources import CPU, EPHEMERAL_STORAGE, INT64_MAX, MEMORY, PODS
from kubesched.api.taints import Taint
from kubesched.cache.node_info import NodeInfo

FIXED_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, PODS)
CPU_COL, MEMORY_COL, EPHEMERAL_COL, PODS_COL = range(4)

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


@dataclass(slots=True)
class LabelColumn:
    """One label key across all nodes: an int code per slot and the vocabulary behind the codes."""

    codes: NDArray[np.int32]
    vocab: dict[str, int] = field(default_factory=dict)
    values: list[str] = field(default_factory=list)

    def code(self, value: str) -> int:
        c = self.vocab.get(value)
        if c is None:
            c = len(self.values)
            self.vocab[value] = c
            self.values.append(value)
        return c


class NodeTable:
    """NumPy arrays indexed by node slot. Only the cache's snapshot writes to it."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self.resource_names: list[str] = list(FIXED_RESOURCES)
        self.resource_col: dict[str, int] = {n: i for i, n in enumerate(self.resource_names)}
        r = len(self.resource_names)
        self.names: list[str] = [""] * capacity
        self.slot_of: dict[str, int] = {}
        self.valid = np.zeros(capacity, dtype=np.bool_)
        self.allocatable = np.zeros((capacity, r), dtype=np.int64)
        self.requested = np.zeros((capacity, r), dtype=np.int64)
        self.nonzero_requested = np.zeros((capacity, 2), dtype=np.int64)
        self.unschedulable = np.zeros(capacity, dtype=np.bool_)
        self.taint_sig = np.zeros(capacity, dtype=np.int32)
        self.signatures: list[tuple[Taint, ...]] = [()]
        self._sig_ids: dict[tuple[Taint, ...], int] = {(): 0}
        self.labels: dict[str, LabelColumn] = {}
        self._label_keys_of: list[tuple[str, ...]] = [()] * capacity
        #: (ip, protocol, port) → slots where a pod binds exactly that host IP (0.0.0.0 included).
        self.host_ports: dict[HostPort, BoolArray] = {}
        #: (protocol, port) → slots where a pod binds that port on any host IP.
        self.host_ports_any: dict[tuple[str, int], BoolArray] = {}
        self._ports_of: list[frozenset[HostPort]] = [frozenset()] * capacity
        #: Image name → its size on each slot (0: absent), and how many nodes hold it.
        self.image_sizes: dict[str, IntArray] = {}
        self.image_nodes: dict[str, int] = {}
        self._images_of: list[dict[str, int]] = [{}] * capacity
        #: Slots of schedulable-candidate nodes in NodeTree (zone-interleaved) order.
        self.order: NDArray[np.int64] = np.zeros(0, dtype=np.int64)

    # -- shape -----------------------------------------------------------------------------------
    @property
    def num_resources(self) -> int:
        return len(self.resource_names)

    def column(self, resource: str) -> int:
        """Column of a resource, adding one (all zeros) the first time a name is seen."""
        col = self.resource_col.get(resource)
        if col is None:
            col = len(self.resource_names)
            self.resource_names.append(resource)
            self.resource_col[resource] = col
            pad = np.zeros((self.capacity, 1), dtype=np.int64)
            self.allocatable = np.hstack([self.allocatable, pad])
            self.requested = np.hstack([self.requested, pad])
        return col

    def _grow(self, need: int) -> None:
        new_cap = max(need, self.capacity * 2)
        extra = new_cap - self.capacity

        def grow(a: NDArray[np.generic]) -> NDArray[np.generic]:
            return np.concatenate([a, np.zeros((extra, *a.shape[1:]), dtype=a.dtype)])

        self.valid = grow(self.valid)  # type: ignore[assignment]
        self.allocatable = grow(self.allocatable)  # type: ignore[assignment]
        self.requested = grow(self.requested)  # type: ignore[assignment]
        self.nonzero_requested = grow(self.nonzero_requested)  # type: ignore[assignment]
        self.unschedulable = grow(self.unschedulable)  # type: ignore[assignment]
        self.taint_sig = grow(self.taint_sig)  # type: ignore[assignment]
        for col in self.labels.values():
            col.codes = np.concatenate([col.codes, np.full(extra, -1, dtype=np.int32)])
        for ports in (self.host_ports, self.host_ports_any):
            for key, mask in ports.items():
                ports[key] = grow(mask)  # type: ignore[index, assignment]
        for image, sizes in self.image_sizes.items():
            self.image_sizes[image] = grow(sizes)  # type: ignore[assignment]
        self.names.extend([""] * extra)
        self._label_keys_of.extend([()] * extra)
        self._ports_of.extend([frozenset()] * extra)
        self._images_of.extend([{}] * extra)
        self.capacity = new_cap

    # -- rows ------------------------------------------------------------------------------------
    def signature_id(self, taints: tuple[Taint, ...]) -> int:
        sid = self._sig_ids.get(taints)
        if sid is None:
            sid = len(self.signatures)
            self.signatures.append(taints)
            self._sig_ids[taints] = sid
        return sid

    def label_column(self, key: str) -> LabelColumn:
        col = self.labels.get(key)
        if col is None:
            col = LabelColumn(np.full(self.capacity, -1, dtype=np.int32))
            self.labels[key] = col
        return col

    def write(self, slot: int, info: NodeInfo) -> None:
        """Copy one node's current state into its row."""
        if slot >= self.capacity:
            self._grow(slot + 1)
        node = info.node
        if node is None:
            self.clear(slot)
            return
        self.names[slot] = node.name
        self.slot_of[node.name] = slot
        self.valid[slot] = True
        alloc = self.allocatable[slot]
        alloc[:] = 0
        for name, value in node.allocatable.items():
            col = self.column(name)
            alloc = self.allocatable[slot]
            alloc[col] = value
        req = self.requested[slot]
        req[:] = 0
        for name, value in info.requested.items():
            col = self.column(name)
            req = self.requested[slot]
            req[col] = min(value, INT64_MAX)  # sums of bound pods saturate
        self.requested[slot, PODS_COL] = len(info.pods)
        self.nonzero_requested[slot, 0] = min(info.nonzero_cpu, INT64_MAX)
        self.nonzero_requested[slot, 1] = min(info.nonzero_memory, INT64_MAX)
        self.unschedulable[slot] = node.unschedulable
        self.taint_sig[slot] = self.signature_id(node.taints)
        old_keys = self._label_keys_of[slot]
        for key in old_keys:
            if key not in node.labels:
                self.labels[key].codes[slot] = -1
        for key, label_value in node.labels.items():
            label_col = self.label_column(key)
            label_col.codes[slot] = label_col.code(label_value)
        self._label_keys_of[slot] = tuple(node.labels)
        if info.used_ports or self._ports_of[slot]:
            self._write_ports(slot, frozenset(info.used_ports))
        if node.images is not self._images_of[slot]:
            self._write_images(slot, node.images)

    def _write_ports(self, slot: int, ports: frozenset[HostPort]) -> None:
        old = self._ports_of[slot]
        if ports == old:
            return
        for hp in old - ports:
            self.host_ports[hp][slot] = False
        for hp in ports - old:
            mask = self.host_ports.get(hp)
            if mask is None:
                mask = np.zeros(self.capacity, dtype=np.bool_)
                self.host_ports[hp] = mask
            mask[slot] = True
        in_use = {(hp.protocol, hp.port) for hp in ports}
        for pp in {(hp.protocol, hp.port) for hp in old} - in_use:
            self.host_ports_any[pp][slot] = False
        for pp in in_use:
            mask = self.host_ports_any.get(pp)
            if mask is None:
                mask = np.zeros(self.capacity, dtype=np.bool_)
                self.host_ports_any[pp] = mask
            mask[slot] = True
        self._ports_of[slot] = ports

    def _write_images(self, slot: int, images: dict[str, int]) -> None:
        old = self._images_of[slot]
        if images != old:
            for name in old:
                if name not in images:
                    self.image_sizes[name][slot] = 0
                    self.image_nodes[name] -= 1
            for name, size in images.items():
                sizes = self.image_sizes.get(name)
                if sizes is None:
                    sizes = np.zeros(self.capacity, dtype=np.int64)
                    self.image_sizes[name] = sizes
                    self.image_nodes[name] = 0
                if name not in old:
                    self.image_nodes[name] += 1
                sizes[slot] = size
        # Keep the node's own dict: the next write of an unchanged Node is an identity check.
        self._images_of[slot] = images

    def clear(self, slot: int) -> None:
        if slot >= self.capacity:
            return
        name = self.names[slot]
        if name and self.slot_of.get(name) == slot:
            del self.slot_of[name]
        self.names[slot] = ""
        self.valid[slot] = False
        self.allocatable[slot] = 0
        self.requested[slot] = 0
        self.nonzero_requested[slot] = 0
        self.unschedulable[slot] = False
        self.taint_sig[slot] = 0
        for key in self._label_keys_of[slot]:
            self.labels[key].codes[slot] = -1
        self._label_keys_of[slot] = ()
        if self._ports_of[slot]:
            self._write_ports(slot, frozenset())
        if self._images_of[slot]:
            self._write_images(slot, {})

    def pod_vector(self, requests: dict[str, int]) -> IntArray:
        """A pod's request as a row vector over this table's resource columns."""
        vec = np.zeros(self.num_resources, dtype=np.int64)
        for name, value in requests.items():
            col = self.resource_col.get(name)
            if col is None:
                col = self.column(name)
                vec = np.concatenate([vec, np.zeros(self.num_resources - len(vec), dtype=np.int64)])
            vec[col] = min(value, INT64_MAX)  # a pod's sum may pass int64; Fit knows it exactly
        vec[PODS_COL] = 1
        return vec
