"""Upstream ``DryRunPreemption``: on each potential node, which pods would have to go.

Nodes are examined in order from a random offset; the dry run stops once it holds at least one
candidate that violates no PodDisruptionBudget and ``numCandidates`` candidates in all (upstream does
the same in parallel; run one node at a time, the result is the one its sequential order gives).

Per node, upstream ``SelectVictimsOnNode``: remove every pod of lower priority; if none, the node
says "No preemption victims found for incoming pod"; if the preemptor still does not fit (filters
with nominated pods), the node's filter status stands. Otherwise put the removed pods back one at a
time — first those whose eviction would violate a budget, then the others, each group most important
first — keeping every pod the preemptor still fits beside; the rest are the victims.

Two implementations give the same answer:

* :func:`dry_run_generic` follows upstream literally: a cloned cycle state, a copied NodeInfo, the
  PreFilter extensions' ``remove_pod`` / ``add_pod``, and every Filter plugin run on the node's
  adjusted row. Exact for any plugin set, at the cost of a filter run per pod put back.
* :func:`dry_run_fast` is used when only NodeResourcesFit can change its verdict as pods come and go
  (every other active Filter plugin looks at the node alone: no inter-pod affinity, spread
  constraints or host ports in play). Then "does the preemptor fit" is arithmetic on free resources,
  and the remove-all / put-back loop runs over all examined nodes at once: one NumPy step per victim
  position over padded per-node pod rows (:class:`NodePodColumns`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from kubesched.api.objects import Pod
from kubesched.api.pdb import PodDisruptionBudget
from kubesched.cache.node_info import NodeInfo
from kubesched.cache.node_table import PODS_COL, NodeTable
from kubesched.framework.cycle_state import CycleState
from kubesched.framework.diagnosis import Diagnosis
from kubesched.framework.runtime import FrameworkError
from kubesched.framework.status import Code, Status
from kubesched.framework.types import FilterResult
from kubesched.plugins.defaultpreemption.candidates import PRIORITY_OFFSET, Candidates
from kubesched.plugins.defaultpreemption.gangs import GANG_KEPT, GangGuard
from kubesched.plugins.defaultpreemption.victims import (
    NOT_STARTED,
    NodePodColumns,
    by_importance,
    pdb_violations,
)
from kubesched.plugins.noderesources.fit import PRE_FILTER_KEY as FIT_PRE_FILTER_KEY
from kubesched.plugins.noderesources.fit import TOO_MANY_PODS

if TYPE_CHECKING:
    from kubesched.framework.runtime import Framework

#: Upstream's status for a node without pods of lower priority (UnschedulableAndUnresolvable).
NO_VICTIMS = "No preemption victims found for incoming pod"

#: Filter plugins whose verdict does not depend on the pods on the node.
#: Filter plugins whose verdict on a node never depends on the node's pods (VolumeBinding and
#: VolumeZone look at the node's labels and the cluster's volumes).
NODE_ONLY_FILTERS = frozenset(
    {"NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "VolumeBinding", "VolumeZone"}
)
FIT = "NodeResourcesFit"


@dataclass(slots=True)
class DryRunInput:
    fwk: Framework
    state: CycleState
    pod: Pod
    diagnosis: Diagnosis
    #: Potential nodes in examination order (already rotated by the random offset).
    nodes: NDArray[np.int64]
    num_candidates: int
    pdbs: Sequence[PodDisruptionBudget]
    pdb_allowed: Sequence[int]
    #: PodGroups to keep whole (only the literal dry run reads them); None: no gang to guard.
    gangs: GangGuard | None = None


@dataclass(slots=True)
class DryRunResult:
    candidates: Candidates
    #: Reason histogram over the examined nodes that could not become candidates.
    reasons: Counter[str]
    #: How many examined nodes could not become candidates (they have an explicit status).
    failed_nodes: int
    #: Error statuses met on the way (upstream returns them only when there is no candidate).
    errors: list[str]


class _Collector:
    """Upstream's two bounded candidate lists and the stop rule."""

    def __init__(self, num_candidates: int) -> None:
        self.num = num_candidates
        self.non_violating: list[int] = []
        self.violating: list[int] = []

    def add(self, index: int, violating: bool) -> None:
        target = self.violating if violating else self.non_violating
        if len(target) < self.num:
            target.append(index)

    def done(self) -> bool:
        nv, v = len(self.non_violating), len(self.violating)
        return nv > 0 and nv + v >= self.num

    def order(self) -> list[int]:
        return self.non_violating + self.violating


