"""RemotePorts against a served cluster: each write lands as kube-apiserver would store it."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from tests.remote.conftest import Cluster, pod

from kubesched.remote.client import ApiClient
from kubesched.remote.config import load_client_config
from kubesched.remote.discovery import Discovery
from kubesched.remote.loop import LoopThread
from kubesched.remote.ports import ApiFeatures, NotLeading, RemotePorts
from kubesched.remote.run import features
from kubesched.store.base import AlreadyExists, Conflict, NotFound, StoreError

from .refcp import RefCluster, needs_refcp, refcp, volcano_crd

__all__ = ["refcp"]

VOLCANO = "scheduling.volcano.sh/v1beta1"


@pytest.fixture
def ports(cluster: Cluster, connect: Any, loop_thread: LoopThread) -> Any:
    client: ApiClient = connect(cluster)
    made = RemotePorts(client, loop_thread, current=cluster.store.get, identity="test-host")
    yield made
    made.close()


def _create(cluster: Cluster, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    ns = meta.get("namespace", "default")
    if obj["kind"] == "Pod":
        path = f"/api/v1/namespaces/{ns}/pods"
    elif obj["kind"] == "PodDisruptionBudget":
        path = f"/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
    else:
        path = f"/apis/{VOLCANO}/namespaces/{ns}/{obj['kind'].lower()}s"
    code, body, _ = cluster.request("POST", path, obj)
    assert code == 201, body
    created: dict[str, Any] = body
    return created


def _pod(cluster: Cluster, name: str, ns: str = "default") -> dict[str, Any] | None:
    code, body, _ = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/{name}")
    return body if code == 200 else None


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    assert obj is not None
    return next((c for c in obj["status"].get("conditions") or [] if c["type"] == kind), None)


def _until(check: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.02)


# -- bind ------------------------------------------------------------------------------------------
def test_bind_sets_node_name_and_pod_scheduled(cluster: Cluster, ports: RemotePorts) -> None:
    created = _create(cluster, pod("web-1"))
    ports.bind("default", "web-1", created["metadata"]["uid"], "node-0")
    stored = _pod(cluster, "web-1")
    assert stored is not None and stored["spec"]["nodeName"] == "node-0"
    cond = _condition(stored, "PodScheduled")
    assert cond is not None and cond["status"] == "True"


def test_bind_of_a_bound_pod_is_a_conflict(cluster: Cluster, ports: RemotePorts) -> None:
    uid = _create(cluster, pod("web-1"))["metadata"]["uid"]
    ports.bind("default", "web-1", uid, "node-0")
    with pytest.raises(Conflict):
        ports.bind("default", "web-1", uid, "node-1")
    assert _pod(cluster, "web-1")["spec"]["nodeName"] == "node-0"  # type: ignore[index]


def test_bind_of_a_recreated_pod_is_refused_by_uid(cluster: Cluster, ports: RemotePorts) -> None:
    old_uid = _create(cluster, pod("web-1"))["metadata"]["uid"]
    code, _, _ = cluster.request("DELETE", "/api/v1/namespaces/default/pods/web-1")
    assert code == 200
    _create(cluster, pod("web-1"))
    with pytest.raises(Conflict):
        ports.bind("default", "web-1", old_uid, "node-0")
    assert not _pod(cluster, "web-1")["spec"].get("nodeName")  # type: ignore[index]


def test_a_replica_that_lost_its_lease_sends_no_decision(cluster: Cluster, ports: RemotePorts) -> None:
    """Behind the fence (the Lease no longer held) binds, evictions and annotations are not sent:
    a standby may have placed the same pods with the same capacity."""
    uid = _create(cluster, pod("web-1"))["metadata"]["uid"]
    _running_pod(cluster, ports, "victim", {"app": "v"})
    holds = [False]
    ports.fence = lambda: holds[0]
    with pytest.raises(NotLeading, match="no longer holds the leader's Lease"):
        ports.bind("default", "web-1", uid, "node-0")
    assert not ports.evict("default", "victim", "PreemptionByScheduler", "preempting")
    with pytest.raises(NotLeading):
        ports.set_pod_annotations("default", "web-1", {"a": "b"})
    stored = _pod(cluster, "web-1")
    assert stored is not None and not stored["spec"].get("nodeName")
    assert not (stored["metadata"].get("annotations") or {}).get("a")
    assert _pod(cluster, "victim") is not None
    holds[0] = True
    ports.bind("default", "web-1", uid, "node-0")
    assert _pod(cluster, "web-1")["spec"]["nodeName"] == "node-0"  # type: ignore[index]


def test_bind_of_a_missing_pod_is_not_found(ports: RemotePorts) -> None:
    with pytest.raises(NotFound):
        ports.bind("default", "nope", "", "node-0")


def _bind_later(ports: RemotePorts, namespace: str, name: str, uid: str, node: str) -> Exception | None:
    """``bind_later`` and wait for its report (from the client's loop)."""
    got: list[Exception | None] = []
    reported = threading.Event()

    def done(refusal: Exception | None) -> None:
        got.append(refusal)
        reported.set()

    ports.bind_later(namespace, name, uid, node, done)
    assert reported.wait(10)
    assert len(got) == 1
    return got[0]


def test_a_binding_sent_in_the_background_reports_what_bind_raises(
    cluster: Cluster, ports: RemotePorts
) -> None:
    uid = _create(cluster, pod("web-1"))["metadata"]["uid"]
    assert _bind_later(ports, "default", "web-1", uid, "node-0") is None
    assert _pod(cluster, "web-1")["spec"]["nodeName"] == "node-0"  # type: ignore[index]
    assert isinstance(_bind_later(ports, "default", "web-1", uid, "node-1"), Conflict)
    assert isinstance(_bind_later(ports, "default", "nope", "", "node-0"), NotFound)
    other = _create(cluster, pod("web-2"))["metadata"]["uid"]
    ports.fence = lambda: False
    assert isinstance(_bind_later(ports, "default", "web-2", other, "node-0"), NotLeading)
    assert not _pod(cluster, "web-2")["spec"].get("nodeName")  # type: ignore[index]


# -- pod status ------------------------------------------------------------------------------------
def test_set_pod_condition_patches_the_status(cluster: Cluster, ports: RemotePorts) -> None:
    _create(cluster, pod("web-1"))
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/2 nodes"}
    out = ports.set_pod_condition("default", "web-1", condition, nominated_node="node-1")
    assert out is not None
    stored = _pod(cluster, "web-1")
    cond = _condition(stored, "PodScheduled")
    assert cond is not None
    assert (cond["status"], cond["reason"], cond["message"]) == ("False", "Unschedulable", "0/2 nodes")
    assert cond["lastTransitionTime"]
    assert stored["status"]["nominatedNodeName"] == "node-1"  # type: ignore[index]
    # "" clears the nomination; the condition's transition time stays while its status does.
    again = {**condition, "message": "0/2 nodes, again"}
    ports.set_pod_condition("default", "web-1", again, nominated_node="")
    stored = _pod(cluster, "web-1")
    assert "nominatedNodeName" not in stored["status"]  # type: ignore[index]
    cond2 = _condition(stored, "PodScheduled")
    assert cond2 is not None and cond2["message"] == "0/2 nodes, again"
    assert cond2["lastTransitionTime"] == cond["lastTransitionTime"]


def test_set_pod_condition_writes_nothing_when_unchanged(cluster: Cluster, ports: RemotePorts) -> None:
    _create(cluster, pod("web-1"))
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "full"}
    ports.set_pod_condition("default", "web-1", condition)
    rv = _pod(cluster, "web-1")["metadata"]["resourceVersion"]  # type: ignore[index]
    ports.set_pod_condition("default", "web-1", condition)
    assert _pod(cluster, "web-1")["metadata"]["resourceVersion"] == rv  # type: ignore[index]


