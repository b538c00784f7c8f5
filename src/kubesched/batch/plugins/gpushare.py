"""gpushare: GPU sharing per card for the batch pipeline, a predicate and a node order in one plugin.

The predicate keeps a node when the task's GPU demand (:func:`kubesched.gpu.cards.demand_of`) fits
on its cards, as the framework's ``GpuShare`` filter does. The node order scores nodes with one of
the FGD paper's placement policies (:mod:`kubesched.gpu.policies`).

Arguments: ``gpushare.policy`` (``FGD`` by default; ``Random``, ``DotProd``, ``GpuClustering``,
``GpuPacking``, ``BestFit``), ``gpushare.weight`` (1; 0 turns the node order off) and
``gpushare.predicate`` (true).

The session keeps its own copy of the cards, built at open from the nodes and pods of the snapshot
and updated by the session's allocate/evict events, so the tasks a session places in a row never
share a card they would not fit on. FGD's typical pod distribution is taken from every task of the
session's jobs (pending and running): the workload the queue holds.

Limitation: the cards a task gets are not written to the pod by the batch binder; a pod placed by
the batch pipeline is given best-fit cards when the cache sees it bound.
"""

from __future__ import annotations

import numpy as np

from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import TaskInfo
from kubesched.batch.plugins.args import get_bool, get_int
from kubesched.batch.session import BoolArray, Event, EventHandler, FloatArray, Session
from kubesched.cache.node_table import NodeTable
from kubesched.errors import InputError
from kubesched.framework.types import FilterResult, IntArray, NodeFailure
from kubesched.gpu.cards import GpuCards, GpuDemand, best_fit_cards, demand_of
from kubesched.gpu.frag import PodShape, TypicalPods, frag_of, typical_pods
from kubesched.gpu.policies import POLICIES, normalize, score_nodes

_NO_CARD = "node(s) had no GPU card with enough left"
_NO_GPU = "node(s) have no GPU"
_MODEL = "node(s) had a GPU model the pod does not accept"


def _demand(task: TaskInfo) -> GpuDemand:
    try:
        return demand_of(task.pod.annotations, task.pod.requests)
    except InputError:
        return GpuDemand()


def _shape(task: TaskInfo, demand: GpuDemand) -> PodShape:
    return PodShape(int(task.pod.requests.get("cpu", 0)), demand.milli, demand.count, "|".join(demand.models))


class GpuSharePlugin:
    name = "gpushare"

    def __init__(self, option: PluginOption) -> None:
        args = option.arguments
        policy = args.get("gpushare.policy", "FGD")
        if policy not in POLICIES:
            raise InputError(
                f"unknown policy {policy!r}; known: {', '.join(POLICIES)}", field="arguments.gpushare.policy"
            )
        self.policy = str(policy)
        self.weight = get_int(args, "gpushare.weight", 1, plugin=self.name)
        self.predicate_on = get_bool(args, "gpushare.predicate", True, plugin=self.name)
        self.cards = GpuCards()
        self._preferred: dict[tuple[str, str], tuple[int, ...]] = {}
        self._models: list[str] = []
        self._tp: TypicalPods | None = None

    def on_session_open(self, ssn: Session) -> None:
        self.cards = GpuCards()
        for name, info in ssn.node_infos.items():
            self.cards.sync(name, info.node, info.pods)
        self._preferred = {}
        self._models = sorted({self.cards.model(n) for n in ssn.node_infos})
        shapes = [_shape(t, _demand(t)) for job in ssn.jobs.values() for t in job.tasks.values()]
        self._tp = typical_pods(shapes, self._models) if shapes else None
        if self.predicate_on:
            ssn.add_predicate_fn(self.name, self.predicate, self.predicate_mask)
        if self.weight != 0:
            ssn.add_node_order_fn(self.name, self.node_order)
        ssn.add_event_handler(EventHandler(allocate_func=self._allocated, deallocate_func=self._deallocated))

    def on_session_close(self, ssn: Session) -> None:
        self._preferred = {}

    # -- events ----------------------------------------------------------------------------------
    def _allocated(self, ev: Event) -> None:
        task = ev.task
        demand = _demand(task)
        if not demand.wants_gpu:
            return
        cards = self._preferred.get((task.uid, task.node_name))
        if cards is not None:
            self.cards.reserve(task.uid, cards)
        self.cards.pod_added(task.uid, task.node_name, task.pod.annotations, demand)

    def _deallocated(self, ev: Event) -> None:
        self.cards.pod_removed(ev.task.uid)

    # -- predicate -------------------------------------------------------------------------------
    def _verdict(self, task: TaskInfo, table: NodeTable) -> tuple[BoolArray, list[NodeFailure]]:
        demand = _demand(task)
        passed = np.ones(table.capacity, dtype=np.bool_)
        if not demand.wants_gpu:
            return passed, []
        masks = {r: np.zeros(table.capacity, dtype=np.bool_) for r in (_NO_GPU, _MODEL, _NO_CARD)}
        for slot in table.order.tolist():
            name = table.names[slot]
            left = self.cards.left(name)
            if left is None or not self.cards.count(name):
                masks[_NO_GPU][slot] = True
            elif not demand.accepts(self.cards.model(name)):
                masks[_MODEL][slot] = True
            elif int((left >= demand.milli).sum()) < demand.count:
                masks[_NO_CARD][slot] = True
            else:
                continue
            passed[slot] = False
        failures = [NodeFailure(r, m, r != _NO_CARD) for r, m in masks.items() if m.any()]
        return passed, failures

    def predicate(self, task: TaskInfo, table: NodeTable) -> FilterResult:
        passed, failures = self._verdict(task, table)
        return FilterResult(passed, failures)

    def predicate_mask(self, task: TaskInfo, table: NodeTable) -> BoolArray:
        return self._verdict(task, table)[0]

    # -- node order ------------------------------------------------------------------------------
    def node_order(self, task: TaskInfo, table: NodeTable, slots: IntArray) -> FloatArray:
        from kubesched.plugins.gpushare import node_state

        demand = _demand(task)
        shape = _shape(task, demand)
        st = node_state(self.cards, table, slots, self._models)
        tp = self._tp
        if tp is not None and tp.access.shape[0] != len(self._models):
            tp = self._tp = typical_pods(list(tp.shapes), self._models)
        frag_now = frag_of(st.cpu_left, st.cards, st.model, tp) if tp is not None else None
        policy = self.policy if (self.policy != "FGD" or tp is not None) else "BestFit"
        scores, share_card = score_nodes(policy, st, np.arange(len(slots)), shape, tp, frag_now)
        if policy == "BestFit":
            scores = normalize(scores)
        for i, slot in enumerate(slots.tolist()):
            name = table.names[slot]
            if share_card[i] >= 0:
                self._preferred[(task.uid, name)] = (int(share_card[i]),)
            elif demand.wants_gpu and policy != "FGD":
                left = self.cards.left(name)
                if left is not None:
                    cards = best_fit_cards(left, self.cards.count(name), demand)
                    if cards is not None:
                        self._preferred[(task.uid, name)] = cards
        out: FloatArray = scores.astype(np.float64) * self.weight
        return out
