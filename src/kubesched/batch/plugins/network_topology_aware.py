"""network-topology-aware: where a gang goes in the HyperNode tree (Volcano
``plugins/network-topology-aware``).

* **Gradients** (hard mode): the HyperNodes under the search root, breadth first, kept when their
  tier is at most the job's ``highestTierAllowed`` and, for a job with nothing placed yet, when the
  idle or future idle resources summed over their nodes cover the PodGroup's ``minResources``;
  grouped by tier, lowest first. A soft-mode job or a job without a topology gets the root alone.
  For eviction (gangpreempt, gangreclaim) a HyperNode is kept when the allocatable resources of its
  nodes cover ``minResources`` (what eviction could free, not what is free), the gradients come
  highest tier first, and only the last ``hypernode.gradient.evict.max-hypernodes`` (8) HyperNodes
  of that order are kept, so the widest domains are scanned first and the scan stays short.
* **HyperNode order**: binpacking at HyperNode level. For each resource the job asks for that has a
  weight (cpu, memory, ``hypernode.binpack.resources``), ``(used + request) / allocatable`` over
  the HyperNode's nodes, weighted and averaged (0 when any would overflow); ties at the best score
  are broken by the share of the job's tasks already in the HyperNode; times ``100 * weight``.
* **Node order**: for a task of a job with a network topology and a HyperNode already holding some
  of its tasks, the lower the tier of the lowest HyperNode common to a node's leaf and that
  HyperNode, the higher the node's score (``(maxTier - tier) / (maxTier - minTier)``, 1 in the same
  leaf); for other tasks (``hypernode.binpack.normal-pod.enable``, on by default) HyperNode-level
  binpacking of the task over every tier the node is in, tier ``t`` weighted ``fading ** (t - 1)``.

Arguments: ``weight`` (1), ``hypernode.binpack.cpu`` (1), ``hypernode.binpack.memory`` (1),
``hypernode.binpack.resources`` and ``hypernode.binpack.resources.<name>`` (1),
``hypernode.binpack.normal-pod.enable`` (true), ``hypernode.binpack.normal-pod.fading`` (0.8),
``hypernode.gradient.evict.max-hypernodes`` (8; 0 or less: 8).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from kubesched.api.resources import CPU, MEMORY
from kubesched.batch.conf import PluginOption
from kubesched.batch.hypernodes import HyperNodeInfo, HyperNodeTree
from kubesched.batch.job_info import JobInfo, TaskInfo
from kubesched.batch.operations import SearchPurpose
from kubesched.batch.plugins.args import get_bool, get_float, get_int
from kubesched.batch.session import FloatArray, Session
from kubesched.cache.node_table import NodeTable
from kubesched.framework.types import IntArray

MAX_NODE_SCORE = 100
#: How many HyperNodes an eviction gradient keeps, unless the arguments say otherwise.
DEFAULT_EVICT_MAX_HYPER_NODES = 8
FULL_SCORE = 1.0
ZERO_SCORE = 0.0


class NetworkTopologyAwarePlugin:
    name = "network-topology-aware"

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        args = option.arguments
        p = self.name
        self.weight = get_int(args, "weight", 1, plugin=p)
        if self.weight < 0:
            self.weight = 1
        self.resources: dict[str, int] = {}
        cpu = get_int(args, "hypernode.binpack.cpu", 1, plugin=p)
        memory = get_int(args, "hypernode.binpack.memory", 1, plugin=p)
        self.resources[CPU] = cpu if cpu >= 0 else 1
        self.resources[MEMORY] = memory if memory >= 0 else 1
        raw = args.get("hypernode.binpack.resources")
        for name in (raw if isinstance(raw, str) else "").split(","):
            name = name.strip()
            if name:
                w = get_int(args, f"hypernode.binpack.resources.{name}", 1, plugin=p)
                self.resources[name] = w if w >= 0 else 1
        self.normal_pod_enable = get_bool(args, "hypernode.binpack.normal-pod.enable", True, plugin=p)
        self.normal_pod_fading = get_float(args, "hypernode.binpack.normal-pod.fading", 0.8, plugin=p)
        if self.normal_pod_fading < 0:
            self.normal_pod_fading = 0.8
        self.max_hyper_nodes_for_eviction = get_int(
            args, "hypernode.gradient.evict.max-hypernodes", DEFAULT_EVICT_MAX_HYPER_NODES, plugin=p
        )
        if self.max_hyper_nodes_for_eviction <= 0:
            self.max_hyper_nodes_for_eviction = DEFAULT_EVICT_MAX_HYPER_NODES
        self.min_tier = 0
        self.max_tier = 0

    # -- session --------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        tree = ssn.hyper_nodes
        if tree is None or tree.empty:
            return
        self._tree = tree
        self.min_tier, self.max_tier = tree.tiers[0], tree.tiers[-1]
        names = ssn.space.names
        self._cols = np.array([i for i, n in enumerate(names) if n in self.resources], dtype=np.int64)
        self._w = np.array([self.resources[names[i]] for i in self._cols], dtype=np.float64)
        # Idle and future idle as the session opened (Volcano's cache is filled once; only its
        # ``used`` follows the session's allocations).
        self._idle: dict[str, IntArray] = {}
        self._future_idle: dict[str, IntArray] = {}
        self._allocatable: dict[str, IntArray] = {}
        idle, future = ssn.idle, ssn.future_idle_array()
        for name in tree.infos:
            mask = ssn.hyper_node_mask(name)
            self._idle[name] = idle[mask].sum(axis=0)
            self._future_idle[name] = future[mask].sum(axis=0)
            self._allocatable[name] = ssn.node_allocatable[mask].sum(axis=0)
        ssn.hyper_node_gradient_fns[self.name] = self.gradient
        ssn.hyper_node_order_fns[self.name] = self.hyper_node_order
        ssn.add_node_order_fn(self.name, self.node_order)

    def on_session_close(self, ssn: Session) -> None:
        return None

    # -- gradients -------------------------------------------------------------------------------
    def gradient(
        self, job: JobInfo, root: HyperNodeInfo, purpose: SearchPurpose = SearchPurpose.ALLOCATE
    ) -> list[list[HyperNodeInfo]]:
        hard, highest = self._ssn.hard_topology(job)
        if not hard:
            return [[root]]
        result = self._gradients(job, root, highest, purpose)
        if purpose is SearchPurpose.EVICT:
            return self.reverse_and_cap_eviction_gradients(result)
        return result

    def reverse_and_cap_eviction_gradients(
        self, gradients: list[list[HyperNodeInfo]]
    ) -> list[list[HyperNodeInfo]]:
        """Highest tier first, at most ``max_hyper_nodes_for_eviction`` HyperNodes: from a gradient
        cut short, its last ones (Volcano keeps the tail of the list)."""
        if self.max_hyper_nodes_for_eviction <= 0:
            return gradients
        remaining = self.max_hyper_nodes_for_eviction
        out: list[list[HyperNodeInfo]] = []
        for gradient in reversed(gradients):
            if remaining == 0:
                break
            if len(gradient) <= remaining:
                out.append(gradient)
                remaining -= len(gradient)
            else:
                out.append(gradient[len(gradient) - remaining :])
                remaining = 0
        return out

    def _gradients(
        self, job: JobInfo, root: HyperNodeInfo, highest: int, purpose: SearchPurpose
    ) -> list[list[HyperNodeInfo]]:
        tree = self._tree
        allocated = job.allocated_hyper_node
        start = self._search_root(tree, root, highest, allocated)
        if start is None:
            return []
        eligible: dict[int, list[HyperNodeInfo]] = {}
        queue = deque([start])
        seen = {start.name}
        while queue:
            current = queue.popleft()
            if self._eligible(current, highest, allocated, job, purpose):
                eligible.setdefault(current.tier, []).append(current)
            for child in sorted(current.children):
                if child not in seen and child in tree.infos:
                    seen.add(child)
                    queue.append(tree.infos[child])
        return [eligible[t] for t in sorted(eligible)]

    def _eligible(
        self, hn: HyperNodeInfo, highest: int, allocated: str, job: JobInfo, purpose: SearchPurpose
    ) -> bool:
        if hn.tier > highest:
            return False
        if allocated:
            return True
        idle = self._idle.get(hn.name)
        if idle is None:
            return True
        need = job.min_resources
        if purpose is SearchPurpose.EVICT:
            return bool((need <= self._allocatable[hn.name]).all())
        return bool((need <= idle).all() or (need <= self._future_idle[hn.name]).all())

    @staticmethod
    def _search_root(
        tree: HyperNodeTree, root: HyperNodeInfo, highest: int, allocated: str
    ) -> HyperNodeInfo | None:
        """The search root: ``root`` intersected with the highest HyperNode the job's placed tasks
        allow (none: the two do not meet)."""
        if not allocated:
            return root
        allowed = ""
        for name in tree.ancestors(allocated):
            info = tree.infos.get(name)
            if info is None or info.tier > highest:
                break
            allowed = name
        if not allowed:
            return None
        lca = tree.lca(root.name, allowed)
        if lca == allowed:
            return root
        if lca == root.name:
            return tree.infos.get(allowed)
        return None

    # -- HyperNode order -------------------------------------------------------------------------
    def hyper_node_order(self, job: JobInfo, names: list[str]) -> dict[str, float]:
        ssn = self._ssn
        request = np.zeros(len(self._cols), dtype=np.float64)
        for task in job.tasks.values():
            request += task.resreq[self._cols]
        asked = request != 0
        scores: dict[str, float] = {}
        for name in names:
            mask = ssn.hyper_node_mask(name)
            alloc = ssn.node_allocatable[mask][:, self._cols].sum(axis=0).astype(np.float64)
            used = ssn.table.requested[mask][:, self._cols].sum(axis=0).astype(np.float64)
            scores[name] = _binpack(request, alloc, used, self._w, asked)
        best = max(scores.values(), default=0.0)
        tied = [n for n, s in scores.items() if s == best]
        if len(tied) > 1:
            for name in tied:
                scores[name] += self._task_share(name, job)
        return {n: MAX_NODE_SCORE * self.weight * s for n, s in scores.items()}

    def _task_share(self, hyper_node: str, job: JobInfo) -> float:
        if not job.tasks:
            return ZERO_SCORE
        nodes = self._tree.infos[hyper_node].real_nodes
        inside = sum(1 for t in job.tasks.values() if t.node_name and t.node_name in nodes)
        return inside / len(job.tasks)

    # -- node order ------------------------------------------------------------------------------
    def node_order(self, task: TaskInfo, table: NodeTable, slots: IntArray) -> FloatArray:
        ssn = self._ssn
        job = ssn.jobs.get(task.job)
        if job is None:
            return np.zeros(len(slots), dtype=np.float64)
        if job.network_topology is not None:
            scores = self._network_aware_scores(job, table, slots)
        elif self.normal_pod_enable:
            scores = self._normal_pod_scores(task, table, slots)
        else:
            return np.zeros(len(slots), dtype=np.float64)
        out: FloatArray = scores * float(MAX_NODE_SCORE * self.weight)
        return out

    def _network_aware_scores(self, job: JobInfo, table: NodeTable, slots: IntArray) -> FloatArray:
        tree = self._tree
        allocated = job.allocated_hyper_node
        scores = np.zeros(len(slots), dtype=np.float64)
        if not allocated:
            return scores
        leaves = [tree.leaf_of(table.names[s]) for s in slots.tolist()]
        for i, leaf in enumerate(leaves):
            scores[i] = self._lca_score(leaf, allocated)
        best = scores.max() if len(scores) else 0.0
        tied = np.flatnonzero(scores == best)
        if len(tied) > 1:
            for i in tied.tolist():
                if leaves[i]:
                    scores[i] += self._task_share(leaves[i], job)
        return scores

    def _lca_score(self, hyper_node: str, allocated: str) -> float:
        if not hyper_node or not allocated:
            return ZERO_SCORE
        if hyper_node == allocated:
            return FULL_SCORE
        lca = self._tree.infos.get(self._tree.lca(hyper_node, allocated))
        if lca is None:
            return ZERO_SCORE
        return self._tier_score(lca.tier)

    def _tier_score(self, tier: int) -> float:
        if self.min_tier == self.max_tier:
            return FULL_SCORE
        if self.min_tier <= tier <= self.max_tier:
            return (self.max_tier - tier) / (self.max_tier - self.min_tier)
        return ZERO_SCORE

    def _normal_pod_scores(self, task: TaskInfo, table: NodeTable, slots: IntArray) -> FloatArray:
        ssn, tree = self._ssn, self._tree
        tier_weights = {t: self.normal_pod_fading ** (t - 1) for t in range(self.min_tier, self.max_tier + 1)}
        total = sum(tier_weights.values())
        scores = np.zeros(len(slots), dtype=np.float64)
        if total <= 0:
            return scores
        request = task.resreq[self._cols].astype(np.float64)
        asked = request != 0
        cache: dict[str, float] = {}
        for i, slot in enumerate(slots.tolist()):
            node = table.names[slot]
            acc = 0.0
            for tier in range(self.min_tier, self.max_tier + 1):
                score = FULL_SCORE
                name = tree.at_tier(tier).get(node)
                if name is not None:
                    if name not in cache:
                        mask = ssn.hyper_node_mask(name)
                        alloc = ssn.node_allocatable[mask][:, self._cols].sum(axis=0).astype(np.float64)
                        used = ssn.table.requested[mask][:, self._cols].sum(axis=0).astype(np.float64)
                        cache[name] = _binpack(request, alloc, used, self._w, asked)
                    score = cache[name]
                acc += tier_weights[tier] * score
            scores[i] = acc / total
        return scores


def _binpack(
    request: FloatArray, alloc: FloatArray, used: FloatArray, w: FloatArray, asked: FloatArray
) -> float:
    """HyperNode-level binpacking of ``request`` (0 when a requested resource would overflow)."""
    if not asked.any():
        return ZERO_SCORE
    total, weight = 0.0, 0.0
    for r in np.flatnonzero(asked).tolist():
        if used[r] + request[r] > alloc[r]:
            return ZERO_SCORE
        total += w[r] * (used[r] + request[r]) / alloc[r]
        weight += w[r]
    return total / weight if weight > 0 else ZERO_SCORE
