"""What ``gangpreempt`` and ``gangreclaim`` share (Volcano ``actions/utils``): the search for room
for a whole gang, one topology domain at a time.

For each starving job (queues in queue order, jobs in job order), the job's pending tasks that ask
for something are its *need*. The domains searched are the HyperNodes the job's gradients give for
eviction (network-topology-aware: highest tier first, capped by the plugin), at most ``maxDomains``
of them (default 8); a job without hard topology that gets none searches the whole cluster. In a
domain:

1. the candidate victims on its nodes are grouped into bundles per job
   (:mod:`~kubesched.batch.actions.bundle`), ranked, and passed to the plugins' unified victim
   filters in one call (``capacity`` keeps its running accounts across the whole list); whole
   bundles with any task refused are dropped, safe ones shrink to what was allowed, and the rest are
   ranked again. With ``allowWholeBundle: false`` whole bundles are never taken.
2. Bundles are added one at a time; once the domain's idle and releasing resources plus what the
   chosen bundles free cover the need, a dry run evicts the chosen victims and pipelines every
   pending task of the job on the domain's nodes (the queue must allow each task, the predicates and
   the future idle resources must pass; nodes with room now first, then by node order). The job
   must end up pipelined; then the evictions and the placements stand together, otherwise the next
   bundle is added and the dry run tried again.
3. A domain that no bundle makes work is left as it was; the next one is tried.

A job that ends pipelined commits its statement: the victims are evicted, and each pipelined task's
pod is nominated (``status.nominatedNodeName``) to the node freed for it, which the next session's
allocate tries first. Otherwise nothing it did stands: a preemptor gang gets all its pending tasks
placed or evicts nobody.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
from numpy.typing import NDArray

from kubesched.api.resources import PODS
from kubesched.batch.actions.bundle import (
    Bundle,
    BundleType,
    apply_allowed_tasks,
    create_job_bundles,
    flatten_bundles,
)
from kubesched.batch.actions.util import (
    fits_idle,
    predicate_nodes,
    prioritize_nodes,
    starving_jobs_by_queue,
)
from kubesched.batch.conf import argument_bool, argument_int
from kubesched.batch.hypernodes import CLUSTER_TOP_HYPER_NODE, HyperNodeInfo, HyperNodeTree, build_tree
from kubesched.batch.job_info import POD_PREEMPTABLE_KEY, JobInfo, QueueInfo, TaskInfo, TaskStatus
from kubesched.batch.operations import EvictionContext, EvictionKind, SearchPurpose
from kubesched.batch.session import Session
from kubesched.batch.shares import Vector, less_equal
from kubesched.batch.statement import Statement

BoolArray = NDArray[np.bool_]

#: The actions' arguments (their ``configurations`` entry) and defaults.
MAX_DOMAINS_KEY = "maxDomains"
ALLOW_WHOLE_BUNDLE_KEY = "allowWholeBundle"
DEFAULT_MAX_DOMAINS = 8
DEFAULT_ALLOW_WHOLE_BUNDLE = True

_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def pick_domains_from_gradients(
    gradients: list[list[HyperNodeInfo]], max_domains: int, fallback: str
) -> list[str]:
    """The gradients' HyperNodes in order, each once, at most ``max_domains`` (0 or less: all);
    ``fallback`` alone when there are none."""
    seen: set[str] = set()
    domains: list[str] = []
    for gradient in gradients:
        for hn in gradient:
            if hn.name in seen:
                continue
            seen.add(hn.name)
            domains.append(hn.name)
            if 0 < max_domains <= len(domains):
                return domains
    if not domains and fallback:
        domains.append(fallback)
    return domains


def session_tree(ssn: Session) -> HyperNodeTree:
    """The session's HyperNode tree; a bare one (the virtual top over every node) when it has none."""
    tree = ssn.hyper_nodes
    if tree is None:
        tree = ssn.hyper_nodes = build_tree((), {ssn.table.names[s]: {} for s in ssn.node_slots.tolist()})
    return tree


def candidate_domains(ssn: Session, job: JobInfo, max_domains: int) -> list[str]:
    """The HyperNodes to search for room for ``job``: its eviction gradients; the cluster as a whole
    when it has none and no hard topology."""
    root = session_tree(ssn).top()
    gradients = ssn.hyper_node_gradient(job, root, SearchPurpose.EVICT)
    fallback = "" if ssn.hard_topology(job)[0] else root.name
    return pick_domains_from_gradients(gradients, max_domains, fallback)


def domain_mask(ssn: Session, domain: str) -> BoolArray:
    if domain == CLUSTER_TOP_HYPER_NODE:
        mask: BoolArray = ssn.node_mask
        return mask
    return ssn.hyper_node_mask(domain)


