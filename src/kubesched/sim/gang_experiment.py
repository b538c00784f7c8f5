"""One gang workload through three schedulers on the same nodes (``kubesched experiment gangs``).

Arms:

* ``default``: the kube-scheduler's default profile, every pod on its own (no gangs), as a cluster
  without any gang support schedules a distributed job's workers;
* ``workload-gang``: the kube-scheduler with ``GenericWorkload`` and ``GangScheduling`` on, each job
  a ``scheduling.k8s.io`` PodGroup with a gang policy of ``minCount`` = its workers, and its pods
  naming it in ``spec.schedulingGroup`` (v1.36's workload-aware scheduling);
* ``workload-gang-zone`` (not run by default): as ``workload-gang`` with
  ``TopologyAwareWorkloadScheduling`` on too, and a ``topology`` constraint on the zone label for
  every job that fits in one zone (a larger one could never be placed);
* ``volcano``: the batch pipeline with Volcano's default conf (gang, proportion, …), each job a
  Volcano PodGroup of ``minMember`` = its workers in its queue, pods for ``schedulerName: volcano``.

A job is a distributed training run: it makes progress only once all its workers run. So a job
starts when its last pod is bound, and all its pods finish ``duration`` after that; pods bound
before then hold their GPUs idle (a *partial placement*). The recorder follows every bind and
delete and keeps the cluster's state as a step function of virtual time, from which the
utilisation and the partial placements held are exact time averages.
"""

from __future__ import annotations

import math
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

from kubesched.api.annotations import ANNOTATION_ARRIVAL, ANNOTATION_GROUP, VOLCANO_API
from kubesched.api.durations import format_duration
from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND
from kubesched.batch.conf import BATCH_SCHEDULER_NAME, BatchConf
from kubesched.batch.conf_loader import default_batch_conf
from kubesched.errors import InputError
from kubesched.framework.config import config_from_dict
from kubesched.plugins import default_registry
from kubesched.sim.simulation import Simulation
from kubesched.sim.traces.philly import load_philly
from kubesched.store.base import EventType
from kubesched.store.informers import Change

__all__ = [
    "ARMS",
    "DEFAULT_ARMS",
    "ArmResult",
    "ClusterShape",
    "GangCluster",
    "Job",
    "JobResult",
    "llm_mix",
    "philly_jobs",
    "run_arm",
    "summary_rows",
]

GPU: Final = "nvidia.com/gpu"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
RACK_LABEL: Final = "kubesched.io/rack"
JOB_LABEL: Final = "kubesched.io/job"
NAMESPACE: Final = "default"
#: Arm name → what it is, for tables and plots.
ARMS: Final = {
    "default": "default profile, no gangs",
    "workload-gang": "Workload API gang (GangScheduling)",
    "volcano": "Volcano gang + proportion",
    "workload-gang-zone": "Workload API gang, held to one zone",
}
#: The arms run unless others are asked for: the comparison itself.
DEFAULT_ARMS: Final = ("default", "workload-gang", "volcano")
WORKLOAD_GATES: Final = {"GenericWorkload": True, "GangScheduling": True}
TOPOLOGY_GATES: Final = {**WORKLOAD_GATES, "TopologyAwareWorkloadScheduling": True}


@dataclass(frozen=True)
class Job:
    """A distributed job: one pod per worker (``workers`` holds each one's GPUs)."""

    name: str
    arrival: float
    duration: float
    workers: tuple[int, ...]
    queue: str = "default"

    @property
    def gpus(self) -> int:
        return sum(self.workers)