# --------------------------------------------------------------------------- the generic path


def select_victims_on_node(
    fwk: Framework,
    state: CycleState,
    pod: Pod,
    slot: int,
    info: NodeInfo,
    pdbs: Sequence[PodDisruptionBudget],
    allowed: Sequence[int],
    gangs: GangGuard | None = None,
) -> tuple[list[Pod], int, Status | None]:
    """Upstream ``SelectVictimsOnNode`` on a copy of the node and a clone of the state: (victims most
    important first, PDB violations, None) or ([], 0, the node's status).

    With ``gangs``, members of a PodGroup that must stay are not taken out, and a gang that may go
    only as a whole is put back (or evicted) as one unit (see :mod:`.gangs`)."""
    work = info.clone()
    st = state.clone()
    potential = [p for p in info.pods.values() if p.priority < pod.priority]
    if gangs is not None and potential:
        return _select_with_gangs(fwk, st, pod, slot, work, by_importance(potential), pdbs, allowed, gangs)
    for p in potential:
        work.remove_pod(p)
        fwk.run_pre_filter_extension_remove_pod(st, pod, p, slot)
    if not potential:
        return [], 0, Status.unschedulable(NO_VICTIMS, unresolvable=True)
    status = fwk.filter_status_on(st, pod, slot, work)
    if status is not None:
        return [], 0, status
    potential = by_importance(potential)
    flags = pdb_violations(potential, pdbs, allowed)
    violating = [p for p, f in zip(potential, flags, strict=True) if f]
    non_violating = [p for p, f in zip(potential, flags, strict=True) if not f]
    victims: list[Pod] = []

    def reprieve(p: Pod) -> bool:
        work.add_pod(p)
        fwk.run_pre_filter_extension_add_pod(st, pod, p, slot)
        fits = fwk.filter_status_on(st, pod, slot, work) is None
        if not fits:
            work.remove_pod(p)
            fwk.run_pre_filter_extension_remove_pod(st, pod, p, slot)
            victims.append(p)
        return fits

    violations = sum(1 for p in violating if not reprieve(p))
    for p in non_violating:
        reprieve(p)
    if violating and non_violating:
        victims = by_importance(victims)
    return victims, violations, None


def _select_with_gangs(
    fwk: Framework,
    st: CycleState,
    pod: Pod,
    slot: int,
    work: NodeInfo,
    potential: list[Pod],
    pdbs: Sequence[PodDisruptionBudget],
    allowed: Sequence[int],
    gangs: GangGuard,
) -> tuple[list[Pod], int, Status | None]:
    """:func:`select_victims_on_node` over reprieve units: a unit is one pod, or a gang whose every
    bound member is on the node; it is put back, or evicted, whole. PDB ordering is upstream's, a
    unit counting as violating when any of its pods does."""
    units, kept = gangs.units(potential)
    if not units:
        reason = GANG_KEPT if kept else NO_VICTIMS
        return [], 0, Status.unschedulable(reason, unresolvable=True)
    for unit in units:
        for p in unit:
            work.remove_pod(p)
            fwk.run_pre_filter_extension_remove_pod(st, pod, p, slot)
    status = fwk.filter_status_on(st, pod, slot, work)
    if status is not None:
        return [], 0, status
    removed = [p for unit in units for p in unit]
    flags = dict(
        zip((p.uid for p in removed), pdb_violations(by_importance(removed), pdbs, allowed), strict=True)
    )
    violating = [u for u in units if any(flags[p.uid] for p in u)]
    non_violating = [u for u in units if not any(flags[p.uid] for p in u)]
    victims: list[Pod] = []

    def reprieve(unit: list[Pod]) -> None:
        for p in unit:
            work.add_pod(p)
            fwk.run_pre_filter_extension_add_pod(st, pod, p, slot)
        if fwk.filter_status_on(st, pod, slot, work) is None:
            return
        for p in unit:
            work.remove_pod(p)
            fwk.run_pre_filter_extension_remove_pod(st, pod, p, slot)
        victims.extend(unit)

    for unit in violating + non_violating:
        reprieve(unit)
    victims = gangs.complete(victims, removed)
    violations = sum(1 for p in victims if flags[p.uid])
    return by_importance(victims), violations, None


