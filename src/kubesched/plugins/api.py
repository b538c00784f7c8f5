"""The public API for out-of-tree scheduler plugins: import from here, not from internal modules.

A plugin is a plain class::

    from kubesched.plugins import api

    class GpuFirst:
        name = "GpuFirst"                       # how configs enable it

        class Args(api.PluginArgs):             # optional: validated pluginConfig args
            label: str = "example.com/gpu"

        def __init__(self, args: "GpuFirst.Args", handle: api.Handle) -> None:
            self.label = args.label

        # per node (adapted automatically) ...
        def score(self, state: api.CycleState, pod: api.Pod, node_info: api.NodeInfo) -> int:
            return api.MAX_NODE_SCORE if self.label in node_info.node.labels else 0

        # ... or vectorized over the NodeTable, like in-tree plugins:
        # def score_nodes(self, state, pod, table, slots) -> api.IntArray: ...

Extension points and their methods (implement any subset; the methods decide where it can run):

- preEnqueue: ``pre_enqueue(pod) -> Status | None``
- queueSort: ``less(a, b) -> bool``
- preFilter: ``pre_filter(state, pod, snapshot) -> (PreFilterResult | None, Status | None)``
- filter: ``filter_nodes(state, pod, table) -> FilterResult`` (vectorized), or per node
  ``filter(state, pod, node_info) -> Status | None``
- postFilter: ``post_filter(state, pod, diagnosis) -> (str | None, Status)``
- preScore: ``pre_score(state, pod, table, slots) -> Status | None``
- score: ``score_nodes(state, pod, table, slots) -> IntArray`` of 0..100 (vectorized), or per node
  ``score(state, pod, node_info) -> int``
- reserve: ``reserve(state, pod, node) -> Status | None`` and ``unreserve(state, pod, node)``
- permit: ``permit(state, pod, node) -> (Status | None, timeout_seconds)``
- preBind / bind: ``pre_bind(state, pod, node)`` / ``bind(state, pod, node) -> Status | None``
- postBind: ``post_bind(state, pod, node) -> None``

A score plugin may also define ``normalize_scores(state, pod, scores)`` (in place), and any plugin
``events_to_register() -> list[ClusterEvent]``. A plugin that raises, returns an array of the wrong
shape or scores outside [0, 100] fails that pod's cycle with an error naming it; the scheduler goes on.

Register: an entry point in the ``kubesched.plugins`` group of your package, or ``--plugin module:Class``
on the command line; then enable it by ``name`` in a KubeSchedulerConfiguration like an in-tree plugin.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from kubesched.api.objects import Node, Pod
from kubesched.cache.cache import Snapshot
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import NodeTable
from kubesched.errors import PluginError
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.handle import Handle
from kubesched.framework.interfaces import (
    BindPlugin,
    EnqueueExtensions,
    FilterPlugin,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScoreNormalizer,
    ScorePlugin,
)
from kubesched.framework.out_of_tree import ENTRY_POINT_GROUP, adapt, plugin_spec
from kubesched.framework.status import Code, Status
from kubesched.framework.types import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    ActionType,
    BoolArray,
    ClusterEvent,
    FilterResult,
    IntArray,
    NodeFailure,
    PreFilterResult,
    QueuedPodInfo,
)


class PluginArgs(BaseModel):
    """Base for a plugin's ``Args``: camelCase keys in the config (``scoreWeight`` for
    ``score_weight``), unknown keys rejected, no silent type coercion — like in-tree args."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


__all__ = [
    "ENTRY_POINT_GROUP",
    "MAX_NODE_SCORE",
    "MIN_NODE_SCORE",
    "ActionType",
    "BindPlugin",
    "BoolArray",
    "ClusterEvent",
    "Code",
    "CycleState",
    "Diagnosis",
    "EnqueueExtensions",
    "FilterPlugin",
    "FilterResult",
    "Handle",
    "IntArray",
    "Node",
    "NodeFailure",
    "NodeInfo",
    "NodeTable",
    "PermitPlugin",
    "Plugin",
    "PluginArgs",
    "PluginError",
    "Pod",
    "PostBindPlugin",
    "PostFilterPlugin",
    "PreBindPlugin",
    "PreEnqueuePlugin",
    "PreFilterPlugin",
    "PreFilterResult",
    "PreScorePlugin",
    "QueueSortPlugin",
    "QueuedPodInfo",
    "ReservePlugin",
    "ScoreNormalizer",
    "ScorePlugin",
    "Snapshot",
    "Status",
    "adapt",
    "plugin_spec",
]