class ClusterShape(Protocol):
    """What an arm needs of a cluster: its GPUs and its Node objects, whose ``kubesched.io/rack`` and
    ``topology.kubernetes.io/zone`` labels are the domains a job's spread is counted in."""

    @property
    def gpus(self) -> int: ...

    def node_objects(self) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class GangCluster:
    """``nodes`` GPU nodes of ``gpus_per_node`` GPUs, ``nodes_per_rack`` to a rack label and
    ``racks_per_zone`` racks to a zone."""

    nodes: int = 32
    gpus_per_node: int = 8
    nodes_per_rack: int = 4
    racks_per_zone: int = 4

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    def node_objects(self) -> list[dict[str, Any]]:
        out = []
        for i in range(self.nodes):
            rack = i // self.nodes_per_rack
            alloc = {
                "cpu": str(8 * self.gpus_per_node),
                "memory": f"{64 * self.gpus_per_node}Gi",
                "pods": "110",
                GPU: str(self.gpus_per_node),
            }
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": f"gpu-{i:04d}",
                        "labels": {
                            "kubernetes.io/hostname": f"gpu-{i:04d}",
                            RACK_LABEL: f"rack-{rack:03d}",
                            ZONE_LABEL: f"zone-{rack // self.racks_per_zone}",
                        },
                    },
                    "status": {"capacity": dict(alloc), "allocatable": alloc},
                }
            )
        return out


# -- workloads -----------------------------------------------------------------------------------


def philly_jobs(
    path: Path,
    *,
    jobs: int,
    skip: int = 0,
    time_scale: float = 60.0,
    max_gpus: int | None = None,
    speedup: float = 1.0,
) -> list[Job]:
    """Philly's multi-GPU jobs (two GPUs or more) in submission order: ``jobs`` of them after the
    first ``skip``, arrivals counted from the first one kept. Arrivals and durations are divided by
    ``time_scale`` alike (the offered load stays the same; fewer virtual seconds to simulate), and
    arrivals once more by ``speedup`` (a cluster ``speedup`` times larger gets as much load per GPU).
    Jobs asking for more than ``max_gpus`` (the cluster) are left out: no scheduler could start them."""
    workload = load_philly(path)
    by_group: dict[str, list[Any]] = {}
    for pod in workload.pods:
        if pod.group is not None:
            by_group.setdefault(pod.group, []).append(pod)
    out: list[Job] = []
    seen = 0
    for name, pods in by_group.items():  # in arrival order: the importer sorts by submission
        workers = tuple(int(p.requests.get(GPU, 0)) for p in pods)
        if sum(workers) < 2 or (max_gpus is not None and sum(workers) > max_gpus):
            continue
        seen += 1
        if seen <= skip:
            continue
        out.append(
            Job(name, pods[0].arrival, float(pods[0].duration or 0.0), workers, pods[0].queue or "default")
        )
        if len(out) >= jobs:
            break
    if not out:
        raise InputError("no multi-GPU job in the trace window", file=str(path))
    origin = out[0].arrival
    return [
        Job(
            j.name,
            (j.arrival - origin) / time_scale / speedup,
            max(1.0, j.duration / time_scale),
            j.workers,
            j.queue,
        )
        for j in out
    ]


