"""A long-running scheduler holds only what belongs to the objects that exist.

Every structure either pipeline keeps per pod or per PodGroup (outcomes, the queue's bookkeeping,
the nominator, the cache's assumed pods, the batch job cache, reports, event dedup, plugin caches
and informer subscriptions) must let go of a pod once it is deleted, as upstream's cache and queue
do. The tests run rounds of pods through both pipelines (scheduled, preempted, unschedulable, gated,
Volcano gangs and pods that name no PodGroup), delete them, and compare the size of every container
reachable from the schedulers with its size after the first round: sizes, not timings.
"""

from __future__ import annotations

import collections
import gc
import weakref
from collections import deque
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubesched.apiserver.schedulers import ServedSchedulers
from kubesched.apiserver.server import ServeOptions, seed_cluster
from kubesched.batch.testing import node
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.controllers.manager import ControllerManager
from kubesched.registry.admission import admit, apply_defaults
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.store.base import ClusterStore
from kubesched.store.memory import MemoryStore
from kubesched.store.sqlite import SqliteStore

Obj = dict[str, Any]

#: Containers that may grow between rounds because they are bounded by design, not by the pods
#: that exist: the latest batch sessions' figures (a bounded deque), the NodeTable's logs of
#: changed rows (each dropped past its limit, in rows), metric label sets (plugin, extension point, status,
#: queue, cluster event: never a pod) as new combinations are first seen, and the caches of parsed selectors,
#: affinity terms and spread constraints and their counters (each capped: started over or its
#: least recently used dropped past a fixed size). DefaultPreemption's rows of each node's pods
#: are as of its latest dry run: bounded by what the nodes hold, not by the pods seen. Kept scores
#: hold the rows changed since they were last scored, scored again past a fixed number of rows.
BOUNDED = (
    ".columns.pods",
    ".sessions",
    "._floor_log",
    ".change_log",
    "._children",
    "._event_labels",
    "._parsed",
    "._counters",
    "._dense_groups",
    "._selectors",
    "kept_scores._entries[*][*].changed",
)

_LEAVES = (str, bytes, int, float, bool, type(None))


def container_sizes(roots: dict[str, object]) -> collections.Counter[str]:
    """The summed ``len`` of every container reachable from ``roots`` through kubesched objects'
    attributes, by attribute path (``[*]`` for any key or item), each object counted once. The
    store is not followed: it holds the cluster's objects, not the schedulers' memory of them."""
    sizes: collections.Counter[str] = collections.Counter()
    seen: set[int] = set()
    todo: deque[tuple[str, object]] = deque(roots.items())
    while todo:
        path, obj = todo.popleft()
        if isinstance(obj, (*_LEAVES, MemoryStore)) or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, dict):
            sizes[path] += len(obj)
            if path.endswith("._informers"):  # one informer per kind: named by it
                todo.extend((f"{path}[{k}]", v) for k, v in list(obj.items()))
            else:
                todo.extend((f"{path}[*]", v) for v in list(obj.values()))
        elif isinstance(obj, (list, tuple, set, frozenset, deque)):
            sizes[path] += len(obj)
            todo.extend((f"{path}[*]", v) for v in list(obj))
        elif (type(obj).__module__ or "").startswith("kubesched"):
            attrs = dict(vars(obj)) if hasattr(obj, "__dict__") else {}
            for cls in type(obj).__mro__:
                for slot in getattr(cls, "__slots__", ()):
                    if hasattr(obj, slot):
                        attrs[slot] = getattr(obj, slot)
            todo.extend((f"{path}.{name}", value) for name, value in attrs.items())
    return sizes


def grown(before: collections.Counter[str], after: collections.Counter[str]) -> dict[str, tuple[int, int]]:
    return {
        path: (before[path], size)
        for path, size in after.items()
        if size > before[path] and not any(mark in path for mark in BOUNDED)
    }


def priority_class(name: str, value: int) -> Obj:
    return {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }


