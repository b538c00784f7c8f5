"""Values passed between the queue, the framework and plugins."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod

BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@dataclass(slots=True, eq=False)
class QueuedPodInfo:
    """A pod in the scheduling queue with its attempt bookkeeping."""

    pod: Pod
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated_by: str = ""
    seq: int = 0


class ActionType(StrEnum):
    ADD = "Add"
    DELETE = "Delete"
    UPDATE = "Update"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of cluster change that may make pods schedulable (upstream ClusterEvent)."""

    resource: str  # "Node", "Pod", "AssignedPod", "*"
    action: ActionType | str  # "*" for any
    label: str = ""

    def matches(self, other: ClusterEvent) -> bool:
        return (self.resource in ("*", other.resource)) and (self.action in ("*", other.action))


@dataclass(slots=True)
class NodeFailure:
    """One rejection reason a Filter gives and the node slots it applies to."""

    reason: str
    nodes: BoolArray
    unresolvable: bool = False


@dataclass(slots=True)
class FilterResult:
    """A vectorized Filter verdict over every slot of the NodeTable.

    ``passed[slot]`` is the verdict; each failing slot is covered by at least one ``failures`` entry,
    and may be covered by several (NodeResourcesFit reports every insufficient resource).
    """

    passed: BoolArray
    failures: list[NodeFailure] = field(default_factory=list)

    @classmethod
    def all_pass(cls, capacity: int) -> FilterResult:
        return cls(np.ones(capacity, dtype=np.bool_))

    @classmethod
    def reject(cls, failing: BoolArray, reason: str, *, unresolvable: bool = False) -> FilterResult:
        return cls(~failing, [NodeFailure(reason, failing, unresolvable)])

    def reasons_for(self, slot: int) -> list[str]:
        return [f.reason for f in self.failures if f.nodes[slot]]


@dataclass(slots=True)
class PreFilterResult:
    """Restricts the nodes worth filtering; ``None`` node_names means all nodes."""

    node_names: set[str] | None = None
