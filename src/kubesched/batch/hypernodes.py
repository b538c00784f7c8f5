"""The session's HyperNode tree (Volcano ``api.HyperNodesInfo`` and ``HyperNodeInfoMap``).

Each HyperNode has its tier, its parent (the HyperNode naming it as a member), its children and
its real nodes: the nodes its Node members select, united with the real nodes of its HyperNode
members. Above every parentless HyperNode sits a virtual top, ``<cluster-top-hypernode>``, one tier
above the highest, holding every node of the session, as Volcano's session adds it.

The tree is not ready (Volcano's ``HyperNodesReadyToSchedule`` false: jobs with a network topology
wait) when a HyperNode is its own ancestor or is claimed by two parents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from kubesched.api.topology import MEMBER_TYPE_HYPER_NODE, MEMBER_TYPE_NODE, HyperNode

#: The virtual HyperNode above all others (Volcano's ``framework.ClusterTopHyperNode``).
CLUSTER_TOP_HYPER_NODE = "<cluster-top-hypernode>"


@dataclass(slots=True, eq=False)
class HyperNodeInfo:
    name: str
    tier: int
    parent: str = ""
    children: set[str] = field(default_factory=set)
    #: Names of the nodes below it, whatever the depth.
    real_nodes: set[str] = field(default_factory=set)
    #: The HyperNode object (None for the virtual top and for members not created yet).
    hyper_node: HyperNode | None = None


@dataclass(slots=True, eq=False)
class HyperNodeTree:
    infos: dict[str, HyperNodeInfo]
    #: Tier → names of the HyperNodes at it (the virtual top included).
    by_tier: dict[int, set[str]]
    #: Tiers in ascending order, the virtual top's included (Volcano's ``HyperNodesTiers``).
    tiers: list[int]
    ready: bool = True
    error: str = ""
    #: Tier → node → the HyperNode of that tier holding it (filled on first use).
    _at_tier: dict[int, dict[str, str]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """No HyperNode but the virtual top."""
        return len(self.infos) <= 1

    def top(self) -> HyperNodeInfo:
        return self.infos[CLUSTER_TOP_HYPER_NODE]

    def ancestors(self, name: str) -> list[str]:
        """``name`` first, then its parent, up to the top."""
        out = [name]
        seen = {name}
        info = self.infos.get(name)
        while info is not None and info.parent and info.parent not in seen:
            out.append(info.parent)
            seen.add(info.parent)
            info = self.infos.get(info.parent)
        return out

    def lca(self, a: str, b: str) -> str:
        """The lowest HyperNode above both (Volcano's ``GetLCAHyperNode``; either empty: the other)."""
        if not a:
            return b
        if not b:
            return a
        above_a = set(self.ancestors(a))
        for name in self.ancestors(b):
            if name in above_a:
                return name
        return ""

    def at_tier(self, tier: int) -> dict[str, str]:
        """Node → the HyperNode of ``tier`` holding it (the first by name if several do)."""
        found = self._at_tier.get(tier)
        if found is None:
            found = {}
            for name in sorted(self.by_tier.get(tier, ()), reverse=True):
                for node in self.infos[name].real_nodes:
                    found[node] = name
            self._at_tier[tier] = found
        return found

    def leaf_of(self, node: str) -> str:
        """The HyperNode of the lowest tier holding ``node`` (Volcano's ``FindHyperNodeForNode``)."""
        for tier in self.tiers:
            name = self.at_tier(tier).get(node)
            if name is not None:
                return name
        return ""


def build_tree(hyper_nodes: Iterable[HyperNode], nodes: Mapping[str, Mapping[str, str]]) -> HyperNodeTree:
    """The tree over ``nodes`` (name → labels: the session's nodes)."""
    infos: dict[str, HyperNodeInfo] = {}
    for hn in sorted(hyper_nodes, key=lambda h: h.name):
        infos[hn.name] = HyperNodeInfo(hn.name, hn.tier, hyper_node=hn)
    node_items = list(nodes.items())
    error = ""
    for info in list(infos.values()):
        assert info.hyper_node is not None
        for member in info.hyper_node.members:
            if member.type != MEMBER_TYPE_HYPER_NODE or not member.selector.exact:
                continue
            child = infos.get(member.selector.exact)
            if child is None:
                # A member not created yet still gets its parent (Volcano keeps a placeholder).
                child = infos[member.selector.exact] = HyperNodeInfo(member.selector.exact, 0)
            if child.parent and child.parent != info.name:
                error = error or (
                    f"HyperNode {child.name} already has a parent {child.parent}, "
                    f"and cannot set another parent {info.name}"
                )
                continue
            child.parent = info.name
            info.children.add(child.name)
    done: set[str] = set()

    def resolve(name: str, chain: set[str]) -> None:
        nonlocal error
        if name in done:
            return
        if name in chain:
            error = error or f"cyclic dependency detected: HyperNode {name} is already in the ancestor chain"
            return
        info = infos[name]
        chain.add(name)
        if info.hyper_node is not None:
            for member in info.hyper_node.members:
                if member.type == MEMBER_TYPE_NODE:
                    info.real_nodes |= member.selector.matching(node_items)
        for child in sorted(info.children):
            resolve(child, chain)
            info.real_nodes |= infos[child].real_nodes
        chain.discard(name)
        done.add(name)

    for name in sorted(infos):
        resolve(name, set())
    # Exact Node members name nodes that may not exist (yet): only session nodes count.
    for info in infos.values():
        info.real_nodes &= nodes.keys()
    by_tier: dict[int, set[str]] = {}
    for info in infos.values():
        if info.hyper_node is not None:
            by_tier.setdefault(info.tier, set()).add(info.name)
    top_tier = max([1, *(t + 1 for t in by_tier)])
    top = HyperNodeInfo(CLUSTER_TOP_HYPER_NODE, top_tier, real_nodes=set(nodes))
    for info in infos.values():
        if not info.parent:
            info.parent = CLUSTER_TOP_HYPER_NODE
            top.children.add(info.name)
    infos[CLUSTER_TOP_HYPER_NODE] = top
    by_tier[top_tier] = {CLUSTER_TOP_HYPER_NODE}
    return HyperNodeTree(infos, by_tier, sorted(by_tier), ready=not error, error=error)
