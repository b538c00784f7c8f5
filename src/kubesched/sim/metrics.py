"""What a simulation did over virtual time: allocation, queueing, latency, completion, fragmentation.

A :class:`MetricsRecorder` is handed to :class:`~kubesched.sim.simulation.Simulation`. It subscribes
to the simulation's shared informers (pods, nodes, batch objects, events), so it sees every arrival,
bind, completion and ``FailedScheduling`` event whichever scheduler caused it, and the simulation calls
:meth:`MetricsRecorder.observe` each time it is about to move the virtual clock, and
:meth:`MetricsRecorder.finish` at the end. Every time it records comes from the simulation's clock,
never from the wall clock, so the same run gives the same numbers.

Samples read the scheduler's :class:`~kubesched.cache.node_table.NodeTable` (a handful of NumPy
reductions over the node rows) and the recorder's own counters; nothing loops over pods per sample.
Definitions of every metric are in ``docs/reports.md``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from kubesched.api.annotations import ANNOTATION_DURATION, ANNOTATION_QUEUE
from kubesched.api.durations import parse_duration
from kubesched.api.resources import EPHEMERAL_STORAGE, PODS, pod_requests
from kubesched.api.volcano import DEFAULT_QUEUE, SCHEDULING_VOLCANO, Queue, group_name_of
from kubesched.batch.shares import (
    QueueDemand,
    ResourceSpace,
    capability_vector,
    proportion_deserved,
    queue_share,
)
from kubesched.errors import InputError
from kubesched.sim.samples import (
    FloatArray,
    PodRecord,
    TimeSeries,
    is_gpu_resource,
    parse_reasons,
    percentiles,
    time_weighted_mean,
)
from kubesched.store.base import EventType, WatchEvent
from kubesched.store.informers import Change

if TYPE_CHECKING:
    from kubesched.cache.node_table import NodeTable
    from kubesched.sim.simulation import Simulation

__all__ = ["NO_POOL", "POOL_LABELS", "MetricsRecorder"]

#: Node labels tried, in order, to group nodes into pools when no ``pool_label`` is given.
POOL_LABELS: Final = ("kubesched.io/pool", "node.kubernetes.io/instance-type", "kubesched.io/gpu-model")
#: Pool name of the nodes that lack the pool label.
NO_POOL: Final = "(none)"
#: Resource columns left out of allocation ratios: pod slots and scratch disk say little about packing.
SKIPPED_RESOURCES: Final = frozenset({PODS, EPHEMERAL_STORAGE})
#: Slack when telling a completion (deleted after its full duration) from an eviction.
_COMPLETION_SLACK = 1e-6

#: Samples a ``sample_every`` grid may hold: a finer grid over a long run is coarsened (the interval
#: doubled as often as needed) so that memory and the report stay bounded.
MAX_GRID_SAMPLES: Final = 100_000

_WATCHED_KINDS: Final = frozenset({"Pod", "Node", "Event", "Queue", "PodGroup"})


@dataclass(slots=True)
class _Job:
    first_arrival: float
    members: int = 0
    completed: int = 0
    last_finish: float = 0.0


@dataclass(slots=True)
class _NodeState:
    count: int
    total_alloc: NDArray[np.int64]
    ratio_cols: list[int]
    ratio_names: list[str]
    gpu_cols: list[tuple[int, str, str, str]]
    #: Row 0 sums every node, row 1 + p the nodes of pool p.
    weights: FloatArray
    gpu_alloc: dict[int, NDArray[np.int64]] = field(default_factory=dict)
    pool_alloc: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    pool_mask: NDArray[np.bool_] = field(default_factory=lambda: np.zeros((0, 0), dtype=np.bool_))
    pool_cells: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _QueueState:
    allocated: Counter[str] = field(default_factory=Counter)
    pending: Counter[str] = field(default_factory=Counter)
    running: int = 0
    waiting: int = 0


class MetricsRecorder:
    """Samples a simulation over virtual time. See the module docstring and ``docs/reports.md``.

    ``sample_every`` (virtual seconds): ``None`` records a sample at every virtual time where
    something changed (pods, nodes, queues); a number records the state at each multiple of it
    instead (plus the final state), which bounds the sample count on long traces.
    ``pool_label``: the node label naming node pools; ``None`` takes the first of
    :data:`POOL_LABELS` any node carries.
    ``progress``: called after each observation with ``(virtual seconds elapsed, virtual seconds
    known to lie ahead in total, pods bound so far)``.
    """

    def __init__(
        self,
        *,
        sample_every: float | None = None,
        pool_label: str | None = None,
        progress: Callable[[float, float, int], None] | None = None,
    ) -> None:
        if sample_every is not None and not sample_every > 0:
            raise InputError(f"must be a positive duration, got {sample_every!r}", field="sample_every")
        self.sample_every = sample_every
        #: The ``sample_every`` asked for, when the grid had to be coarsened to fit the sample bound.
        self.requested_sample_every: float | None = None
        self.pool_label = pool_label
        self._pool_label_fixed = pool_label is not None
        self.progress = progress
        self.series = TimeSeries()
        self.pods: dict[str, PodRecord] = {}
        #: FailedScheduling events per reason phrase (a phrase counts once per event).
        self.reasons: Counter[str] = Counter()
        self.end_time = 0.0
        self._sim: Simulation | None = None
        self._start = 0.0
        self._pending = 0
        self._running = 0
        self._completed = 0
        self._evicted = 0
        self._bound_total = 0
        #: GPU resource → pending request amount → how many pending pods ask exactly that.
        self._pending_gpu: dict[str, Counter[int]] = {}
        #: GPU resource → summed requests of every pod that has arrived so far (never decreases).
        self._arrived_gpu: Counter[str] = Counter()
        self._queues: dict[str, _QueueState] = {}
        self._queue_objects: dict[str, Queue] = {}
        self._changed = True
        self._last_row: dict[str, float] | None = None
        self._node_generation = 0
        self._nodes: _NodeState | None = None
        self._nodes_key: tuple[int, int, int] = (-1, 0, 0)
        self._next_grid = 0.0
        self._horizon = 0.0
        self._horizon_scanned = False

    # -- wiring ----------------------------------------------------------------------------------
    def attach(self, sim: Simulation) -> None:
        """Subscribe to ``sim``'s informers; called by the simulation before anything is loaded."""
        self._sim = sim
        self._start = sim.clock.start
        # Changes are kept as delivered and taken in at the next observation, so that each is
        # stamped with the time the simulation settled at, whenever the driver pumped it.
        self._changes: list[WatchEvent] = []
        for kind in sorted(_WATCHED_KINDS):
            sim.informers.informer(kind).add_handler(self._on_change, replay=False)

    def _on_change(self, change: Change[Any]) -> None:
        self._changes.append(WatchEvent(change.type, change.kind, change.obj, change.old))

    @property
    def now(self) -> float:
        assert self._sim is not None, "attach the recorder to a simulation first"
        return self._sim.clock.now() - self._start

    def observe(self, sim: Simulation, until: float) -> None:
        """The simulation settled at the current virtual time and will next move to ``until``."""
        t = self.now
        self._drain(sim, t)
        if self.sample_every is None:
            if self._changed or not len(self.series):
                if self.series.last_time == t:
                    self.series.drop_last()
                self.series.append(t, self._row(sim))
        else:
            rel_until = until - self._start
            if self._next_grid < rel_until and math.isfinite(rel_until):
                self._fit_grid(rel_until)
                row = self._row(sim)
                # The previous observation covered the grid up to now: every grid point left
                # before ``until`` sees the state of this instant.
                while self._next_grid < rel_until:
                    self.series.append(self._next_grid, row)
                    self._next_grid += self.sample_every
        self._report_progress(sim, t)

    def _fit_grid(self, until: float) -> None:
        """Coarsen the grid if sampling up to ``until`` would pass :data:`MAX_GRID_SAMPLES`: the
        interval doubles until the whole run so far fits in half the bound, and the samples already
        taken are thinned to the coarser grid (grid samples are consecutive multiples of it)."""
        every = self.sample_every
        assert every is not None
        if len(self.series) + (until - self._next_grid) / every <= MAX_GRID_SAMPLES:
            return
        step = 1
        while until / (every * step) > MAX_GRID_SAMPLES // 2:
            step *= 2
        if self.requested_sample_every is None:
            self.requested_sample_every = every
        self.series.thin(step)
        self.sample_every = every * step
        self._next_grid = len(self.series) * self.sample_every

    @property
    def warnings(self) -> list[str]:
        if self.requested_sample_every is None or self.sample_every is None:
            return []
        return [
            f"sampling every {self.requested_sample_every:g}s of virtual time would take more than "
            f"{MAX_GRID_SAMPLES} samples; sampled every {self.sample_every:g}s instead"
        ]

    def finish(self, sim: Simulation) -> None:
        """The run is over: record the final state."""
        t = self.now
        self._drain(sim, t)
        if self.series.last_time == t:
            self.series.drop_last()
        self.series.append(t, self._row(sim))
        self.end_time = t
        self._report_progress(sim, t)
        # What a report shows is recorded by now: the simulated cluster may go (a sweep's
        # recorders stay until every run is done).
        self._sim = None

    def _report_progress(self, sim: Simulation, t: float) -> None:
        if self.progress is None:
            return
        if not self._horizon_scanned:
            self._horizon_scanned = True
            # What the timeline holds when the run starts (arrivals); completions extend it as
            # pods are bound (see _on_bind).
            latest = max((entry[0] for entry in getattr(sim, "_timeline", ())), default=self._start)
            self._horizon = max(self._horizon, latest - self._start, t, 1e-9)
        self._horizon = max(self._horizon, t)
        self.progress(t, self._horizon, self._bound_total)

    # -- informer events -------------------------------------------------------------------------
    def _drain(self, sim: Simulation, t: float) -> None:
        changes, self._changes = self._changes, []
        for event in changes:
            kind = event.kind
            if kind == "Event":
                self._on_event(event)
                continue
            self._changed = True
            if kind == "Pod":
                self._on_pod(sim, event, t)
            elif kind == "Node":
                self._node_generation += 1
            elif kind == "Queue":
                self._on_queue(event)

    def _on_event(self, event: WatchEvent) -> None:
        obj = event.obj
        if event.type != EventType.ADDED or obj.get("reason") != "FailedScheduling":
            return
        note = str(obj.get("note") or "")
        self.reasons.update(dict.fromkeys(parse_reasons(note), 1))
        uid = str((obj.get("regarding") or {}).get("uid") or "")
        rec = self.pods.get(uid)
        if rec is not None:
            rec.failures += 1
            rec.last_failure = note

    def _on_queue(self, event: WatchEvent) -> None:
        name = str((event.obj.get("metadata") or {}).get("name"))
        if event.type == EventType.DELETED:
            self._queue_objects.pop(name, None)
            return
        try:
            self._queue_objects[name] = Queue.from_dict(event.obj)
        except InputError:
            self._queue_objects.pop(name, None)

    def _on_pod(self, sim: Simulation, event: WatchEvent, t: float) -> None:
        obj = event.obj
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid"))
        node = (obj.get("spec") or {}).get("nodeName")
        rec = self.pods.get(uid)
        if rec is None:
            if event.type == EventType.DELETED:
                return
            rec = self._new_record(sim, obj, t)
            self.pods[uid] = rec
            for name, amount in rec.requests.items():
                if amount > 0 and is_gpu_resource(name):
                    self._arrived_gpu[name] += amount
            if node:
                rec.preexisting = True
                rec.bound = t
                rec.node = str(node)
                self._running += 1
                self._queue_add(rec, running=True)
            else:
                self._pending_add(rec)
            return
        if event.type == EventType.DELETED:
            if rec.bound is None:
                rec.deleted = t
                self._pending_remove(rec)
            elif rec.finished is None:
                rec.finished = t
                self._running -= 1
                self._queue_remove(rec, running=True)
                if rec.duration is not None and t - rec.bound >= rec.duration - _COMPLETION_SLACK:
                    rec.completed = True
                    self._completed += 1
                else:
                    rec.evicted = True
                    self._evicted += 1
            return
        if node and rec.bound is None:
            rec.bound = t
            rec.node = str(node)
            self._pending_remove(rec)
            self._running += 1
            self._bound_total += 1
            self._queue_add(rec, running=True)
            if rec.duration is not None:
                self._horizon = max(self._horizon, t + rec.duration)

    def _new_record(self, sim: Simulation, obj: Mapping[str, Any], t: float) -> PodRecord:
        meta = obj.get("metadata") or {}
        namespace = str(meta.get("namespace") or "default")
        try:
            requests = pod_requests(obj.get("spec") or {})[0]
        except InputError:
            requests = {}
        annotations = meta.get("annotations") or {}
        duration: float | None = None
        raw_duration = annotations.get(ANNOTATION_DURATION)
        if raw_duration is not None:
            try:
                duration = parse_duration(raw_duration)
            except InputError:
                duration = None
        group: str | None = None
        queue: str | None = None
        member = group_name_of(obj)
        if member is not None:
            api_group, group_name = member
            group = f"{namespace}/{group_name}"
            if api_group == SCHEDULING_VOLCANO:
                pg = sim.store.get("PodGroup", namespace, group_name)
                if pg is not None:
                    queue = str((pg.get("spec") or {}).get("queue") or DEFAULT_QUEUE)
        if queue is None:
            named = annotations.get(ANNOTATION_QUEUE)
            if isinstance(named, str) and named:
                queue = named
        return PodRecord(
            uid=str(meta.get("uid")),
            namespace=namespace,
            name=str(meta.get("name")),
            arrival=t,
            requests=requests,
            duration=duration,
            group=group,
            queue=queue,
        )

    def _pending_add(self, rec: PodRecord) -> None:
        self._pending += 1
        for name, amount in rec.requests.items():
            if amount > 0 and is_gpu_resource(name):
                self._pending_gpu.setdefault(name, Counter())[amount] += 1
        self._queue_add(rec, running=False)

    def _pending_remove(self, rec: PodRecord) -> None:
        self._pending -= 1
        for name, amount in rec.requests.items():
            if amount > 0 and is_gpu_resource(name):
                counts = self._pending_gpu[name]
                counts[amount] -= 1
                if counts[amount] <= 0:
                    del counts[amount]
        self._queue_remove(rec, running=False)

    def _queue_add(self, rec: PodRecord, *, running: bool) -> None:
        if rec.queue is None:
            return
        state = self._queues.setdefault(rec.queue, _QueueState())
        if running:
            state.allocated.update(rec.requests)
            state.running += 1
        else:
            state.pending.update(rec.requests)
            state.waiting += 1

    def _queue_remove(self, rec: PodRecord, *, running: bool) -> None:
        if rec.queue is None:
            return
        state = self._queues[rec.queue]
        if running:
            state.allocated.subtract(rec.requests)
            state.running -= 1
        else:
            state.pending.subtract(rec.requests)
            state.waiting -= 1

    # -- samples ---------------------------------------------------------------------------------
    def _row(self, sim: Simulation) -> dict[str, float]:
        if not self._changed and self._last_row is not None:
            return self._last_row
        sched = sim.scheduler
        # The snapshot the next scheduling cycle would take anyway: bring it up to date now.
        sched.cache.update_snapshot(sched.snapshot)
        table = sched.snapshot.table
        nodes = self._node_state(table)
        # Rows of absent nodes are all zeros, so whole-column sums need no mask. One product gives
        # the cluster-wide sums (first row of ``weights``) and the per-pool ones (the other rows).
        req = table.requested
        cols = nodes.ratio_cols
        sums = nodes.weights @ req[:, cols].astype(np.float64)

        row: dict[str, float] = {
            "pending": float(self._pending),
            "running": float(self._running),
            "completed": float(self._completed),
            "evicted": float(self._evicted),
            "nodes": float(nodes.count),
        }
        if cols:
            ratios = (sums[0] / nodes.total_alloc[cols]).tolist()
            row.update(zip(nodes.ratio_names, ratios, strict=True))
        if nodes.pool_cells:
            cells = (sums[1:] / nodes.pool_alloc)[nodes.pool_mask].tolist()
            row.update(zip(nodes.pool_cells, cells, strict=True))
        for c, name, frag_name, ratio_name in nodes.gpu_cols:
            row[f"arrived.{name}"] = self._arrived_gpu[name] / float(nodes.total_alloc[c])
            free = nodes.gpu_alloc[c] - req[:, c]
            smallest = min(self._pending_gpu.get(name) or (), default=None)
            has_free = free > 0
            free_total = float(free[has_free].sum())
            frag = 0.0 if smallest is None else float(free[has_free & (free < smallest)].sum())
            row[frag_name] = frag
            row[ratio_name] = frag / free_total if free_total > 0 else 0.0
        if self._queues:
            self._queue_rows([table.resource_names[c] for c in cols], nodes.total_alloc[cols], row)
        self._changed = False
        self._last_row = row
        return row

    def _node_state(self, table: NodeTable) -> _NodeState:
        """What depends only on the nodes (capacities, pools): rebuilt when nodes change."""
        key = (self._node_generation, table.num_resources, table.capacity)
        if self._nodes is not None and self._nodes_key == key:
            return self._nodes
        valid = table.valid
        alloc = table.allocatable
        names = table.resource_names
        total_alloc = alloc.sum(axis=0)
        cols = [c for c, n in enumerate(names) if n not in SKIPPED_RESOURCES and total_alloc[c] > 0]
        state = _NodeState(
            count=int(valid.sum()),
            weights=np.ones((1, table.capacity)),
            total_alloc=total_alloc,
            ratio_cols=cols,
            ratio_names=[f"alloc.{names[c]}" for c in cols],
            gpu_cols=[
                (c, n, f"gpu_frag.{n}", f"gpu_frag_ratio.{n}")
                for c, n in enumerate(names)
                if is_gpu_resource(n) and total_alloc[c] > 0
            ],
        )
        state.gpu_alloc = {c: alloc[:, c].copy() for c, *_ in state.gpu_cols}
        if not self._pool_label_fixed and self.pool_label is None:
            for label in POOL_LABELS:
                column = table.labels.get(label)
                if column is not None and bool((column.codes[valid] >= 0).any()):
                    self.pool_label = label
                    break
        column = table.labels.get(self.pool_label) if self.pool_label is not None else None
        if column is not None and cols:
            pool_of = np.where(valid, column.codes.astype(np.int64) + 1, -1)  # 0: no label
            n_pools = len(column.values) + 1
            onehot = (pool_of[np.newaxis, :] == np.arange(n_pools)[:, np.newaxis]).astype(np.float64)
            pool_alloc = onehot @ alloc[:, cols].astype(np.float64)
            present = onehot.sum(axis=1) > 0
            mask = present[:, np.newaxis] & (pool_alloc > 0)
            pools = [NO_POOL, *column.values]
            state.weights = np.vstack([state.weights, onehot])
            state.pool_alloc = np.where(mask, pool_alloc, 1.0)
            state.pool_mask = mask
            state.pool_cells = [
                f"alloc.{names[cols[j]]}[{pools[p]}]" for p, j in zip(*np.nonzero(mask), strict=True)
            ]
        self._nodes = state
        self._nodes_key = key
        return state

    def _queue_rows(self, names: list[str], totals: NDArray[np.int64], row: dict[str, float]) -> None:
        """Each queue's dominant share of the cluster, the share it deserves, and Volcano's queue
        share (allocated / deserved, largest over resources).

        Deserved is what Volcano's proportion plugin would hand out at this instant: its
        water-filling over the queues that have pods, from their weights, guarantees and
        capabilities and the requests of their pods (running plus waiting).
        """
        if not names:
            return
        space = ResourceSpace(tuple(names))

        def vector(resources: Mapping[str, float]) -> FloatArray:
            return space.from_dict({k: v for k, v in resources.items() if k in space.names})

        total = totals.astype(np.float64)
        allocated = {name: vector(state.allocated) for name, state in self._queues.items()}
        demands: list[QueueDemand] = []
        for name, state in self._queues.items():
            if state.running <= 0 and state.waiting <= 0:
                continue
            qobj = self._queue_objects.get(name)
            demands.append(
                QueueDemand(
                    name=name,
                    weight=qobj.weight if qobj is not None else 1,
                    request=allocated[name] + vector(state.pending),
                    allocated=allocated[name],
                    capability=capability_vector(space, qobj.capability) if qobj is not None else None,
                    guarantee=vector(qobj.guarantee) if qobj is not None else None,
                )
            )
        guarantees = [vector(q.guarantee) for q in self._queue_objects.values()]
        total_guarantee = np.sum(guarantees, axis=0) if guarantees else space.zeros()
        deserved = proportion_deserved(total, demands, total_guarantee=total_guarantee)
        safe_total = np.where(total > 0, total, np.inf)
        zero = space.zeros()
        for name in self._queues:
            got = allocated[name]
            want = deserved.get(name, zero)
            row[f"queue.allocated[{name}]"] = float(np.max(got / safe_total))
            row[f"queue.deserved[{name}]"] = float(np.max(want / safe_total))
            row[f"queue.share[{name}]"] = queue_share(want, got)

    # -- results ---------------------------------------------------------------------------------
    def scheduled_records(self) -> list[PodRecord]:
        return [r for r in self.pods.values() if not r.preexisting and r.bound is not None]

    def latencies(self) -> FloatArray:
        return np.fromiter(
            (r.bound - r.arrival for r in self.pods.values() if not r.preexisting and r.bound is not None),
            dtype=np.float64,
        )

    def job_completion_times(self) -> FloatArray:
        """Arrival of a job's first pod to completion of its last, for jobs whose every pod completed.

        A job is a PodGroup (all pods naming it) or, for a pod without a group, the pod itself.
        """
        jobs: dict[str, _Job] = {}
        for r in self.pods.values():
            if r.preexisting:
                continue
            key = f"group:{r.group}" if r.group is not None else f"pod:{r.uid}"
            job = jobs.get(key)
            if job is None:
                job = _Job(first_arrival=r.arrival)
                jobs[key] = job
            job.first_arrival = min(job.first_arrival, r.arrival)
            job.members += 1
            if r.completed and r.finished is not None:
                job.completed += 1
                job.last_finish = max(job.last_finish, r.finished)
        return np.fromiter(
            (j.last_finish - j.first_arrival for j in jobs.values() if j.completed == j.members),
            dtype=np.float64,
        )

    def makespan(self) -> float | None:
        """First arrival to the last completion (or, for pods that never finish, the last bind)."""
        records = [r for r in self.pods.values() if not r.preexisting]
        bound = [r for r in records if r.bound is not None]
        if not bound:
            return None
        first = min(r.arrival for r in records)
        ends = [r.finished if r.completed and r.finished is not None else r.bound for r in bound]
        return max(e for e in ends if e is not None) - first

    def final_reasons(self) -> Counter[str]:
        """Reason phrases of the last failure of each pod still waiting at the end (once per pod)."""
        out: Counter[str] = Counter()
        for r in self.pods.values():
            if r.bound is None and r.deleted is None and r.last_failure:
                out.update(dict.fromkeys(parse_reasons(r.last_failure), 1))
        return out

    def resources(self) -> list[str]:
        """Resources with a cluster-wide allocation series, in column order."""
        return [name[len("alloc.") :] for name in self.series.names("alloc.") if not name.endswith("]")]

    def summary(self) -> dict[str, Any]:
        """Headline numbers of the run (see docs/reports.md for each definition)."""
        records = [r for r in self.pods.values() if not r.preexisting]
        lat = percentiles(self.latencies())
        jct_values = self.job_completion_times()
        jct = percentiles(jct_values)
        times = self.series.array("time")
        end = self.end_time
        out: dict[str, Any] = {
            "pods": len(records),
            "scheduled": sum(1 for r in records if r.bound is not None),
            "neverScheduled": sum(1 for r in records if r.bound is None and r.deleted is None),
            "completed": sum(1 for r in records if r.completed),
            "evicted": sum(1 for r in records if r.evicted),
            "virtualSeconds": end,
            "makespan": self.makespan(),
            "latencyP50": lat["p50"],
            "latencyP90": lat["p90"],
            "latencyP99": lat["p99"],
            "latencyMean": float(self.latencies().mean()) if self.latencies().size else None,
            "jobsCompleted": int(jct_values.size),
            "jctP50": jct["p50"],
            "jctP90": jct["p90"],
            "jctP99": jct["p99"],
            "pendingMax": float(np.nanmax(self.series.array("pending"))) if len(self.series) else 0.0,
            "pendingMean": time_weighted_mean(times, self.series.array("pending"), end),
        }
        for res in self.resources():
            out[f"allocMean.{res}"] = time_weighted_mean(times, self.series.array(f"alloc.{res}"), end)
        for name in self.series.names("gpu_frag."):
            res = name[len("gpu_frag.") :]
            out[f"gpuFragMean.{res}"] = time_weighted_mean(times, self.series.array(name), end)
        top = self.reasons.most_common(1)
        out["topReason"] = top[0][0] if top else None
        return out

    def pod_rows(self) -> Iterable[dict[str, Any]]:
        """One row per pod of the workload (input pods that were already bound are left out)."""
        resources = sorted({name for r in self.pods.values() for name in r.requests})
        for r in self.pods.values():
            if r.preexisting:
                continue
            row: dict[str, Any] = {
                "namespace": r.namespace,
                "name": r.name,
                "arrival": r.arrival,
                "bound": r.bound,
                "node": r.node,
                "finished": r.finished,
                "completed": r.completed,
                "evicted": r.evicted,
                "deleted": r.deleted,
                "latency": r.latency,
                "duration": r.duration,
                "group": r.group,
                "queue": r.queue,
                "failures": r.failures,
                "lastFailure": r.last_failure,
            }
            for name in resources:
                row[f"request.{name}"] = r.requests.get(name, 0)
            yield row