def test_set_pod_condition_of_a_missing_pod_is_none(ports: RemotePorts) -> None:
    assert ports.set_pod_condition("default", "nope", {"type": "PodScheduled", "status": "False"}) is None


def test_set_pod_annotations_merges(cluster: Cluster, ports: RemotePorts) -> None:
    obj = pod("web-1")
    obj["metadata"]["annotations"] = {"keep": "me"}
    _create(cluster, obj)
    out = ports.set_pod_annotations("default", "web-1", {"gpu": "0"})
    assert out is not None
    assert _pod(cluster, "web-1")["metadata"]["annotations"] == {"keep": "me", "gpu": "0"}  # type: ignore[index]
    assert ports.set_pod_annotations("default", "nope", {"gpu": "0"}) is None


# -- eviction --------------------------------------------------------------------------------------
def _running_pod(cluster: Cluster, ports: RemotePorts, name: str, labels: dict[str, str]) -> None:
    obj = pod(name)
    obj["metadata"]["labels"] = labels
    uid = _create(cluster, obj)["metadata"]["uid"]
    ports.bind("default", name, uid, "node-0")
    assert _until(lambda: (_pod(cluster, name) or {}).get("status", {}).get("phase") == "Running")


def test_evict_deletes_the_pod(cluster: Cluster, ports: RemotePorts) -> None:
    _running_pod(cluster, ports, "victim", {"app": "v"})
    assert ports.evict("default", "victim", "PreemptionByScheduler", "default-scheduler: preempting")
    assert _pod(cluster, "victim") is None
    assert not ports.evict("default", "victim", "PreemptionByScheduler", "again")


