"""A StatefulSet with local volumes through ``serve``: its controller makes the claims, the
scheduler's VolumeBinding picks each replica's volume and node, serve's PersistentVolume controller
completes the binding; every replica lands on its volume's node and nothing is bound twice."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

STATEFULSETS = "/apis/apps/v1/namespaces/default/statefulsets"


def _until(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def _local_volume(name: str, node: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "local-storage",
            "volumeMode": "Filesystem",
            "local": {"path": "/mnt/disks/ssd1"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [term]}},
        },
        "status": {"phase": "Pending"},
    }


def test_a_statefulset_with_local_volumes(make_cluster: Any) -> None:
    pytest.importorskip("kubesched.plugins.volumebinding", reason="needs VolumeBinding")
    cluster = make_cluster(nodes=3)
    store = cluster.store
    # Written into the store as the API server would keep them.
    store.create(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "local-storage"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
    )
    placed = {"lv-0a": "node-0", "lv-0b": "node-0", "lv-2": "node-2"}
    for name, node in placed.items():
        store.create(_local_volume(name, node))
    data = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local-storage",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    sts = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "containers": [{"name": "db", "image": "db", "resources": {"requests": {"cpu": "100m"}}}]
                },
            },
            "volumeClaimTemplates": [data],
        },
    }
    code, body, _ = cluster.request("POST", STATEFULSETS, sts)
    assert code == 201, body

    def done() -> bool:
        pods = [p for p in store.list("Pod") if p["metadata"]["name"].startswith("db-")]
        claims = [
            c for c in store.list("PersistentVolumeClaim") if c["metadata"]["name"].startswith("data-db-")
        ]
        return (
            len(pods) == 3
            and all(p["spec"].get("nodeName") for p in pods)
            and len(claims) == 3
            and all((c.get("status") or {}).get("phase") == "Bound" for c in claims)
        )

    assert _until(done), (store.list("Pod"), store.list("PersistentVolumeClaim"))
    pods = {p["metadata"]["name"]: p for p in store.list("Pod")}
    volumes = {v["metadata"]["name"]: v for v in store.list("PersistentVolume")}
    used = []
    for i in range(3):
        claim = store.get("PersistentVolumeClaim", "default", f"data-db-{i}")
        name = claim["spec"]["volumeName"]
        used.append(name)
        assert pods[f"db-{i}"]["spec"]["nodeName"] == placed[name]
        assert volumes[name]["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]
        assert volumes[name]["status"]["phase"] == "Bound"
    assert sorted(used) == sorted(placed)  # three claims, three volumes: each taken once
