"""``kubesched bench soak``: memory over a long life. The served cluster (``kubesched serve`` without
its HTTP listener: the SQLite store, the simulated kubelets and controllers, both schedulers on the
real-time driver) takes pods created and deleted in waves, kube-scheduler pods and Volcano gangs
side by side, while the process's resident memory is sampled. Every structure keyed by a pod or a
PodGroup must let go of it once it is deleted, so after warm-up (the store's watch history and the
Events within their TTL filling up) the curve should stay flat however many pods went through
(docs/performance.md has the latest run, and what it shows).

What a pod goes through is what it goes through in ``serve``: created through admission, scheduled
and bound, started by its kubelet, deleted gracefully (``deletionTimestamp``; the kubelet removes it
at its next tick, the garbage collector takes what it owned), its Events expired after the TTL.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubesched.apiserver.schedulers import ServedSchedulers
from kubesched.apiserver.server import ServeOptions, seed_cluster
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.controllers.manager import ControllerManager
from kubesched.registry.admission import admit, apply_defaults
from kubesched.runtime.heap import HeapTrimmer
from kubesched.store.base import Conflict, Obj
from kubesched.store.memory import format_timestamp
from kubesched.store.sqlite import SqliteStore

NAMESPACE = "soak"
#: Members of each Volcano gang (its PodGroup's minMember).
GANG_SIZE = 4
#: How often the controllers run, as ``serve``'s ``--tick``.
TICK = 0.05
#: Creates (and deletes) that share a commit.
CHUNK = 100


@dataclass(slots=True)
class SoakSample:
    #: Pods created so far.
    pods: int
    seconds: float
    rss_bytes: int
    #: Pods in the store at the time (created, not yet removed).
    live_pods: int
    #: PodGroups and Events in the store.
    pod_groups: int
    events: int
    #: Per-pod records both schedulers hold (outcomes): pods that exist, not pods seen.
    outcomes: int
    #: Changes in the store's watch history.
    history: int
    #: Changes made in the store since the run began (resourceVersions handed out).
    changes: int
    #: Python's allocated memory blocks (``sys.getallocatedblocks``): level while resident memory
    #: climbs means the allocator's fragmentation, not objects kept.
    python_blocks: int


@dataclass(slots=True)
class SoakResult:
    nodes: int
    pods: int
    seconds: float
    #: Pods bound by the kube-scheduler and by the batch scheduler.
    bound: int
    bound_batch: int
    samples: list[SoakSample] = field(default_factory=list)

    #: Pods created when warm-up ended (:func:`warm_up_over`); None if it never did.
    warm_up_pods: int | None = None

    def after_warm_up(self) -> list[SoakSample]:
        return [s for s in self.samples if self.warm_up_pods is not None and s.pods >= self.warm_up_pods]

    def median_rss(self) -> int:
        """The median of resident memory over the samples after warm-up (0 without any)."""
        rss = sorted(s.rss_bytes for s in self.after_warm_up())
        return rss[len(rss) // 2] if rss else 0

    def drift(self) -> float:
        """How far resident memory strays from its median after warm-up, relative to that median:
        the largest ``|rss - median| / median`` over the samples after warm-up. "Flat within
        ±10 %" is ``drift() <= 0.10``."""
        median = self.median_rss()
        if not median:
            return 0.0
        return max(abs(s.rss_bytes - median) for s in self.after_warm_up()) / median


def warm_up_over(sample: SoakSample, history_limit: int, event_ttl: float, sweep_interval: float) -> bool:
    """Warm-up is what fills up by design whatever the pods do, and then stays: the store's watch
    history (the latest ``history_limit`` changes, kept for watches that resume) filled and then
    turned over once, and the Events of one TTL plus a sweep made (from then on as many expire as
    are made). The history's first turn is part of it because the changes it lets go of then were
    allocated among objects that live on: their memory is left scattered, and Python's allocator
    takes fresh arenas until the second turn, whose changes reuse what the first freed. Both are
    windows of a fixed size, not memory of every pod seen."""
    return sample.changes >= 2 * history_limit and sample.seconds >= event_ttl + sweep_interval


