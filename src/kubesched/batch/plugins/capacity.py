"""capacity: per-queue quotas, optionally in a tree of queues (Volcano ``plugins/capacity``).

Each queue states what it is owed instead of a weight: ``deserved`` (what it may keep when others
want resources back; beyond it, what it holds is borrowed and may be reclaimed), ``guarantee`` (never
reclaimed below it, and kept out of every other queue's reach) and ``capability`` (the most it may
ever hold). At session open each queue's *real capability* is the cluster less every other queue's
guarantee, within its capability; its deserved is clipped to that and raised to its guarantee.

The plugin registers:

* queue order: higher ``spec.priority`` first, then the smaller share (``allocated / deserved`` in
  the queue's most used dimension; a queue owed nothing but pods has share 1), a queue with deserved
  first on a tie;
* allocatable: the queue is Open and its allocation plus the task stays within its real capability
  in every dimension the task asks for (with a hierarchy: for the queue and each ancestor, and only
  leaf queues allocate);
* preemptive (reclaim): the queue is Open, within its real capability with the task, and at or below
  its deserved with the task in at least one dimension the task asks for; with
  ``ancestorReclaimLevel`` (hierarchy only), an ancestor that many levels up or nearer (the root
  aside) at or below its own deserved with the task will do as well;
* reclaimable: a running task that holds something the reclaimer asks for may be reclaimed from a
  queue owed nothing the task holds, or holding more than its deserved in a dimension the task uses
  (cpu or memory it is owed, a scalar its deserved names; never ``pods``), never taking that queue
  below its guarantee; each victim counts off before the next is judged. With
  ``ancestorReclaimLevel`` N, each of the victim's ancestors up to N levels (the root and those it
  shares with the reclaimer at the same level aside) must hold more than its deserved in such a
  dimension too, and a queue owed nothing keeps its tasks from a reclaimer under a common ancestor
  whose own queue is owed nothing it asks for;
* unified victim filter (gangreclaim; gangpreempt: every candidate allowed): the candidates in the
  order the action ranked them, each victim queue kept at its guarantee, a task taken from a queue
  owed nothing it holds, or holding more than its deserved in a dimension the task uses; each
  victim counts off before the next is judged (no ancestor checks, no check of the reclaimer's
  dimensions, as Volcano's);
* job enqueueable: the queue is Open (and a leaf) and its allocated, inqueue-reserved and requested
  resources, less its jobs' elastic part, stay within the real capability, for the queue and each
  ancestor;
* victim queue order (hierarchy): victims in the queue sharing the deepest ancestor with the
  reclaimer go first, so a queue reclaims from its siblings before its cousins;
* event handlers keeping each queue's (and its ancestors') allocation and share current.

Hierarchy (``enableHierarchy: true`` on the plugin): a queue's ``spec.parent`` names its parent, a
queue without one hangs under ``root``. ``root`` is sized to the cluster (its capability, when unset,
is the cluster's total; its deserved and guarantee are the sums of its children's). A child's unset
capability dimensions are its parent's; its real capability is its parent's less its siblings'
guarantees. Jobs may only live in leaf queues: a job in a queue with children, a parent that does not
exist or a cycle of parents makes the session refuse every allocation, enqueue and reclaim (as
Volcano does), and the reason is logged. Children whose deserved or guarantee add up to more than
their parent's, or whose capability exceeds it, are logged as warnings.

At session close the per-queue numbers are left on ``ssn.queue_shares`` (queue name →
``deserved``, ``allocated``, ``request``, ``real_capability``, ``guarantee`` as resource dicts,
``share`` as a float and ``parent``) and ``ssn.queue_deserved``, for reports and Queue status.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kubesched.api.resources import CPU, MEMORY, PODS
from kubesched.api.volcano import ROOT_QUEUE
from kubesched.batch.actions.preempt import victim_order
from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import PERMIT, REJECT, JobInfo, QueueInfo, TaskInfo
from kubesched.batch.operations import EvictionContext, EvictionKind
from kubesched.batch.plugins.args import get_int
from kubesched.batch.plugins.proportion import QUOTA_INSUFFICIENT, _LazyReport, format_resource_names
from kubesched.batch.queue_totals import QueueTotals
from kubesched.batch.session import Event, EventHandler, Session
from kubesched.batch.shares import MIN_RESOURCE, ResourceSpace, Vector, insufficient_dims

log = logging.getLogger(__name__)

#: Problems already logged: a session opens every period, and the same tree would repeat them.
_logged: set[str] = set()


def _warn_once(message: str) -> None:
    if message not in _logged:
        _logged.add(message)
        log.warning("%s", message)


#: The argument saying how many levels of ancestors reclaim weighs besides the leaf queues.
ANCESTOR_RECLAIM_LEVEL = "ancestorReclaimLevel"


@dataclass(slots=True, eq=False)
class CapacityAttr:
    """What capacity tracks for one queue (Volcano ``queueAttr``)."""

    name: str
    deserved: Vector
    allocated: Vector
    request: Vector
    elastic: Vector
    inqueue: Vector
    capability: Vector
    real_capability: Vector
    guarantee: Vector
    #: Scalar dimensions ``deserved`` names (a 0/1 mask), even at zero: reclaim compares a scalar
    #: only where the queue states a deserved amount for it.
    deserved_keys: Vector = field(default_factory=lambda: np.zeros(0))
    parent: str = ""
    #: Ancestor names, root first, parent last.
    ancestors: list[str] = field(default_factory=list)
    children: list[str] = field(default_factory=list)
    share: float = 0.0
    #: Where ``pods`` sits in the vectors (-1: nowhere).
    pods: int = -1

    def update_share(self) -> None:
        """Volcano ``updateQueueAttrShare``: a queue owed nothing but pods is best effort (share 1,
        so queues owed something and below it go first); otherwise its most used dimension among
        those it is owed, ``pods`` included."""
        mask = self.deserved >= MIN_RESOURCE
        owed = mask.copy()
        if self.pods >= 0:
            owed[self.pods] = False
        if not owed.any():
            self.share = 1.0
            return
        self.share = max(0.0, float(np.max(self.allocated[mask] / self.deserved[mask])))


def _named(space: ResourceSpace, resources: Any) -> Vector:
    """Which dimensions of ``space`` a resource list names with a quantity at or above Volcano's
    tolerance (``ResourceNames``), as a 0/1 mask."""
    vec = space.zeros()
    for name, q in (resources or {}).items():
        if name in space.names and float(q) >= MIN_RESOURCE:
            vec[space.index(name)] = 1.0
    return vec


def _keys(space: ResourceSpace, *resource_lists: Any) -> Vector:
    """Which dimensions of ``space`` the resource lists name, whatever the quantity, as a 0/1 mask."""
    vec = space.zeros()
    for resources in resource_lists:
        for name in resources or {}:
            if name in space.names:
                vec[space.index(name)] = 1.0
    return vec


def _vector(space: ResourceSpace, resources: Any) -> Vector:
    return space.from_dict({k: v for k, v in (resources or {}).items() if k in space.names})


def _relevant(space: ResourceSpace, mask: Vector) -> Vector:
    """``mask`` without ``pods``, which Volcano ignores when it compares which dimensions overlap."""
    if PODS in space.names:
        mask = mask.copy()
        mask[space.index(PODS)] = 0
    return mask


def _less_equal_partly(space: ResourceSpace, used: Vector, limit: Vector, request: Vector) -> bool:
    """Volcano ``LessEqualPartlyWithDimensionZeroFiltered``: in at least one dimension the request
    asks for (``pods`` aside, and not where both sides are zero) ``used`` stays within ``limit``."""
    dims = (request > 0) & ~((used < MIN_RESOURCE) & (limit < MIN_RESOURCE))
    if PODS in space.names:
        dims[space.index(PODS)] = False
    ok = (used < limit) | (np.abs(used - limit) < MIN_RESOURCE)
    return bool(np.any(dims & ok))


def _exceeds_deserved(space: ResourceSpace, allocated: Vector, attr: CapacityAttr, request: Vector) -> bool:
    """Volcano ``GreaterPartlyWithRelevantDimensions``: ``allocated`` is above the queue's deserved
    (strictly, no tolerance) in a dimension the request uses and the queue is owed something in:
    cpu or memory with a deserved amount of at least the tolerance, a scalar that deserved names
    (even at zero), never ``pods``."""
    dims = (request > 0) & (allocated > attr.deserved)
    owed = attr.deserved >= MIN_RESOURCE
    for dim in (CPU, MEMORY):
        if dim in space.names:
            i = space.index(dim)
            dims[i] &= bool(owed[i])
    scalar = np.ones(len(space), dtype=np.bool_)
    for dim in (CPU, MEMORY, PODS):
        if dim in space.names:
            scalar[space.index(dim)] = False
    dims &= ~scalar | (attr.deserved_keys > 0)
    if PODS in space.names:
        dims[space.index(PODS)] = False
    return bool(np.any(dims))


def _intersects(a: Vector, b: Vector) -> bool:
    """Volcano ``Intersection``: a dimension both resources hold at least the tolerance of."""
    return bool(np.any((a >= MIN_RESOURCE) & (b >= MIN_RESOURCE)))


class CapacityPlugin:
    name = "capacity"

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        self.attrs: dict[str, CapacityAttr] = {}
        self.hierarchy = option.hierarchy
        level = get_int(option.arguments, ANCESTOR_RECLAIM_LEVEL, 0, plugin=self.name)
        if level < 0:
            _warn_once(f"capacity: {ANCESTOR_RECLAIM_LEVEL} should be non-negative, got {level}; using 0")
            level = 0
        #: How many levels of ancestors (parent = 1) reclaim also weighs, with the hierarchy on.
        self.ancestor_level = level if self.hierarchy else 0
        #: False when the queue tree is unusable: the session then refuses everything.
        self.ready = True
        #: Why the queue tree is unusable, or the hierarchy's warnings.
        self.problems: list[str] = []
        #: Job uid → why jobEnqueueable turned it away (also recorded as a PodGroup event).
        self.rejections: dict[str, str] = {}

    # -- building the queue attributes ---------------------------------------------------------------
    def _new_attr(self, space: ResourceSpace, queue: QueueInfo) -> CapacityAttr:
        zero = space.zeros()
        return CapacityAttr(
            name=queue.name,
            deserved=np.array(queue.deserved, dtype=np.float64),
            allocated=zero.copy(),
            request=zero.copy(),
            elastic=zero.copy(),
            inqueue=zero.copy(),
            capability=_vector(space, queue.queue.capability),
            real_capability=zero.copy(),
            guarantee=np.array(queue.guarantee, dtype=np.float64),
            deserved_keys=_keys(space, queue.queue.deserved, queue.queue.guarantee),
            pods=space.index(PODS) if PODS in space.names else -1,
        )

    def _queue_totals(self, ssn: Session) -> QueueTotals:
        totals = ssn.queue_totals
        if totals is None:
            totals = QueueTotals(ssn.space)
            for uid, job in ssn.jobs.items():
                totals.set(uid, job)
        return totals

    def _build_flat(self, ssn: Session) -> None:
        space = ssn.space
        total = np.array(ssn.total_resource, dtype=np.float64)
        total_guarantee = space.zeros()
        for q in ssn.queues.values():
            total_guarantee += q.guarantee
        unguaranteed = np.maximum(total - total_guarantee, 0.0)
        totals = self._queue_totals(ssn)
        for name, queue in ssn.queues.items():
            qs = totals.queues.get(name)
            if qs is None:
                continue
            attr = self._new_attr(space, queue)
            named = _named(space, queue.queue.capability)
            # Unset dimensions (and cpu or memory at or below zero) do not limit the queue.
            cap = np.where(named > 0, attr.capability, np.inf)
            if not queue.queue.capability:
                cap = np.full(len(space), np.inf)
            for dim in (CPU, MEMORY):
                if dim in space.names and cap[space.index(dim)] <= 0:
                    cap[space.index(dim)] = np.inf
            attr.capability = cap
            attr.real_capability = np.minimum(unguaranteed + attr.guarantee, cap)
            attr.allocated += qs.allocated
            attr.request += qs.request
            attr.elastic += qs.elastic
            attr.inqueue += qs.inqueue
            attr.deserved = np.maximum(np.minimum(attr.deserved, attr.real_capability), attr.guarantee)
            attr.update_share()
            self.attrs[name] = attr

    def _build_tree(self, ssn: Session) -> None:
        space = ssn.space
        total = np.array(ssn.total_resource, dtype=np.float64)
        queues = dict(ssn.queues)
        for name, queue in queues.items():
            self.attrs[name] = self._new_attr(space, queue)
        if ROOT_QUEUE not in self.attrs:
            # Volcano's controller always keeps a root queue; a cluster without one gets one here.
            zero = space.zeros()
            self.attrs[ROOT_QUEUE] = CapacityAttr(
                ROOT_QUEUE,
                zero.copy(),
                zero.copy(),
                zero.copy(),
                zero.copy(),
                zero.copy(),
                zero.copy(),
                zero.copy(),
                zero.copy(),
                deserved_keys=zero.copy(),
                pods=space.index(PODS) if PODS in space.names else -1,
            )
        # Parents and ancestors.
        for name in sorted(self.attrs):
            if name == ROOT_QUEUE:
                continue
            info = queues.get(name)
            parent = (info.queue.parent if info is not None else "") or ROOT_QUEUE
            if parent not in self.attrs:
                self._refuse(f"queue {name!r} has parent {parent!r}, which does not exist")
                return
            self.attrs[name].parent = parent
            self.attrs[parent].children.append(name)
        for name in sorted(self.attrs):
            chain: list[str] = []
            seen = {name}
            cur = self.attrs[name].parent
            while cur:
                if cur in seen:
                    self._refuse(f"queue {name!r} is in a cycle of parents")
                    return
                seen.add(cur)
                chain.append(cur)
                cur = self.attrs[cur].parent
            self.attrs[name].ancestors = chain[::-1]
        for job in ssn.jobs.values():
            attr = self.attrs.get(job.queue)
            if attr is not None and attr.children:
                self._refuse(
                    f"queue {job.queue!r} has child queues and jobs; jobs may only live in leaf queues"
                )
                return
        # Job sums, added up to every ancestor.
        totals = self._queue_totals(ssn)
        for name, qs in totals.queues.items():
            attr = self.attrs.get(name)
            if attr is None:
                continue
            for a in (attr, *(self.attrs[x] for x in attr.ancestors)):
                a.allocated += qs.allocated
                a.request += qs.request
                a.elastic += qs.elastic
                a.inqueue += qs.inqueue
        root = self.attrs[ROOT_QUEUE]
        named = _named(space, queues[ROOT_QUEUE].queue.capability) if ROOT_QUEUE in queues else space.zeros()
        # The root is the cluster, unless its capability says less.
        root.capability = np.where(named > 0, root.capability, total)
        root.real_capability = root.capability.copy()
        self._size_children(space, root, queues)
        for attr in self.attrs.values():
            attr.update_share()

    def _size_children(self, space: ResourceSpace, attr: CapacityAttr, queues: dict[str, QueueInfo]) -> None:
        total_guarantee = space.zeros()
        total_deserved = space.zeros()
        for child_name in attr.children:
            child = self.attrs[child_name]
            child.deserved = np.maximum(child.deserved, child.guarantee)
            total_deserved += child.deserved
            total_guarantee += child.guarantee
            child_queue = queues.get(child_name)
            named = _named(space, child_queue.queue.capability if child_queue is not None else None)
            inherited = np.where(named > 0, child.capability, attr.capability)
            if np.any(inherited > attr.capability):
                self.problems.append(
                    f"queue {child_name!r}: capability exceeds its parent {attr.name!r}'s; "
                    "the parent's limits it"
                )
            child.capability = inherited
        if attr.name == ROOT_QUEUE:
            attr.guarantee = total_guarantee
            attr.deserved = total_deserved
            attr.deserved_keys = space.zeros()
            for child_name in attr.children:
                attr.deserved_keys = np.maximum(attr.deserved_keys, self.attrs[child_name].deserved_keys)
        for child_name in attr.children:
            child = self.attrs[child_name]
            real = np.maximum(attr.real_capability - total_guarantee, 0.0) + child.guarantee
            child.real_capability = np.minimum(real, child.capability)
        if attr.children and np.any(attr.deserved + MIN_RESOURCE < total_deserved):
            self.problems.append(f"queue {attr.name!r}: its children's deserved add up to more than its own")
        if attr.children and np.any(attr.guarantee + MIN_RESOURCE < total_guarantee):
            self.problems.append(
                f"queue {attr.name!r}: its children's guarantees add up to more than its own"
            )
        for child_name in attr.children:
            self._size_children(space, self.attrs[child_name], queues)

    def _refuse(self, why: str) -> None:
        self.ready = False
        self.problems.append(why)

    # -- session open --------------------------------------------------------------------------------
    def on_session_open(self, ssn: Session) -> None:
        if self.hierarchy:
            self._build_tree(ssn)
            if not self.ready:
                _warn_once(f"capacity: {self.problems[-1]}; nothing is scheduled until the queues are fixed")
            for p in self.problems if self.ready else ():
                _warn_once(f"capacity: {p}")
        else:
            self._build_flat(ssn)

        ssn.add_queue_order_fn(self.name, self.queue_order)
        ssn.add_reclaimable_fn(
            self.name, lambda reclaimer, reclaimees: self.reclaimable(ssn, reclaimer, reclaimees)
        )
        ssn.add_unified_evictable_fn(
            self.name, lambda ctx, candidates: self.unified_evictable(ssn, ctx, candidates)
        )
        # Deserved and real capability are fixed for the session, so a refusal stands until the
        # queue's allocation drops.
        ssn.add_allocatable_fn(
            self.name, lambda queue, task: self.allocatable(ssn, queue, task), monotone=True
        )
        ssn.add_preemptive_fn(self.name, lambda queue, task: self.preemptive(ssn, queue, task))
        ssn.add_job_enqueueable_fn(self.name, lambda job: self.job_enqueueable(ssn, job))
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)
        if self.hierarchy:
            ssn.add_victim_queue_order_fn(self.name, self.victim_queue_order)
        ssn.add_event_handler(
            EventHandler(
                allocate_func=lambda ev: self._on_event(ssn, ev, +1),
                deallocate_func=lambda ev: self._on_event(ssn, ev, -1),
            )
        )

    # -- registered functions ------------------------------------------------------------------------
    def _compare_share(self, left: CapacityAttr | None, right: CapacityAttr | None) -> int:
        if left is None or right is None:
            return 0
        if left.share == right.share:
            lhas = bool(np.any(left.deserved >= MIN_RESOURCE))
            rhas = bool(np.any(right.deserved >= MIN_RESOURCE))
            if lhas == rhas:
                return 0
            return -1 if lhas else 1
        return -1 if left.share < right.share else 1

    def _leaf(self, name: str) -> bool:
        attr = self.attrs.get(name)
        return attr is not None and not attr.children

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        if left.priority != right.priority:
            return right.priority - left.priority
        la, ra = self.attrs.get(left.name), self.attrs.get(right.name)
        if not self.hierarchy or la is None or ra is None:
            return self._compare_share(la, ra)
        lleaf, rleaf = not la.children, not ra.children
        if lleaf != rleaf:
            return -1 if lleaf else 1
        if not lleaf:
            return self._compare_share(la, ra)
        # Two leaves: compare their ancestors just below the deepest one they share.
        level = _common_level(la, ra)
        lp = la.ancestors[level + 1] if level + 1 < len(la.ancestors) else la.name
        rp = ra.ancestors[level + 1] if level + 1 < len(ra.ancestors) else ra.name
        return self._compare_share(self.attrs[lp], self.attrs[rp])

    def victim_queue_order(self, left: QueueInfo, right: QueueInfo, preemptor: QueueInfo) -> int:
        la, ra, pa = self.attrs.get(left.name), self.attrs.get(right.name), self.attrs.get(preemptor.name)
        if la is None or ra is None or pa is None:
            return 0
        ll, rl = _common_level(la, pa), _common_level(ra, pa)
        if ll == rl:
            return 0
        return -1 if ll > rl else 1

    def _chain(self, name: str) -> list[CapacityAttr]:
        """The queue's attribute and, with the hierarchy, its ancestors' (the queue first)."""
        attr = self.attrs[name]
        if not self.hierarchy:
            return [attr]
        return [attr, *(self.attrs[a] for a in reversed(attr.ancestors))]

    def allocatable(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        if not queue.open or not self.ready:
            return False
        if queue.name not in self.attrs or (self.hierarchy and not self._leaf(queue.name)):
            return False
        space = ssn.space
        for attr in self._chain(queue.name):
            if insufficient_dims(space, attr.allocated + task.resreq, attr.real_capability, task.resreq):
                return False
        return True

    def preemptive(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        if not self.ready or not queue.open:
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return False
        space = ssn.space
        future = attr.allocated + task.resreq
        if insufficient_dims(space, future, attr.real_capability, task.resreq):
            return False
        if _less_equal_partly(space, future, attr.deserved, task.resreq):
            return True
        # A queue at its own deserved may still reclaim while an ancestor within the configured
        # levels is below the deserved of its subtree.
        for ancestor in self._ancestors_within(attr):
            if _less_equal_partly(space, ancestor.allocated + task.resreq, ancestor.deserved, task.resreq):
                return True
        return False

    def _ancestor_at(self, attr: CapacityAttr, depth: int) -> str | None:
        """The ancestor ``depth`` levels up (1: the parent), or None above the root."""
        if depth <= 0 or depth > len(attr.ancestors):
            return None
        return attr.ancestors[-depth]

    def _ancestors_within(self, attr: CapacityAttr) -> list[CapacityAttr]:
        """The ancestors below the root within ``ancestorReclaimLevel`` levels, nearest first."""
        out: list[CapacityAttr] = []
        for depth in range(1, self.ancestor_level + 1):
            name = self._ancestor_at(attr, depth)
            if name is not None and name != ROOT_QUEUE:
                out.append(self.attrs[name])
        return out

    def _share_ancestor(self, left: CapacityAttr, right: CapacityAttr) -> bool:
        """Whether the two queues have a common ancestor below the root within the levels weighed
        (each counted from its own leaf)."""
        mine = {a.name for a in self._ancestors_within(left)}
        return any(a.name in mine for a in self._ancestors_within(right))

    def reclaimable(
        self, ssn: Session, reclaimer: TaskInfo, reclaimees: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        if not self.ready:
            return [], REJECT
        reclaimer_job = ssn.jobs.get(reclaimer.job)
        reclaimer_attr = self.attrs.get(reclaimer_job.queue) if reclaimer_job is not None else None
        if reclaimer_attr is None:
            return [], REJECT
        space = ssn.space
        reclaimer_dims = _relevant(space, (reclaimer.init_resreq >= MIN_RESOURCE).astype(np.float64))
        # Queue name → its allocation less the victims chosen so far, for leaves and for the
        # ancestors weighed alike.
        running: dict[str, Vector] = {}

        def allocation(of: CapacityAttr) -> Vector:
            alloc = running.get(of.name)
            if alloc is None:
                alloc = running[of.name] = of.allocated.copy()
            return alloc

        victims: list[TaskInfo] = []
        for task in sorted(reclaimees, key=victim_order(ssn, reclaimer)):
            job = ssn.jobs.get(task.job)
            if job is None:
                continue
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            uses = task.resreq >= MIN_RESOURCE
            # Only a task holding something the reclaimer asks for can make room for it.
            if not np.any(_relevant(space, uses.astype(np.float64)) * reclaimer_dims > 0):
                continue
            alloc = allocation(attr)
            rest = alloc - task.resreq
            # The queue keeps its guarantee (Volcano ``LessEqual`` with a zero default).
            if np.any((attr.guarantee > rest) & ~(np.abs(attr.guarantee - rest) < MIN_RESOURCE)):
                continue
            if not _intersects(task.resreq, attr.deserved):
                # The queue is owed nothing the task holds: it holds all of it on loan. Queues under
                # a common ancestor within the weighed levels are left alone when the reclaimer's
                # own queue is owed nothing it asks for either: neither side has a claim there.
                if (
                    self.ancestor_level > 0
                    and self._share_ancestor(reclaimer_attr, attr)
                    and not _intersects(reclaimer.resreq, reclaimer_attr.deserved)
                ):
                    continue
            elif not _exceeds_deserved(space, alloc, attr, task.resreq):
                continue
            checked = self._ancestors_to_check(reclaimer_attr, attr)
            if any(
                _intersects(task.resreq, a.deserved)
                and not _exceeds_deserved(space, allocation(a), a, task.resreq)
                for a in checked
            ):
                continue
            for a in (attr, *checked):
                allocation(a)[:] -= task.resreq
            victims.append(task)
        return victims, PERMIT

    def unified_evictable(
        self, ssn: Session, ctx: EvictionContext, candidates: list[TaskInfo]
    ) -> tuple[list[TaskInfo], int]:
        if ctx.kind is EvictionKind.GANG_PREEMPT:
            return candidates, PERMIT
        if not self.ready:
            return [], REJECT
        space = ssn.space
        running: dict[str, Vector] = {}
        victims: list[TaskInfo] = []
        for task in candidates:
            job = ssn.jobs.get(task.job)
            attr = self.attrs.get(job.queue) if job is not None else None
            if job is None or attr is None:
                continue
            alloc = running.get(job.queue)
            if alloc is None:
                alloc = running[job.queue] = attr.allocated.copy()
            rest = alloc - task.resreq
            if np.any((attr.guarantee > rest) & ~(np.abs(attr.guarantee - rest) < MIN_RESOURCE)):
                continue
            if _intersects(task.resreq, attr.deserved) and not _exceeds_deserved(
                space, alloc, attr, task.resreq
            ):
                continue
            alloc -= task.resreq
            victims.append(task)
        return victims, PERMIT

    def _ancestors_to_check(self, reclaimer: CapacityAttr, victim: CapacityAttr) -> list[CapacityAttr]:
        """The victim's ancestors, level by level within ``ancestorReclaimLevel``, that must hold
        more than their deserved too: those below the root that are not the reclaimer's ancestor at
        the same level (a subtree both queues share has nothing to give back to itself)."""
        out: list[CapacityAttr] = []
        for depth in range(1, self.ancestor_level + 1):
            name = self._ancestor_at(victim, depth)
            if name is None or name == ROOT_QUEUE or name == self._ancestor_at(reclaimer, depth):
                continue
            out.append(self.attrs[name])
        return out

    def job_enqueueable(self, ssn: Session, job: JobInfo) -> int:
        if not self.ready:
            return REJECT
        queue = ssn.queues.get(job.queue)
        if queue is None:
            return REJECT
        if self.hierarchy and not self._leaf(queue.name):
            return REJECT
        if not queue.open:
            return REJECT
        if queue.name not in self.attrs or not job.pod_group.min_resources:
            return PERMIT
        min_req = job.min_resources
        for attr in self._chain(queue.name):
            wanted = min_req + attr.allocated + attr.inqueue - attr.elastic
            short = insufficient_dims(ssn.space, wanted, attr.real_capability, min_req)
            if short:
                message = format_resource_names(QUOTA_INSUFFICIENT, "insufficient", short)
                self.rejections[job.uid] = message
                ssn.record_pod_group_event(job, "Normal", "Unschedulable", message)
                return REJECT
        return PERMIT

    def job_enqueued(self, job: JobInfo) -> None:
        if not job.pod_group.min_resources or job.queue not in self.attrs:
            return
        for attr in self._chain(job.queue):
            attr.inqueue += job.min_resources

    def _on_event(self, ssn: Session, event: Event, sign: int) -> None:
        job = ssn.jobs.get(event.task.job)
        if job is None or job.queue not in self.attrs:
            return
        for attr in self._chain(job.queue):
            if sign > 0:
                attr.allocated += event.task.resreq
            else:
                attr.allocated -= event.task.resreq
            attr.update_share()

    # -- session close -------------------------------------------------------------------------------
    def report(self, ssn: Session) -> dict[str, dict[str, Any]]:
        """Queue name → deserved / allocated / request / real_capability / guarantee (resource
        dicts), share and parent (empty without a hierarchy, and for ``root``)."""
        space = ssn.space
        return {
            name: {
                "deserved": space.to_dict(a.deserved),
                "allocated": space.to_dict(a.allocated),
                "request": space.to_dict(a.request),
                "real_capability": space.to_dict(a.real_capability),
                "guarantee": space.to_dict(a.guarantee),
                "share": a.share,
                "parent": a.parent,
            }
            for name, a in self.attrs.items()
        }

    def on_session_close(self, ssn: Session) -> None:
        setattr(ssn, "queue_shares", _LazyReport(lambda: self.report(ssn)))  # noqa: B010
        ssn.queue_deserved = {name: a.deserved for name, a in self.attrs.items() if name in ssn.queues}


def _common_level(left: CapacityAttr, right: CapacityAttr) -> int:
    """Index of the deepest ancestor ``left`` and ``right`` share (Volcano ``getQueueLevel``)."""
    level = 0
    for i in range(min(len(left.ancestors), len(right.ancestors))):
        if left.ancestors[i] != right.ancestors[i]:
            return level
        level = i
    return level
