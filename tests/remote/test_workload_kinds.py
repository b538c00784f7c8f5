"""``run`` against a server with the workload API (serve with GenericWorkload on): Workloads and
both PodGroup kinds followed into their own store kinds, and the PodGroup's condition written
through its status subresource; against one without it (serve's default) the kinds are skipped."""

from __future__ import annotations

import time
from typing import Any

from kubesched.api.scheduling_groups import POD_GROUP_STORE_KIND
from kubesched.remote.discovery import FOLLOWED_KINDS, Discovery
from kubesched.remote.mirror import MirrorStore
from kubesched.remote.ports import RemotePorts
from kubesched.remote.reflector import ReflectorSet
from kubesched.remote.run import features

V1A2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default"
GROUP = {
    "apiVersion": "scheduling.k8s.io/v1alpha2",
    "kind": "PodGroup",
    "metadata": {"name": "workers"},
    "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
}
VOLCANO_GROUP = {
    "apiVersion": "scheduling.volcano.sh/v1beta1",
    "kind": "PodGroup",
    "metadata": {"name": "workers"},
    "spec": {"minMember": 1},
}


def _until(fn: Any, timeout: float = 15.0) -> Any:
    deadline = time.time() + timeout
    while not (value := fn()) and time.time() < deadline:
        time.sleep(0.05)
    return value


def test_both_pod_group_kinds_are_followed_and_the_condition_written(make_cluster, loop_thread, connect):
    cluster = make_cluster(nodes=0, feature_gates={"GenericWorkload": True})
    cluster.request("POST", f"{V1A2}/podgroups", GROUP)
    cluster.request("POST", "/apis/scheduling.volcano.sh/v1beta1/namespaces/default/podgroups", VOLCANO_GROUP)
    client = connect(cluster)
    discovery = loop_thread.run(Discovery.discover(client))
    assert discovery.info(POD_GROUP_STORE_KIND).group_version == "scheduling.k8s.io/v1alpha2"
    assert discovery.info("PodGroup").group_version == "scheduling.volcano.sh/v1beta1"
    assert discovery.has("Workload") and features(discovery).workload_pod_groups
    mirror = MirrorStore()
    reflectors = ReflectorSet(client, discovery, mirror, FOLLOWED_KINDS)
    loop_thread.run(reflectors.start())
    try:
        assert reflectors.synced.wait(30)
        [k8s] = mirror.list(POD_GROUP_STORE_KIND)
        [volcano] = mirror.list("PodGroup")
        assert k8s["kind"] == "PodGroup" and k8s["apiVersion"] == "scheduling.k8s.io/v1alpha2"
        assert volcano["apiVersion"] == "scheduling.volcano.sh/v1beta1"
        ports = RemotePorts(client, loop_thread, features=features(discovery), current=mirror.get)
        writer = ports.ports().pod_group_conditions
        assert writer is not None
        condition = {
            "type": "PodGroupScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "m",
        }
        written = writer.set_pod_group_condition("default", "workers", condition)
        assert written is not None and written["status"]["conditions"][0]["reason"] == "Unschedulable"
        assert _until(lambda: (mirror.get(POD_GROUP_STORE_KIND, "default", "workers") or {}).get("status"))
        assert "status" not in (mirror.get("PodGroup", "default", "workers") or {})
        ports.close()
    finally:
        loop_thread.run(reflectors.stop())


def test_without_the_workload_api_its_kinds_are_skipped(cluster, loop_thread, connect):
    discovery = loop_thread.run(Discovery.discover(connect(cluster)))
    assert not discovery.has("Workload") and not discovery.has(POD_GROUP_STORE_KIND)
    assert not features(discovery).workload_pod_groups
    assert RemotePorts(None, loop_thread, features=features(discovery)).ports().pod_group_conditions is None  # type: ignore[arg-type]
    reflectors = ReflectorSet(None, discovery, MirrorStore(), FOLLOWED_KINDS)  # type: ignore[arg-type]
    assert {"Workload", POD_GROUP_STORE_KIND} <= set(reflectors.skipped)