def llm_mix(seed: int, *, scale: int = 1, cluster_gpus: int = 256, gpus_per_node: int = 8) -> list[Job]:
    """A synthetic LLM-training mix: ``4 * scale`` big gangs of 8 to 64 pods (two GPUs each; a 64-pod
    gang is half the default cluster) for 30 to 90 minutes, and ``80 * scale`` small jobs of one to
    four pods of 1, 2, 4 or 8 GPUs for 2 to 20 minutes, in two queues; Poisson arrivals, one every
    ``30 / scale`` s on average (the same load on a cluster ``scale`` times larger). A big gang
    never asks for more than half of ``cluster_gpus``. The same seed gives the same jobs."""
    most = max(1, min(64, cluster_gpus // 4))
    rnd = random.Random(seed)
    kinds = ["big"] * (4 * scale) + ["small"] * (80 * scale)
    rnd.shuffle(kinds)
    jobs: list[Job] = []
    now = 0.0
    for i, kind in enumerate(kinds):
        now += rnd.expovariate(scale / 30.0)
        if kind == "big":
            pods = rnd.randint(min(8, most), most)
            workers = tuple([2] * pods)
            duration = rnd.uniform(30, 90) * 60
            queue = "training"
        else:
            per_pod = rnd.choice([1, 2, 4, gpus_per_node])
            workers = tuple([per_pod] * rnd.randint(1, 4))
            duration = rnd.uniform(2, 20) * 60
            queue = "research"
        jobs.append(Job(f"llm-{i:04d}-{kind}", round(now, 3), round(duration, 3), workers, queue))
    return jobs


# -- arms ----------------------------------------------------------------------------------------


def _pod(job: Job, index: int, arm: str) -> dict[str, Any]:
    gpus = job.workers[index]
    name = f"{job.name}-{index}"
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NAMESPACE,
        "labels": {JOB_LABEL: job.name},
        "annotations": {ANNOTATION_ARRIVAL: format_duration(job.arrival)},
    }
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "worker",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": str(4 * gpus), "memory": f"{32 * gpus}Gi", GPU: str(gpus)}},
            }
        ]
    }
    if arm in ("workload-gang", "workload-gang-zone"):
        spec["schedulingGroup"] = {"podGroupName": job.name}
    elif arm == "volcano":
        spec["schedulerName"] = BATCH_SCHEDULER_NAME
        meta["annotations"][ANNOTATION_GROUP] = job.name
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


#: A Volcano job's ``spec.networkTopology`` (None: the job has none).
NetworkTopology = Callable[[Job], dict[str, Any] | None]


def _manifests(
    cluster: ClusterShape,
    jobs: Sequence[Job],
    arm: str,
    extra: Sequence[dict[str, Any]] = (),
    network_topology: NetworkTopology | None = None,
) -> LoadResult:
    objs: list[tuple[str, dict[str, Any]]] = [("Node", n) for n in cluster.node_objects()]
    objs.extend((str(obj["kind"]), obj) for obj in extra)
    if arm == "volcano":
        for queue in dict.fromkeys(j.queue for j in jobs):
            objs.append(
                (
                    "Queue",
                    {
                        "apiVersion": VOLCANO_API,
                        "kind": "Queue",
                        "metadata": {"name": queue},
                        "spec": {"weight": 1},
                    },
                )
            )
    for job in jobs:
        if arm in ("workload-gang", "workload-gang-zone"):
            spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": len(job.workers)}}}
            if arm == "workload-gang-zone" and job.gpus <= _zone_gpus(cluster):
                spec["schedulingConstraints"] = {"topology": [{"key": ZONE_LABEL}]}
            group = {
                "apiVersion": "scheduling.k8s.io/v1alpha2",
                "kind": "PodGroup",
                "metadata": {"name": job.name, "namespace": NAMESPACE},
                "spec": spec,
            }
            objs.append((POD_GROUP_STORE_KIND, group))
        elif arm == "volcano":
            vspec: dict[str, Any] = {"minMember": len(job.workers), "queue": job.queue}
            topology = network_topology(job) if network_topology is not None else None
            if topology is not None:
                vspec["networkTopology"] = topology
            vgroup = {
                "apiVersion": VOLCANO_API,
                "kind": "PodGroup",
                "metadata": {"name": job.name, "namespace": NAMESPACE},
                "spec": vspec,
            }
            objs.append(("PodGroup", vgroup))
        objs.extend(("Pod", _pod(job, i, arm)) for i in range(len(job.workers)))
    return LoadResult(
        [ManifestObject(kind, obj, f"<experiment gangs: {arm}>", i) for i, (kind, obj) in enumerate(objs)]
    )


