"""PodGroups as preemption sees them: a gang is never left partially bound by DefaultPreemption.

kube-scheduler run beside Volcano does not know about PodGroups, so its preemption may evict one
member of a running gang and leave the rest holding resources without being able to run. Both
pipelines share one cluster here, so victim selection respects gangs, as a hard rule stronger than
a PodDisruptionBudget (which upstream may still violate when nothing else fits):

* a gang (``minMember`` > 1) with ``bound`` members loses at most ``bound - minMember`` of them, or
  all of them at once;
* on one node, when the node's lower-priority members of a gang fit in that slack, they are ordinary
  pods; when they are the gang's every bound member, they go or stay together (one unit in the
  reprieve loop); otherwise they are kept, like pods of higher priority.

The rule judges one node at a time and is conservative: a gang whose slack is smaller than its
lower-priority members on the node keeps all of them there.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from kubesched.api.objects import Pod
from kubesched.api.volcano import PodGroup, group_name_of
from kubesched.cache.node_info import NodeInfo

GangKey = tuple[str, str, str]

#: Status of a node whose only lower-priority pods are members of gangs that must stay whole.
GANG_KEPT = "No preemption victims found for incoming pod: every candidate victim is kept by its PodGroup"


def gang_of(pod: Pod) -> GangKey | None:
    found = group_name_of(pod.raw)
    return None if found is None else (found[0], pod.namespace, found[1])


@dataclass(slots=True)
class GangGuard:
    """``minMember`` (above 1) and bound members per PodGroup, as of one preemption's snapshot."""

    min_member: dict[GangKey, int]
    bound: Counter[GangKey]

    @classmethod
    def build(cls, groups: Iterable[PodGroup], infos: Mapping[str, NodeInfo]) -> GangGuard | None:
        """None when no gang with ``minMember`` above 1 has a bound member (nothing to guard)."""
        min_member = {g.key: g.min_member for g in groups if g.min_member > 1}
        if not min_member:
            return None
        bound: Counter[GangKey] = Counter()
        for info in infos.values():
            for p in info.pods.values():
                key = gang_of(p)
                if key is not None and key in min_member:
                    bound[key] += 1
        if not bound:
            return None
        return cls(min_member, bound)

    def units(self, potential: Sequence[Pod]) -> tuple[list[list[Pod]], bool]:
        """Group one node's lower-priority pods (most important first) into reprieve units, in the
        order of each unit's most important pod, dropping members that must stay: (units, whether
        any pod was kept for its gang).

        Of a gang's ``L`` lower-priority members here, the least important ``slack`` ones are
        ordinary pods; the other ``L - slack`` form one unit when they and the ordinary ones are the
        gang's every bound member, and are kept otherwise."""
        on_node: dict[GangKey, list[Pod]] = {}
        for p in potential:
            key = gang_of(p)
            if key is not None and key in self.min_member:
                on_node.setdefault(key, []).append(p)
        block: dict[str, GangKey] = {}  # uid → its gang, for members outside the slack
        kept = False
        for key, members in on_node.items():
            bound = self.bound[key]
            slack = max(bound - self.min_member[key], 0)
            core = members[: max(len(members) - slack, 0)]
            if core and len(members) < bound:
                kept = True
            for p in core:
                block[p.uid] = key
        units: list[list[Pod]] = []
        placed: set[GangKey] = set()
        for p in potential:
            key = block.get(p.uid)
            if key is None:
                units.append([p])
            elif len(on_node[key]) == self.bound[key] and key not in placed:
                placed.add(key)
                units.append([q for q in on_node[key] if block.get(q.uid) == key])
        return units, kept

    def complete(self, victims: list[Pod], potential: Sequence[Pod]) -> list[Pod]:
        """``victims`` plus the node's remaining lower-priority members of any gang whose unit was
        evicted, when fewer than ``minMember`` of it would stay bound (evicting more still fits)."""
        gone = Counter(gang_of(p) for p in victims)
        extra: list[Pod] = []
        chosen = {p.uid for p in victims}
        for p in potential:
            key = gang_of(p)
            if key is None or key not in self.min_member or p.uid in chosen:
                continue
            left = self.bound[key] - gone[key]
            if 0 < left < self.min_member[key]:
                extra.append(p)
        return victims + extra
