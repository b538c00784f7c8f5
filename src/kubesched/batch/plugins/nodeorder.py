"""nodeorder: kube-scheduler's score plugins with Volcano's weights (Volcano ``plugins/nodeorder``).

Arguments and defaults (Volcano's): ``leastrequested.weight`` 1 (NodeResourcesFit LeastAllocated over
cpu/memory weighted 50/50), ``mostrequested.weight`` 0 (MostAllocated, cpu/memory 1/1),
``balancedresource.weight`` 1 (BalancedAllocation over cpu, memory, nvidia.com/gpu),
``nodeaffinity.weight`` 2, ``podaffinity.weight`` 2, ``tainttoleration.weight`` 3,
``imagelocality.weight`` 1, ``podtopologyspread.weight`` 2. A weight of 0 turns a scorer off.

Every scorer but ImageLocality is normalized over the nodes being ranked (Volcano's batch node
order); ImageLocality adds its raw score (Volcano's per-node order function). As in Volcano the
scorers see the tasks the session has placed.

Speed: per pod spec the plugin keeps every score over all nodes. Scores that do not depend on what
the session places (node affinity, taints, images) are computed once; the resource scores
(least/most requested, balanced) are recomputed only on the rows the session changed since; the
inter-pod affinity and topology spread scores are recomputed when the session placed or evicted a
pod that can change them. The parts that need no per-call normalization are kept summed, so ranking
a task's candidate nodes is one gather in the usual case.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.api.topology_spread import SCHEDULE_ANYWAY
from kubesched.batch import k8s
from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import TaskInfo
from kubesched.batch.plugins.args import get_int
from kubesched.batch.session import FloatArray, Session
from kubesched.cache.node_table import NodeTable
from kubesched.errors import InputError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.interfaces import ScoreNormalizer
from kubesched.framework.status import Code
from kubesched.framework.types import IntArray


@dataclass(frozen=True, slots=True)
class Scorer:
    key: str
    plugin: str
    args: dict[str, Any] | None
    default_weight: int
    normalize: bool
    #: Reads node rows the session changes (resource scorers): never cached.
    dynamic: bool


SCORERS = (
    Scorer(
        "leastrequested",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "LeastAllocated",
                "resources": [{"name": "cpu", "weight": 50}, {"name": "memory", "weight": 50}],
            }
        },
        1,
        True,
        True,
    ),
    Scorer(
        "mostrequested",
        "NodeResourcesFit",
        {
            "scoringStrategy": {
                "type": "MostAllocated",
                "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            }
        },
        0,
        True,
        True,
    ),
    Scorer(
        "balancedresource",
        "NodeResourcesBalancedAllocation",
        {
            "resources": [
                {"name": "cpu", "weight": 1},
                {"name": "memory", "weight": 1},
                {"name": "nvidia.com/gpu", "weight": 1},
            ]
        },
        1,
        True,
        True,
    ),
    Scorer("nodeaffinity", "NodeAffinity", None, 2, True, False),
    Scorer("imagelocality", "ImageLocality", None, 1, False, False),
    Scorer("podaffinity", "InterPodAffinity", None, 2, True, False),
    Scorer("tainttoleration", "TaintToleration", None, 3, True, False),
    Scorer("podtopologyspread", "PodTopologySpread", None, 2, True, False),
)


#: What a scorer's raw scores for one spec depend on: nothing in the session, the rows the session
#: changes, the pods it places that carry inter-pod affinity terms, or any pod it places.
_NOTHING, _ROWS, _TERMS, _PODS = 0, 1, 2, 3


@dataclass(slots=True, eq=False)
class _Scores:
    """One scorer's scores for one pod spec."""

    scorer: Scorer
    plugin: Any
    weight: int
    normalizer: bool
    depends: int
    state: CycleState = field(default_factory=CycleState)
    #: Raw scores over all slots (0 off the ready nodes).
    raw: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: The weighted, normalized score every node gets when the raw scores are the same on all
    #: ready nodes (normalizing any subset then gives that one value), or when PreScore skipped the
    #: scorer (0); ``None`` otherwise.
    constant: float | None = None
    pods_version: int = -1
    terms_version: int = -1


@dataclass(slots=True, eq=False)
class _Spec:
    """Every active scorer's scores for one pod spec."""

    #: Per slot: the sum over scorers that need no per-call work (weighted raw scores of scorers
    #: that are not normalized, weighted constants).
    combined: FloatArray
    #: The part of ``combined`` that never changes in the session.
    base: FloatArray
    #: Per slot, the session ``version`` ``combined`` was computed at.
    seen: IntArray
    #: The session ``version`` at which every row was last current.
    fresh_at: int
    #: Resource scorers, re-scored on changed rows.
    rows: list[_Scores]
    #: Scorers normalized over the candidate nodes at every call.
    per_call: list[_Scores]
    #: Scorers that read other pods (constant or per call, recomputed when stale).
    pod_reading: list[_Scores]