def _zone_gpus(cluster: ClusterShape) -> int:
    """GPUs of a full zone of a :class:`GangCluster`; of another cluster, its smallest zone (by the
    nodes' zone label)."""
    if isinstance(cluster, GangCluster):
        return cluster.gpus_per_node * cluster.nodes_per_rack * cluster.racks_per_zone
    per_zone: dict[str, int] = {}
    for node in cluster.node_objects():
        zone = str(node["metadata"]["labels"].get(ZONE_LABEL, ""))
        per_zone[zone] = per_zone.get(zone, 0) + int(node["status"]["allocatable"].get(GPU, 0))
    return min(per_zone.values(), default=0)


@dataclass
class JobResult:
    name: str
    arrival: float
    duration: float
    pods: int
    gpus: int
    start: float | None = None
    end: float | None = None
    #: Pods bound when the run ended (for a job that never started: its partial placement).
    bound_at_end: int = 0
    racks: int = 0
    zones: int = 0
    nodes: int = 0
    #: Where its pods were bound when it started, one node name per pod (in pod order).
    placement: tuple[str, ...] = ()

    @property
    def queueing_delay(self) -> float | None:
        return None if self.start is None else self.start - self.arrival

    @property
    def completion_time(self) -> float | None:
        return None if self.end is None else self.end - self.arrival

    @property
    def state(self) -> str:
        if self.end is not None:
            return "done"
        if self.start is not None:
            return "running"
        return "partial" if self.bound_at_end else "pending"


@dataclass
class ArmResult:
    arm: str
    workload: str
    total_gpus: int
    jobs: list[JobResult]
    #: The cluster as a step function of virtual time: at ``times[i]`` (until the next time) GPUs
    #: ``allocated`` to bound pods, ``busy`` in started jobs, and ``partial_pods`` / ``partial_gpus``
    #: bound to jobs not yet started.
    times: list[float] = field(default_factory=list)
    allocated: list[int] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)
    partial_pods: list[int] = field(default_factory=list)
    partial_gpus: list[int] = field(default_factory=list)
    virtual_seconds: float = 0.0
    wall_seconds: float = 0.0
    cycles: int = 0
    warnings: list[str] = field(default_factory=list)
    #: The simulation's seed.
    seed: int = 0
    #: The virtual clock's reading when the run began: ``times`` and the jobs' times count from it.
    origin: float = 0.0
    #: The simulation itself, when the caller asked to keep it (to read its store afterwards).
    simulation: Simulation | None = field(default=None, repr=False)

    @property
    def makespan(self) -> float:
        ends = [j.end for j in self.jobs if j.end is not None]
        return max(ends) if ends else self.virtual_seconds

    def time_average(self, series: Sequence[int], until: float | None = None) -> float:
        """Mean of a step series over [0, until] (the makespan by default)."""
        end = self.makespan if until is None else until
        if end <= 0 or not self.times:
            return 0.0
        total = 0.0
        for i, t in enumerate(self.times):
            if t >= end:
                break
            nxt = self.times[i + 1] if i + 1 < len(self.times) else end
            total += series[i] * (min(nxt, end) - t)
        return total / end


