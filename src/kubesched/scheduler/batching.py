"""Opportunistic batching (upstream KEP-5598, feature gate ``OpportunisticBatching``).

Consecutive pods with the same scheduling signature reuse the previous pod's scored node list:
when pod *n* went to node A and pod *n+1* has the same signature, does not fit on A any more (so
the scheduler places these pods one per node), and the previous cycle succeeded, pod *n+1* is
offered the next node of pod *n*'s list (best score first) as a hint. The hint is checked like a
nominated node — every Filter on that one node — and when it passes it is the pod's node, without
filtering the other nodes or scoring. Otherwise the cycle runs in full and its results replace the
list.

A signature is the profile's scheduler name plus the fragments of every PreFilter, Filter,
PreScore and Score plugin (:class:`~kubesched.framework.interfaces.SignPlugin`). A profile with a
plugin at those points that cannot sign, or with extenders, signs nothing; a plugin refusing one
pod (inter-pod affinity terms, topology spread constraints, explicit or defaulted) leaves that pod
unsigned. The list expires after 0.5 s of the scheduler's clock (upstream ``maxBatchAge``), and is
dropped by any cluster event other than the scheduler's own bindings being confirmed.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np

from kubesched.api.objects import Pod
from kubesched.framework.interfaces import SignPlugin
from kubesched.framework.runtime import Framework
from kubesched.framework.types import IntArray

__all__ = ["MAX_BATCH_AGE_SECONDS", "OpportunisticBatch", "Signature", "batchable_plugins", "sign_pod"]

#: Upstream ``maxBatchAge``: a list older than this is not reused.
MAX_BATCH_AGE_SECONDS = 0.5

#: Why a hint was not given (upstream's flush reasons), for tests and counters.
FLUSH_REASONS = (
    "empty",
    "pod_skipped",
    "pod_failed",
    "pod_incompatible",
    "expired",
    "node_missing",
    "node_not_full",
    "cluster_event",
)

Signature = tuple[tuple[str, Hashable], ...]


def sign_pod(signers: list[SignPlugin], pod: Pod) -> Signature | None:
    """The pod's signature from a profile's signing plugins, or None when one of them cannot sign
    it (upstream ``SignPod``)."""
    fragments: dict[str, Hashable] = {"SchedulerName": pod.scheduler_name}
    for pl in signers:
        frags, st = pl.sign_pod(pod)
        if st is not None and not st.ok:
            return None
        for key, value in frags:
            fragments[key] = value
    return tuple(sorted(fragments.items()))


_OFTEN_UNSIGNED = frozenset({"PodTopologySpread", "InterPodAffinity"})


def batchable_plugins(fwk: Framework) -> list[SignPlugin] | None:
    """The signing plugins of a profile, or None when one of its PreFilter, Filter, PreScore or
    Score plugins cannot sign (upstream ``computeBatchablePlugins``)."""
    candidates: list[object] = [*fwk.pre_filter, *fwk.filter, *fwk.pre_score, *(pl for pl, _ in fwk.score)]
    seen: dict[str, SignPlugin] = {}
    for pl in candidates:
        name = str(getattr(pl, "name", type(pl).__name__))
        if name in seen:
            continue
        if not isinstance(pl, SignPlugin):
            return None
        seen[name] = pl
    # The plugins that most often refuse to sign (a pod with spread constraints or inter-pod
    # affinity) go first, so a pod without a signature costs one call; the signature itself does
    # not depend on the order.
    return sorted(seen.values(), key=lambda pl: pl.name not in _OFTEN_UNSIGNED)


@dataclass(slots=True)
class _BatchState:
    signature: Signature
    #: The previous full cycle's feasible slots and their total scores; ordered lazily.
    slots: IntArray
    scores: IntArray
    created: float
    order: IntArray | None = None
    next: int = 0

    def remaining(self) -> int:
        return len(self.slots) - self.next

    def pop(self, rng: np.random.Generator) -> int:
        if self.order is None:
            # Best score first; equal scores in random order (upstream's heap with a random key).
            self.order = np.lexsort((rng.random(len(self.slots)), -self.scores))
        slot = int(self.slots[self.order[self.next]])
        self.next += 1
        return slot


@dataclass(slots=True)
class _LastCycle:
    cycle: int = -1
    chosen: str = ""
    succeeded: bool = False


class OpportunisticBatch:
    """The per-profile batch state (upstream ``OpportunisticBatch``).

    The scheduler calls :meth:`node_hint` after PreFilter and :meth:`store` once a node was chosen;
    ``last_node_rejects(node)`` tells whether the Filter plugins reject the pod on the node the
    previous pod went to (None: the node is gone).
    """

    def __init__(self, signers: list[SignPlugin] | None, *, seed: int | None = None) -> None:
        """``signers``: the profile's :func:`batchable_plugins`; None turns batching off."""
        self.signers: list[SignPlugin] = signers or []
        self.disabled = signers is None
        self.state: _BatchState | None = None
        self.last = _LastCycle()
        # Its own generator: ordering equal scores must not shift the scheduler's tie-break draws.
        self.rng = np.random.default_rng(None if seed is None else seed + 0x5598)
        #: Pods placed on a hinted node (upstream ``batchedPods``).
        self.batched_pods = 0
        #: How often each flush reason was seen.
        self.flushes: dict[str, int] = dict.fromkeys(FLUSH_REASONS, 0)

    def invalidate(self) -> None:
        """A cluster event: the stored scores may no longer be those a fresh cycle would compute."""
        if self.state is not None:
            self.flushes["cluster_event"] += 1
            self.state = None

    def sign(self, pod: Pod) -> Signature | None:
        return None if self.disabled else sign_pod(self.signers, pod)

    def node_hint(
        self,
        signature: Signature | None,
        cycle: int,
        now: float,
        last_node_rejects: Callable[[str], bool | None],
    ) -> int | None:
        """The hinted slot for a pod with ``signature`` in scheduling cycle ``cycle``, or None."""
        state = self.state
        if self.disabled or state is None or state.remaining() == 0:
            return None
        reason = ""
        if cycle != self.last.cycle + 1:
            reason = "pod_skipped"
        elif not self.last.succeeded:
            reason = "pod_failed"
        elif signature is None or signature != state.signature:
            reason = "pod_incompatible"
        elif now > state.created + MAX_BATCH_AGE_SECONDS:
            reason = "expired"
        else:
            verdict = last_node_rejects(self.last.chosen)
            if verdict is None:
                reason = "node_missing"
            elif not verdict:
                reason = "node_not_full"
        if reason:
            self.flushes[reason] += 1
            self.state = None
            return None
        return state.pop(self.rng)

    def store(
        self,
        signature: Signature | None,
        hinted: str | None,
        chosen: str,
        cycle: int,
        now: float,
        others: tuple[IntArray, IntArray] | None,
    ) -> None:
        """Record a cycle's choice (upstream ``StoreScheduleResults``): ``others`` are the feasible
        slots other than the chosen one and their total scores (None when there was one node)."""
        self.last = _LastCycle(cycle, chosen, True)
        if hinted is not None and hinted == chosen:
            self.batched_pods += 1
            return
        if signature is not None and others is not None and len(others[0]) > 0:
            self.state = _BatchState(signature, others[0], others[1], now)
        else:
            self.flushes["empty" if signature is not None else "pod_incompatible"] += 1
            self.state = None