def a_pod(name: str, cpu: str = "100m", **spec: Any) -> Obj:
    meta: Obj = {"name": name, "namespace": "default", "labels": {"app": name.split("-")[0]}}
    annotations = spec.pop("annotations", None)
    if annotations:
        meta["annotations"] = annotations
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


def round_of_pods(r: int, nodes: int) -> tuple[list[Obj], list[Obj], list[str]]:
    """Round ``r``: (pods that fill every node at low priority, everything else, PodGroup names).
    The rest: pods for the kube-scheduler, two that preempt, one too big for any node, one
    gated; Volcano gangs with their PodGroups, batch pods with no PodGroup, one too big."""
    fill = [a_pod(f"lo{r}-{i}", "3", priorityClassName="lo") for i in range(nodes)]
    rest = [a_pod(f"k{r}-{i}") for i in range(20)]
    rest += [a_pod(f"hi{r}-{i}", "3", priorityClassName="hi") for i in range(2)]
    rest.append(a_pod(f"big{r}", "64"))
    # Selectors of their own each round (as every Job's pods have): spreading and anti-affinity.
    hostname = "kubernetes.io/hostname"
    rest += [
        a_pod(
            f"sp{r}-{i}",
            topologySpreadConstraints=[
                {
                    "maxSkew": 1,
                    "topologyKey": hostname,
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": f"sp{r}"}},
                }
            ],
        )
        for i in range(3)
    ]
    rest += [
        a_pod(
            f"af{r}-{i}",
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": f"af{r}"}}, "topologyKey": hostname}
                    ]
                }
            },
        )
        for i in range(2)
    ]
    rest.append(a_pod(f"gated{r}", schedulingGates=[{"name": "example.com/hold"}]))
    groups = [f"g{r}-{g}" for g in range(3)]
    for group in groups:
        rest += [
            a_pod(
                f"{group}-{i}", schedulerName="volcano", annotations={"scheduling.k8s.io/group-name": group}
            )
            for i in range(3)
        ]
    rest += [a_pod(f"v{r}-{i}", schedulerName="volcano") for i in range(3)]
    rest.append(a_pod(f"vbig{r}", "64", schedulerName="volcano"))
    return fill, rest, groups


def pod_group(name: str, min_member: int) -> Obj:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "queue": "default"},
    }


def create(store: ClusterStore, obj: Obj) -> None:
    obj = dict(obj)
    apply_defaults(obj)
    admit(store, obj)
    store.create(obj)