def pending_tasks(ssn: Session, job: JobInfo) -> list[TaskInfo]:
    """The job's pending tasks that ask for something, in task order (what the job needs room for)."""
    return sorted((t for t in job.pending_tasks() if not t.best_effort), key=ssn.task_key)


def job_preemptable_for_gang_eviction(job: JobInfo) -> bool:
    """Whether a job's tasks may be victims at all: a PodGroup ``volcano.sh/preemptable``
    annotation (else label) decides, read as Go's ``ParseBool`` (anything else: no); without one,
    yes."""
    meta = job.pod_group.raw.get("metadata") or {}
    for source in ("annotations", "labels"):
        values = meta.get(source) or {}
        if POD_PREEMPTABLE_KEY in values:
            value = str(values[POD_PREEMPTABLE_KEY])
            return value in _TRUE if value in _TRUE | _FALSE else False
    return True


def need_of(ssn: Session, tasks: list[TaskInfo]) -> Vector:
    """The summed requests of ``tasks`` without ``pods`` (Volcano's resources do not count pod slots)."""
    need: Vector = np.zeros(len(ssn.space), dtype=np.float64)
    for t in tasks:
        need = need + t.init_resreq
    if PODS in ssn.space.names:
        need[ssn.space.index(PODS)] = 0
    return need


class TasksOnNodes:
    """The session's tasks in some statuses, with the node slot each is on, to list those of one
    domain; a task evicted meanwhile (no longer in those statuses) is left out."""

    def __init__(self, ssn: Session, statuses: frozenset[TaskStatus]) -> None:
        self.statuses = statuses
        slot_of = ssn.table.slot_of
        tasks: list[TaskInfo] = []
        slots: list[int] = []
        for job in ssn.jobs.values():
            for status in statuses:
                for t in job.task_status_index.get(status, {}).values():
                    slot = slot_of.get(t.node_name, -1)
                    if slot >= 0:
                        tasks.append(t)
                        slots.append(slot)
        self.tasks = tasks
        self.slots: NDArray[np.int64] = np.array(slots, dtype=np.int64)

    def within(self, mask: BoolArray) -> list[TaskInfo]:
        if not len(self.tasks):
            return []
        statuses = self.statuses
        picked = np.flatnonzero(mask[self.slots]).tolist()
        return [t for i in picked if (t := self.tasks[i]).status in statuses]


def _pipeline_all(
    ssn: Session, stmt: Statement, queue: QueueInfo | None, tasks: list[TaskInfo], evicted: bool
) -> bool:
    """Pipeline every task on the nodes searched (room now first, then node order); False at the
    first task its queue refuses or no node takes."""
    for task in tasks:
        if queue is not None and not ssn.allocatable(queue, task):
            return False
        choice = predicate_nodes(ssn, task)
        if not len(choice.feasible):
            return False
        slot = prioritize_nodes(ssn, task, choice.feasible)
        if slot is None or not fits_idle(ssn, task, slot, future=True):
            return False
        if not stmt.pipeline(task, slot, eviction_occurred=evicted):
            return False
    return True


def build_nomination_plan(
    ssn: Session,
    queue: QueueInfo | None,
    job: JobInfo,
    domain: str,
    mask: BoolArray,
    victims: list[TaskInfo],
    reason: str,
) -> Statement | None:
    """Dry-run the eviction of ``victims`` and the placement of every pending task of ``job`` in
    ``domain``. On success the statement holding both, still applied to the session; otherwise
    ``None`` and the session as it was."""
    tasks = pending_tasks(ssn, job)
    if not tasks:
        return None
    plan = Statement(ssn)
    for victim in victims:
        plan.evict(victim, reason)
    trial = Statement(ssn)
    with nullcontext() if domain == CLUSTER_TOP_HYPER_NODE else ssn.confined_to(mask):
        placed = _pipeline_all(ssn, trial, queue, tasks, bool(victims))
    if placed and trial.operations and ssn.job_pipelined(job):
        plan.merge(trial)
        return plan
    trial.discard()
    plan.discard()
    return None


