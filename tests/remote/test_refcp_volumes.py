"""The cluster's half of volume binding next to the real one (kube-controller-manager v1.20.2 from
../shared/refcp, started with ``--controller-manager``). Skipped unless refcp is built.

- The same PersistentVolumes and claims go to the real control plane and to the PersistentVolume
  controller serve runs (over a SqliteStore, as serve's controller manager runs it); what the two
  controllers make of them — phases, claimRefs, volume names, annotations, status, the events that
  say why — is compared side by side. refcp runs no external provisioner, so kubesched's is left
  out: a claim of a provisioner's class is only handed to it on both sides. Version differences are
  normalised where v1.20 differs from the current controller kubesched follows: v1.20 sets only the
  beta ``volume.beta.kubernetes.io/storage-provisioner`` annotation (current: it and the GA one), and
  capitalises "Error getting deleter volume plugin"; its ExternalProvisioning message is older.
- A StatefulSet with local volumes through ``kubesched run`` against refcp's kube-apiserver with its
  real controller-manager and no kube-scheduler: every replica lands on its volume's node, claims
  end Bound, nothing is bound twice.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.remote.conftest import started_runners

from kubesched.api.storage import (
    BETA_STORAGE_PROVISIONER_ANNOTATION,
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    PROVISIONED_BY_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
    STORAGE_PROVISIONER_ANNOTATION,
)
from kubesched.controllers.persistentvolume import PersistentVolumeController
from kubesched.remote.run import Runner
from kubesched.store.informers import InformerFactory
from kubesched.store.sqlite import SqliteStore

from .refcp import RefCluster, needs_refcp

pytestmark = needs_refcp

PATHS = {
    "StorageClass": "/apis/storage.k8s.io/v1/storageclasses",
    "PersistentVolume": "/api/v1/persistentvolumes",
    "PersistentVolumeClaim": "/api/v1/namespaces/default/persistentvolumeclaims",
    "StatefulSet": "/apis/apps/v1/namespaces/default/statefulsets",
    "Node": "/api/v1/nodes",
}
PV_ANNOTATIONS = (BOUND_BY_CONTROLLER_ANNOTATION, PROVISIONED_BY_ANNOTATION)
CLAIM_ANNOTATIONS = (
    BIND_COMPLETED_ANNOTATION,
    BOUND_BY_CONTROLLER_ANNOTATION,
    BETA_STORAGE_PROVISIONER_ANNOTATION,
    SELECTED_NODE_ANNOTATION,
)


@pytest.fixture(scope="module")
def refcp_cm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RefCluster]:
    ref = RefCluster(tmp_path_factory.mktemp("refcp-cm"), args=("--controller-manager",))
    try:
        yield ref
    finally:
        ref.stop()


# -- the objects ------------------------------------------------------------------------------------
def storage_class(name: str, provisioner: str, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
        "reclaimPolicy": "Delete",
    }


def volume(
    name: str,
    size: str,
    klass: str,
    *,
    policy: str = "Retain",
    claim: str | None = None,
    node: str | None = None,
    path: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "persistentVolumeReclaimPolicy": policy,
        "storageClassName": klass,
        "volumeMode": "Filesystem",
    }
    if node is not None:
        spec["local"] = {"path": f"/mnt/disks/{name}"}
        term = {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
        spec["nodeAffinity"] = {"required": {"nodeSelectorTerms": [term]}}
    else:
        spec["hostPath"] = {"path": path or f"/data/{name}"}
    if claim is not None:
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": "default",
            "name": claim,
        }
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name}, "spec": spec}


def claim(
    name: str,
    size: str,
    klass: str | None,
    *,
    volume_name: str | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
        "volumeMode": "Filesystem",
    }
    if klass is not None:
        spec["storageClassName"] = klass
    if volume_name is not None:
        spec["volumeName"] = volume_name
    meta: dict[str, Any] = {"name": name, "namespace": "default"}
    if annotations:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta, "spec": spec}


#: Each case in classes of its own, so that no claim can take another case's volume.
OBJECTS = [
    storage_class("wait", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"),
    storage_class("fast", "example.com/fake", "Immediate"),
    # The one matching volume.
    volume("pv-free", "10Gi", "case1"),
    claim("c-free", "1Gi", "case1"),
    # The smallest matching volume.
    volume("pv-s-big", "5Gi", "case2"),
    volume("pv-s-small", "2Gi", "case2"),
    claim("c-s", "1Gi", "case2"),
    # A volume its author pre-bound to a claim.
    volume("pv-prebound", "1Gi", "case3", claim="c-pre"),
    claim("c-pre", "1Gi", "case3"),
    # A claim that names its volume, though a smaller one would do.
    volume("pv-wanted", "3Gi", "case4"),
    volume("pv-other", "1Gi", "case4"),
    claim("c-want", "1Gi", "case4", volume_name="pv-wanted"),
    # WaitForFirstConsumer: left to the scheduler, then completed after the scheduler's PreBind.
    volume("pv-local", "10Gi", "wait", node="node-a"),
    claim("c-wait", "1Gi", "wait"),
    volume("pv-local2", "10Gi", "wait", node="node-b"),
    claim("c-sched", "1Gi", "wait"),
    # No volume, no class.
    claim("c-nomatch", "100Gi", ""),
    # A class that does not exist.
    claim("c-gone", "1Gi", "gone"),
    # A provisioner's class.
    claim("c-ext", "1Gi", "fast"),
    # Bound to a volume that is not there.
    claim(
        "c-lost", "1Gi", "case10", volume_name="pv-missing", annotations={BIND_COMPLETED_ANNOTATION: "yes"}
    ),
    # Deleted claims: Retain, Delete with no deleter (local), Delete of a hostPath under /tmp and not.
    volume("pv-del", "1Gi", "case11"),
    claim("c-del", "1Gi", "case11"),
    volume("pv-del2", "1Gi", "case12", policy="Delete", node="node-a"),
    claim("c-del2", "1Gi", "case12"),
    volume("pv-del3", "1Gi", "case13", policy="Delete", path="/tmp/pv-del3"),
    claim("c-del3", "1Gi", "case13"),
    volume("pv-del4", "1Gi", "case14", policy="Delete", path="/srv/pv-del4"),
    claim("c-del4", "1Gi", "case14"),
    # The scheduler selected a node for a class nothing provisions.
    claim("c-np", "20Gi", "wait", annotations={SELECTED_NODE_ANNOTATION: "node-a"}),
]
DELETED_CLAIMS = ("c-del", "c-del2", "c-del3", "c-del4")
#: Objects whose events do not depend on which of two objects a controller happened to see first.
EVENTFUL = ("c-ext", "c-gone", "c-lost", "c-nomatch", "c-np", "c-wait", "pv-del2", "pv-del4")


def _prebind(volume_obj: dict[str, Any], claim_obj: dict[str, Any]) -> dict[str, Any]:
    """What VolumeBinding's PreBind writes on the volume it chose for a claim."""
    # Items of a list come without their kind.
    obj = {**copy.deepcopy(volume_obj), "apiVersion": "v1", "kind": "PersistentVolume"}
    meta = claim_obj["metadata"]
    obj["spec"]["claimRef"] = {
        "kind": "PersistentVolumeClaim",
        "apiVersion": "v1",
        "namespace": "default",
        "name": meta["name"],
        "uid": meta["uid"],
        "resourceVersion": meta["resourceVersion"],
    }
    obj["metadata"].setdefault("annotations", {})[BOUND_BY_CONTROLLER_ANNOTATION] = "yes"
    return obj