def rss_bytes() -> int:
    """This process's resident memory now (Linux ``/proc``; elsewhere the peak so far)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return peak if os.uname().sysname == "Darwin" else peak * 1024


def _pod(name: str, scheduler: str | None = None, group: str | None = None) -> Obj:
    """scheduler_perf's pod-default (100m CPU, 500Mi); a Volcano gang member names its PodGroup."""
    meta: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "labels": {"app": "soak"}}
    if group is not None:
        meta["annotations"] = {"scheduling.k8s.io/group-name": group}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
            }
        ]
    }
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _pod_group(name: str) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {"minMember": GANG_SIZE, "queue": "default"},
    }


@dataclass(slots=True)
class _Wave:
    pods: list[str]
    groups: list[str]


class _Cluster:
    """The served cluster of ``kubesched serve``, run in this process without HTTP."""

    def __init__(self, data_dir: Path, nodes: int, event_ttl: float) -> None:
        self.store = SqliteStore(data_dir / "cluster.db", now=time.time)
        # serve's nodes (32 CPU, 256Gi, 110 pods), no DRA driver: nothing here asks for devices.
        seed_cluster(self.store, ServeOptions(data_dir=data_dir, nodes=nodes, dra_driver=None))
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}})
        self.controllers = ControllerManager(self.store, event_ttl=event_ttl)
        self.schedulers = ServedSchedulers(self.store)
        self.heap = HeapTrimmer()
        self._ticked = 0.0

    def create(self, obj: Obj) -> None:
        obj = dict(obj)
        apply_defaults(obj)
        admit(self.store, obj)
        self.store.create(obj)

    def tick(self) -> None:
        """The controllers' tick, when one is due (serve runs them every ``--tick``), and serve's
        heap trim when that is due."""
        now = time.monotonic()
        if now - self._ticked >= TICK:
            self._ticked = now
            self.controllers.tick()
            self.heap.maybe_trim()

    def delete_pod(self, name: str) -> None:
        """As the API deletes a pod: a bound, running one gracefully (its kubelet removes it), any
        other at once, with what it owns."""
        for _ in range(5):
            pod = self.store.get("Pod", NAMESPACE, name)
            if pod is None:
                return
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                return
            if not (pod.get("spec") or {}).get("nodeName"):
                delete_cascading(self.store, "Pod", NAMESPACE, name, "Background")
                return
            marked = {
                **pod,
                "metadata": {
                    **meta,
                    "deletionTimestamp": format_timestamp(time.time() + 30),
                    "deletionGracePeriodSeconds": 30,
                },
            }
            try:
                self.store.update(marked)
                return
            except Conflict:
                continue  # the kubelet wrote it meanwhile: look again

    def bound(self, names: list[str]) -> int:
        return sum(1 for name in names if self._bound(name))

    def _bound(self, name: str) -> bool:
        pod = self.store.get("Pod", NAMESPACE, name)
        return pod is not None and bool((pod.get("spec") or {}).get("nodeName"))

    def wait_bound(self, names: list[str], want: int, timeout: float) -> None:
        """Tick the controllers until ``want`` of ``names`` are bound, or ``timeout`` seconds."""
        waiting = list(names)
        done = 0
        deadline = time.monotonic() + timeout
        while done < want and time.monotonic() < deadline:
            self.tick()
            time.sleep(TICK)
            still = [name for name in waiting if not self._bound(name)]
            done += len(waiting) - len(still)
            waiting = still


def run_soak(
    nodes: int = 1000,
    pods: int = 200_000,
    *,
    live: int = 4000,
    wave: int = 1000,
    sample_every: int = 10_000,
    event_ttl: float = 60.0,
    wave_timeout: float = 60.0,
    on_sample: Callable[[SoakSample], None] | None = None,
) -> SoakResult:
    """``pods`` pods through a served cluster of ``nodes`` nodes: waves of ``wave`` pods (half for the
    kube-scheduler, half in Volcano gangs of :data:`GANG_SIZE` with their PodGroups), each wave
    scheduled before the next is made, and the oldest waves deleted to keep about ``live`` pods.
    Resident memory is sampled every ``sample_every`` pods. ``event_ttl``: kube-apiserver's
    ``--event-ttl``, shortened so that Events reach their steady count within the run."""
    wave = max(1, min(wave, live))
    with tempfile.TemporaryDirectory(prefix="kubesched-soak-") as tmp:
        cluster = _Cluster(Path(tmp), nodes, event_ttl)
        schedulers = cluster.schedulers
        schedulers.start()
        try:
            return _soak(cluster, nodes, pods, live, wave, sample_every, wave_timeout, on_sample)
        finally:
            schedulers.stop()
            cluster.store.close()


