"""``run`` and the storage kinds: discovery finds them (in an older version where a server lacks v1,
or not at all, which only warns), the reflectors mirror them, and the volume port writes a volume
or a claim with a whole-object update that a stale read or a missing object refuses."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

import pytest
from tests.remote.conftest import Cluster

from kubesched.remote.client import ApiClient
from kubesched.remote.discovery import FOLLOWED_KINDS, Discovery
from kubesched.remote.loop import LoopThread
from kubesched.remote.mirror import MirrorStore
from kubesched.remote.ports import RemotePorts
from kubesched.remote.reflector import Backoff, ReflectorSet
from kubesched.store.base import Conflict, NotFound
from kubesched.store.parsers import informer_factory

STORAGE_KINDS = (
    "StorageClass",
    "CSIDriver",
    "CSINode",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSIStorageCapacity",
    "VolumeAttachment",
)
PVS = "/api/v1/persistentvolumes"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"


def _pv(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "hostPath": {"path": f"/data/{name}"},
        },
    }


def _pvc(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }


def _post(cluster: Cluster, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, created, _ = cluster.request("POST", path, body)
    assert code == 201, created
    result: dict[str, Any] = created
    return result


def _settled_volume(cluster: Cluster, name: str) -> dict[str, Any]:
    """A new volume as serve's PersistentVolume controller leaves it (``Available``): the write
    that follows the create, so a test's own writes carry the volume's latest resourceVersion."""
    deadline = time.monotonic() + 10
    while True:
        code, pv, _ = cluster.request("GET", f"{PVS}/{name}")
        if code == 200 and pv.get("status", {}).get("phase") == "Available":
            result: dict[str, Any] = pv
            return result
        assert time.monotonic() < deadline, pv
        time.sleep(0.02)


@pytest.fixture
def ports(cluster: Cluster, connect: Any, loop_thread: LoopThread) -> Any:
    client: ApiClient = connect(cluster)
    made = RemotePorts(client, loop_thread, current=cluster.store.get, identity="test-host")
    yield made
    made.close()


# -- discovery ---------------------------------------------------------------------------------
def test_the_storage_kinds_are_followed_and_discovered_where_serve_serves_them(cluster, loop_thread, connect):
    assert set(STORAGE_KINDS) <= set(FOLLOWED_KINDS)
    discovery = loop_thread.run(Discovery.discover(connect(cluster)))
    found = {
        kind: (
            discovery.info(kind).group_version,
            discovery.info(kind).plural,
            discovery.info(kind).namespaced,
        )
        for kind in STORAGE_KINDS
    }
    assert found == {
        "StorageClass": ("storage.k8s.io/v1", "storageclasses", False),
        "CSIDriver": ("storage.k8s.io/v1", "csidrivers", False),
        "CSINode": ("storage.k8s.io/v1", "csinodes", False),
        "PersistentVolume": ("v1", "persistentvolumes", False),
        "PersistentVolumeClaim": ("v1", "persistentvolumeclaims", True),
        "CSIStorageCapacity": ("storage.k8s.io/v1", "csistoragecapacities", True),
        "VolumeAttachment": ("storage.k8s.io/v1", "volumeattachments", False),
    }
    assert not any(kind in w for w in discovery.warnings for kind in STORAGE_KINDS)
    assert (
        discovery.path("PersistentVolumeClaim", "db", "data")
        == "/api/v1/namespaces/db/persistentvolumeclaims/data"
    )


class _OldServer:
    """The discovery documents of a server before v1.24: CSIStorageCapacity only in ``v1beta1``
    (or, with ``capacity=False``, not at all), CSINode and CSIDriver in both versions."""

    def __init__(self, capacity: bool = True) -> None:
        self.capacity = capacity

    async def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        if path == "/api":
            return {"versions": ["v1"]}
        if path == "/apis":
            versions = [{"version": "v1"}, {"version": "v1beta1"}]
            return {"groups": [{"name": "storage.k8s.io", "versions": versions}]}
        if path == "/api/v1":
            return {
                "resources": [
                    {"name": "pods", "kind": "Pod", "namespaced": True},
                    {"name": "nodes", "kind": "Node", "namespaced": False},
                    {"name": "persistentvolumes", "kind": "PersistentVolume", "namespaced": False},
                    {"name": "persistentvolumes/status", "kind": "PersistentVolume", "namespaced": False},
                    {"name": "persistentvolumeclaims", "kind": "PersistentVolumeClaim", "namespaced": True},
                ]
            }
        if path == "/apis/storage.k8s.io/v1":
            return {
                "resources": [
                    {"name": "storageclasses", "kind": "StorageClass", "namespaced": False},
                    {"name": "csidrivers", "kind": "CSIDriver", "namespaced": False},
                    {"name": "csinodes", "kind": "CSINode", "namespaced": False},
                    {"name": "volumeattachments", "kind": "VolumeAttachment", "namespaced": False},
                ]
            }
        if path == "/apis/storage.k8s.io/v1beta1":
            resources = [{"name": "csinodes", "kind": "CSINode", "namespaced": False}]
            if self.capacity:
                resources.append(
                    {"name": "csistoragecapacities", "kind": "CSIStorageCapacity", "namespaced": True}
                )
            return {"resources": resources}
        return {}


def test_an_older_server_is_followed_in_the_versions_it_serves(loop_thread):
    discovery = loop_thread.run(Discovery.discover(_OldServer()))
    capacity = discovery.info("CSIStorageCapacity")
    assert capacity.group_version == "storage.k8s.io/v1beta1" and capacity.converted
    assert discovery.path("CSIStorageCapacity", "kube-system") == (
        "/apis/storage.k8s.io/v1beta1/namespaces/kube-system/csistoragecapacities"
    )
    # Its objects read as v1, the version the typed views know.
    assert discovery.convert("CSIStorageCapacity", {"metadata": {}})["apiVersion"] == "storage.k8s.io/v1"
    assert discovery.info("CSINode").group_version == "storage.k8s.io/v1"
    assert (
        "CSIStorageCapacity: storage.k8s.io/v1 is not served; using storage.k8s.io/v1beta1"
        in discovery.warnings
    )


def test_a_server_without_a_storage_kind_warns_and_its_reflector_is_skipped(loop_thread):
    discovery = loop_thread.run(Discovery.discover(_OldServer(capacity=False)))
    assert not discovery.has("CSIStorageCapacity") and discovery.has("PersistentVolume")
    assert any(
        w.startswith("CSIStorageCapacity: not served (tried storage.k8s.io/v1, ") for w in discovery.warnings
    )
    reflectors = ReflectorSet(None, discovery, MirrorStore(), FOLLOWED_KINDS)  # type: ignore[arg-type]
    assert "CSIStorageCapacity" in reflectors.skipped and "CSIStorageCapacity" not in reflectors.reflectors
    assert "PersistentVolume" in reflectors.reflectors


# -- the reflectors ----------------------------------------------------------------------------
def test_the_mirror_follows_volumes_and_claims_and_the_informers_parse_them(cluster, loop_thread, connect):
    client = connect(cluster)
    discovery = loop_thread.run(Discovery.discover(client))
    mirror = MirrorStore()
    reflectors = ReflectorSet(
        client, discovery, mirror, STORAGE_KINDS, backoff=Backoff(initial=0.05, cap=0.2)
    )
    _post(cluster, PVS, _pv("pv-a"))
    loop_thread.run(reflectors.start())
    try:
        assert reflectors.synced.wait(15)
        _post(cluster, PVCS, _pvc("data"))
        _post(
            cluster,
            "/apis/storage.k8s.io/v1/storageclasses",
            {
                "kind": "StorageClass",
                "metadata": {"name": "local"},
                "provisioner": "kubernetes.io/no-provisioner",
            },
        )
        informers = informer_factory(mirror)
        claims, volumes = informers.informer("PersistentVolumeClaim"), informers.informer("PersistentVolume")
        classes = informers.informer("StorageClass")
        deadline = loop_thread.loop.time() + 15
        while loop_thread.loop.time() < deadline:
            informers.pump()
            if claims.get("default", "data") is not None and classes.get(None, "local") is not None:
                break
            loop_thread.run(_sleep(0.05))
        claim = claims.get("default", "data")
        assert claim is not None and claim.request == 1 << 30 and claim.storage_class == "local"
        assert volumes.get(None, "pv-a").capacity == 1 << 30
        assert classes.get(None, "local").volume_binding_mode == "Immediate"
        assert mirror.get("PersistentVolumeClaim", "default", "data")["apiVersion"] == "v1"
    finally:
        loop_thread.run(reflectors.stop())


async def _sleep(seconds: float) -> None:
    await asyncio.sleep(seconds)


# -- the volume port ---------------------------------------------------------------------------
def test_a_volume_and_a_claim_are_written_whole_with_their_resource_version(cluster, ports):
    assert ports.ports().volumes is ports
    _post(cluster, PVS, _pv("pv-a"))
    pv = _settled_volume(cluster, "pv-a")
    pv["spec"]["claimRef"] = {"namespace": "default", "name": "data", "uid": "u-1"}
    pv.pop("apiVersion")
    written = ports.update_persistent_volume(pv)
    assert written["spec"]["claimRef"]["name"] == "data"
    assert int(written["metadata"]["resourceVersion"]) > int(pv["metadata"]["resourceVersion"])
    assert cluster.store.get("PersistentVolume", None, "pv-a")["spec"]["claimRef"]["uid"] == "u-1"

    claim = _post(cluster, PVCS, _pvc("data"))
    claim["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "node-0"}
    written = ports.update_persistent_volume_claim(claim)
    assert written["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "node-0"


def test_a_stale_read_is_a_conflict_and_a_missing_object_not_found(cluster, ports):
    _post(cluster, PVS, _pv("pv-a"))
    pv = _settled_volume(cluster, "pv-a")
    fresher = {**pv, "metadata": {**pv["metadata"], "labels": {"a": "b"}}}
    ports.update_persistent_volume(fresher)
    with pytest.raises(Conflict):
        ports.update_persistent_volume({**pv, "spec": {**pv["spec"], "claimRef": {"name": "x"}}})
    with pytest.raises(NotFound):
        ports.update_persistent_volume(_pv("gone"))
    with pytest.raises(NotFound):
        ports.update_persistent_volume_claim(_pvc("gone"))