class _Recorder:
    """Follows binds and deletes of the experiment's pods; starts a job (schedules its pods' ends)
    when its last pod is bound."""

    def __init__(
        self, sim: Simulation, jobs: Sequence[Job], cluster: ClusterShape, result: ArmResult
    ) -> None:
        self.sim = sim
        self.jobs = {j.name: j for j in jobs}
        self.results = {r.name: r for r in result.jobs}
        self.result = result
        self.bound: dict[str, dict[str, dict[str, Any]]] = {j.name: {} for j in jobs}
        self.node_rack = {n["metadata"]["name"]: n["metadata"]["labels"] for n in cluster.node_objects()}
        self.allocated = self.busy = self.partial_pods = self.partial_gpus = 0
        self.origin = sim.clock.now()  # arrivals count from here, as the simulation loads them
        sim.informers.informer("Pod").add_handler(self.on_pod, replay=False)

    def sample(self) -> None:
        r = self.result
        now = self.sim.clock.now() - self.origin
        values = (self.allocated, self.busy, self.partial_pods, self.partial_gpus)
        if r.times and r.times[-1] == now:
            r.allocated[-1], r.busy[-1], r.partial_pods[-1], r.partial_gpus[-1] = values
            return
        r.times.append(now)
        r.allocated.append(values[0])
        r.busy.append(values[1])
        r.partial_pods.append(values[2])
        r.partial_gpus.append(values[3])

    def on_pod(self, change: Change[Any]) -> None:
        obj = change.obj
        meta = obj.get("metadata") or {}
        job_name = (meta.get("labels") or {}).get(JOB_LABEL)
        job = self.jobs.get(job_name or "")
        node = (obj.get("spec") or {}).get("nodeName")
        if job is None or not node:
            return
        res = self.results[job.name]
        gpus = job.workers[int(str(meta["name"]).rsplit("-", 1)[1])]
        pods = self.bound[job.name]
        if change.type == EventType.DELETED:
            pods.pop(str(meta["name"]), None)
            self.allocated -= gpus
            if res.start is not None:
                self.busy -= gpus
                if not pods:
                    res.end = self.sim.clock.now() - self.origin
            else:  # a partial placement taken away (an eviction)
                self.partial_pods -= 1
                self.partial_gpus -= gpus
            self.sample()
            return
        if change.old is not None and (change.old.get("spec") or {}).get("nodeName"):
            return
        pods[str(meta["name"])] = dict(obj)
        self.allocated += gpus
        if len(pods) < len(job.workers):
            self.partial_pods += 1
            self.partial_gpus += gpus
            self.sample()
            return
        # The last worker: the job runs from now; the ones bound before stop being partial.
        now = self.sim.clock.now()
        self.partial_pods -= len(pods) - 1
        self.partial_gpus -= job.gpus - gpus
        self.busy += job.gpus
        res.start = now - self.origin
        res.placement = tuple(
            str((pods[name].get("spec") or {}).get("nodeName"))
            for name in sorted(pods, key=lambda n: int(n.rsplit("-", 1)[1]))
        )
        nodes = set(res.placement)
        res.nodes = len(nodes)
        res.racks = len({self.node_rack[n].get(RACK_LABEL) for n in nodes})
        res.zones = len({self.node_rack[n].get(ZONE_LABEL) for n in nodes})
        for pod in pods.values():
            self.sim.complete_at(now + job.duration, pod)
        self.sample()


def run_arm(
    arm: str,
    jobs: Sequence[Job],
    cluster: ClusterShape,
    *,
    workload: str = "",
    seed: int = 0,
    label: str = "",
    batch_conf: BatchConf | None = None,
    extra: Sequence[dict[str, Any]] = (),
    network_topology: NetworkTopology | None = None,
    keep_simulation: bool = False,
) -> ArmResult:
    """Run ``jobs`` on ``cluster`` through one arm until every job ends or nothing more can happen.

    For the ``volcano`` arm, ``batch_conf`` replaces Volcano's default conf, ``extra`` objects
    (HyperNodes, say) are loaded with the nodes, and ``network_topology`` gives each job's
    PodGroup its ``spec.networkTopology``. ``label`` names the result's arm (default: ``arm``);
    ``keep_simulation`` keeps the simulation on the result."""
    if arm not in ARMS:
        raise InputError(f"unknown arm {arm!r}; known: {', '.join(ARMS)}")
    registry = default_registry()
    config = None
    if arm in ("workload-gang", "workload-gang-zone"):
        config = config_from_dict(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "featureGates": dict(WORKLOAD_GATES if arm == "workload-gang" else TOPOLOGY_GATES),
            },
            registry,
        )
    sim = Simulation(
        config,
        registry,
        seed=seed,
        batch_conf=(batch_conf or default_batch_conf()) if arm == "volcano" else None,
        volume_controllers=False,
    )
    result = ArmResult(
        label or arm,
        workload,
        cluster.gpus,
        [JobResult(j.name, j.arrival, j.duration, len(j.workers), j.gpus) for j in jobs],
    )
    recorder = _Recorder(sim, jobs, cluster, result)
    result.seed = seed
    result.origin = recorder.origin
    if keep_simulation:
        result.simulation = sim
    recorder.sample()
    sim.load(_manifests(cluster, jobs, arm, extra, network_topology))
    # Long enough for every job to run one after another; a run ends earlier when nothing can
    # change any more (every job ended, or what is left can never be placed).
    horizon = max(j.arrival for j in jobs) + sum(j.duration for j in jobs) + 3600.0
    started = time.perf_counter()
    run = sim.run(horizon=horizon)
    result.wall_seconds = time.perf_counter() - started
    result.virtual_seconds = run.virtual_seconds
    result.cycles = run.cycles
    result.warnings = list(run.warnings)
    for name, pods in recorder.bound.items():
        res = recorder.results[name]
        if res.end is None:
            res.bound_at_end = len(pods)
    return result


