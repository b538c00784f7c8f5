"""Inputs that used to give silently wrong output: duplicate uids, pods bound in the input, finished
pods, pods being deleted, evictions. Each pod is in the output once, with what happened to it."""

from __future__ import annotations

from typing import Any

from kubesched.api.manifests import LoadResult, ManifestObject
from kubesched.batch.conf_loader import default_batch_conf
from kubesched.cli.simulate import result_document
from kubesched.sim.simulation import Simulation


def node(name: str, cpu: str = "4", pods: str = "110") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods}},
    }


def pod(name: str, cpu: str = "1", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "default", **extra.pop("meta", {})}
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **extra}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def run(*objs: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    loaded = LoadResult()
    for i, obj in enumerate(objs):
        loaded.objects.append(ManifestObject(obj["kind"], obj, "test.yaml", i + 1))
    sim = Simulation(seed=0)
    sim.load(loaded)
    result = sim.run()
    doc = result_document(result, explain=False)
    names = [p["name"] for p in doc["pods"]]
    assert len(names) == len(set(names)), names
    return {p["name"]: p for p in doc["pods"]}, result.warnings


def test_copied_uid_is_replaced_and_both_pods_are_scheduled() -> None:
    uid = {"uid": "1f6e1f4c-0000-4000-8000-000000000001"}
    pods, _ = run(node("n1"), pod("a", meta=uid), pod("b", meta=uid))
    assert set(pods) == {"a", "b"}
    assert pods["a"]["status"] == pods["b"]["status"] == "Scheduled"


def test_pinned_pod_past_capacity_is_rejected_like_kubelet_admission() -> None:
    pods, warnings = run(
        node("n1", cpu="2"), pod("first", "2", nodeName="n1"), pod("second", "1", nodeName="n1")
    )
    assert pods["first"] == {**pods["first"], "status": "Bound", "node": "n1"}
    assert pods["second"]["status"] == "Failed"
    assert pods["second"]["node"] == "n1"
    assert pods["second"]["message"] == (
        "OutOfcpu: Node didn't have enough resource: cpu, requested: 1000, used: 2000, capacity: 2000"
    )
    assert any("default/second" in w and "OutOfcpu" in w for w in warnings)


def test_pinned_pod_past_the_pod_slots_is_rejected_with_out_of_pods() -> None:
    pods, _ = run(node("n1", pods="1"), pod("first", "0", nodeName="n1"), pod("second", "0", nodeName="n1"))
    assert pods["second"]["status"] == "Failed"
    assert pods["second"]["message"].startswith("OutOfpods: ")


def test_rejected_pinned_pod_frees_its_node_for_the_scheduler() -> None:
    pods, _ = run(node("n1", cpu="2"), pod("pinned", "3", nodeName="n1"), pod("free", "2"))
    assert pods["pinned"]["status"] == "Failed"
    assert pods["free"]["node"] == "n1"


def test_pinned_pod_on_a_missing_node_stays_pending_with_a_warning() -> None:
    pods, warnings = run(node("n1"), pod("lost", nodeName="nowhere"))
    assert pods["lost"]["status"] == "Pending"
    assert pods["lost"]["node"] is None
    assert "'nowhere', which does not exist" in pods["lost"]["message"]
    assert any("default/lost" in w for w in warnings)


def test_finished_unbound_pods_are_reported_with_their_phase() -> None:
    done = pod("done")
    done["status"] = {"phase": "Succeeded"}
    failed = pod("failed")
    failed["status"] = {"phase": "Failed"}
    pods, _ = run(node("n1"), done, failed)
    assert pods["done"]["status"] == "Succeeded" and pods["done"]["node"] is None
    assert pods["failed"]["status"] == "Failed" and pods["failed"]["node"] is None


def test_pod_being_deleted_is_not_scheduled() -> None:
    pods, _ = run(node("n1"), pod("going", meta={"deletionTimestamp": "2024-01-01T00:00:00Z"}))
    assert pods["going"]["status"] == "Pending"
    assert pods["going"]["node"] is None
    assert "deletionTimestamp" in pods["going"]["message"]


def test_evicted_pod_stays_in_the_output() -> None:
    low = pod("low", "3", nodeName="n1")
    high = pod("high", "3", priority=1000)
    pods, _ = run(node("n1"), low, high)
    assert pods["high"]["node"] == "n1"
    assert pods["low"]["status"] == "Evicted"
    assert pods["low"]["node"] == "n1"
    assert pods["low"]["message"].startswith("evicted")


def test_evicted_gang_member_leaves_the_podgroup_and_queue_tables() -> None:
    volcano = "scheduling.volcano.sh/v1beta1"
    sim = Simulation(seed=0, batch_conf=default_batch_conf())
    create = sim.store.create
    create(node("n1", cpu="2"))
    create({"apiVersion": volcano, "kind": "Queue", "metadata": {"name": "default"}, "spec": {"weight": 1}})
    group = {"name": "g", "namespace": "default"}
    create({"apiVersion": volcano, "kind": "PodGroup", "metadata": group, "spec": {"minMember": 1}})
    for i in range(2):
        member = pod(
            f"g-{i}", meta={"annotations": {"scheduling.k8s.io/group-name": "g"}}, schedulerName="volcano"
        )
        create(member)
    sim.run()
    create(pod("high", priority=1000))
    result = sim.run()
    doc = result_document(result, explain=False)
    [evicted] = doc["evicted"]
    assert evicted.startswith("default/g-")
    [row] = doc["podGroups"]
    assert row["bound"] == 1
    [queue] = doc["queues"]
    assert queue["podsBound"] == 1
    assert queue["allocated"]["cpu"] == 1000
