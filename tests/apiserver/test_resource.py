"""The ``resource.k8s.io/v1`` kinds served over HTTP and through kubectl 1.32: discovery, create
with the server's defaults, refusals naming the field (422 with causes), the claim's status
subresource and its rules, kubectl's columns and field selectors; the simulated DRA driver's
slices for GPU nodes and the resourceclaim controller's claims for pods."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.apiserver.kubectls import until
from tests.apiserver.test_kubectl import kubectl

RESOURCE = "/apis/resource.k8s.io/v1"
CLAIMS = f"{RESOURCE}/namespaces/default/resourceclaims"
TEMPLATES = f"{RESOURCE}/namespaces/default/resourceclaimtemplates"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")

CLASS = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.kubesched.io"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.kubesched.io"'}}]},
}
SPEC = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.kubesched.io"}}]}}


def _claim(name: str, spec: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": spec or SPEC,
    }


def _created(cluster: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, created, _ = cluster.request("POST", path, body)
    assert code == 201, created
    result: dict[str, Any] = created
    return result


def test_discovery_lists_the_four_kinds(cluster):
    code, body, _ = cluster.request("GET", RESOURCE)
    assert code == 200
    found = {r["name"]: (r["kind"], r["namespaced"]) for r in body["resources"]}
    assert found["deviceclasses"] == ("DeviceClass", False)
    assert found["resourceslices"] == ("ResourceSlice", False)
    assert found["resourceclaims"] == ("ResourceClaim", True)
    assert found["resourceclaims/status"] == ("ResourceClaim", True)
    assert found["resourceclaimtemplates"] == ("ResourceClaimTemplate", True)


def test_claims_are_defaulted_and_their_status_is_the_subresources(cluster):
    created = _created(cluster, CLAIMS, {**_claim("one"), "status": {"reservedFor": []}})
    assert created["spec"]["devices"]["requests"][0]["exactly"] == {
        "deviceClassName": "gpu.kubesched.io",
        "allocationMode": "ExactCount",
        "count": 1,
    }
    assert "status" not in created
    allocation = {
        "devices": {
            "results": [{"request": "gpu", "driver": "gpu.kubesched.io", "pool": "node-0", "device": "gpu-0"}]
        }
    }
    consumer = {"resource": "pods", "name": "p", "uid": "1"}
    code, body, _ = cluster.request(
        "PUT",
        f"{CLAIMS}/one/status",
        {**created, "status": {"allocation": allocation, "reservedFor": [consumer]}},
    )
    assert code == 200, body
    # Reserving without an allocation is refused, naming the field.
    for _ in range(20):
        code, current, _ = cluster.request("GET", f"{CLAIMS}/one")
        code, body, _ = cluster.request(
            "PUT", f"{CLAIMS}/one/status", {**current, "status": {"reservedFor": [consumer]}}
        )
        if code != 409:
            break
    assert code == 422 and body["reason"] == "Invalid"
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: may not be specified when `allocated` is not set",
            "field": "status.reservedFor",
        }
    ]
    # The spec cannot change. (The resourceclaim controller drops the reservation of a pod that does
    # not exist, so a write may meet a newer resourceVersion: read again, as a client does.)
    for _ in range(20):
        code, current, _ = cluster.request("GET", f"{CLAIMS}/one")
        changed = {
            **current,
            "spec": {"devices": {"requests": [{"name": "other", "exactly": {"deviceClassName": "x"}}]}},
        }
        code, body, _ = cluster.request("PUT", f"{CLAIMS}/one", changed)
        if code != 409:
            break
    assert code == 422 and body["details"]["causes"][0]["field"] == "spec"
    assert body["details"]["causes"][0]["message"].endswith("field is immutable")


def test_bad_objects_are_422_with_every_field_named(cluster):
    bad = _claim(
        "bad", {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "", "count": -1}}]}}
    )
    code, body, _ = cluster.request("POST", CLAIMS, bad)
    assert code == 422
    assert body["message"].startswith('ResourceClaim.resource.k8s.io "bad" is invalid: ')
    assert [(c["field"], c["reason"]) for c in body["details"]["causes"]] == [
        ("spec.devices.requests[0].exactly.deviceClassName", "FieldValueRequired"),
        ("spec.devices.requests[0].exactly.count", "FieldValueInvalid"),
    ]
    selector = {
        **CLASS,
        "metadata": {"name": "broken"},
        "spec": {"selectors": [{"cel": {"expression": "device.("}}]},
    }
    code, body, _ = cluster.request("POST", f"{RESOURCE}/deviceclasses", selector)
    assert code == 422
    assert body["details"]["causes"][0]["field"] == "spec.selectors[0].cel.expression"
    slice_ = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "devices": []},
    }
    code, body, _ = cluster.request("POST", f"{RESOURCE}/resourceslices", slice_)
    assert code == 422
    assert body["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, "
            "`perDeviceNodeSelection` is required",
            "field": "spec",
        }
    ]
    slice_["spec"]["nodeName"] = "node-0"
    slice_["spec"]["devices"] = [{"name": "d", "capacity": {"memory": {"value": "lots"}}}]
    code, body, _ = cluster.request("POST", f"{RESOURCE}/resourceslices", slice_)
    assert code == 400


def test_claim_table_shows_the_state(cluster):
    _created(cluster, CLAIMS, _claim("pending"))
    code, table, _ = cluster.request("GET", CLAIMS, headers=TABLE)
    assert code == 200
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "State", "Age"]
    assert [row["cells"][:2] for row in table["rows"]] == [["pending", "pending"]]


def test_the_driver_publishes_slices_for_gpu_nodes_and_selects_by_node(make_cluster):
    cluster = make_cluster(nodes=2, node_gpus=2, node_gpu_model="A100")
    path = f"{RESOURCE}/resourceslices"

    def listed() -> list[Any]:
        code, body, _ = cluster.request("GET", path)
        return list(body["items"]) if code == 200 else []

    items = until(lambda: len(listed()) == 2 and listed())
    assert sorted(s["spec"]["nodeName"] for s in items) == ["node-0", "node-1"]
    code, body, _ = cluster.request("GET", f"{path}?fieldSelector=spec.nodeName%3Dnode-1")
    assert code == 200 and [s["spec"]["nodeName"] for s in body["items"]] == ["node-1"]
    code, body, _ = cluster.request("GET", f"{path}?fieldSelector=spec.driver%3Dother.example.com")
    assert code == 200 and body["items"] == []


def test_no_slices_without_gpus_or_without_the_driver(make_cluster):
    cluster = make_cluster(nodes=1)
    other = make_cluster(
        nodes=1, node_gpus=1, dra_driver=None, data_dir=cluster.options.data_dir.parent / "o"
    )
    time.sleep(0.5)  # ten ticks of the controllers
    assert cluster.store.list("ResourceSlice") == []
    assert other.store.list("ResourceSlice") == []


def test_a_pods_template_claim_is_made_and_goes_with_the_pod(cluster):
    _created(
        cluster,
        TEMPLATES,
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaimTemplate",
            "metadata": {"name": "gpu"},
            "spec": {"spec": SPEC},
        },
    )
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "trainer"},
        "spec": {
            "schedulerName": "nobody",
            "containers": [{"name": "c", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
        },
    }
    _created(cluster, "/api/v1/namespaces/default/pods", pod)

    def claims() -> list[Any]:
        return list(cluster.request("GET", CLAIMS)[1]["items"])

    [claim] = until(claims)
    assert claim["metadata"]["name"].startswith("trainer-gpu-")
    assert claim["metadata"]["ownerReferences"][0]["name"] == "trainer"
    statuses = until(
        lambda: cluster.request("GET", "/api/v1/namespaces/default/pods/trainer")[1]["status"].get(
            "resourceClaimStatuses"
        )
    )
    assert statuses == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
    code, _, _ = cluster.request("DELETE", "/api/v1/namespaces/default/pods/trainer?gracePeriodSeconds=0")
    assert code == 200
    assert until(lambda: not claims())


@needs_kubectl
def test_kubectl_apply_get_and_refusals(make_cluster, tmp_path: Path):
    cluster = make_cluster(nodes=1, node_gpus=2)
    manifest = tmp_path / "dra.yaml"
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": SPEC},
    }
    manifest.write_text(
        yaml.safe_dump_all(
            [CLASS, template, {**_claim("shared"), "metadata": {"name": "shared", "namespace": "default"}}]
        )
    )
    out = kubectl(cluster, "apply", "-f", str(manifest))
    assert "deviceclass.resource.k8s.io/gpu.kubesched.io created" in out
    assert "resourceclaimtemplate.resource.k8s.io/gpu created" in out
    assert "resourceclaim.resource.k8s.io/shared created" in out
    assert "unchanged" in kubectl(cluster, "apply", "-f", str(manifest))
    until(lambda: cluster.store.list("ResourceSlice"))
    out = kubectl(cluster, "get", "deviceclasses,resourceslices,resourceclaims,resourceclaimtemplates")
    lines = [line.split() for line in out.splitlines() if line.strip()]
    assert ["NAME", "AGE"] in lines
    assert ["NAME", "NODE", "DRIVER", "POOL", "AGE"] in lines
    assert ["NAME", "STATE", "AGE"] in lines
    assert any(
        row[:4]
        == ["resourceslice.resource.k8s.io/node-0-gpu.kubesched.io", "node-0", "gpu.kubesched.io", "node-0"]
        for row in lines
    )
    assert any(row[:2] == ["resourceclaim.resource.k8s.io/shared", "pending"] for row in lines)
    out = kubectl(cluster, "get", "resourceslices", "--field-selector", "spec.nodeName=node-0", "-o", "name")
    assert out.split() == ["resourceslice.resource.k8s.io/node-0-gpu.kubesched.io"]
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                **_claim("bad", {"devices": {"requests": [{"name": "gpu"}]}}),
                "metadata": {"name": "bad", "namespace": "default"},
            }
        )
    )
    out = kubectl(cluster, "apply", "-f", str(bad), check=False)
    assert 'The ResourceClaim "bad" is invalid' in out
    assert (
        "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"
        in out
    )


@needs_kubectl
def test_kubectl_a_deployment_of_gpu_pods_gets_distinct_devices_and_frees_them(make_cluster, tmp_path: Path):
    """A DeviceClass, a ResourceClaimTemplate and a Deployment of GPU pods applied with kubectl: the
    pods are bound, each claim is allocated its own device on the pod's node and reserved for the
    pod, `kubectl get resourceclaims` shows them allocated; a pod asking for one more device than
    the cluster has stays pending with the scheduler's message, and deleting a pod frees its device
    for it."""
    cluster = make_cluster(nodes=2, node_gpus=2, node_gpu_model="A100")
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "gpu", "namespace": "default"},
        "spec": {"spec": SPEC},
    }

    def deployment(name: str, replicas: int) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "replicas": replicas,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "containers": [
                            {"name": "c", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}
                        ],
                        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "gpu"}],
                    },
                },
            },
        }

    manifest = tmp_path / "gpu.yaml"
    manifest.write_text(yaml.safe_dump_all([CLASS, template, deployment("trainer", 4)]))
    kubectl(cluster, "apply", "-f", str(manifest))

    def pods(app: str) -> list[Any]:
        return [p for p in cluster.store.list("Pod") if p["metadata"]["labels"].get("app") == app]

    def allocated() -> list[Any]:
        return [c for c in cluster.store.list("ResourceClaim") if c.get("status", {}).get("reservedFor")]

    until(lambda: len(pods("trainer")) == 4 and all(p["spec"].get("nodeName") for p in pods("trainer")))
    claims = until(lambda: len(allocated()) == 4 and allocated())
    devices = set()
    node_of = {p["metadata"]["uid"]: p["spec"]["nodeName"] for p in pods("trainer")}
    for claim in claims:
        [result] = claim["status"]["allocation"]["devices"]["results"]
        devices.add((result["pool"], result["device"]))
        [consumer] = claim["status"]["reservedFor"]
        # The device is on the node the pod was bound to.
        assert result["pool"] == node_of[consumer["uid"]]
        assert "resource.kubernetes.io/delete-protection" in claim["metadata"]["finalizers"]
    assert len(devices) == 4
    out = kubectl(cluster, "get", "resourceclaims", "--no-headers")
    states = [line.split()[1] for line in out.splitlines() if line.strip()]
    assert states == ["allocated,reserved"] * 4

    # A fifth GPU pod finds no free device.
    manifest.write_text(yaml.safe_dump(deployment("extra", 1)))
    kubectl(cluster, "apply", "-f", str(manifest))

    def extra_condition() -> Any:
        [pod] = pods("extra") or [None]
        if pod is None:
            return None
        for condition in pod.get("status", {}).get("conditions", []):
            if condition["type"] == "PodScheduled" and condition["status"] == "False":
                return condition
        return None

    condition = until(extra_condition)
    assert condition["message"].startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    # Deleting one trainer pod (the Deployment scales down) frees its device for the extra pod.
    kubectl(cluster, "scale", "deployment/trainer", "--replicas=3")
    until(lambda: pods("extra") and pods("extra")[0]["spec"].get("nodeName"))
    claims = until(lambda: len(allocated()) == 4 and allocated())
    assert (
        len(
            {
                (
                    c["status"]["allocation"]["devices"]["results"][0]["pool"],
                    c["status"]["allocation"]["devices"]["results"][0]["device"],
                )
                for c in claims
            }
        )
        == 4
    )