class GangEvictAction:
    """The loop both gang-aware actions run; each says which tasks are candidates and how bundles
    rank."""

    name = ""
    kind = EvictionKind.GANG_PREEMPT
    #: Statuses a victim may have.
    statuses: frozenset[TaskStatus] = frozenset({TaskStatus.RUNNING})

    def __init__(self) -> None:
        self.max_domains = DEFAULT_MAX_DOMAINS
        self.allow_whole_bundle = DEFAULT_ALLOW_WHOLE_BUNDLE

    def parse_arguments(self, ssn: Session) -> None:
        """The action's ``configurations`` arguments; a ``maxDomains`` of 0 or less means the default."""
        args = ssn.conf.action_arguments(self.name)
        self.max_domains = argument_int(args, MAX_DOMAINS_KEY, DEFAULT_MAX_DOMAINS)
        if self.max_domains <= 0:
            self.max_domains = DEFAULT_MAX_DOMAINS
        self.allow_whole_bundle = argument_bool(args, ALLOW_WHOLE_BUNDLE_KEY, DEFAULT_ALLOW_WHOLE_BUNDLE)

    # -- per action ------------------------------------------------------------------------------
    def skip_queue(self, ssn: Session, queue: QueueInfo) -> bool:
        return False

    def may_start(self, ssn: Session, queue: QueueInfo, pending: list[TaskInfo]) -> bool:
        return True

    def is_candidate(self, ssn: Session, job: JobInfo, task: TaskInfo, victim_job: JobInfo) -> bool:
        raise NotImplementedError

    def sort_bundles(self, ssn: Session, job: JobInfo, bundles: list[Bundle], need: Vector) -> None:
        raise NotImplementedError

    # -- the loop --------------------------------------------------------------------------------
    def execute(self, ssn: Session) -> None:
        self.parse_arguments(ssn)
        found = starving_jobs_by_queue(ssn)
        queues, starving = found.queues, found.by_queue
        if not starving:
            return
        on_nodes = TasksOnNodes(ssn, self.statuses)
        while not queues.empty():
            queue = queues.pop()
            if self.skip_queue(ssn, queue):
                continue
            jobs = starving.get(queue.name)
            while jobs is not None and not jobs.empty():
                job = jobs.pop()
                stmt = Statement(ssn)
                self.evict_in_domains(ssn, stmt, queue, job, on_nodes)
                if ssn.job_pipelined(job):
                    stmt.commit()
                else:
                    stmt.discard()

    def evict_in_domains(
        self, ssn: Session, stmt: Statement, queue: QueueInfo, job: JobInfo, on_nodes: TasksOnNodes
    ) -> str:
        """Find room for ``job`` in the first domain that has it; the domain ("" when none)."""
        pending = pending_tasks(ssn, job)
        if not pending or not self.may_start(ssn, queue, pending):
            return ""
        need = need_of(ssn, pending)
        for domain in candidate_domains(ssn, job, self.max_domains):
            mask = domain_mask(ssn, domain)
            if not mask.any():
                continue
            bundles = self.select_domain_bundles(ssn, job, need, domain, mask, on_nodes)
            if not bundles:
                continue
            available = (ssn.idle[mask] + ssn.releasing[mask]).sum(axis=0).astype(np.float64)
            chosen: list[TaskInfo] = []
            for bundle in bundles:
                chosen.extend(bundle.tasks)
                available = available + bundle.local
                if not less_equal(need, available):
                    continue
                plan = build_nomination_plan(ssn, queue, job, domain, mask, list(chosen), self.name)
                if plan is None:
                    continue
                stmt.merge(plan)
                return domain
        return ""

    def select_domain_bundles(
        self, ssn: Session, job: JobInfo, need: Vector, domain: str, mask: BoolArray, on_nodes: TasksOnNodes
    ) -> list[Bundle]:
        """The bundles of the domain's candidates the victim filters allow, ranked."""
        by_job: dict[str, list[TaskInfo]] = {}
        for task in on_nodes.within(mask):
            if not task.preemptable:
                continue
            victim_job = ssn.jobs.get(task.job)
            if victim_job is None or not job_preemptable_for_gang_eviction(victim_job):
                continue
            if self.is_candidate(ssn, job, task, victim_job):
                by_job.setdefault(task.job, []).append(task)
        size = len(ssn.space)
        bundles = [b for uid, tasks in by_job.items() for b in create_job_bundles(ssn.jobs[uid], tasks, size)]
        if not bundles:
            return []
        self.sort_bundles(ssn, job, bundles, need)
        ctx = EvictionContext(self.kind, job, domain)
        allowed = ssn.unified_evictable(ctx, flatten_bundles(bundles))
        if not allowed:
            return []
        valid = apply_allowed_tasks(bundles, {t.uid for t in allowed}, size)
        if not valid:
            return []
        self.sort_bundles(ssn, job, valid, need)
        return [b for b in valid if b.type is BundleType.SAFE or self.allow_whole_bundle]


__all__ = [
    "ALLOW_WHOLE_BUNDLE_KEY",
    "DEFAULT_ALLOW_WHOLE_BUNDLE",
    "DEFAULT_MAX_DOMAINS",
    "MAX_DOMAINS_KEY",
    "GangEvictAction",
    "TasksOnNodes",
    "build_nomination_plan",
    "candidate_domains",
    "job_preemptable_for_gang_eviction",
    "need_of",
    "pending_tasks",
    "pick_domains_from_gradients",
]