def default_queue() -> dict[str, Any]:
    """The batch scheduler's queue for the pods of these tests (a new object each time: creating
    it fills in its metadata)."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "default"},
        "spec": {"weight": 1},
    }


def test_both_pipelines_forget_deleted_pods_and_pod_groups() -> None:
    clock = [1000.0]
    store = MemoryStore(now=lambda: clock[0])
    for i in range(4):
        create(store, node(f"n{i}", "4", "16Gi", pods="110"))
    create(store, default_queue())
    create(store, priority_class("lo", 0))
    create(store, priority_class("hi", 1000))
    cluster = Cluster(store, ClusterOptions(now=lambda: clock[0], batch=True))
    sched, batch = cluster.scheduler, cluster.batch
    assert batch is not None

    def settle() -> None:
        for _ in range(6):
            clock[0] += 30.0  # past every backoff
            cluster.informers.pump()
            sched.queue.flush_backoff_completed()
            while sched.schedule_one():
                sched.run_binding_cycles()
            sched.run_binding_cycles()
            cluster.informers.pump()
            batch.run_session()
            cluster.informers.pump()

    def one_round(r: int) -> None:
        fill, rest, groups = round_of_pods(r, 4)
        for obj in fill:
            create(store, obj)
        settle()
        for group in groups:
            create(store, pod_group(group, 3))
        for obj in rest:
            create(store, obj)
        settle()
        # What the round is meant to exercise did happen.
        pods = {p["metadata"]["name"]: p for p in store.list("Pod")}
        assert all(pods[f"hi{r}-{i}"]["spec"].get("nodeName") for i in range(2))
        assert sum(1 for i in range(4) if f"lo{r}-{i}" not in pods) == 2  # preempted
        assert all(pods[f"{g}-{i}"]["spec"].get("nodeName") for g in groups for i in range(3))
        assert not pods[f"big{r}"]["spec"].get("nodeName")
        assert len(sched.outcomes) > 0 and len(batch.outcomes) > 0
        for name in pods:
            delete_cascading(store, "Pod", "default", name, "Background")
        for group in groups:
            delete_cascading(store, "PodGroup", "default", group, "Background")
        settle()
        assert store.list("Pod") == [] and store.list("PodGroup") == []

    roots = {"cluster": cluster}
    one_round(0)
    baseline = container_sizes(roots)
    for r in range(1, 4):
        one_round(r)
    assert grown(baseline, container_sizes(roots)) == {}
    assert sched.outcomes == {} and batch.outcomes == {}
    assert batch.reports.jobs == {}


def test_simulate_keeps_what_it_reports() -> None:
    """A simulation reports every pod it was given, evicted and finished ones too: it keeps them."""
    store = MemoryStore()
    cluster = Cluster(store, ClusterOptions(keep_deleted=True, batch=True))
    create(store, node("n0", "4", "16Gi", pods="110"))
    create(store, a_pod("k-0"))
    cluster.informers.pump()
    while cluster.scheduler.schedule_one():
        cluster.scheduler.run_binding_cycles()
    cluster.informers.pump()
    uid = store.get("Pod", "default", "k-0")["metadata"]["uid"]
    store.delete("Pod", "default", "k-0")
    cluster.informers.pump()
    assert cluster.scheduler.outcomes[uid].status == "Scheduled"


def test_served_cluster_returns_to_its_baseline(tmp_path: Path) -> None:
    """``serve``'s pieces together (the SQLite store, kubelets deleting terminating pods, the garbage
    collector, both schedulers on the real-time driver): after rounds of pods are created, scheduled
    and deleted, nothing the schedulers or controllers hold has grown."""
    import time

    store = SqliteStore(tmp_path / "cluster.db", now=time.time)
    seed_cluster(
        store, ServeOptions(data_dir=tmp_path, nodes=4, node_cpu="4", node_memory="16Gi", dra_driver=None)
    )
    create(store, priority_class("lo", 0))
    create(store, priority_class("hi", 1000))
    controllers = ControllerManager(store)
    served = ServedSchedulers(store)
    served.start()

    def tick_until(done: Any, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while not done() and time.monotonic() < deadline:
            controllers.tick()
            time.sleep(0.02)
        # One more look for the schedulers' driver to take in the last changes.
        for _ in range(10):
            controllers.tick()
            time.sleep(0.02)

    def one_round(r: int) -> None:
        fill, rest, groups = round_of_pods(r, 4)
        for obj in fill:
            create(store, obj)
        tick_until(
            lambda: all(
                store.get("Pod", "default", p["metadata"]["name"])["spec"].get("nodeName") for p in fill
            )
        )
        for group in groups:
            create(store, pod_group(group, 3))
        for obj in rest:
            create(store, obj)
        members = [f"{g}-{i}" for g in groups for i in range(3)]

        def placed() -> bool:
            pods = {p["metadata"]["name"]: p for p in store.list("Pod")}
            return all(
                pods.get(m, {}).get("spec", {}).get("nodeName") for m in [*members, f"hi{r}-0", f"hi{r}-1"]
            )

        tick_until(placed)
        assert placed()
        for p in store.list("Pod"):
            name = p["metadata"]["name"]
            if p["spec"].get("nodeName"):
                # As the API deletes a running pod: gracefully, its kubelet removes it.
                store.update(
                    {**p, "metadata": {**p["metadata"], "deletionTimestamp": "2030-01-01T00:00:00Z"}}
                )
            else:
                delete_cascading(store, "Pod", "default", name, "Background")
        for group in groups:
            delete_cascading(store, "PodGroup", "default", group, "Background")
        tick_until(lambda: not store.list("Pod") and not store.list("PodGroup"))
        assert store.list("Pod") == [] and store.list("PodGroup") == []

    roots = {"schedulers": served, "controllers": controllers}
    try:
        one_round(0)
        baseline = container_sizes(roots)
        for r in range(1, 3):
            one_round(r)
        after = container_sizes(roots)
    finally:
        served.stop()
        store.close()
    # Events stay for their TTL (an hour; kube-apiserver's --event-ttl), and so do the Event
    # informer's copies and the TTL controller's queue of them: bounded by time, not by pods.
    by_time = ("[Event]", ".event_ttl._made")
    assert {p: v for p, v in grown(baseline, after).items() if not any(m in p for m in by_time)} == {}
    assert served.scheduler.outcomes == {} and served.batch.outcomes == {}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["create", "delete"]), st.integers(0, 5), st.sampled_from(["a", "b", "c"])),
        min_size=1,
        max_size=25,
    )
)
def test_batch_scheduler_holds_only_existing_pods(steps: list[tuple[str, int, str]]) -> None:
    """Whatever order pods come and go in, the batch scheduler's per-pod records are those of the
    pods that exist, and its shared request vectors those of their specs."""
    store = MemoryStore()
    create(store, node("n0", "8", "16Gi", pods="110"))
    cluster = Cluster(store, ClusterOptions(batch=True))
    batch = cluster.batch
    assert batch is not None
    for action, n, label in steps:
        name = f"p{n}"
        exists = store.get("Pod", "default", name) is not None
        if action == "create" and not exists:
            obj = a_pod(name, schedulerName="volcano")
            obj["metadata"]["labels"] = {"app": label}
            create(store, obj)
        elif action == "delete" and exists:
            delete_cascading(store, "Pod", "default", name, "Background")
        cluster.informers.pump()
        batch.run_session()
        cluster.informers.pump()
        uids = {p["metadata"]["uid"] for p in store.list("Pod")}
        assert set(batch.outcomes) <= uids
        assert set(batch.jobs.spec_keys) <= uids
        assert set(batch.jobs.requests) <= set(batch.jobs.spec_keys.values())
        assert set(batch.jobs.job_of_pod) <= uids


def test_a_closed_batch_session_is_freed_without_the_cycle_collector() -> None:
    """A scheduling process runs Python's cycle collector seldom (``runtime/collector.py``): a
    session whose plugins and the session kept each other alive would hold every job, task and pod
    it looked at until then. Once closed, a session goes with its last reference."""
    store = MemoryStore()
    for i in range(2):
        create(store, node(f"n{i}", "4", "16Gi", pods="110"))
    create(store, default_queue())
    cluster = Cluster(store, ClusterOptions(batch=True))
    batch = cluster.batch
    assert batch is not None
    # The first session builds what later sessions keep (VolumeBinding and its assume caches).
    batch.run_session()
    create(store, pod_group("g", 3))
    for i in range(3):
        create(
            store, a_pod(f"g-{i}", schedulerName="volcano", annotations={"scheduling.k8s.io/group-name": "g"})
        )
    cluster.informers.pump()
    gc.collect()
    gc.disable()
    try:
        ssn = batch.run_session()
        assert ssn is not None and ssn.jobs and ssn.to_bind  # the gang was placed
        assert set(ssn.queue_shares) == {"default"}  # what reports read is still there
        session = weakref.ref(ssn)
        del ssn
        assert session() is None
        # Nor is anything of the batch scheduler's left for the cycle collector to find.
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = collections.Counter(
            type(o).__qualname__
            for o in gc.garbage
            if (type(o).__module__ or "").startswith("kubesched.batch")
        )
        assert left == {}
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
