"""The composition root: both schedulers over one store, one cache and one set of ports, with what a
mode chooses reaching the scheduler it is meant for."""

from __future__ import annotations

from typing import Any

from kubesched.batch.conf_loader import batch_conf_from_dict
from kubesched.batch.testing import node, pod, pod_group, queue
from kubesched.plugins.testing import pod_dict
from kubesched.runtime.cluster import Cluster, ClusterOptions
from kubesched.store.memory import MemoryStore

GANG_CONF = {
    "actions": "enqueue, allocate",
    "tiers": [{"plugins": [{"name": "gang"}, {"name": "predicates"}]}],
}


def _store(objects: list[dict[str, Any]]) -> MemoryStore:
    store = MemoryStore(now=lambda: 0.0)
    for obj in objects:
        store.create(obj)
    return store


def _bound(store: MemoryStore) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"]["nodeName"] for p in store.list("Pod") if p["spec"].get("nodeName")
    }


def test_a_gang_for_a_renamed_batch_scheduler_is_placed_by_it_and_not_by_the_kube_scheduler() -> None:
    gang = [pod(f"g{i}", "", "pg", cpu="1") for i in range(2)]
    for p in gang:
        p["spec"]["schedulerName"] = "my-batch"
    store = _store([node("n1", "4", "8G"), queue("default"), pod_group("pg", "default", 2, "Pending"), *gang])
    cluster = Cluster(
        store,
        ClusterOptions(
            now=lambda: 0.0,
            batch=True,
            batch_conf=batch_conf_from_dict(GANG_CONF),
            batch_scheduler_names=("my-batch",),
        ),
    )
    cluster.informers.pump()
    assert not cluster.scheduler.schedule_one()  # nothing of the kube-scheduler's is pending
    batch = cluster.start_batch()
    assert batch is cluster.batch
    batch.run_session()  # enqueue: the gang's PodGroup becomes Inqueue
    batch.run_session()  # allocate: the whole gang is placed
    cluster.close()
    assert _bound(store) == {"g0": "n1", "g1": "n1"}


def test_what_one_scheduler_placed_counts_for_the_other_at_once() -> None:
    kube_pod = pod_dict("web", namespace="c1", containers=[{"cpu": "3"}])
    gang = [pod(f"g{i}", "", "pg", cpu="1") for i in range(2)]
    store = _store([node("n1", "4", "8G"), queue("default"), pod_group("pg", "default", 2, "Inqueue"), *gang])
    cluster = Cluster(store, ClusterOptions(now=lambda: 0.0, batch_conf=batch_conf_from_dict(GANG_CONF)))
    batch = cluster.start_batch()
    store.create(kube_pod)
    cluster.informers.pump()
    assert cluster.scheduler.schedule_one()
    cluster.scheduler.run_binding_cycles()
    # Before the bind's informer event arrives, the batch session sees the node's 1 CPU left: a gang
    # of two 1-CPU pods does not fit, and none of it is placed.
    batch.run_session()
    cluster.close()
    assert _bound(store) == {"web": "n1"}