class NodeOrderPlugin:
    name = "nodeorder"

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        self.weights = {
            s.key: get_int(option.arguments, f"{s.key}.weight", s.default_weight, plugin=self.name)
            for s in SCORERS
        }
        self._active: list[tuple[Scorer, Any, int, bool]] = []
        self._cache: dict[Any, _Spec] = {}
        self._ssn: Session | None = None

    def on_session_open(self, ssn: Session) -> None:
        self._active = []
        self._cache = {}
        for s in SCORERS:
            w = self.weights[s.key]
            if w == 0:
                continue
            plugin = k8s.build(s.plugin, ssn, s.args)
            if plugin is not None:
                normalizer = s.normalize and _normalizes(type(plugin))
                self._active.append((s, plugin, w, normalizer))
        self._snapshot = k8s.session_snapshot(ssn)
        self._ssn = ssn
        if self._active:
            ssn.add_node_order_fn(self.name, self.node_order)

    # -- per-spec scores ---------------------------------------------------------------------------
    def _depends(self, s: Scorer, plugin: Any, pod: Pod) -> int:
        if s.dynamic:
            return _ROWS
        if s.plugin == "InterPodAffinity":
            index = self._snapshot.pod_index
            terms = index.terms_of(pod)
            if terms.error is not None:
                return _NOTHING
            # Its own preferred terms count matching pods; else only existing pods' terms matter.
            return _PODS if terms.preferred_affinity or terms.preferred_anti_affinity else _TERMS
        if s.plugin == "PodTopologySpread":
            try:
                return _PODS if plugin.constraints(None, pod, SCHEDULE_ANYWAY) else _NOTHING
            except InputError:
                return _NOTHING
        return _NOTHING

    def _score(self, sc: _Scores, pod: Pod) -> None:
        """(Re)compute ``sc``'s raw scores over every ready node."""
        ssn = self._ssn
        assert ssn is not None
        plugin = sc.plugin
        state = sc.state = CycleState()
        slots = ssn.node_slots
        pre_filter = getattr(plugin, "pre_filter", None)
        if callable(pre_filter):
            pre_filter(state, pod, self._snapshot)
        raw = np.zeros(ssn.table.capacity, dtype=np.int64)
        pre = getattr(plugin, "pre_score", None)
        st = pre(state, pod, self._snapshot.table, slots) if callable(pre) else None
        sc.raw = raw
        sc.pods_version, sc.terms_version = ssn.pods_version, ssn.terms_version
        if st is not None and st.code == Code.SKIP:
            sc.constant = 0.0  # skipped: the scorer adds nothing (Volcano's RunPreScorePlugin)
            return
        raw[slots] = plugin.score_nodes(state, pod, self._snapshot.table, slots)
        sc.constant = None
        values = raw[slots]
        if sc.depends != _ROWS and len(values) and bool(np.all(values == values[0])):
            one = values[:1].copy()
            if sc.normalizer:
                plugin.normalize_scores(state, pod, one)
            sc.constant = float(one[0])

    def _spec(self, task: TaskInfo) -> _Spec:
        key = task.spec_key if task.spec_key is not None else task.uid
        spec = self._cache.get(key)
        if spec is not None:
            return spec
        ssn = self._ssn
        assert ssn is not None
        pod = task.pod
        cap = ssn.table.capacity
        base = np.zeros(cap, dtype=np.float64)
        combined_rows: list[_Scores] = []
        per_call: list[_Scores] = []
        pod_reading: list[_Scores] = []
        for s, plugin, weight, normalizer in self._active:
            sc = _Scores(s, plugin, weight, normalizer, self._depends(s, plugin, pod))
            self._score(sc, pod)
            if sc.depends in (_TERMS, _PODS):
                pod_reading.append(sc)
            elif sc.constant is not None:
                base += sc.constant * weight
            elif sc.depends == _ROWS:
                combined_rows.append(sc)
            elif normalizer:
                per_call.append(sc)
            else:
                base += sc.raw * float(weight)
        combined = base.copy()
        for sc in combined_rows:
            combined += sc.raw * float(sc.weight)
        seen = np.full(cap, ssn.version, dtype=np.int64)
        spec = _Spec(combined, base, seen, ssn.version, combined_rows, per_call, pod_reading)
        self._cache[key] = spec
        return spec

    @staticmethod
    def _normalized(sc: _Scores, pod: Pod, slots: IntArray) -> FloatArray:
        scores = sc.raw[slots]
        if sc.normalizer:
            scores = scores.copy()
            sc.plugin.normalize_scores(sc.state, pod, scores)
        out: FloatArray = scores.astype(np.float64)
        out *= sc.weight
        return out

    def node_order(self, task: TaskInfo, table: NodeTable, slots: IntArray) -> FloatArray:
        ssn = self._ssn
        assert ssn is not None
        spec = self._spec(task)
        pod = task.pod
        if spec.rows and spec.fresh_at != ssn.version and (ssn.row_version[slots] > spec.seen[slots]).any():
            # Resource scores change only on the rows the session placed tasks on since. Every such
            # row is re-scored now (the node search moves on, so later tasks meet the others).
            rows = np.flatnonzero((ssn.row_version > spec.seen) & ssn.node_mask)
            if len(rows):
                combined = spec.base[rows]
                for sc in spec.rows:
                    raw = sc.plugin.score_nodes(sc.state, pod, table, rows)
                    sc.raw[rows] = raw
                    combined = combined + raw * float(sc.weight)
                spec.combined[rows] = combined
                spec.seen[rows] = ssn.version
            spec.fresh_at = ssn.version
        total: FloatArray = spec.combined[slots]
        for sc in spec.per_call:
            total += self._normalized(sc, pod, slots)
        for sc in spec.pod_reading:
            if sc.pods_version != ssn.pods_version and (
                sc.depends == _PODS or sc.terms_version != ssn.terms_version
            ):
                self._score(sc, pod)
            if sc.constant is not None:
                total += sc.constant * sc.weight
            else:
                total += self._normalized(sc, pod, slots)
        return total

    def on_session_close(self, ssn: Session) -> None:
        self._cache = {}
        self._active = []
        self._ssn = None


_NORMALIZES: dict[type, bool] = {}


def _normalizes(cls: type) -> bool:
    """Whether the plugin class normalizes its scores (checked once per class: a protocol check
    looks at every method)."""
    known = _NORMALIZES.get(cls)
    if known is None:
        known = _NORMALIZES[cls] = issubclass(cls, ScoreNormalizer)
    return known
