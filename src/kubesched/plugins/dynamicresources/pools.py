"""Resource pools as a node sees them (upstream ``GatherPools``): the slices whose devices the node
can reach, grouped by driver and pool, newest generation only, told apart as complete, incomplete
(not every slice of the generation published yet) or invalid (duplicate device names, a missing
counter set), and ordered as upstream's first-fit search walks them: by driver and pool name, with
pools whose devices have binding conditions last.

:class:`SliceIndex` sorts the slices by how they select nodes once, so gathering for one node looks
only at its own node-local slices plus the few that select nodes otherwise.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from kubesched.api.objects import Node
from kubesched.api.resource import ResourceSlice
from kubesched.api.selectors import NodeSelector


def node_matches(node: Node | None, node_name: str, all_nodes: bool, selector: NodeSelector | None) -> bool:
    """Upstream ``NodeMatches``: a node name, all nodes, or a node selector."""
    if node_name:
        return node is not None and node.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        return node is not None and selector.matches(node.name, node.labels)
    return False


PoolID = tuple[str, str]


@dataclass(slots=True, eq=False)
class Pool:
    driver: str
    name: str
    incomplete: bool = False
    invalid: bool = False
    invalid_reason: str = ""
    #: Slices with devices the node may use, by slice name.
    slices: list[ResourceSlice] = field(default_factory=list)
    #: Further slices of the pool (other nodes' devices): they consume the pool's counters too.
    other_slices: list[ResourceSlice] = field(default_factory=list)
    #: Counter set name → counter name → amount.
    counter_sets: dict[str, Mapping[str, Fraction]] = field(default_factory=dict)

    @property
    def id(self) -> PoolID:
        return (self.driver, self.name)

    def __str__(self) -> str:
        return f"{self.driver}/{self.name}"


class SliceIndex:
    """The slices grouped by how they select nodes, built once per set of slices."""

    __slots__ = ("all_slices", "by_node", "by_pool", "counter_slices", "other")

    def __init__(self, slices: Sequence[ResourceSlice]) -> None:
        self.all_slices = slices
        self.by_node: dict[str, list[ResourceSlice]] = defaultdict(list)
        self.counter_slices: list[ResourceSlice] = []
        #: Slices for all nodes, by node selector or per device (checked per node).
        self.other: list[ResourceSlice] = []
        self.by_pool: dict[PoolID, list[ResourceSlice]] = defaultdict(list)
        for s in slices:
            self.by_pool[(s.driver, s.pool.name)].append(s)
            if s.shared_counters:
                self.counter_slices.append(s)
            elif s.node_name:
                self.by_node[s.node_name].append(s)
            else:
                self.other.append(s)

    def relevant(self, node: Node | None, partitionable: bool) -> list[ResourceSlice]:
        """The slices a node can use, in the order upstream considers all slices."""
        candidates: list[ResourceSlice] = []
        if partitionable:
            candidates.extend(self.counter_slices)
        if node is not None:
            candidates.extend(self.by_node.get(node.name, ()))
        for s in self.other:
            if not partitionable and s.per_device_node_selection:
                continue
            if s.all_nodes or s.node_selector is not None:
                if node_matches(node, "", s.all_nodes, s.node_selector):
                    candidates.append(s)
            elif s.per_device_node_selection and any(
                node_matches(node, d.node_name, d.all_nodes, d.node_selector) for d in s.devices
            ):
                candidates.append(s)
        return candidates


def _duplicate_device(slices: Sequence[ResourceSlice]) -> str | None:
    seen: set[str] = set()
    for s in slices:
        for d in s.devices:
            if d.name in seen:
                return f"duplicate device name {d.name}"
            seen.add(d.name)
    return None


def _counter_consumption_error(
    counter_sets: Mapping[str, Mapping[str, Fraction]], slices: Sequence[ResourceSlice]
) -> str | None:
    for s in slices:
        for d in s.devices:
            for consumption in d.consumes_counters:
                counters = counter_sets.get(consumption.counter_set)
                if counters is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in consumption.counters:
                    if name not in counters:
                        return f"counter {name} not found in counter set {consumption.counter_set}"
    return None


def _build_pool(
    pool_id: PoolID, slices: list[ResourceSlice], partitionable: bool, all_slices: list[ResourceSlice] | None
) -> Pool:
    slices.sort(key=lambda s: s.name)
    pool = Pool(*pool_id)
    if partitionable:
        counter_slices = [s for s in slices if s.shared_counters]
        device_slices = [s for s in slices if not s.shared_counters]
    else:
        counter_slices, device_slices = [], slices
    if (reason := _duplicate_device(device_slices)) is not None:
        return Pool(*pool_id, invalid=True, invalid_reason=reason)
    pool.slices = device_slices
    if not partitionable:
        return pool
    counter_sets: dict[str, Mapping[str, Fraction]] = {}
    for s in counter_slices:
        for counter_set in s.shared_counters:
            if counter_set.name in counter_sets:
                return Pool(
                    *pool_id, invalid=True, invalid_reason=f"duplicate counter set name {counter_set.name}"
                )
            counter_sets[counter_set.name] = counter_set.counters
    if (reason := _counter_consumption_error(counter_sets, slices)) is not None:
        return Pool(*pool_id, invalid=True, invalid_reason=reason)
    pool.counter_sets = counter_sets
    if all_slices is None or len(slices) == len(all_slices):
        return pool
    targeting = {s.name for s in slices}
    others = [s for s in all_slices if s.name not in targeting]
    if (reason := _counter_consumption_error(counter_sets, others)) is not None:
        return Pool(*pool_id, invalid=True, invalid_reason=reason)
    pool.other_slices = others
    return pool


def _has_binding_conditions(pool: Pool) -> bool:
    return any(d.binding_conditions for s in pool.slices for d in s.devices)


def gather_pools(index: SliceIndex, node: Node | None, partitionable: bool) -> list[Pool]:
    grouped: dict[PoolID, list[ResourceSlice]] = {}
    for s in index.relevant(node, partitionable):
        pool_id = (s.driver, s.pool.name)
        current = grouped.get(pool_id)
        if current is None or s.pool.generation > current[0].pool.generation:
            grouped[pool_id] = [s]
        elif s.pool.generation == current[0].pool.generation:
            current.append(s)
    result: list[Pool] = []
    with_binding_conditions: list[Pool] = []
    for pool_id, slices in grouped.items():
        generation = slices[0].pool.generation
        expected = slices[0].pool.resource_slice_count
        all_slices: list[ResourceSlice] | None = None
        if len(slices) != expected:
            # Slices not relevant for this node may complete the pool, or show that a newer
            # generation is replacing it (then the pool is ignored).
            all_slices = []
            obsolete = False
            for s in index.by_pool.get(pool_id, ()):
                if s.pool.generation == generation:
                    all_slices.append(s)
                elif s.pool.generation > generation:
                    obsolete = True
                    break
            if obsolete:
                continue
            if len(all_slices) != expected:
                result.append(Pool(*pool_id, incomplete=True))
                continue
        pool = _build_pool(pool_id, slices, partitionable, all_slices)
        (with_binding_conditions if _has_binding_conditions(pool) else result).append(pool)
    result.sort(key=lambda p: p.id)
    with_binding_conditions.sort(key=lambda p: p.id)
    return result + with_binding_conditions


__all__ = ["Pool", "SliceIndex", "gather_pools", "node_matches"]