def dry_run_generic(inp: DryRunInput) -> DryRunResult:
    fwk = inp.fwk
    table = fwk.handle.snapshot.table
    infos = fwk.handle.snapshot.node_infos
    collect = _Collector(inp.num_candidates)
    found: list[tuple[int, list[Pod], int]] = []
    reasons: Counter[str] = Counter()
    failed = 0
    errors: list[str] = []
    for slot in inp.nodes.tolist():
        name = table.names[slot]
        try:
            victims, violations, status = select_victims_on_node(
                fwk, inp.state, inp.pod, slot, infos[name], inp.pdbs, inp.pdb_allowed, inp.gangs
            )
        except (FrameworkError, KeyError, ValueError) as exc:
            victims, violations, status = [], 0, Status.error(str(exc))
        if status is None and not victims:
            status = Status.error(f"expected at least one victim pod on node {name!r}")
        if status is not None:
            failed += 1
            reasons.update(status.reasons)
            if status.code == Code.ERROR:
                errors.append(status.message)
            continue
        collect.add(len(found), violations > 0)
        found.append((slot, victims, violations))
        if collect.done():
            break
    chosen = [found[i] for i in collect.order()]
    return DryRunResult(Candidates.from_lists(chosen), reasons, failed, errors)


# --------------------------------------------------------------------------- the fast path


def node_only(fwk: Framework, state: CycleState, pod: Pod, name: str) -> bool:
    """Whether the Filter plugin ``name`` judges ``pod`` by the node alone: always, or for this pod
    (a plugin says so through ``filter_ignores_node_pods``, e.g. NodeVolumeLimits when no node limits
    the drivers of the pod's volumes)."""
    return name in NODE_ONLY_FILTERS or fwk.filter_ignores_node_pods(state, pod, name)


def fast_path_applies(fwk: Framework, state: CycleState, pod: Pod, diagnosis: Diagnosis) -> bool:
    """True when removing or adding pods can change only NodeResourcesFit's verdict."""
    if diagnosis.pre_filter_msg or diagnosis.failed_by is None:
        return False
    if fwk.active_pre_filter_extensions(state):
        return False
    for name in fwk.filter_names:
        if name in state.skip_filter_plugins:
            continue
        if name == FIT:
            if state.get(FIT_PRE_FILTER_KEY) is None:
                return False
            continue
        if not node_only(fwk, state, pod, name):
            return False
    return True


def _fit_setup(
    inp: DryRunInput, table: NodeTable
) -> tuple[int, NDArray[np.int64], NDArray[np.int64], list[str]]:
    """(NodeResourcesFit's filter index or -1, the columns it compares — the pod count first, then
    every resource the pod asks for —, the pod's want per column, the reason per column)."""
    fwk, state = inp.fwk, inp.state
    fit_req = state.get(FIT_PRE_FILTER_KEY) if FIT not in state.skip_filter_plugins else None
    if fit_req is None or FIT not in fwk.filter_names:
        return -1, np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), []
    checked = [(c, r) for c, r in fit_req.checked if c < table.num_resources]
    cols = np.array([PODS_COL] + [c for c, _ in checked], dtype=np.int64)
    want = np.array([1] + [int(fit_req.vector[c]) for c, _ in checked], dtype=np.int64)
    return fwk.filter_names.index(FIT), cols, want, [TOO_MANY_PODS] + [r for _, r in checked]


