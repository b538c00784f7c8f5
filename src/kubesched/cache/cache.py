"""The scheduler cache: what the scheduler believes is on every node, assumed pods included.

Upstream semantics: right after a scheduling cycle picks a node the pod is *assumed* there, so the next
cycle already counts it; binding runs later; the informer's event for the bound pod *confirms* the
assumption; a failed bind *forgets* it. Every change bumps the node's generation and marks its slot
dirty, so a snapshot refresh copies only the rows that changed.

A cluster has one cache, shared by both schedulers (see :mod:`kubesched.cache.feed`): each keeps
its own :class:`Snapshot` of it, and each snapshot its own list of rows still to refresh.
"""

from __future__ import annotations

import itertools
import weakref
from dataclasses import dataclass, field

import numpy as np

from kubesched.api.objects import Node, Pod
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import NodeTable
from kubesched.cache.node_tree import NodeTree
from kubesched.cache.pod_index import PodIndex
from kubesched.cache.volume_index import VolumeIndex
from kubesched.gpu.cards import GpuCards


class CacheError(Exception):
    """An impossible cache transition (assume twice, forget an unknown pod): a scheduler bug."""


@dataclass(slots=True)
class PodState:
    pod: Pod
    node_name: str
    assumed: bool
    binding_finished: bool = False


@dataclass(slots=True)
class _SnapshotLag:
    """What one snapshot has not caught up with yet: the nodes changed since its last refresh, and
    whether the node order moved. Every snapshot of the cache has its own (both schedulers keep one
    of the same cache, refreshed at different times)."""

    #: An insertion-ordered set: rows are copied in the order the nodes changed, so the table's
    #: resource columns come in an order that does not depend on string hashing.
    dirty: dict[str, None] = field(default_factory=dict)
    tree_changed: bool = True


