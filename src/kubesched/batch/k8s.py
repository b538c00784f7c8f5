"""Running kube-scheduler framework plugins inside a batch session (Volcano's ``k8s`` framework shim).

The ``predicates`` and ``nodeorder`` plugins reuse the vectorized in-tree Filter and Score plugins:
one instance per session, a fresh :class:`CycleState` per pod spec with PreFilter / PreScore run
first, exactly as the framework scheduler would.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import numpy as np

from kubesched.api.objects import Pod
from kubesched.batch.session import Session
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_table import NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import CandidateFilterPlugin, ScoreNormalizer
from kubesched.framework.plugin_args import ARGS_MODELS, parse_args
from kubesched.framework.registry import Registry
from kubesched.framework.status import Code
from kubesched.framework.types import BoolArray, FilterResult, IntArray
from kubesched.plugins import default_registry
from kubesched.store.memory import MemoryStore
from kubesched.store.parsers import informer_factory
from kubesched.store.ports import StorePorts


@functools.cache
def _registry() -> Registry:
    """The in-tree plugins (built once: sessions build their plugin instances from it)."""
    return default_registry()


@functools.cache
def _args(name: str, raw_json: str) -> Any:
    model = ARGS_MODELS.get(name)
    return parse_args(model, json.loads(raw_json)) if model is not None else None


def session_snapshot(ssn: Session) -> Snapshot:
    """The session's nodes as the framework plugins read them (one per session, shared)."""
    snap = ssn.framework_snapshot
    if isinstance(snap, Snapshot):
        return snap
    snap = Snapshot()
    snap.table = ssn.table
    snap.node_infos = ssn.node_infos
    if ssn.pod_index is not None:
        # The cache's pods plus the tasks this session has placed (see Session.index_add).
        snap.pod_index = ssn.pod_index
    ssn.framework_snapshot = snap
    return snap


def build(
    name: str, ssn: Session, raw_args: dict[str, Any] | None = None, *, handle: Handle | None = None
) -> Any | None:
    """An instance of the in-tree plugin ``name`` (``None`` when kubesched has no such plugin),
    given ``handle`` or the session's."""
    registry = _registry()
    if name not in registry:
        return None
    # Parsed once per plugin and arguments (the plugins do not write to their args).
    args = _args(name, json.dumps(raw_args, sort_keys=True))
    return registry[name].factory(args, handle if handle is not None else session_handle(ssn))


def session_handle(ssn: Session) -> Handle:
    """The handle of the kube-scheduler plugins a session runs: the scheduler's informers and ports
    (an empty cluster for a session opened without a scheduler), the session's nodes as their
    snapshot, its clock and random source."""
    informers = ssn.informers if ssn.informers is not None else informer_factory(MemoryStore())
    ports = ssn.ports if ssn.ports is not None else StorePorts(informers.store).ports()
    return Handle(
        informers=informers, ports=ports, snapshot=session_snapshot(ssn), now=lambda: ssn.now, rng=ssn.rng
    )


def run_filter(
    plugin: Any,
    pod: Pod,
    snapshot: Snapshot,
    state: CycleState | None = None,
    candidates: BoolArray | None = None,
) -> FilterResult | None:
    """PreFilter then Filter in ``state`` (a fresh one when not given: a caller that runs the
    plugin's later extension points for the pod passes its own); ``None`` when PreFilter says Skip.
    A PreFilter rejection rejects every node with its message. A plugin whose Filter searches per
    node (a :class:`CandidateFilterPlugin`) searches only ``candidates`` when given: the verdict
    on the other nodes is then not to be read."""
    if state is None:
        state = CycleState()
    pre = getattr(plugin, "pre_filter", None)
    table = snapshot.table
    if callable(pre):
        res, st = pre(state, pod, snapshot)
        if st is not None and st.code == Code.SKIP:
            return None
        if st is not None and st.code != Code.SUCCESS:
            return FilterResult.reject(
                np.ones(table.capacity, dtype=np.bool_),
                st.message or f"node(s) didn't satisfy plugin {plugin.name}",
                unresolvable=st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            )
        if res is not None and res.node_names is not None:
            keep = np.zeros(table.capacity, dtype=np.bool_)
            for n in res.node_names:
                slot = table.slot_of.get(n)
                if slot is not None:
                    keep[slot] = True
            out = _filter(plugin, state, pod, table, candidates)
            return FilterResult(out.passed & keep, out.failures)
    return _filter(plugin, state, pod, table, candidates)


def _filter(
    plugin: Any, state: CycleState, pod: Pod, table: NodeTable, candidates: BoolArray | None
) -> FilterResult:
    if candidates is not None and isinstance(plugin, CandidateFilterPlugin):
        return plugin.filter_candidates(state, pod, table, candidates)
    result: FilterResult = plugin.filter_nodes(state, pod, table)
    return result


def run_score(plugin: Any, pod: Pod, snapshot: Snapshot, slots: IntArray, *, normalize: bool) -> IntArray:
    """PreScore, Score and (when asked and the plugin has one) NormalizeScore over ``slots``."""
    state = CycleState()
    table = snapshot.table
    pre_filter = getattr(plugin, "pre_filter", None)
    if callable(pre_filter):
        pre_filter(state, pod, snapshot)
    pre = getattr(plugin, "pre_score", None)
    if callable(pre):
        st = pre(state, pod, table, slots)
        if st is not None and st.code == Code.SKIP:
            return np.zeros(len(slots), dtype=np.int64)
    scores = np.asarray(plugin.score_nodes(state, pod, table, slots), dtype=np.int64)
    if normalize and isinstance(plugin, ScoreNormalizer):
        scores = scores.copy()
        plugin.normalize_scores(state, pod, scores)
    return scores