@dataclass(slots=True)
class _FastSetup:
    """What every batch of the fast dry run compares, fixed for the preemptor."""

    #: NodeResourcesFit's filter index, or -1 when it does not run.
    fit_index: int
    #: The table columns Fit compares (the pod count first, then every resource the pod asks for),
    #: the pod's want per column, and the reason per column.
    cols: NDArray[np.int64]
    want: NDArray[np.int64]
    col_reasons: list[str]
    #: Node-only filter plugins with their verdicts from the scheduling attempt, by filter index.
    statics: list[tuple[int, FilterResult]]
    #: The statics and Fit (None: judged on free resources), in profile order.
    checks: list[tuple[int, FilterResult | None]]
    #: Nominated pods of priority >= the preemptor's count on their nodes (filters with nominated pods).
    nom_slots: NDArray[np.int64]
    nom_requests: NDArray[np.int64]


@dataclass(slots=True)
class _FastFound:
    """What the fast dry run has found over the batches examined so far."""

    num: int
    non_violating: list[NDArray[np.int64]] = field(default_factory=list)  # global candidate indices
    violating_ids: list[NDArray[np.int64]] = field(default_factory=list)  # in examination order
    n_nv: int = 0
    n_v: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    failed: int = 0
    errors: list[str] = field(default_factory=list)
    # Per found candidate (global index = position in these concatenations):
    slots: list[NDArray[np.int64]] = field(default_factory=list)
    victims: list[NDArray[np.bool_]] = field(default_factory=list)  # padded rows, widths differ by batch
    crit: list[NDArray[np.int64]] = field(default_factory=list)  # violations, top priority, sum, count
    start: list[NDArray[np.float64]] = field(default_factory=list)
    found: int = 0

    def done(self) -> bool:
        return self.n_nv > 0 and self.n_nv + self.n_v >= self.num


def _fast_setup(inp: DryRunInput, table: NodeTable) -> _FastSetup:
    fwk = inp.fwk
    fit_index, cols, want, col_reasons = _fit_setup(inp, table)
    statics = [
        (i, res)
        for i, (name, res) in enumerate(zip(fwk.filter_names, inp.diagnosis.results, strict=False))
        if res is not None and name != FIT and node_only(fwk, inp.state, inp.pod, name)
    ]
    checks: list[tuple[int, FilterResult | None]] = sorted(
        [*statics, *([(fit_index, None)] if fit_index >= 0 else [])], key=lambda t: t[0]
    )
    nom_slots, nom_requests, _, _ = fwk.nominated_columns.query(inp.pod, table)
    nom_requests = nom_requests[:, cols] if len(nom_slots) else nom_requests[:, :0]
    return _FastSetup(fit_index, cols, want, col_reasons, statics, checks, nom_slots, nom_requests)


def dry_run_fast(inp: DryRunInput, columns: NodePodColumns) -> DryRunResult:
    snapshot = inp.fwk.handle.snapshot
    table = snapshot.table
    setup = _fast_setup(inp, table)
    num = inp.num_candidates
    acc = _FastFound(num)
    nodes = inp.nodes
    pos = 0
    while pos < len(nodes) and not acc.done():
        # Examine about as many nodes as should yield the candidates still missing, judging by the
        # share of candidates among the nodes examined so far (all of them, at first).
        need = max(num - acc.n_nv - acc.n_v, 1)
        rate = max(acc.found / pos, 0.02) if pos else 1.0
        size = min(len(nodes) - pos, int(need / rate * 1.1) + 16)
        slots = nodes[pos : pos + size]
        columns.refresh(table, snapshot.node_infos, slots)
        pos += _examine_batch(inp, columns, setup, acc, slots)
    return _fast_result(acc, columns)