def _soak(
    cluster: _Cluster,
    nodes: int,
    pods: int,
    live: int,
    wave: int,
    sample_every: int,
    wave_timeout: float,
    on_sample: Callable[[SoakSample], None] | None,
) -> SoakResult:
    result = SoakResult(nodes, pods, 0.0, 0, 0)
    start = time.perf_counter()
    first_rv = cluster.store.resource_version
    kept: deque[_Wave] = deque()
    made = 0
    next_sample = 0
    k = 0
    while made < pods:
        size = min(wave, pods - made)
        current = _Wave([], [])
        batch_names: list[str] = []
        for first in range(0, size, CHUNK):
            # Clients' creates land a commit at a time; a chunk shares one, as the store does
            # for the writes that come in together.
            with cluster.store.transaction():
                for i in range(first, min(first + CHUNK, size)):
                    name = f"w{k}-{i}"
                    if i % 2 == 0:
                        cluster.create(_pod(name))
                    else:
                        # Every GANG_SIZE-th odd pod opens a gang; its members follow.
                        slot = i // 2
                        group = f"w{k}-g{slot // GANG_SIZE}"
                        if slot % GANG_SIZE == 0:
                            cluster.create(_pod_group(group))
                            current.groups.append(group)
                        cluster.create(_pod(name, "volcano", group))
                        batch_names.append(name)
                    current.pods.append(name)
        made += size
        k += 1
        # Scheduled before the next wave: a gang cut short by the end of the wave stays pending,
        # so the wait is for every kube-scheduler pod and every whole gang.
        whole = len(batch_names) - len(batch_names) % GANG_SIZE
        want = len(current.pods) - len(batch_names) + whole
        cluster.wait_bound(current.pods, want, wave_timeout)
        bound_batch = cluster.bound(batch_names)
        result.bound_batch += bound_batch
        result.bound += cluster.bound(current.pods) - bound_batch
        kept.append(current)
        while sum(len(w.pods) for w in kept) > live:
            old = kept.popleft()
            for first in range(0, len(old.pods), CHUNK):
                with cluster.store.transaction():
                    for name in old.pods[first : first + CHUNK]:
                        cluster.delete_pod(name)
            with cluster.store.transaction():
                for group in old.groups:
                    delete_cascading(cluster.store, "PodGroup", NAMESPACE, group, "Background")
        cluster.tick()
        if made >= next_sample or made >= pods:
            next_sample = made + sample_every
            sample = _sample(cluster, made, time.perf_counter() - start, first_rv)
            result.samples.append(sample)
            if result.warm_up_pods is None and warm_up_over(
                sample,
                cluster.store.history_limit,
                cluster.controllers.event_ttl.ttl,
                cluster.controllers.event_ttl.sweep_interval,
            ):
                result.warm_up_pods = made
            if on_sample is not None:
                on_sample(sample)
    result.seconds = time.perf_counter() - start
    return result


def _sample(cluster: _Cluster, made: int, seconds: float, first_rv: int) -> SoakSample:
    store = cluster.store
    schedulers = cluster.schedulers
    live_pods = len(store.list("Pod"))
    outcomes = len(schedulers.scheduler.outcomes) + len(schedulers.batch.outcomes)
    return SoakSample(
        made,
        seconds,
        rss_bytes(),
        live_pods,
        len(store.list("PodGroup")),
        len(store.list("Event")),
        outcomes,
        store.history_size,
        store.resource_version - first_rv,
        sys.getallocatedblocks(),
    )


def plot(result: SoakResult, path: Path) -> None:
    """Resident memory against pods created, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.2))
    ax.plot([s.pods for s in result.samples], [s.rss_bytes / 2**20 for s in result.samples], marker=".")
    ax.set_xlabel("pods created and deleted")
    ax.set_ylabel("resident memory (MiB)")
    ax.set_ylim(bottom=0)
    ax.set_title(f"kubesched bench soak: {result.nodes} nodes, both pipelines")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
