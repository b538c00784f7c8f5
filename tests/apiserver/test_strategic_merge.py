"""Strategic merge patch by the kind's OpenAPI schema: each list merges (or is replaced) by its
``x-kubernetes-patch-strategy`` and ``-merge-key``, as kube-apiserver merges by the Go types."""

from __future__ import annotations

from kubesched.apiserver.openapi.schemas import builtin_schema
from kubesched.apiserver.patch import strategic_merge_patch

SERVICE = builtin_schema("", "v1", "Service")
POD = builtin_schema("", "v1", "Pod")
DEPLOYMENT = builtin_schema("apps", "v1", "Deployment")


def test_service_ports_merge_by_port() -> None:
    current = {"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}}
    patched = strategic_merge_patch(
        current, {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}, SERVICE
    )
    assert patched["spec"]["ports"] == [
        {"port": 80, "name": "http"},
        {"port": 443, "name": "https", "targetPort": 8443},
    ]


def test_container_ports_merge_by_container_port_inside_containers_merged_by_name() -> None:
    current = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}}
    change = {"spec": {"containers": [{"name": "c", "ports": [{"containerPort": 81}]}]}}
    patched = strategic_merge_patch(current, change, POD)
    assert patched["spec"]["containers"] == [
        {"name": "c", "ports": [{"containerPort": 80}, {"containerPort": 81}]}
    ]


def test_a_list_without_a_strategy_is_replaced() -> None:
    current = {"spec": {"tolerations": [{"key": "a", "operator": "Exists"}]}}
    patched = strategic_merge_patch(
        current, {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}}, POD
    )
    assert patched["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]


def test_finalizers_merge_as_a_set() -> None:
    current = {"metadata": {"finalizers": ["a", "b"]}}
    patched = strategic_merge_patch(current, {"metadata": {"finalizers": ["b", "c"]}}, POD)
    assert patched["metadata"]["finalizers"] == ["a", "b", "c"]


def test_delete_directive_and_retain_keys() -> None:
    current = {
        "spec": {
            "containers": [{"name": "a"}, {"name": "b"}],
        }
    }
    patched = strategic_merge_patch(
        current, {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}, POD
    )
    assert patched["spec"]["containers"] == [{"name": "b"}]
    rolling = {"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}}
    change = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": None}}}
    assert strategic_merge_patch(rolling, change, DEPLOYMENT)["spec"]["strategy"] == {"type": "Recreate"}


def test_custom_resources_have_no_builtin_schema() -> None:
    assert builtin_schema("scheduling.volcano.sh", "v1beta1", "PodGroup") is None
    assert builtin_schema("topology.volcano.sh", "v1alpha1", "HyperNode") is None


def test_a_strategic_merge_patch_of_a_custom_resource_is_unsupported(cluster) -> None:
    queue = {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue", "metadata": {"name": "q"}}
    assert cluster.request("POST", "/apis/scheduling.volcano.sh/v1beta1/queues", queue)[0] == 201
    status, body, _ = cluster.request(
        "PATCH",
        "/apis/scheduling.volcano.sh/v1beta1/queues/q",
        {"spec": {"weight": 2}},
        content_type="application/strategic-merge-patch+json",
    )
    assert (status, body["reason"]) == (415, "UnsupportedMediaType")