def test_evict_honours_a_disruption_budget(cluster: Cluster, ports: RemotePorts) -> None:
    _running_pod(cluster, ports, "guarded", {"app": "db"})
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
    }
    _create(cluster, pdb)
    assert not ports.evict("default", "guarded", "PreemptionByScheduler", "preempting")
    stored = _pod(cluster, "guarded")
    assert stored is not None and not stored["metadata"].get("deletionTimestamp")
    # Not evicted, so no disruption target either.
    cond = _condition(stored, "DisruptionTarget")
    assert cond is None or cond["status"] == "False"


def test_evict_uses_policy_v1beta1_when_told(cluster: Cluster, connect: Any, loop_thread: LoopThread) -> None:
    sent: list[tuple[str, Any]] = []
    client = connect(cluster)

    class Recording:
        async def request(self, method: str, path: str, **kw: Any) -> Any:
            if path.endswith("/eviction"):
                sent.append((path, kw.get("body")))
            return await client.request(method, path, **kw)

    ports = RemotePorts(Recording(), loop_thread, features=ApiFeatures(eviction="policy/v1beta1"))
    _create(cluster, pod("victim"))
    assert ports.evict("default", "victim", "PreemptionByScheduler", "m")
    assert sent and sent[0][1]["apiVersion"] == "policy/v1beta1"


# -- events ----------------------------------------------------------------------------------------
def _events(cluster: Cluster, selector: str, path: str = "/api/v1/namespaces/default/events") -> list[Any]:
    code, body, _ = cluster.request("GET", f"{path}?fieldSelector={selector}")
    assert code == 200, body
    items: list[Any] = body["items"]
    return items


