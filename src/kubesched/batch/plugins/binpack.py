"""binpack: prefer nodes that the task fills most (Volcano ``plugins/binpack``).

Per node: for each resource the task requests that has a weight, ``(used + request) * weight /
allocatable`` (0 for the whole node if any such resource would overflow); the sum is divided by the
sum of weights and multiplied by ``100 * binpack.weight``. Arguments: ``binpack.weight`` (1),
``binpack.cpu`` (1), ``binpack.memory`` (1), ``binpack.resources`` (comma-separated extra resource
names) and ``binpack.resources.<name>`` (their weights, 1 by default).
"""

from __future__ import annotations

import numpy as np

from kubesched.api.resources import CPU, MEMORY
from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import TaskInfo
from kubesched.batch.plugins.args import get_int
from kubesched.batch.session import FloatArray, Session
from kubesched.batch.shares import Amounts
from kubesched.cache.node_table import NodeTable
from kubesched.framework.types import IntArray

MAX_NODE_SCORE = 100


class BinpackPlugin:
    name = "binpack"

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        args = option.arguments
        self.weight = get_int(args, "binpack.weight", 1, plugin=self.name)
        cpu = get_int(args, "binpack.cpu", 1, plugin=self.name)
        memory = get_int(args, "binpack.memory", 1, plugin=self.name)
        self.resources: dict[str, int] = {}
        raw = args.get("binpack.resources")
        for name in (raw if isinstance(raw, str) else "").split(","):
            name = name.strip()
            if not name:
                continue
            w = get_int(args, f"binpack.resources.{name}", 1, plugin=self.name)
            self.resources[name] = w if w >= 0 else 1
        self.resources[CPU] = cpu if cpu >= 0 else 1
        self.resources[MEMORY] = memory if memory >= 0 else 1

    def on_session_open(self, ssn: Session) -> None:
        self._ssn = ssn
        names = ssn.space.names
        self._cols = np.array([i for i, n in enumerate(names) if n in self.resources], dtype=np.int64)
        self._w = np.array([self.resources[names[i]] for i in self._cols], dtype=np.float64)
        missing = [r for r in self.resources if r not in names or not ssn.total_resource[names.index(r)] > 0]
        if missing:
            ssn.warnings.append(f"binpack: no ready node has {', '.join(sorted(missing))}")
        if self.weight != 0:
            ssn.add_node_order_fn(self.name, self.node_order)

    def node_order(self, task: TaskInfo, table: NodeTable, slots: IntArray) -> FloatArray:
        return binpack_scores(
            task.resreq[self._cols],
            self._ssn.node_allocatable[np.ix_(slots, self._cols)],
            table.requested[np.ix_(slots, self._cols)].astype(np.float64),
            self._w,
            self.weight,
        )

    def on_session_close(self, ssn: Session) -> None:
        return None


def binpack_scores(
    request: FloatArray, allocatable: Amounts, used: FloatArray, weights: FloatArray, binpack_weight: int
) -> FloatArray:
    """Volcano's ``BinPackingScore`` for many nodes: ``request`` [R], ``allocatable``/``used`` [N, R]."""
    n = allocatable.shape[0]
    asked = request != 0
    if not asked.any():
        return np.zeros(n, dtype=np.float64)
    req = request[asked]
    alloc = allocatable[:, asked]
    w = weights[asked]
    final = used[:, asked] + req
    overflow = ((alloc != 0) & (w != 0) & (final > alloc)).any(axis=1)
    safe = np.where(alloc == 0, 1.0, alloc)
    per = np.where((alloc == 0) | (w == 0), 0.0, final * w / safe)
    weight_sum = w.sum()
    score = per.sum(axis=1)
    if weight_sum > 0:
        score = score / weight_sum
    score = score * float(MAX_NODE_SCORE * binpack_weight)
    out: FloatArray = np.where(overflow, 0.0, score)
    return out