def _until(check: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def _settled(volumes: dict[str, Any], claims: dict[str, Any], phase: int) -> bool:
    def pv_phase(name: str) -> str | None:
        return (volumes[name].get("status") or {}).get("phase") if name in volumes else None

    def claim_phase(name: str) -> str | None:
        return (claims[name].get("status") or {}).get("phase") if name in claims else None

    if phase == 0:
        return len(volumes) == len([o for o in OBJECTS if o["kind"] == "PersistentVolume"]) and all(
            pv_phase(name) == "Available" for name in volumes
        )
    if phase == 1:
        return (
            all(claim_phase(c) == "Bound" for c in ("c-free", "c-s", "c-pre", "c-want", *DELETED_CLAIMS))
            and claim_phase("c-lost") == "Lost"
            and BETA_STORAGE_PROVISIONER_ANNOTATION in (claims["c-ext"]["metadata"].get("annotations") or {})
        )
    return (
        claim_phase("c-sched") == "Bound"
        and pv_phase("pv-del") == "Released"
        and pv_phase("pv-del2") == "Failed"
        and pv_phase("pv-del4") == "Failed"
        and "pv-del3" not in volumes
        and not any(c in claims for c in DELETED_CLAIMS)
    )


# -- the two clusters -------------------------------------------------------------------------------
class Real:
    def __init__(self, ref: RefCluster) -> None:
        self.ref = ref

    def create(self, obj: dict[str, Any]) -> None:
        code, body = self.ref.request("POST", PATHS[obj["kind"]], obj)
        assert code == 201, body

    def update(self, obj: dict[str, Any]) -> None:
        code, body = self.ref.request("PUT", f"{PATHS[obj['kind']]}/{obj['metadata']['name']}", obj)
        assert code == 200, body

    def delete_claim(self, name: str) -> None:
        code, body = self.ref.request("DELETE", f"{PATHS['PersistentVolumeClaim']}/{name}")
        assert code == 200, body

    def state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        volumes = self.ref.request("GET", PATHS["PersistentVolume"])[1]["items"]
        claims = self.ref.request("GET", PATHS["PersistentVolumeClaim"])[1]["items"]
        return {v["metadata"]["name"]: v for v in volumes}, {c["metadata"]["name"]: c for c in claims}

    def events(self) -> list[tuple[str, str, str, str]]:
        items = self.ref.request("GET", "/api/v1/namespaces/default/events")[1]["items"]
        return [(e["involvedObject"]["name"], e["type"], e["reason"], e["message"]) for e in items]

    def settle(self, phase: int) -> None:
        assert _until(lambda: _settled(*self.state(), phase)), self.state()
        time.sleep(1.0)  # what the last change makes the controller say


class Served:
    """The PersistentVolume controller over a served cluster's store, ticked as serve ticks it."""

    def __init__(self, path: Path) -> None:
        self.store = SqliteStore(path, now=time.time)
        self.informers = InformerFactory(self.store)
        self.controller = PersistentVolumeController(self.store, self.informers)

    def create(self, obj: dict[str, Any]) -> None:
        if obj["kind"] in ("PersistentVolume", "PersistentVolumeClaim"):
            # As the API server's strategies make every new volume and claim.
            obj["status"] = {"phase": "Pending"}
        self.store.create(obj)

    def update(self, obj: dict[str, Any]) -> None:
        self.store.update(obj)

    def delete_claim(self, name: str) -> None:
        self.store.delete("PersistentVolumeClaim", "default", name)

    def state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        return (
            {v["metadata"]["name"]: v for v in self.store.list("PersistentVolume")},
            {c["metadata"]["name"]: c for c in self.store.list("PersistentVolumeClaim")},
        )

    def events(self) -> list[tuple[str, str, str, str]]:
        return [(e["regarding"]["name"], e["type"], e["reason"], e["note"]) for e in self.store.list("Event")]

    def settle(self, phase: int) -> None:
        for _ in range(50):
            rv = self.store.resource_version
            self.informers.pump()
            self.controller.sync()
            if self.store.resource_version == rv:
                break
        assert _settled(*self.state(), phase), self.state()


def _play(cluster: Real | Served) -> None:
    # Volumes first, until the controller has seen them all: a claim synced before its volume is
    # known would take whatever else matches, and the comparison would compare a race.
    for obj in OBJECTS:
        if obj["kind"] != "PersistentVolumeClaim":
            cluster.create(copy.deepcopy(obj))
    cluster.settle(0)
    for obj in OBJECTS:
        if obj["kind"] == "PersistentVolumeClaim":
            cluster.create(copy.deepcopy(obj))
    cluster.settle(1)
    volumes, claims = cluster.state()
    cluster.update(_prebind(volumes["pv-local2"], claims["c-sched"]))
    for name in DELETED_CLAIMS:
        cluster.delete_claim(name)
    cluster.settle(2)


def _view(cluster: Real | Served) -> dict[str, Any]:
    """What the controllers made, in terms both clusters share (uids as the claims they name)."""
    volumes, claims = cluster.state()
    by_uid = {c["metadata"]["uid"]: name for name, c in claims.items()}
    view: dict[str, Any] = {}
    for name, v in sorted(volumes.items()):
        ref = v["spec"].get("claimRef")
        bound_to = None
        if ref is not None:
            uid = ref.get("uid") or ""
            bound_to = (ref["name"], by_uid.get(uid, "a deleted claim") if uid else "")
        status = v.get("status") or {}
        annotations = v["metadata"].get("annotations") or {}
        view[f"pv/{name}"] = {
            "phase": status.get("phase"),
            "message": (status.get("message") or "").lower(),
            "claimRef": bound_to,
            "annotations": {k: annotations[k] for k in PV_ANNOTATIONS if k in annotations},
        }
    for name, c in sorted(claims.items()):
        annotations = c["metadata"].get("annotations") or {}
        if BETA_STORAGE_PROVISIONER_ANNOTATION in annotations and isinstance(cluster, Served):
            # The current controller writes the GA annotation beside the beta one.
            assert (
                annotations[STORAGE_PROVISIONER_ANNOTATION]
                == annotations[BETA_STORAGE_PROVISIONER_ANNOTATION]
            )
        status = c.get("status") or {}
        view[f"pvc/{name}"] = {
            "phase": status.get("phase"),
            "volumeName": c["spec"].get("volumeName"),
            "annotations": {k: annotations[k] for k in CLAIM_ANNOTATIONS if k in annotations},
            "accessModes": status.get("accessModes"),
            "capacity": status.get("capacity"),
        }
    events: dict[str, set[tuple[str, str, str]]] = {}
    for name, kind, reason, message in cluster.events():
        if name in EVENTFUL:
            # v1.20 words ExternalProvisioning differently; the reason is what both say.
            note = "" if reason == "ExternalProvisioning" else message.lower()
            events.setdefault(name, set()).add((kind, reason, note))
    view["events"] = events
    return view


def test_serves_persistentvolume_controller_makes_what_kube_controller_manager_makes(
    refcp_cm: RefCluster, tmp_path: Path
) -> None:
    real = Real(refcp_cm)
    served = Served(tmp_path / "cluster.db")
    try:
        _play(real)
        _play(served)
        got, want = _view(served), _view(real)
    finally:
        served.store.close()
    assert set(want["events"]) == set(EVENTFUL)  # every case that says why, said it
    assert sorted(got) == sorted(want)
    for key in want:
        assert got[key] == want[key], key


# -- kubesched run against the real control plane -----------------------------------------------------
@pytest.fixture
def start_runner() -> Iterator[Callable[..., Runner]]:
    yield from started_runners()


def test_a_statefulset_with_local_volumes_through_run(
    refcp_cm: RefCluster, start_runner: Callable[..., Runner]
) -> None:
    pytest.importorskip("kubesched.plugins.volumebinding", reason="needs VolumeBinding")
    real = Real(refcp_cm)
    nodes = ("node-0", "node-1", "node-2")
    for name in nodes:
        cap = {"cpu": "4", "memory": "16Gi", "pods": "110"}
        ready = [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}]
        real.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": cap, "allocatable": cap, "conditions": ready},
            }
        )
    real.create(storage_class("local-storage", "kubernetes.io/no-provisioner", "WaitForFirstConsumer"))
    # Two volumes on node-0, one on each other node: three replicas, each on its volume's node.
    placed = {"lv-0a": "node-0", "lv-0b": "node-0", "lv-1": "node-1", "lv-2": "node-2"}
    for name, node_name in placed.items():
        real.create(volume(name, "10Gi", "local-storage", node=node_name))
    start_runner(refcp_cm, port=0)  # no health port: other runs on this machine may hold the default
    template = {
        "metadata": {"labels": {"app": "db"}},
        "spec": {"containers": [{"name": "db", "image": "db", "resources": {"requests": {"cpu": "100m"}}}]},
    }
    data = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local-storage",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    real.create(
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {
                "replicas": 3,
                "serviceName": "db",
                # Pods never run here: all members are made at once, not one after the other.
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": {"app": "db"}},
                "template": template,
                "volumeClaimTemplates": [data],
            },
        }
    )

    def pods() -> dict[str, Any]:
        items = real.ref.request("GET", "/api/v1/namespaces/default/pods")[1]["items"]
        return {p["metadata"]["name"]: p for p in items if p["metadata"]["name"].startswith("db-")}

    def done() -> bool:
        claims = real.state()[1]
        members = pods()
        return (
            len(members) == 3
            and all(p["spec"].get("nodeName") for p in members.values())
            and all(
                (claims.get(f"data-db-{i}", {}).get("status") or {}).get("phase") == "Bound" for i in range(3)
            )
        )

    assert _until(done, timeout=180), (pods(), real.state())
    volumes, claims = real.state()
    members = pods()
    used: list[str] = []
    for i in range(3):
        bound = claims[f"data-db-{i}"]
        volume_name = bound["spec"]["volumeName"]
        used.append(volume_name)
        assert members[f"db-{i}"]["spec"]["nodeName"] == placed[volume_name]
        ref = volumes[volume_name]["spec"]["claimRef"]
        assert (ref["name"], ref["uid"]) == (f"data-db-{i}", bound["metadata"]["uid"])
        assert volumes[volume_name]["status"]["phase"] == "Bound"
    assert len(set(used)) == 3  # no volume bound twice
    # The volume no claim took stays free.
    (spare,) = set(placed) - set(used)
    assert volumes[spare]["status"]["phase"] == "Available" and "claimRef" not in volumes[spare]["spec"]
