"""Values passed between the queue, the framework and plugins."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum, IntFlag
from typing import Any

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod

BoolArray = NDArray[np.bool_]
IntArray = NDArray[np.int64]

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@functools.cache
def _read_only_full(capacity: int, value: bool | int, dtype: type[np.generic]) -> NDArray[Any]:
    arr = np.full(capacity, value, dtype=dtype)
    arr.flags.writeable = False
    return arr


def all_true(capacity: int) -> BoolArray:
    """A shared, read-only mask of ``capacity`` True entries: the verdict of a Filter that rejects
    no node, recognised by identity so the framework skips combining it."""
    mask: BoolArray = _read_only_full(capacity, True, np.bool_)
    return mask


def none_failed(capacity: int) -> NDArray[np.int16]:
    """A shared, read-only ``failed_by`` array of ``capacity`` entries where no plugin rejected
    any node (-1 everywhere)."""
    arr: NDArray[np.int16] = _read_only_full(capacity, -1, np.int16)
    return arr


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
    #: Why the PreEnqueue plugin ``gated_by`` holds the pod back (its status message).
    gated_message: str = ""
    seq: int = 0


class ActionType(IntFlag):
    """What happened to an object (upstream ``fwk.ActionType``): one bit per kind of change, so a
    registration can name several and an update can be told apart by what it changed."""

    NONE = 0
    ADD = 1 << 0
    DELETE = 1 << 1
    UPDATE_NODE_ALLOCATABLE = 1 << 2
    UPDATE_NODE_LABEL = 1 << 3
    UPDATE_NODE_TAINT = 1 << 4
    UPDATE_NODE_CONDITION = 1 << 5
    UPDATE_NODE_ANNOTATION = 1 << 6
    UPDATE_POD_LABEL = 1 << 7
    UPDATE_POD_SCALE_DOWN = 1 << 8
    UPDATE_POD_TOLERATION = 1 << 9
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1 << 10
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 1 << 11
    #: A pod update none of the specific bits describes.
    UPDATE_POD_OTHER = 1 << 12
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_POD_OTHER
    )
    ALL = (1 << 13) - 1


#: Resources of incoming events only: a registration for "Pod" matches both (upstream).
ASSIGNED_POD = "AssignedPod"
UNSCHEDULED_POD = "UnschedulablePod"
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    """A kind of cluster change that may make pods schedulable (upstream ClusterEvent)."""

    resource: (
        str  # "Node", "Pod", "Namespace", … or "*"; incoming pod events say AssignedPod/UnschedulablePod
    )
    action: ActionType
    label: str = ""

    @property
    def is_wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ActionType.ALL

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether this registration covers ``incoming`` (upstream ``ClusterEvent.Match``)."""
        if self.is_wildcard:
            return True
        r = self.resource
        resource_ok = r in (WILDCARD, incoming.resource) or (
            r == "Pod" and incoming.resource in (ASSIGNED_POD, UNSCHEDULED_POD)
        )
        return resource_ok and bool(self.action & incoming.action)


class QueueingHint(Enum):
    """A plugin's verdict on whether an event may make a pod it rejected schedulable."""

    QUEUE = "Queue"
    QUEUE_SKIP = "QueueSkip"


#: ``hint(pod, old, new)``: ``pod`` is the unschedulable pod; ``old``/``new`` the changed object's
#: parsed views before and after (``old`` is None for an add, ``new`` None for a delete).
QueueingHintFn = Callable[[Pod, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """A registration: the event, and the function that decides per pod (None: always Queue)."""

    event: ClusterEvent
    hint: QueueingHintFn | None = None


@dataclass(slots=True)
class NodeFailure:
    """One rejection reason a Filter gives and the node slots it applies to."""

    reason: str
    nodes: BoolArray
    unresolvable: bool = False
    #: What the reason is about, for explain only (the claim a volume reason comes from); the
    #: reason alone is what messages and the histogram show, as upstream.
    detail: str = ""


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
        """Every node passes. The mask is shared and read-only: build a new array to change it."""
        return cls(all_true(capacity))

    @classmethod
    def reject(cls, failing: BoolArray, reason: str, *, unresolvable: bool = False) -> FilterResult:
        return cls(~failing, [NodeFailure(reason, failing, unresolvable)])

    def reasons_for(self, slot: int) -> list[str]:
        return [f.reason for f in self.failures if f.nodes[slot]]

    def explained_reasons_for(self, slot: int) -> list[str]:
        """:meth:`reasons_for`, each with its detail when it has one."""
        return [f"{f.reason} ({f.detail})" if f.detail else f.reason for f in self.failures if f.nodes[slot]]


@dataclass(slots=True)
class PreFilterResult:
    """Restricts the nodes worth filtering; ``None`` node_names means all nodes."""

    node_names: set[str] | None = None