def _examine_batch(
    inp: DryRunInput, columns: NodePodColumns, setup: _FastSetup, acc: _FastFound, slots: NDArray[np.int64]
) -> int:
    """Dry-run the nodes of *slots* together, record what the sequential run would have found up to
    where it would stop, and return how many of them it examined."""
    table = inp.fwk.handle.snapshot.table
    cols, want, nom_slots = setup.cols, setup.want, setup.nom_slots
    k = len(slots)
    count = columns.count[slots]
    width = max(int(count.max()), 1)
    prio = columns.priority[slots, :width]
    valid = np.arange(width)[None, :] < count[:, None]
    lower = valid & (prio < inp.pod.priority)
    n_lower = lower.sum(axis=1)
    req = columns.requests[slots, :width][:, :, cols]
    rows_cols = np.ix_(slots, cols)  # one gather of just these cells (the table is column-major)
    used = table.requested[rows_cols]
    if len(nom_slots):
        at = np.minimum(np.searchsorted(nom_slots, slots), len(nom_slots) - 1)
        hit = nom_slots[at] == slots
        used[hit] += setup.nom_requests[at[hit]]
    free_all = table.allocatable[rows_cols] - used + (req * lower[:, :, None]).sum(axis=1)
    short_all = free_all < want  # [k, len(cols)]

    # The first Filter plugin (profile order) that rejects the node once every lower-priority pod
    # is gone; node-only plugins keep their verdict from the scheduling attempt.
    first_fail = np.full(k, -1, dtype=np.int64)
    for i, res in setup.checks:
        fails = short_all.any(axis=1) if res is None else ~res.passed[slots]
        first_fail = np.where((first_fail < 0) & fails, i, first_fail)
    no_victims = n_lower == 0
    rows = np.flatnonzero(~no_victims & (first_fail < 0))
    victims, violating = _put_back(inp, columns, slots, rows, count, lower, n_lower, req, free_all, want)

    n_victims = victims.sum(axis=1)
    n_violations = (victims & violating).sum(axis=1)
    # Examination order: where would the sequential dry run stop?
    kind = np.full(k, -1, dtype=np.int64)  # -1: no candidate, 0: violates no budget, 1: violates
    kind[rows] = np.where(n_victims == 0, -1, (n_violations > 0).astype(np.int64))
    nv = np.minimum(acc.n_nv + np.cumsum(kind == 0), acc.num)
    v = np.minimum(acc.n_v + np.cumsum(kind == 1), acc.num)
    stops = np.flatnonzero((nv > 0) & (nv + v >= acc.num))
    stop_at = int(stops[0]) + 1 if len(stops) else k

    _record_candidates(acc, columns, slots, rows, kind, stop_at, prio, victims, n_victims, n_violations)

    # The examined nodes that are not candidates, as a reason histogram (their statuses).
    seen = np.arange(k) < stop_at
    bad = seen & (kind < 0)
    acc.failed += int(np.count_nonzero(bad))
    acc.reasons[NO_VICTIMS] += int(np.count_nonzero(bad & no_victims))
    for row in rows[(n_victims == 0) & (rows < stop_at)].tolist():
        acc.errors.append(f"expected at least one victim pod on node {table.names[int(slots[row])]!r}")
    rest = bad & ~no_victims & (first_fail >= 0)
    if rest.any():
        fit_rows = rest & (first_fail == setup.fit_index)
        for c, reason in enumerate(setup.col_reasons):
            acc.reasons[reason] += int(np.count_nonzero(fit_rows & short_all[:, c]))
        for i, res in setup.statics:
            mine = rest & (first_fail == i)
            if mine.any():
                for f in res.failures:
                    acc.reasons[f.reason] += int(np.count_nonzero(mine & f.nodes[slots]))
    return stop_at


def _put_back(
    inp: DryRunInput,
    columns: NodePodColumns,
    slots: NDArray[np.int64],
    rows: NDArray[np.intp],
    count: NDArray[np.int64],
    lower: NDArray[np.bool_],
    n_lower: NDArray[np.int64],
    req: NDArray[np.int64],
    free_all: NDArray[np.int64],
    want: NDArray[np.int64],
) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
    """On the batch's *rows* the preemptor fits once every lower-priority pod is gone: the victims
    and the pods whose eviction would violate a budget, as padded per-row masks."""
    width = lower.shape[1]
    victims = np.zeros((len(rows), width), dtype=np.bool_)
    violating = np.zeros((len(rows), width), dtype=np.bool_)
    if not len(rows):
        return victims, violating
    c_nlow = n_lower[rows]
    if inp.pdbs:
        for r, row in enumerate(rows.tolist()):
            n, nl = int(count[row]), int(c_nlow[r])
            tail = columns.pods[int(slots[row])][n - nl : n]  # lower priority = the tail
            violating[r, n - nl : n] = pdb_violations(tail, inp.pdbs, inp.pdb_allowed)
    # Put-back order: pods whose eviction violates a budget first, then the others, each
    # most important first; pods of higher priority are never taken out.
    # Lower-priority pods are the tail of each node's importance order, so without budgets
    # the j-th pod to put back sits at count - n_lower + j.
    if inp.pdbs:
        key = np.where(lower[rows], np.where(violating, 0, width) + np.arange(width)[None, :], 2 * width)
        order = np.argsort(key, axis=1, kind="stable")
    first = count[rows] - c_nlow
    c_req = req[rows]
    free = free_all[rows].copy()
    at = np.arange(len(rows))
    for j in range(int(c_nlow.max())):
        idx = order[:, j] if inp.pdbs else np.minimum(first + j, width - 1)
        active = j < c_nlow
        back = c_req[at, idx]
        fits = ((free - back) >= want).all(axis=1)
        free -= back * (active & fits)[:, None]
        victims[at, idx] |= active & ~fits  # inactive rows may point at any pod
    return victims, violating


