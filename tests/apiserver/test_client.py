"""The official Python client lists, creates and watches on a served cluster."""

from __future__ import annotations

import threading

import pytest

kubernetes = pytest.importorskip("kubernetes")
from kubernetes import client, config, watch  # noqa: E402


def test_python_client_lists_and_watches(make_cluster):
    cluster = make_cluster(nodes=2)
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    core = client.CoreV1Api(api_client)
    assert {n.metadata.name for n in core.list_node().items} == {"node-0", "node-1"}
    start = core.list_namespaced_pod("default").metadata.resource_version
    seen: list[tuple[str, str, str | None]] = []
    done = threading.Event()

    def follow() -> None:
        w = watch.Watch()
        for event in w.stream(
            core.list_namespaced_pod, "default", resource_version=start, timeout_seconds=10
        ):
            pod = event["object"]
            seen.append((event["type"], pod.metadata.name, pod.spec.node_name))
            if event["type"] == "MODIFIED" and pod.status.phase == "Running":
                w.stop()
                break
        done.set()

    follower = threading.Thread(target=follow)
    follower.start()
    body = client.V1Pod(
        metadata=client.V1ObjectMeta(name="hello", labels={"app": "hello"}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="nginx")]),
    )
    created = core.create_namespaced_pod("default", body)
    assert created.metadata.uid
    assert done.wait(15)
    follower.join(5)
    assert seen[0][:2] == ("ADDED", "hello")
    assert any(node in ("node-0", "node-1") for _, _, node in seen)
    listed = core.list_namespaced_pod("default", label_selector="app=hello")
    assert [p.metadata.name for p in listed.items] == ["hello"]
    with pytest.raises(client.ApiException) as info:
        core.read_namespaced_pod("missing", "default")
    assert info.value.status == 404
    api_client.close()