def test_events_are_listed_by_field_selectors(cluster: Cluster, ports: RemotePorts) -> None:
    created = _create(cluster, pod("web-1"))
    ports.record(created, "Warning", "FailedScheduling", "Scheduling", "0/2 nodes are available", "my-sched")
    found = _until(lambda: _events(cluster, "involvedObject.name=web-1,reason=FailedScheduling"))
    assert len(found) == 1
    ev = found[0]
    assert ev["involvedObject"]["uid"] == created["metadata"]["uid"]
    assert ev["message"] == "0/2 nodes are available"
    new = _events(cluster, "regarding.name=web-1", "/apis/events.k8s.io/v1/namespaces/default/events")
    assert len(new) == 1
    assert new[0]["reportingController"] == "my-sched"
    assert new[0]["reportingInstance"] == "my-sched-test-host"
    assert new[0]["action"] == "Scheduling"
    assert new[0]["regarding"]["kind"] == "Pod"
    assert new[0]["regarding"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_a_long_note_is_truncated_as_upstream(cluster: Cluster, ports: RemotePorts) -> None:
    created = _create(cluster, pod("web-1"))
    ports.record(created, "Warning", "FailedScheduling", "Scheduling", "x" * 5000, "s")
    found = _until(lambda: _events(cluster, "involvedObject.name=web-1"))
    assert len(found[0]["message"]) == 1024
    assert found[0]["message"].endswith("x ...")


def test_core_events_without_events_k8s_io(cluster: Cluster, connect: Any, loop_thread: LoopThread) -> None:
    paths: list[str] = []
    client = connect(cluster)

    class Recording:
        async def request(self, method: str, path: str, **kw: Any) -> Any:
            paths.append(path)
            return await client.request(method, path, **kw)

    ports = RemotePorts(Recording(), loop_thread, features=ApiFeatures(events_v1=False))
    created = _create(cluster, pod("web-1"))
    ports.record(created, "Normal", "Scheduled", "Binding", "assigned", "default-scheduler")
    found = _until(lambda: _events(cluster, "involvedObject.name=web-1"))
    ports.close()
    assert paths == ["/api/v1/namespaces/default/events"]
    assert found[0]["source"]["component"] == "default-scheduler"
    assert found[0]["reason"] == "Scheduled"


def test_events_never_block_and_overflow_is_dropped(
    cluster: Cluster, connect: Any, loop_thread: LoopThread
) -> None:
    import threading

    gate = threading.Event()
    client = connect(cluster)

    class Slow:
        async def request(self, method: str, path: str, **kw: Any) -> Any:
            while not gate.is_set():
                import asyncio

                await asyncio.sleep(0.01)
            return await client.request(method, path, **kw)

    ports = RemotePorts(client, loop_thread, events_client=Slow(), event_queue=3)
    created = _create(cluster, pod("web-1"))
    for i in range(10):
        ports.record(created, "Normal", "Scheduled", "Binding", f"n{i}", "s")
    # Three on their way to the server; the rest dropped, and recording returned without waiting
    # for any of them.
    assert _until(lambda: ports.events.dropped == 7)
    assert ports.events.pending == 3
    gate.set()
    ports.close()
    assert ports.events.sent + ports.events.dropped == 10
    assert len(_events(cluster, "involvedObject.name=web-1")) == ports.events.sent


# -- PodGroups ------------------------------------------------------------------------------------
def _pod_group(name: str, min_member: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": VOLCANO,
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "queue": "default"},
    }


def test_create_pod_group_returns_an_existing_one(cluster: Cluster, ports: RemotePorts) -> None:
    created = ports.create_pod_group(_pod_group("pg"))
    assert created["metadata"]["uid"]
    again = ports.create_pod_group(_pod_group("pg", min_member=5))
    assert again["metadata"]["uid"] == created["metadata"]["uid"]
    assert again["spec"]["minMember"] == 2