def _record_candidates(
    acc: _FastFound,
    columns: NodePodColumns,
    slots: NDArray[np.int64],
    rows: NDArray[np.intp],
    kind: NDArray[np.int64],
    stop_at: int,
    prio: NDArray[np.int64],
    victims: NDArray[np.bool_],
    n_victims: NDArray[np.int64],
    n_violations: NDArray[np.int64],
) -> None:
    """Add the batch's candidates before *stop_at* to *acc*, with what ranks them."""
    num = acc.num
    taken = rows[rows < stop_at]
    taken_kind = kind[taken]
    keep = taken_kind >= 0
    ids = acc.found + np.arange(int(np.count_nonzero(keep)))
    ids_kind = taken_kind[keep]
    add_nv = ids[ids_kind == 0][: max(num - acc.n_nv, 0)]
    add_v = ids[ids_kind == 1][: max(num - acc.n_v, 0)]
    acc.non_violating.append(add_nv)
    acc.violating_ids.append(add_v)
    acc.n_nv += len(add_nv)
    acc.n_v += len(add_v)
    in_rows = np.flatnonzero(rows < stop_at)[keep]
    acc.found += len(in_rows)
    c_prio = prio[rows[in_rows]]
    c_vict = victims[in_rows]
    top = np.where(c_vict, c_prio, np.iinfo(np.int64).min).max(axis=1)
    acc.slots.append(slots[rows[in_rows]])
    acc.victims.append(c_vict)
    acc.crit.append(
        np.stack(
            [
                n_violations[in_rows],
                top,
                np.where(c_vict, c_prio + PRIORITY_OFFSET, 0).sum(axis=1),
                n_victims[in_rows],
            ],
            axis=1,
        )
    )
    width = victims.shape[1]
    start = columns.start[slots[rows[in_rows]], :width]
    acc.start.append(np.where(c_vict & (c_prio == top[:, None]), start, NOT_STARTED).min(axis=1))


def _fast_result(acc: _FastFound, columns: NodePodColumns) -> DryRunResult:
    chosen = np.concatenate([*acc.non_violating, *acc.violating_ids]).astype(np.int64)
    all_slots = np.concatenate(acc.slots) if acc.slots else np.zeros(0, dtype=np.int64)
    crit = np.concatenate(acc.crit) if acc.crit else np.zeros((0, 4), dtype=np.int64)
    starts = np.concatenate(acc.start) if acc.start else np.zeros(0, dtype=np.float64)
    cand_victims = acc.victims
    batch_of = np.repeat(np.arange(len(cand_victims)), [len(b) for b in cand_victims])
    batch_start = np.cumsum([0] + [len(b) for b in cand_victims])

    def victims_of(i: int) -> list[Pod]:
        g = int(chosen[i])
        b = int(batch_of[g])
        row = cand_victims[b][g - int(batch_start[b])]
        pods = columns.pods[int(all_slots[g])]
        return [pods[j] for j in np.flatnonzero(row).tolist()]

    cands = Candidates(
        slots=all_slots[chosen],
        pdb_violations=crit[chosen, 0],
        top_priority=crit[chosen, 1],
        priority_sum=crit[chosen, 2],
        count=crit[chosen, 3],
        top_earliest_start=starts[chosen],
        victims_of=victims_of,
    )
    return DryRunResult(cands, reasons=acc.reasons, failed_nodes=acc.failed, errors=acc.errors)