# -- summary -------------------------------------------------------------------------------------

SUMMARY_COLUMNS: Final = (
    "workload",
    "arm",
    "jobs",
    "done",
    "running",
    "pending",
    "partial_at_end",
    "jct_mean_s",
    "jct_p95_s",
    "queueing_mean_s",
    "queueing_p95_s",
    "gpu_busy_pct",  # until the last arrival
    "gpu_allocated_pct",
    "partial_pods_peak",
    "partial_pods_mean",
    "partial_gpu_hours",
    "racks_per_multinode_job",
    "zones_per_multinode_job",
    "makespan_s",
    "wall_s",
)


def _mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else math.nan


def _p95(values: Sequence[float]) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.95 * len(ordered)) - 1)]


def summary_rows(results: Sequence[ArmResult]) -> list[dict[str, Any]]:
    """One row per arm (the table and ``summary.csv``)."""
    rows = []
    for r in results:
        jct = [j.completion_time for j in r.jobs if j.completion_time is not None]
        wait = [j.queueing_delay for j in r.jobs if j.queueing_delay is not None]
        multi = [j for j in r.jobs if j.start is not None and j.nodes > 1]
        makespan = r.makespan
        # Utilisation while jobs arrive: once all have, every arm that finishes them does the
        # same GPU-seconds of work, and only its makespan differs.
        window = max(j.arrival for j in r.jobs) if r.jobs else 0.0
        states = [j.state for j in r.jobs]
        rows.append(
            {
                "workload": r.workload,
                "arm": r.arm,
                "jobs": len(r.jobs),
                "done": states.count("done"),
                "running": states.count("running"),
                "pending": states.count("pending") + states.count("partial"),
                "partial_at_end": states.count("partial"),
                "jct_mean_s": _mean(jct),
                "jct_p95_s": _p95(jct),
                "queueing_mean_s": _mean(wait),
                "queueing_p95_s": _p95(wait),
                "gpu_busy_pct": 100.0 * r.time_average(r.busy, window) / r.total_gpus,
                "gpu_allocated_pct": 100.0 * r.time_average(r.allocated, window) / r.total_gpus,
                # Each instant keeps its last value (a gang bound pod by pod at one instant is no partial
                # placement held), so the peak is the most held for some time.
                "partial_pods_peak": max(r.partial_pods, default=0),
                "partial_pods_mean": r.time_average(r.partial_pods),
                "partial_gpu_hours": r.time_average(r.partial_gpus) * makespan / 3600.0,
                "racks_per_multinode_job": _mean([j.racks for j in multi]),
                "zones_per_multinode_job": _mean([j.zones for j in multi]),
                "makespan_s": makespan,
                "wall_s": r.wall_seconds,
            }
        )
    return rows