def test_pod_group_status_is_replaced(cluster: Cluster, ports: RemotePorts) -> None:
    ports.create_pod_group(_pod_group("pg"))
    first = {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True"}], "running": 0}
    assert ports.update_pod_group_status("default", "pg", first) is not None
    second = {"phase": "Running", "running": 2}
    out = ports.update_pod_group_status("default", "pg", second)
    assert out is not None
    code, stored, _ = cluster.request("GET", f"/apis/{VOLCANO}/namespaces/default/podgroups/pg")
    assert code == 200
    assert stored["status"] == {"phase": "Running", "running": 2}
    assert stored["spec"]["minMember"] == 2
    assert ports.update_pod_group_status("default", "gone", second) is None


def test_queue_status_keeps_the_fields_it_does_not_name(cluster: Cluster, ports: RemotePorts) -> None:
    path = f"/apis/{VOLCANO}/queues/default"
    code, queue, _ = cluster.request("GET", path)
    assert code == 200
    code, _, _ = cluster.request(
        "PUT", f"{path}/status", {**queue, "status": {"state": "Open", "running": 3}}
    )
    assert code == 200
    out = ports.update_queue_status("default", {"allocated": {"cpu": "2", "memory": "1Gi"}})
    assert out is not None
    code, stored, _ = cluster.request("GET", path)
    assert stored["status"] == {"state": "Open", "running": 3, "allocated": {"cpu": "2", "memory": "1Gi"}}
    assert ports.update_queue_status("gone", {"allocated": {"cpu": "0"}}) is None


# -- the same writes against kube-apiserver itself (v1.20.2) --------------------------------------
CORE_PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def ref_ports(refcp: RefCluster, connect: Any, loop_thread: LoopThread) -> Any:
    client: ApiClient = connect(load_client_config(str(refcp.kubeconfig)))
    discovery = loop_thread.run(Discovery.discover(client))
    made = RemotePorts(client, loop_thread, features=features(discovery), identity="ref-host")

    def call(method: str, path: str, **kw: Any) -> Any:
        return loop_thread.run(client.request(method, path, **kw))

    yield made, call
    made.close()


def _ref_pod(call: Any, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    obj = pod(name)
    obj["metadata"]["labels"] = labels or {}
    with contextlib.suppress(NotFound):
        call("DELETE", f"{CORE_PODS}/{name}", body={"gracePeriodSeconds": 0})
    created: dict[str, Any] = call("POST", CORE_PODS, body=obj)
    return created


def _ref_node(call: Any, name: str) -> None:
    cap = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": cap}}
    with contextlib.suppress(AlreadyExists):
        call("POST", "/api/v1/nodes", body=node)


@needs_refcp
def test_kube_apiserver_binding_and_status(ref_ports: Any) -> None:
    ports, call = ref_ports
    assert ports.features.eviction == "policy/v1beta1"  # v1.20 serves no policy/v1 Eviction
    _ref_node(call, "node-0")
    uid = _ref_pod(call, "web-1")["metadata"]["uid"]
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "full"}
    ports.set_pod_condition("default", "web-1", condition, nominated_node="node-0")
    stored = call("GET", f"{CORE_PODS}/web-1")
    assert stored["status"]["nominatedNodeName"] == "node-0"
    assert _condition(stored, "PodScheduled")["message"] == "full"  # type: ignore[index]
    ports.bind("default", "web-1", uid, "node-0")
    stored = call("GET", f"{CORE_PODS}/web-1")
    assert stored["spec"]["nodeName"] == "node-0"
    cond = _condition(stored, "PodScheduled")
    assert cond is not None and cond["status"] == "True"
    with pytest.raises(Conflict):
        ports.bind("default", "web-1", uid, "node-0")
    # (v1.20 ignores the Binding's uid precondition, later servers refuse a stale one as serve does.)
    with pytest.raises(NotFound):
        ports.bind("default", "nope", "", "node-0")
    assert ports.set_pod_condition("default", "nope", condition) is None
    assert ports.set_pod_annotations("default", "web-1", {"a": "b"})["metadata"]["annotations"] == {"a": "b"}


@needs_refcp
def test_kube_apiserver_eviction_and_budgets(ref_ports: Any) -> None:
    ports, call = ref_ports
    _ref_pod(call, "loose")
    assert ports.evict("default", "loose", "PreemptionByScheduler", "preempting")
    with pytest.raises(NotFound):
        call("GET", f"{CORE_PODS}/loose")
    assert not ports.evict("default", "loose", "PreemptionByScheduler", "preempting")
    _ref_pod(call, "guarded", {"app": "db"})
    call(
        "PATCH",
        f"{CORE_PODS}/guarded/status",
        body={"status": {"phase": "Running"}},
        content_type="application/merge-patch+json",
    )
    pdb = {
        "apiVersion": "policy/v1beta1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "db"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "db"}}},
    }
    with contextlib.suppress(AlreadyExists):
        call("POST", "/apis/policy/v1beta1/namespaces/default/poddisruptionbudgets", body=pdb)
    assert not ports.evict("default", "guarded", "PreemptionByScheduler", "preempting")
    stored = call("GET", f"{CORE_PODS}/guarded")
    assert not stored["metadata"].get("deletionTimestamp")
    assert _condition(stored, "DisruptionTarget")["status"] == "False"  # type: ignore[index]


@needs_refcp
def test_kube_apiserver_events(ref_ports: Any) -> None:
    ports, call = ref_ports
    created = _ref_pod(call, "noted")
    ports.record(created, "Warning", "FailedScheduling", "Scheduling", "0/1 nodes are available", "my-sched")
    ports.record({"kind": "Node", "metadata": {"name": "node-0"}}, "Normal", "Seen", "Looking", "a node", "s")
    ports.close()
    assert ports.events.failed == 0
    listed = call(
        "GET", "/api/v1/namespaces/default/events", params={"fieldSelector": "involvedObject.name=noted"}
    )["items"]
    assert [(e["reason"], e["reportingComponent"], e["reportingInstance"]) for e in listed] == [
        ("FailedScheduling", "my-sched", "my-sched-ref-host")
    ]
    assert listed[0]["involvedObject"]["uid"] == created["metadata"]["uid"]
    # An event about a cluster-scoped object goes where v1.20 accepts it.
    nodes = call("GET", "/api/v1/events", params={"fieldSelector": "involvedObject.name=node-0"})["items"]
    assert [(e["metadata"]["namespace"], e["reason"]) for e in nodes] == [("kube-system", "Seen")]


@needs_refcp
def test_kube_apiserver_without_volcano_crds_says_so(ref_ports: Any) -> None:
    # Runs before the CRD below is installed: v1.20 serves no PodGroups.
    ports, _ = ref_ports
    with pytest.raises(StoreError, match=r"podgroups is not served .*Volcano's CRDs"):
        ports.create_pod_group(_pod_group("pg"))


@needs_refcp
def test_kube_apiserver_pod_groups(ref_ports: Any) -> None:
    ports, call = ref_ports
    crd = volcano_crd("podgroups", "PodGroup", "Namespaced")
    with contextlib.suppress(AlreadyExists):
        call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body=crd)

    def served() -> bool:
        try:
            call("GET", f"/apis/{VOLCANO}/namespaces/default/podgroups")
        except NotFound:
            return False
        return True

    assert _until(served)
    created = ports.create_pod_group(_pod_group("pg"))
    assert ports.create_pod_group(_pod_group("pg", 9))["metadata"]["uid"] == created["metadata"]["uid"]
    first = {"phase": "Pending", "conditions": [{"type": "Unschedulable", "status": "True"}], "running": 0}
    assert ports.update_pod_group_status("default", "pg", first) is not None
    out = ports.update_pod_group_status("default", "pg", {"phase": "Running", "running": 2})
    assert out is not None and out["status"] == {"phase": "Running", "running": 2}
    assert call("GET", f"/apis/{VOLCANO}/namespaces/default/podgroups/pg")["spec"]["minMember"] == 2
    assert ports.update_pod_group_status("default", "gone", {"phase": "Running"}) is None
