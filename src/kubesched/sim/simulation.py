"""The embedded simulation: manifests → in-memory cluster → scheduler, on virtual time.

One embedded store, one set of shared informers over it, one scheduler cache fed from them and one
set of store ports serve both schedulers, the simulation's own bookkeeping (pod lifetimes,
evictions) and the metrics recorder.
The :class:`~kubesched.runtime.driver.VirtualClockDriver` runs the loop, as the real scheduler's
goroutines would interleave: pump the informers, flush the backoff queue, run one scheduling cycle.
When the active queue is empty the virtual clock jumps to the next timer. It stops when no pod can
be tried again without a new cluster event: active and backoff queues are empty (pods left in
unschedulablePods would only be retried to the same result).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import random
from dataclasses import dataclass, field
from typing import Any

from kubesched.api.annotations import ANNOTATION_ARRIVAL, ANNOTATION_DURATION
from kubesched.api.durations import parse_duration
from kubesched.api.manifests import LOAD_ORDER, LoadResult
from kubesched.api.objects import Node, Pod
from kubesched.batch.conf import BATCH_SCHEDULER_NAME, BatchConf
from kubesched.batch.scheduler import BatchScheduler, JobReport, QueueReport
from kubesched.controllers.dradriver import DraDriverOptions, SimulatedDraDriver
from kubesched.controllers.kubelet_admission import BOUND, FAILED, admission_check, rejected
from kubesched.controllers.persistentvolume import PersistentVolumeController
from kubesched.controllers.provisioner import Provisioner
from kubesched.controllers.resourceclaim import ResourceClaimController
from kubesched.controllers.statefulset import create_missing_claims, ordinal_of
from kubesched.errors import InputError
from kubesched.framework.config import SchedulerConfig
from kubesched.framework.outcome import PENDING, PodOutcome
from kubesched.framework.registry import Registry
from kubesched.registry.admission import admit
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.runtime.driver import VirtualClockDriver
from kubesched.sim.clock import SimulatedClock
from kubesched.sim.metrics import MetricsRecorder
from kubesched.store.base import EventType
from kubesched.store.informers import Change
from kubesched.store.memory import MemoryStore

log = logging.getLogger(__name__)

#: Output status of a pod deleted by an eviction (preemption, reclaim).
EVICTED = "Evicted"

#: Safety net: virtual seconds after which a run that keeps retrying (errors) is stopped.
DEFAULT_HORIZON = 3600.0


@dataclass(slots=True)
class SimulationResult:
    outcomes: list[PodOutcome]
    cycles: int
    virtual_seconds: float
    evicted: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    #: Batch (Volcano) profile: per-queue and per-PodGroup outcomes; empty without batch objects.
    queues: list[QueueReport] = field(default_factory=list)
    pod_groups: list[JobReport] = field(default_factory=list)

    @property
    def scheduled(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "Scheduled")

    @property
    def unschedulable(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "Unschedulable")

    @property
    def pending(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "Pending")

    @property
    def no_profile(self) -> int:
        """Pods left alone because no profile serves their ``spec.schedulerName``."""
        return sum(1 for o in self.outcomes if o.no_profile)


class Simulation:
    def __init__(
        self,
        config: SchedulerConfig | None = None,
        registry: Registry | None = None,
        *,
        seed: int | None = 0,
        explain: bool = False,
        metrics: MetricsRecorder | None = None,
        batch_conf: BatchConf | None = None,
        schedule_period: float | None = None,
        volume_controllers: bool = True,
        dra_driver: DraDriverOptions | None = None,
    ) -> None:
        self.clock = SimulatedClock()
        self.store = MemoryStore(now=self.clock.now, uid_seed=0)
        self.cluster = Cluster(
            self.store,
            ClusterOptions(
                config=config,
                registry=registry,
                now=self.clock.now,
                seed=seed,
                explain=explain,
                batch_conf=batch_conf,
                schedule_period=schedule_period,
                # Finished and evicted pods are reported with what happened to them.
                keep_deleted=True,
            ),
        )
        self.informers = self.cluster.informers
        self.scheduler = self.cluster.scheduler
        self.driver = VirtualClockDriver(self.informers, self.scheduler, self.clock, self)
        self.warnings: list[str] = []
        self.cycles = 0
        # Timed cluster changes: (virtual time, sequence, action, object). Arrivals create pods,
        # completions delete them, like a workload's pods coming and finishing.
        self._timeline: list[tuple[float, int, str, dict[str, Any]]] = []
        self._timeline_seq = itertools.count()
        self.informers.informer("Pod").add_handler(self._on_pod, replay=False)
        # The cluster's half of volume binding: kube-controller-manager's PersistentVolume
        # controller and an external provisioner. They work inside the informers' handlers, so a
        # scheduler waiting in PreBind (which pumps the informers) sees its claims bound.
        #: Claims created from the input: the uid the input gave → the uid they got.
        self._claim_uids: dict[str, str] = {}
        self.volume_controller: PersistentVolumeController | None = None
        self.provisioner: Provisioner | None = None
        if volume_controllers:
            self.volume_controller = PersistentVolumeController(self.store, self.informers, synchronous=True)
            self.provisioner = Provisioner(self.store, self.informers, synchronous=True)
        # The cluster's half of DRA: kube-controller-manager's resourceclaim controller (claims
        # from templates, released and removed with their pods) and, when asked for, a driver
        # publishing the GPU nodes' ResourceSlices.
        self.claim_controller = ResourceClaimController(
            self.store, self.informers, synchronous=True, rng=random.Random(seed)
        )
        self.dra_driver: SimulatedDraDriver | None = None
        if dra_driver is not None:
            self.dra_driver = SimulatedDraDriver(self.store, self.informers, dra_driver, synchronous=True)
        self.completed: list[PodOutcome] = []
        #: Pods bound in the input (``spec.nodeName``), by uid: what their kubelet made of them.
        self.pinned: dict[str, PodOutcome] = {}
        #: Outcomes of evicted pods (they are deleted, but stay in the output as Evicted).
        self.evicted_outcomes: list[PodOutcome] = []
        # The batch (Volcano) scheduler: made now when a conf is given, else on the first batch
        # object loaded (with Volcano's default conf). A session runs every schedulePeriod (of
        # virtual time; Volcano's --schedule-period, 1s by default) while batch pods wait.
        self.batch: BatchScheduler | None = None
        self._batch_next = 0.0
        if batch_conf is not None:
            self._start_batch()
        #: "namespace/name" of every pod evicted (deleted with a DisruptionTarget condition).
        self.evicted: list[str] = []
        # Samples the run on the virtual clock (kubesched.sim.metrics); subscribes before load.
        self.metrics = metrics
        if metrics is not None:
            metrics.attach(self)

    def load(self, loaded: LoadResult) -> None:
        """Create every loaded object in the store, as ``kubectl apply`` would."""
        self.warnings.extend(loaded.warnings)
        by_kind: dict[str, list[Any]] = {k: [] for k in LOAD_ORDER}
        for mo in loaded.objects:
            by_kind.setdefault(mo.kind, []).append(mo)
        start = self.clock.now()
        for kind in [*LOAD_ORDER, *(k for k in by_kind if k not in LOAD_ORDER)]:
            for mo in by_kind.get(kind, []):
                try:
                    arrival = _annotation_seconds(mo.obj, ANNOTATION_ARRIVAL) if kind == "Pod" else None
                    _annotation_seconds(mo.obj, ANNOTATION_DURATION)  # validate now, used at bind
                    if arrival:
                        self._schedule_at(start + arrival, "arrive", mo.obj)
                    else:
                        self._create(mo.obj)
                except InputError as exc:
                    raise exc.located(file=mo.source, document=mo.document, obj=mo.ref) from None
        self._relink_claim_refs()
        if self.batch is None and any(_is_batch_object(mo.kind, mo.obj) for mo in loaded.objects):
            self._start_batch()

    def _relink_claim_refs(self) -> None:
        """A volume bound in the input names its claim's uid there; the claim got a new one here.
        The reference follows it, so that a cluster's dump reads bound, not as a volume whose claim
        was deleted and replaced (which the PersistentVolume controller would release)."""
        if not self._claim_uids:
            return
        for pv in self.store.list("PersistentVolume"):
            ref = (pv.get("spec") or {}).get("claimRef")
            if not isinstance(ref, dict):
                continue
            uid = self._claim_uids.get(str(ref.get("uid") or ""))
            if uid is None:
                continue
            claim = self.store.get(
                "PersistentVolumeClaim", str(ref.get("namespace") or "default"), str(ref.get("name"))
            )
            if claim is None or claim["metadata"]["uid"] != uid:
                continue
            self.store.update({**pv, "spec": {**pv["spec"], "claimRef": {**ref, "uid": uid}}})
        self._claim_uids.clear()

    def _create(self, obj: dict[str, Any]) -> None:
        """Create one object; a pod bound in the input is first admitted by its node's kubelet."""
        if obj.get("kind") == "Pod":
            self._create_template_claims(obj)
        spec = obj.get("spec") or {}
        node_name = spec.get("nodeName") if obj.get("kind") == "Pod" else None
        phase = (obj.get("status") or {}).get("phase")
        if not node_name or phase in ("Succeeded", "Failed"):
            given_uid = (obj.get("metadata") or {}).get("uid")
            obj = dict(obj)
            admit(self.store, obj)
            created = self.store.create(obj)
            if obj.get("kind") == "PersistentVolumeClaim" and isinstance(given_uid, str) and given_uid:
                self._claim_uids[given_uid] = str(created["metadata"]["uid"])
            if node_name:
                # A finished pod is reported with its phase; like the kubelet and the scheduler's
                # cache, nothing counts it on its node.
                meta = created.get("metadata") or {}
                done = PodOutcome(
                    str(meta.get("namespace") or "default"),
                    str(meta.get("name")),
                    str(meta.get("uid")),
                    node=str(node_name),
                    status=str(phase),
                )
                done.scheduler_name = str(spec.get("schedulerName") or "default-scheduler")
                done.message = f"bound in the input (spec.nodeName) and {phase}: holds nothing on its node"
                self.pinned[done.uid] = done
            return
        pod = Pod.from_dict({**obj, "metadata": {**(obj.get("metadata") or {}), "uid": ""}})
        node_obj = self.store.get("Node", None, str(node_name))
        outcome = PodOutcome(pod.namespace, pod.name, "", node=str(node_name), status=BOUND)
        outcome.scheduler_name = pod.scheduler_name
        outcome.message = "bound in the input (spec.nodeName)"
        if node_obj is None:
            outcome.node = None
            outcome.status = PENDING
            outcome.message = (
                f"spec.nodeName names node {node_name!r}, which does not exist: no kubelet runs the pod"
            )
            self.warnings.append(f"pod {pod.key}: {outcome.message}")
        else:
            others = [
                Pod.from_dict(o)
                for o in self.store.list("Pod")
                if (o.get("spec") or {}).get("nodeName") == node_name
            ]
            rejection = admission_check(pod, Node.from_dict(node_obj), others)
            if rejection is not None:
                obj = rejected(obj, rejection)
                outcome.status = FAILED
                outcome.message = f"{rejection.reason}: {rejection.message}"
                self.warnings.append(
                    f"pod {pod.key} names node {node_name!r} in spec.nodeName, and its kubelet rejects it: "
                    f"{outcome.message}"
                )
        obj = dict(obj)
        admit(self.store, obj)
        created = self.store.create(obj)
        outcome.uid = str(created["metadata"]["uid"])
        self.pinned[outcome.uid] = outcome

    def _create_template_claims(self, pod: dict[str, Any]) -> None:
        """A StatefulSet's pod given in the input gets the claims of the set's volume claim
        templates that its volumes name and that do not exist yet, as the StatefulSet controller
        makes them before the pod."""
        meta = pod.get("metadata") or {}
        refs = meta.get("ownerReferences")
        volumes = (pod.get("spec") or {}).get("volumes")
        if not refs or not volumes or not isinstance(refs, list) or not isinstance(volumes, list):
            return
        owner = next(
            (
                r
                for r in refs
                if isinstance(r, dict) and r.get("kind") == "StatefulSet" and r.get("controller")
            ),
            None,
        )
        if owner is None:
            return
        namespace = meta.get("namespace") or "default"
        sts = self.store.get("StatefulSet", namespace, str(owner.get("name")))
        if sts is None:
            return
        ordinal = ordinal_of(str(owner.get("name")), str(meta.get("name")))
        if ordinal < 0:
            return
        named = {
            str((v.get("persistentVolumeClaim") or {}).get("claimName"))
            for v in volumes
            if isinstance(v, dict) and isinstance(v.get("persistentVolumeClaim"), dict)
        }
        for error in create_missing_claims(
            self.store, sts, ordinal, str(meta.get("name")), self._create, only=named
        ):
            self.warnings.append(f"pod {namespace}/{meta.get('name')}: {error}")

    def _known_outcome(self, uid: str) -> PodOutcome | None:
        outcome = self.scheduler.outcomes.get(uid)
        if outcome is None and self.batch is not None:
            outcome = self.batch.outcomes.get(uid)
        if outcome is None:
            outcome = self.pinned.get(uid)
        return outcome

    def _start_batch(self) -> BatchScheduler:
        if self.batch is None:
            self.batch = self.cluster.start_batch()
            self._batch_next = self.clock.now()
            self.warnings.extend(self.batch.warnings)
            self.batch.warnings = []
        return self.batch

    def _batch_session(self) -> bool:
        """Run a batch session if one is due; True if it ran."""
        batch = self.batch
        if batch is None:
            return False
        if not batch.wants_session or self.clock.now() < self._batch_next:
            return False
        batch.run_session()
        self.warnings.extend(batch.warnings)
        batch.warnings = []
        self._batch_next = self.clock.now() + batch.schedule_period
        return True

    def _schedule_at(self, when: float, action: str, obj: dict[str, Any]) -> None:
        heapq.heappush(self._timeline, (when, next(self._timeline_seq), action, obj))

    def complete_at(self, when: float, pod: dict[str, Any]) -> None:
        """Finish a bound pod at virtual time ``when`` (deleted, reported with its outcome), as its
        ``kubesched.io/duration`` annotation would: for workloads whose pods end together."""
        self._schedule_at(when, "complete", pod)

    def _on_pod(self, change: Change[Any]) -> None:
        """Evictions are recorded; a pod that just got a node and has a duration finishes that long
        after (virtual time)."""
        obj = change.obj
        if change.type == EventType.DELETED and _disrupted(obj):
            meta = obj.get("metadata") or {}
            namespace, name = meta.get("namespace") or "default", str(meta.get("name"))
            self.evicted.append(f"{namespace}/{name}")
            known = self._known_outcome(str(meta.get("uid")))
            outcome = PodOutcome(namespace, name, str(meta.get("uid")), status=EVICTED)
            outcome.node = (obj.get("spec") or {}).get("nodeName") or None
            outcome.scheduler_name = known.scheduler_name if known is not None else ""
            outcome.attempts = known.attempts if known is not None else 0
            outcome.message = _disruption_message(obj)
            self.evicted_outcomes.append(outcome)
        if change.type == EventType.DELETED or not (obj.get("spec") or {}).get("nodeName"):
            return
        if change.old is not None and (change.old.get("spec") or {}).get("nodeName"):
            return
        duration = _annotation_seconds(obj, ANNOTATION_DURATION)
        if duration is not None:
            self._schedule_at(self.clock.now() + duration, "complete", dict(obj))

    def apply_due(self) -> bool:
        """Apply every timeline entry that is due; True if any was."""
        applied = False
        while self._timeline and self._timeline[0][0] <= self.clock.now():
            _, _, action, obj = heapq.heappop(self._timeline)
            meta = obj.get("metadata") or {}
            if action == "arrive":
                self._create(obj)
            elif self.store.get("Pod", meta.get("namespace"), str(meta.get("name"))) is not None:
                self.store.delete("Pod", meta.get("namespace"), str(meta.get("name")))
                outcome = self._known_outcome(str(meta.get("uid")))
                if outcome is not None:
                    self.completed.append(outcome)
            applied = True
        return applied

    # -- the world around the scheduler, as the virtual-clock driver sees it ----------------------
    def next_change(self) -> float | None:
        return self._timeline[0][0] if self._timeline else None

    def batch_step(self) -> bool:
        return self._batch_session()

    def next_batch_session(self) -> float | None:
        if self.batch is not None and self.batch.wants_session:
            return max(self._batch_next, self.clock.now())
        return None

    def observe(self, until: float) -> None:
        if self.metrics is not None:
            self.metrics.observe(self, until=until)

    def run(self, horizon: float = DEFAULT_HORIZON) -> SimulationResult:
        run = self.driver.run(horizon)
        self.cycles += run.cycles
        if run.warning is not None:
            self.warnings.append(run.warning)
        if self.metrics is not None:
            self.metrics.finish(self)
        return SimulationResult(
            outcomes=self.outcomes(),
            cycles=self.cycles,
            virtual_seconds=self.clock.elapsed,
            evicted=list(self.evicted),
            warnings=list(self.warnings),
            queues=self.batch.queue_report_list() if self.batch is not None else [],
            pod_groups=self.batch.job_reports() if self.batch is not None else [],
        )

    def outcomes(self) -> list[PodOutcome]:
        """One outcome per pod that was pending at load: scheduled, unschedulable or never tried."""
        sched = self.scheduler
        out: list[PodOutcome] = [*self.completed, *self.evicted_outcomes]
        for obj in self.store.list("Pod"):
            uid = str(obj["metadata"]["uid"])
            outcome = self._known_outcome(uid)
            if outcome is None:
                if (obj.get("spec") or {}).get("nodeName"):
                    continue  # created bound in the store directly, not loaded: nothing to report
                pod = Pod.from_dict(obj)
                outcome = PodOutcome(pod.namespace, pod.name, uid, scheduler_name=pod.scheduler_name)
                outcome.status = PENDING
                batch_pod = self.batch is not None and self.batch.responsible_for(pod)
                if pod.terminated:
                    # Schedulers do not watch finished pods (upstream's field selector drops them).
                    outcome.status = pod.phase
                    outcome.message = f"pod phase is {pod.phase}: not scheduled"
                elif (obj.get("metadata") or {}).get("deletionTimestamp"):
                    outcome.message = "being deleted (metadata.deletionTimestamp set): not scheduled"
                elif not sched.responsible_for(pod) and not batch_pod:
                    outcome.no_profile = True
                    outcome.message = f"no scheduler profile named {pod.scheduler_name!r}"
            if outcome.status == PENDING:
                # A gated pod's reason is the gate's latest word (a claim may have come meanwhile).
                info = sched.queue.unschedulable_info(uid)
                if info is not None and info.gated_by == "SchedulingGates":
                    gates = " ".join(info.pod.scheduling_gates)
                    outcome.message = f"waiting for scheduling gates: [{gates}]"
                elif info is not None and info.gated_by:
                    outcome.message = info.gated_message
                elif self.batch is not None and self.batch.outcomes.get(uid) is outcome:
                    gated = [g.get("name") for g in (obj.get("spec") or {}).get("schedulingGates") or []]
                    if gated:
                        # Volcano skips gated tasks and leaves the API server's condition alone.
                        outcome.message = f"waiting for scheduling gates: [{' '.join(map(str, gated))}]"
            if sched.explain is not None:
                outcome.explain = sched.explain.get(uid)
            out.append(outcome)
        out.sort(key=lambda o: (o.namespace, o.name))
        return out


def _is_batch_object(kind: str, obj: Any) -> bool:
    """A PodGroup, a Queue, or a pod for the batch scheduler: the batch profile is needed."""
    if kind in ("PodGroup", "Queue"):
        return True
    return kind == "Pod" and ((obj.get("spec") or {}).get("schedulerName") == BATCH_SCHEDULER_NAME)


def _disruption_message(obj: Any) -> str:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "DisruptionTarget" and cond.get("message"):
            return f"evicted: {cond['message']}"
    return "evicted"


def _disrupted(obj: Any) -> bool:
    """Was the pod deleted as an eviction (preemption, reclaim)? Evictors mark it first with a
    ``DisruptionTarget`` condition, as upstream does."""
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == "DisruptionTarget" and cond.get("status") == "True":
            return True
    return False


def _annotation_seconds(obj: Any, key: str) -> float | None:
    """A duration annotation (``90s``, ``2h``, plain seconds) in seconds, or None when absent."""
    annotations = ((obj.get("metadata") or {}).get("annotations")) or {}
    value = annotations.get(key)
    if value is None:
        return None
    try:
        return parse_duration(value)
    except InputError as exc:
        raise InputError(exc.message, field=f"metadata.annotations.{key}") from None
