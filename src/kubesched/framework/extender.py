"""What the scheduler asks of an extender (upstream ``framework.Extender``).

An extender is policy that lives outside the scheduler process: after the in-tree Filter plugins it
may drop feasible nodes, its scores are added to the plugins' ones, it may bind pods and it may veto
or change preemption victims. :class:`kubesched.scheduler.extenders.HTTPExtender` implements this
over upstream's HTTP protocol; tests and embedders may supply their own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from kubesched.errors import FrameworkError

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from kubesched.api.objects import Pod

#: What upstream adds to a pod's unschedulable plugins when an extender dropped nodes: no cluster
#: event is known to help, so any event requeues the pod.
EXTENDER_NAME = "Extender"
#: Extender scores are 0..10 (upstream ``extenderv1.MaxExtenderPriority``); the scheduler scales them
#: to the 0..100 node score range.
MIN_EXTENDER_PRIORITY = 0
MAX_EXTENDER_PRIORITY = 10


class ExtenderError(FrameworkError):
    """An extender call failed (transport, status code, bad reply, or the ``Error`` it returned).

    ``str()`` names the extender and the verb, so the pod's SchedulerError condition says which one.
    """

    def __init__(self, extender: str, verb: str, detail: str) -> None:
        super().__init__(f"extender {extender!r} {verb}: {detail}")
        self.extender = extender
        self.verb = verb
        self.detail = detail


@dataclass(slots=True)
class FilterReply:
    """An extender's filter answer: the nodes it keeps (in its order) and why it dropped others."""

    nodes: list[str]
    failed: dict[str, str] = field(default_factory=dict)
    failed_and_unresolvable: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class Victims:
    """Pods to evict on one node and how many PodDisruptionBudgets that violates."""

    pods: list[Pod]
    num_pdb_violations: int = 0


class NodeInfoLookup(Protocol):
    """Pods on a node, by node name (the snapshot), for turning victim UIDs back into pods."""

    def pods_on(self, node: str) -> Mapping[str, Pod] | None: ...


class Extender(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def ignorable(self) -> bool: ...
    @property
    def weight(self) -> int: ...
    def is_interested(self, pod: Pod) -> bool: ...
    def is_filter(self) -> bool: ...
    def is_prioritizer(self) -> bool: ...
    def is_binder(self) -> bool: ...
    def supports_preemption(self) -> bool: ...
    def filter(self, pod: Pod, nodes: Sequence[Mapping[str, Any]]) -> FilterReply: ...
    def prioritize(self, pod: Pod, nodes: Sequence[Mapping[str, Any]]) -> dict[str, int]: ...
    def bind(self, pod: Pod, node: str) -> None: ...
    def process_preemption(
        self, pod: Pod, victims: dict[str, Victims], lookup: NodeInfoLookup
    ) -> dict[str, Victims]: ...


def call_preemption_extenders(
    extenders: Sequence[Extender], pod: Pod, victims: dict[str, Victims], lookup: NodeInfoLookup
) -> dict[str, Victims]:
    """Upstream callExtenders: each interested preempting extender may drop candidate nodes or change
    their victims; raises ExtenderError for a non-ignorable failure."""
    for ext in extenders:
        if not ext.supports_preemption() or not ext.is_interested(pod):
            continue
        try:
            result = ext.process_preemption(pod, victims, lookup)
        except ExtenderError as exc:
            if ext.ignorable:
                log.info(
                    "Skipping extender %s in preempt as it returned error and has ignorable flag set: %s",
                    ext.name,
                    exc,
                )
                continue
            raise
        for node in list(result):
            if not result[node].pods:
                if ext.ignorable:
                    log.info("Ignored node %s: extender %s reported no victims", node, ext.name)
                    del result[node]
                    continue
                raise ExtenderError(ext.name, "preempt", f'expected at least one victim pod on node "{node}"')
        victims = result
        if not victims:
            break
    return victims
