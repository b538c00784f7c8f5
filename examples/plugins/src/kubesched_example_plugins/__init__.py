"""Two example kubesched plugins.

- :class:`PreferNodeLabel` (Score, vectorized): nodes whose label ``label`` equals ``value`` score 100,
  the others 0. With a high weight it steers pods onto those nodes while they have room.
- :class:`MaxPodsPerNode` (Filter, one node at a time): a node that already runs ``maxPods`` pods is
  rejected with ``node(s) already run N pods``.
"""

from __future__ import annotations

import numpy as np

from kubesched.plugins import api


class PreferNodeLabel:
    """Score nodes by one label, over the whole NodeTable at once."""

    name = "PreferNodeLabel"

    class Args(api.PluginArgs):
        label: str = "example.com/tier"
        value: str = "fast"

    def __init__(self, args: PreferNodeLabel.Args, handle: api.Handle) -> None:
        self.args = args

    def score_nodes(
        self, state: api.CycleState, pod: api.Pod, table: api.NodeTable, slots: api.IntArray
    ) -> api.IntArray:
        column = table.labels.get(self.args.label)
        code = column.vocab.get(self.args.value) if column is not None else None
        if column is None or code is None:
            return np.zeros(len(slots), dtype=np.int64)
        return np.where(column.codes[slots] == code, api.MAX_NODE_SCORE, 0).astype(np.int64)


class MaxPodsPerNode:
    """Reject nodes that already run ``maxPods`` pods; written per node, adapted by kubesched."""

    name = "MaxPodsPerNode"

    class Args(api.PluginArgs):
        max_pods: int = 2

    def __init__(self, args: MaxPodsPerNode.Args) -> None:
        if args.max_pods < 1:
            raise ValueError("maxPods must be at least 1")
        self.max_pods = args.max_pods

    def filter(self, state: api.CycleState, pod: api.Pod, node_info: api.NodeInfo) -> api.Status | None:
        if len(node_info.pods) >= self.max_pods:
            return api.Status.unschedulable(f"node(s) already run {self.max_pods} pods")
        return None