class SchedulerCache:
    def __init__(self) -> None:
        self.node_infos: dict[str, NodeInfo] = {}
        self._slots: dict[str, int] = {}
        self._free_slots: list[int] = []
        self._next_slot = 0
        self._tree = NodeTree()
        self._pods: dict[str, PodState] = {}
        # Per snapshot (by id), the rows it has not seen yet. A plain dict, iterated on every node
        # change; an entry leaves with its snapshot (weakref.finalize).
        self._lags: dict[int, _SnapshotLag] = {}
        self._generation = itertools.count(1)
        #: Per-slot pod aggregates for topology plugins, kept in step with every pod change below.
        self.pod_index = PodIndex()
        #: Which pods use which claims and inline disks, for the volume plugins (same updates).
        self.volume_index = VolumeIndex()
        #: Milli-GPU left per card of every node, for GPU-sharing plugins (kubesched.gpu).
        self.gpu_cards = GpuCards()

    # -- nodes -----------------------------------------------------------------------------------
    def _info(self, name: str) -> NodeInfo:
        info = self.node_infos.get(name)
        if info is None:
            info = NodeInfo()
            self.node_infos[name] = info
            if self._free_slots:
                self._slots[name] = self._free_slots.pop()
            else:
                self._slots[name] = self._next_slot
                self._next_slot += 1
        return info

    def _touch(self, name: str, info: NodeInfo) -> None:
        info.generation = next(self._generation)
        self._mark(name)
        self.gpu_cards.sync(name, info.node, info.pods)

    def _mark(self, name: str) -> None:
        for lag in self._lags.values():
            lag.dirty[name] = None

    def _tree_moved(self) -> None:
        for lag in self._lags.values():
            lag.tree_changed = True

    def add_node(self, node: Node) -> None:
        info = self._info(node.name)
        info.node = node
        self._tree.add(node.name, node.zone_key)
        self._tree_moved()
        self._touch(node.name, info)

    def update_node(self, node: Node) -> None:
        self.add_node(node)

    def remove_node(self, name: str) -> None:
        info = self.node_infos.get(name)
        if info is None:
            return
        info.node = None
        self._tree.remove(name)
        self._tree_moved()
        self._touch(name, info)
        self._maybe_drop(name, info)

    def _maybe_drop(self, name: str, info: NodeInfo) -> None:
        # A node's entry outlives the Node object while pods still refer to it (upstream does the same).
        if info.node is None and not info.pods:
            del self.node_infos[name]
            self._free_slots.append(self._slots.pop(name))
            self._mark(name)

    @property
    def num_nodes(self) -> int:
        return len(self._tree)

    # -- pods ------------------------------------------------------------------------------------
    def is_assumed(self, uid: str) -> bool:
        st = self._pods.get(uid)
        return st is not None and st.assumed

    def pod_state(self, uid: str) -> PodState | None:
        return self._pods.get(uid)

    def assume_pod(self, pod: Pod, node_name: str) -> None:
        if pod.uid in self._pods:
            raise CacheError(f"pod {pod.key} is already in the cache")
        info = self._info(node_name)
        info.add_pod(pod)
        self.pod_index.add(pod, self._slots[node_name])
        self.volume_index.add(pod, self._slots[node_name])
        self._touch(node_name, info)
        self._pods[pod.uid] = PodState(pod, node_name, assumed=True)

    def finish_binding(self, pod: Pod) -> None:
        st = self._pods.get(pod.uid)
        if st is not None and st.assumed:
            st.binding_finished = True

    def forget_pod(self, pod: Pod) -> None:
        st = self._pods.get(pod.uid)
        if st is None or not st.assumed:
            raise CacheError(f"pod {pod.key} is not assumed, cannot forget it")
        self._remove(st)

    def add_pod(self, pod: Pod) -> None:
        """An assigned pod seen by the informer: confirms an assumption or adds a foreign pod."""
        st = self._pods.get(pod.uid)
        if st is not None:
            if st.assumed and st.node_name == pod.node_name:
                st.assumed = False
                self._replace(st, pod)
                return
            # Assumed on another node (or seen again): the informer is the truth.
            self._remove(st)
        info = self._info(pod.node_name)
        info.add_pod(pod)
        self.pod_index.add(pod, self._slots[pod.node_name])
        self.volume_index.add(pod, self._slots[pod.node_name])
        self._touch(pod.node_name, info)
        self._pods[pod.uid] = PodState(pod, pod.node_name, assumed=False)

    def update_pod(self, pod: Pod) -> None:
        st = self._pods.get(pod.uid)
        if st is None or st.node_name != pod.node_name:
            self.add_pod(pod)
            return
        self._replace(st, pod)

    def remove_pod(self, pod: Pod) -> None:
        st = self._pods.get(pod.uid)
        if st is not None:
            self._remove(st)

    def _replace(self, st: PodState, pod: Pod) -> None:
        info = self.node_infos[st.node_name]
        old = st.pod
        if (old.requests, old.nonzero_cpu, old.nonzero_memory, old.host_ports) != (
            pod.requests,
            pod.nonzero_cpu,
            pod.nonzero_memory,
            pod.host_ports,
        ):
            info.remove_pod(old)
            info.add_pod(pod)
            self._touch(st.node_name, info)
        else:
            # Same footprint (the usual confirm after bind): no row to rewrite.
            info.pods[pod.uid] = pod
        self.pod_index.update(pod, self._slots[st.node_name])
        self.volume_index.update(pod, self._slots[st.node_name])
        st.pod = pod

    def _remove(self, st: PodState) -> None:
        info = self.node_infos.get(st.node_name)
        if info is not None:
            info.remove_pod(st.pod)
            self._touch(st.node_name, info)
            self._maybe_drop(st.node_name, info)
        self.pod_index.remove(st.pod)
        self.volume_index.remove(st.pod)
        del self._pods[st.pod.uid]

    def pods(self) -> list[PodState]:
        return list(self._pods.values())

    # -- snapshot --------------------------------------------------------------------------------
    def update_snapshot(self, snapshot: Snapshot) -> None:
        """Bring the snapshot up to date, copying only the node rows that changed (upstream
        ``UpdateSnapshot`` by generation). A snapshot new to this cache gets every node."""
        lag = self._lags.get(id(snapshot))
        if lag is None:
            lag = self._lags[id(snapshot)] = _SnapshotLag(dict.fromkeys(self.node_infos))
            weakref.finalize(snapshot, self._lags.pop, id(snapshot), None)
        table = snapshot.table
        snapshot.pod_index = self.pod_index
        snapshot.volume_index = self.volume_index
        snapshot.gpu_cards = self.gpu_cards
        for name in lag.dirty:
            info = self.node_infos.get(name)
            slot = self._slots[name] if info is not None else None
            old_slot = table.slot_of.get(name)
            if old_slot is not None and old_slot != slot:
                # The node left its row (removed, or re-added into another free slot). The row may
                # already hold the node that reused the slot, written earlier in this loop: clear it
                # only if it still holds this node.
                if table.names[old_slot] == name:
                    table.clear(old_slot)
                else:
                    del table.slot_of[name]
            if info is None or slot is None:
                snapshot.node_infos.pop(name, None)
                continue
            table.write(slot, info)
            if info.node is None:
                snapshot.node_infos.pop(name, None)
            else:
                snapshot.node_infos[name] = info
        lag.dirty.clear()
        if lag.tree_changed:
            names = self._tree.list()
            table.order = np.fromiter((self._slots[n] for n in names), dtype=np.int64, count=len(names))
            lag.tree_changed = False


class Snapshot:
    """The node state one scheduling cycle works on: the NodeTable plus the NodeInfos behind it.

    NodeInfos are shared with the cache rather than cloned: the runtime applies cluster events only
    between cycles, so they cannot change while a cycle reads them.
    """

    def __init__(self) -> None:
        self.table = NodeTable()
        self.node_infos: dict[str, NodeInfo] = {}
        #: The cache's pod index (shared, like the NodeInfos); set by ``update_snapshot``.
        self.pod_index = PodIndex()
        #: The cache's claim and inline-disk index (shared); set by ``update_snapshot``.
        self.volume_index = VolumeIndex()
        #: The cache's per-card GPU state (shared); set by ``update_snapshot``.
        self.gpu_cards = GpuCards()

    @property
    def num_nodes(self) -> int:
        return len(self.table.order)

    def node_info(self, name: str) -> NodeInfo | None:
        return self.node_infos.get(name)
