"""The allocator's answers per node, kept across scheduling cycles.

Whether a pod's claims can be allocated on a node, and which devices they get there, depends only
on the claims' specs (with their classes and the allocator's features) and on the node's DRA state:
the slices it can use, the devices of their pools that allocated or in-flight claims take, and the
node object itself (labels select slices and devices). Pods from one template ask the same
question of every node, and between two of them only the nodes whose pools changed have a new
answer. So the answers are kept per node under a *stamp* that changes whenever anything the
answer depends on may have changed:

- a node's own stamp moves when a slice of one of its pools changes (every node with a slice in
  that pool: one pool may span nodes, and the slices of a pool decide whether it is complete) or
  when an allocation, a deallocation or an in-flight allocation touches a device of those pools;
- the epoch, shared by all nodes, moves when a DeviceClass changes, or when a slice or a device of
  a pool that is not tied to nodes by name changes (slices for all nodes, by node selector, per
  device, or with shared counters): those reach nodes that cannot be listed cheaply.

``version`` moves with every change: a cycle that sees it move between PreFilter (where its
allocator took the cluster's state) and Filter neither reads nor keeps answers, as its state and
the stamps may disagree.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Hashable, Iterable
from dataclasses import replace
from typing import Any

from kubesched.api.objects import Node
from kubesched.api.resource import AllocationResult, ResourceClaim, ResourceSlice
from kubesched.plugins.dynamicresources.pools import PoolID

#: The answer for a node: the claims' allocations (None: they do not fit), and the reason worth
#: telling the user when allocation failed on the node for one ("" otherwise).
Answer = tuple[list[AllocationResult] | None, str]
#: (epoch, the node's own stamp).
Stamp = tuple[int, int]

#: The pool key of slices that are not tied to nodes by name.
_ANY_NODE = ""
#: Answers kept per node for one stamp: claims with different specs ask different questions.
MAX_ANSWERS_PER_NODE = 64


def claims_signature(claims: Iterable[ResourceClaim]) -> Hashable:
    """What of the claims an allocation reads: their specs, in order (names and uids never reach
    an allocation result; the errors that name a claim are not kept)."""
    return tuple(json.dumps(claim.raw.get("spec"), sort_keys=True, default=str) for claim in claims)


def _slice_pool(s: ResourceSlice) -> tuple[PoolID, str]:
    node = s.node_name if s.node_name and not s.shared_counters else _ANY_NODE
    return (s.driver, s.pool.name), node


class DraStamps:
    """The stamps, moved by the events the DRA manager follows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.epoch = 0
        self.version = 0
        self._nodes: dict[str, int] = {}
        #: Per pool: node name (or ``_ANY_NODE``) → how many of its slices are tied to it.
        self._pool_nodes: dict[PoolID, dict[str, int]] = {}

    def stamp(self, node_name: str) -> Stamp:
        return self.epoch, self._nodes.get(node_name, 0)

    def _bump_pool(self, pool: PoolID) -> None:
        nodes = self._pool_nodes.get(pool)
        if not nodes:
            # No slice publishes the pool: no node sees its devices (a slice that comes moves
            # the stamps of its nodes then).
            return
        if _ANY_NODE in nodes:
            self.epoch += 1
            return
        stamps = self._nodes
        for name in nodes:
            stamps[name] = stamps.get(name, 0) + 1

    def slice_changed(self, old: ResourceSlice | None, new: ResourceSlice | None) -> None:
        with self._lock:
            self.version += 1
            pools = [_slice_pool(s) for s in (old, new) if s is not None]
            for pool, _ in pools:
                self._bump_pool(pool)
            if old is not None:
                pool, node = pools[0]
                counts = self._pool_nodes.get(pool, {})
                left = counts.get(node, 0) - 1
                if left > 0:
                    counts[node] = left
                else:
                    counts.pop(node, None)
                if not counts:
                    self._pool_nodes.pop(pool, None)
            if new is not None:
                pool, node = pools[-1]
                counts = self._pool_nodes.setdefault(pool, {})
                counts[node] = counts.get(node, 0) + 1
            # The nodes the pool reaches now (a slice may have moved to another node).
            for pool, _ in pools:
                self._bump_pool(pool)

    def allocation_changed(self, *allocations: AllocationResult | None) -> None:
        with self._lock:
            self.version += 1
            pools = {(r.driver, r.pool) for a in allocations if a is not None for r in a.results}
            for pool in pools:
                self._bump_pool(pool)

    def class_changed(self) -> None:
        with self._lock:
            self.version += 1
            self.epoch += 1

    # The claim assume cache's EventHandler: every version of a claim the scheduler sees.
    def on_add(self, obj: Any, initial_list: bool) -> None:
        if isinstance(obj, ResourceClaim) and obj.allocation is not None:
            self.allocation_changed(obj.allocation)

    def on_update(self, old: Any, new: Any) -> None:
        before = old.allocation if isinstance(old, ResourceClaim) else None
        after = new.allocation if isinstance(new, ResourceClaim) else None
        if before is after or (before is not None and after is not None and before == after):
            return
        self.allocation_changed(before, after)

    def on_delete(self, obj: Any) -> None:
        if isinstance(obj, ResourceClaim) and obj.allocation is not None:
            self.allocation_changed(obj.allocation)


class NodeAnswers:
    """Per node: the node object and stamp the answers hold for, and the answers by question
    (the allocator's features and the claims' signature)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        #: Per node: the node, the stamp, and per question the answer and whether its
        #: allocations name shares of devices.
        self._entries: dict[str, tuple[Node, Stamp, dict[Hashable, tuple[Answer, bool]]]] = {}

    def get(
        self, node: Node, stamp: Stamp, question: Hashable, new_share_id: Callable[[], str]
    ) -> Answer | None:
        """The kept answer, its shares of devices named anew (see :func:`with_new_share_ids`)."""
        entry = self._entries.get(node.name)
        if entry is None or entry[0] is not node or entry[1] != stamp:
            return None
        kept = entry[2].get(question)
        if kept is None:
            return None
        answer, shared = kept
        if shared and answer[0] is not None:
            return with_new_share_ids(answer[0], new_share_id), answer[1]
        return answer

    def put(self, node: Node, stamp: Stamp, question: Hashable, answer: Answer) -> None:
        with self._lock:
            entry = self._entries.get(node.name)
            if entry is None or entry[0] is not node or entry[1] != stamp:
                entry = self._entries[node.name] = (node, stamp, {})
            answers = entry[2]
            if len(answers) >= MAX_ANSWERS_PER_NODE:
                answers.clear()
            results = answer[0]
            shared = results is not None and any(r.share_id is not None for a in results for r in a.results)
            answers[question] = (answer, shared)

    def __len__(self) -> int:
        return len(self._entries)


def with_new_share_ids(
    results: list[AllocationResult], new_share_id: Callable[[], str]
) -> list[AllocationResult]:
    """A kept answer for another claim: a share of a device that allows multiple allocations is
    named anew for each allocation, as the allocator would."""
    return [
        replace(
            a,
            results=tuple(
                r if r.share_id is None else replace(r, share_id=new_share_id()) for r in a.results
            ),
        )
        for a in results
    ]


__all__ = ["Answer", "DraStamps", "NodeAnswers", "Stamp", "claims_signature", "with_new_share_ids"]
