"""Why a pod did not fit: per-node statuses and upstream's ``FitError`` message."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.framework.types import BoolArray, FilterResult

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"


@dataclass(slots=True)
class Diagnosis:
    """Outcome of the filter phase for one pod.

    ``failed_by[slot]`` is the index (into ``plugins``) of the Filter plugin that rejected the node
    first, -1 for nodes that passed or were never evaluated. ``reason_counts`` is the histogram of
    rejection reasons over all evaluated nodes, which is what users see.
    """

    num_all_nodes: int
    plugins: list[str] = field(default_factory=list)
    results: list[FilterResult | None] = field(default_factory=list)
    failed_by: np.ndarray[Any, np.dtype[np.int16]] | None = None
    unresolvable: BoolArray | None = None
    evaluated: BoolArray | None = None
    reason_counts: Counter[str] = field(default_factory=Counter)
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    pre_filter_msg: str = ""
    #: The PreFilter rejection was UnschedulableAndUnresolvable (preemption cannot help on any node).
    pre_filter_unresolvable: bool = False
    post_filter_msg: str = ""
    #: Nodes excluded up front (a PreFilterResult): their shared status, counted for every such node.
    absent_reason: str = ""
    absent_count: int = 0

    def message(self) -> str:
        """The upstream ``FitError.Error()`` text: ``0/N nodes are available: …``."""
        msg = NO_NODE_AVAILABLE_MSG.format(self.num_all_nodes) + ":"
        if self.pre_filter_msg:
            msg += f" {self.pre_filter_msg}."
        else:
            counts = Counter(self.reason_counts)
            if self.absent_reason and self.absent_count:
                counts[self.absent_reason] += self.absent_count
            parts = sorted(f"{n} {reason}" for reason, n in counts.items())
            if parts:
                msg += f" {', '.join(parts)}."
        if self.post_filter_msg:
            # Upstream appends the PostFilter message as it is (it carries its own punctuation).
            msg += f" {self.post_filter_msg}"
        return msg

    def node_reasons(self, slot: int) -> tuple[str, list[str]] | None:
        """(plugin, reasons) that rejected this node, or None if it passed / was not evaluated."""
        if self.failed_by is None:
            return None
        idx = int(self.failed_by[slot])
        if idx < 0:
            return None
        result = self.results[idx]
        reasons = result.reasons_for(slot) if result is not None else []
        return self.plugins[idx], reasons


class FitError(Exception):
    """No node fits the pod."""

    def __init__(self, pod_key: str, diagnosis: Diagnosis) -> None:
        self.pod_key = pod_key
        self.diagnosis = diagnosis
        super().__init__(diagnosis.message())


class NoNodesAvailable(Exception):
    def __init__(self) -> None:
        super().__init__("no nodes available to schedule pods")
