"""proportion: weighted fair shares between queues (Volcano ``plugins/proportion``).

At session open every queue that has jobs gets a *deserved* share of the cluster by weighted
water-filling (:func:`~kubesched.batch.shares.proportion_deserved`): capped by the queue's request
(allocated plus pending tasks) and by its real capability (``capability``, and the part of the
cluster no other queue has guaranteed), raised to its ``guarantee``. The plugin then registers:

* queue order: higher ``spec.priority`` first, then the smaller share (``allocated / deserved`` in
  the queue's most used dimension);
* overused: the queue holds at least its deserved share in every dimension;
* allocatable / preemptive: a task fits its queue only while the queue is Open and its allocation
  plus the task stays within deserved in every dimension the task asks for;
* reclaimable: running tasks of a queue may be reclaimed while that queue holds more than it
  deserves, never taking it below deserved (each victim counts off before the next is judged);
* job enqueueable: a job with ``minResources`` enters its (Open) queue only if the queue's allocated,
  inqueue-reserved and requested resources, less its jobs' elastic part, stay within the queue's
  real capability in the dimensions the job asks for;
* event handlers keeping each queue's allocation and share current.

At session close the per-queue numbers are left on ``ssn.queue_shares`` (queue name → ``deserved``,
``allocated``, ``request``, ``real_capability`` as resource dicts, ``share`` as a float) for reports and
for the scheduler's Queue status.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kubesched.batch.conf import PluginOption
from kubesched.batch.job_info import (
    PERMIT,
    REJECT,
    JobInfo,
    QueueInfo,
    TaskInfo,
)
from kubesched.batch.queue_totals import QueueTotals
from kubesched.batch.session import Event, EventHandler, Session
from kubesched.batch.shares import (
    QueueDemand,
    Vector,
    insufficient_dims,
    less_equal,
    overused,
    proportion_deserved,
    proportion_queue_order,
    queue_allocatable,
    queue_share,
    real_capability,
)

#: Prefix of the PodGroup event Volcano records when a queue's capability keeps a job out.
QUOTA_INSUFFICIENT = "queue resource quota insufficient"


@dataclass(slots=True, eq=False)
class QueueAttr:
    """What proportion tracks for one queue with jobs in the session (Volcano ``queueAttr``)."""

    name: str
    weight: int
    deserved: Vector
    allocated: Vector
    request: Vector
    #: Allocated beyond ``minResources``, summed over the queue's jobs.
    elastic: Vector
    #: ``minResources`` reserved by admitted jobs that do not hold them yet.
    inqueue: Vector
    #: ``spec.capability`` (``None``: unset; ``inf`` in dimensions it does not name).
    capability: Vector | None
    #: The most the queue may hold: unguaranteed cluster plus its guarantee, within capability.
    real_capability: Vector
    guarantee: Vector
    #: ``share`` as last computed; ``None`` once ``allocated`` moved (computed again when read:
    #: events move allocations for every task, shares are read far less often).
    _share: float | None = None

    @property
    def share(self) -> float:
        share = self._share
        if share is None:
            share = self._share = queue_share(self.deserved, self.allocated)
        return share

    def update_share(self) -> None:
        self._share = None


def format_resource_names(prefix: str, verb: str, names: list[str]) -> str:
    """``prefix: verb a, verb b`` (Volcano ``util.FormatResourceNames``); just ``prefix`` when empty."""
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"{verb} {n}" for n in names)


class ProportionPlugin:
    name = "proportion"

    def __init__(self, option: PluginOption) -> None:
        self.option = option
        self.attrs: dict[str, QueueAttr] = {}
        #: Job uid → why jobEnqueueable turned it away (also recorded as a PodGroup event).
        self.rejections: dict[str, str] = {}

    # -- building the queue attributes ---------------------------------------------------------------
    def _attr_for(self, ssn: Session, queue: QueueInfo, total: Vector, total_guarantee: Vector) -> QueueAttr:
        zero = ssn.space.zeros()
        guarantee = np.array(queue.guarantee, dtype=np.float64)
        capability = None if queue.capability is None else np.array(queue.capability, dtype=np.float64)
        return QueueAttr(
            name=queue.name,
            weight=queue.weight,
            deserved=zero.copy(),
            allocated=zero.copy(),
            request=zero.copy(),
            elastic=zero.copy(),
            inqueue=zero.copy(),
            capability=capability,
            real_capability=real_capability(total, total_guarantee, capability, guarantee),
            guarantee=guarantee,
        )

    def on_session_open(self, ssn: Session) -> None:
        total = np.array(ssn.total_resource, dtype=np.float64)
        total_guarantee = ssn.space.zeros()
        for q in ssn.queues.values():
            total_guarantee += q.guarantee
        # Per queue: what its jobs hold, ask for, hold beyond minResources and reserve. The
        # scheduler keeps these sums between sessions; without them they are summed here.
        totals = ssn.queue_totals
        if totals is None:
            totals = QueueTotals(ssn.space)
            for uid, job in ssn.jobs.items():
                totals.set(uid, job)
        for name, queue in ssn.queues.items():
            qs = totals.queues.get(name)
            if qs is None:
                continue
            attr = self.attrs.get(name)
            if attr is None:
                attr = self.attrs[name] = self._attr_for(ssn, queue, total, total_guarantee)
            attr.allocated += qs.allocated
            attr.request += qs.request
            attr.elastic += qs.elastic
            attr.inqueue += qs.inqueue

        deserved = proportion_deserved(
            total,
            [
                QueueDemand(
                    name=a.name,
                    weight=a.weight,
                    request=a.request,
                    allocated=a.allocated,
                    capability=a.capability,
                    guarantee=a.guarantee,
                )
                for a in self.attrs.values()
            ],
            total_guarantee=total_guarantee,
        )
        for name, vec in deserved.items():
            attr = self.attrs[name]
            attr.deserved = vec
            attr.update_share()

        ssn.add_queue_order_fn(self.name, self.queue_order)
        ssn.add_reclaimable_fn(self.name, lambda reclaimer, reclaimees: self.reclaimable(ssn, reclaimees))
        ssn.add_overused_fn(self.name, self.overused)
        # Monotone: a queue refuses a task when its allocation plus the task exceeds deserved, and
        # deserved is fixed for the session.
        ssn.add_allocatable_fn(
            self.name, lambda queue, task: self.allocatable(ssn, queue, task), monotone=True
        )
        ssn.add_preemptive_fn(self.name, lambda queue, task: self.allocatable(ssn, queue, task))
        ssn.add_job_enqueueable_fn(self.name, lambda job: self.job_enqueueable(ssn, job))
        ssn.add_job_enqueued_fn(self.name, self.job_enqueued)
        ssn.add_event_handler(
            EventHandler(
                allocate_func=lambda ev: self._on_event(ssn, ev, +1),
                deallocate_func=lambda ev: self._on_event(ssn, ev, -1),
            )
        )

    # -- registered functions ------------------------------------------------------------------------
    def _share(self, queue: QueueInfo) -> float:
        attr = self.attrs.get(queue.name)
        return attr.share if attr is not None else 0.0

    def queue_order(self, left: QueueInfo, right: QueueInfo) -> int:
        return proportion_queue_order(left.priority, self._share(left), right.priority, self._share(right))

    def overused(self, queue: QueueInfo) -> bool:
        attr = self.attrs.get(queue.name)
        return attr is not None and overused(attr.deserved, attr.allocated)

    def allocatable(self, ssn: Session, queue: QueueInfo, task: TaskInfo) -> bool:
        if not queue.open:
            return False
        attr = self.attrs.get(queue.name)
        if attr is None:
            return False
        return queue_allocatable(ssn.space, attr.deserved, attr.allocated, task.resreq)

    def reclaimable(self, ssn: Session, reclaimees: list[TaskInfo]) -> tuple[list[TaskInfo], int]:
        # Each queue's allocation, less the victims already picked from it.
        running: dict[str, Vector] = {}
        victims: list[TaskInfo] = []
        for task in reclaimees:
            job = ssn.jobs.get(task.job)
            if job is None:
                continue
            attr = self.attrs.get(job.queue)
            if attr is None:
                continue
            alloc = running.get(job.queue)
            if alloc is None:
                alloc = running[job.queue] = attr.allocated.copy()
            if not less_equal(alloc, attr.deserved):
                alloc -= task.resreq
                victims.append(task)
        return victims, PERMIT

    def job_enqueueable(self, ssn: Session, job: JobInfo) -> int:
        queue = ssn.queues.get(job.queue)
        if queue is None or not queue.open:
            return REJECT
        attr = self.attrs.get(queue.name)
        if attr is None or not job.pod_group.min_resources:
            return PERMIT
        min_req = job.min_resources
        wanted = min_req + attr.allocated + attr.inqueue - attr.elastic
        short = insufficient_dims(ssn.space, wanted, attr.real_capability, min_req)
        if not short:
            return PERMIT
        message = format_resource_names(QUOTA_INSUFFICIENT, "insufficient", short)
        self.rejections[job.uid] = message
        ssn.record_pod_group_event(job, "Normal", "Unschedulable", message)
        return REJECT

    def job_enqueued(self, job: JobInfo) -> None:
        if not job.pod_group.min_resources:
            return
        attr = self.attrs.get(job.queue)
        if attr is not None:
            attr.inqueue += job.min_resources

    def _on_event(self, ssn: Session, event: Event, sign: int) -> None:
        job = ssn.jobs.get(event.task.job)
        if job is None:
            return
        attr = self.attrs.get(job.queue)
        if attr is None:
            return
        if sign > 0:
            attr.allocated += event.task.resreq
        else:
            attr.allocated -= event.task.resreq
        attr.update_share()

    # -- session close -------------------------------------------------------------------------------
    def report(self, ssn: Session) -> dict[str, dict[str, Any]]:
        """Queue name → deserved / allocated / request / real_capability (resource dicts) and share."""
        space = ssn.space
        out: dict[str, dict[str, Any]] = {}
        for name, a in self.attrs.items():
            out[name] = {
                "deserved": space.to_dict(a.deserved),
                "allocated": space.to_dict(a.allocated),
                "request": space.to_dict(a.request),
                "real_capability": space.to_dict(a.real_capability),
                "share": a.share,
            }
        return out

    def on_session_close(self, ssn: Session) -> None:
        # The dicts are built when first read (a session closes far more often than it is reported).
        # The session is held weakly: held strongly, the report in the session and the session in
        # the report would keep each other, and the whole session, until the cycle collector runs.
        session = weakref.ref(ssn)

        def build() -> dict[str, dict[str, Any]]:
            live = session()
            return self.report(live) if live is not None else {}

        setattr(ssn, "queue_shares", _LazyReport(build))  # noqa: B010
        ssn.queue_deserved = {name: a.deserved for name, a in self.attrs.items()}


class _LazyReport(Mapping[str, dict[str, Any]]):
    """A mapping computed on first access."""

    def __init__(self, build: Callable[[], dict[str, dict[str, Any]]]) -> None:
        self._build = build
        self._data: dict[str, dict[str, Any]] | None = None

    def _get(self) -> dict[str, dict[str, Any]]:
        if self._data is None:
            self._data = self._build()
        return self._data

    def __getitem__(self, key: str) -> dict[str, Any]:
        return self._get()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())
