"""The storage kinds served over HTTP, as kubectl and the official client use them: create with the
server's defaults and the default class, refusals naming the field, status writes, tables and
discovery; and the served schedulers keep the port that binds volumes."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.apiserver.kubectls import until
from tests.apiserver.test_kubectl import kubectl

PVS = "/api/v1/persistentvolumes"
PVCS = "/api/v1/namespaces/default/persistentvolumeclaims"
STORAGE = "/apis/storage.k8s.io/v1"
TABLE = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
needs_kubectl = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


def _pv(name: str, node: str = "node-0", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            },
            **spec,
        },
    }


def _pvc(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}, **spec},
    }


def _class(name: str, default: bool = False, **fields: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if default:
        meta["annotations"] = {"storageclass.kubernetes.io/is-default-class": "true"}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": meta,
        "provisioner": "kubernetes.io/no-provisioner",
        **fields,
    }


def _created(cluster: Any, path: str, body: dict[str, Any]) -> dict[str, Any]:
    code, created, _ = cluster.request("POST", path, body)
    assert code == 201, created
    result: dict[str, Any] = created
    return result


def test_volumes_and_claims_are_made_with_the_servers_defaults_and_the_default_class(cluster):
    _created(cluster, f"{STORAGE}/storageclasses", _class("standard", default=True))
    sc = _created(
        cluster, f"{STORAGE}/storageclasses", _class("local", volumeBindingMode="WaitForFirstConsumer")
    )
    assert (sc["reclaimPolicy"], sc["volumeBindingMode"]) == ("Delete", "WaitForFirstConsumer")

    given = {**_pv("pv-a"), "status": {"phase": "Bound"}}
    pv = _created(cluster, PVS, given)
    assert pv["status"]["phase"] == "Pending" and pv["status"]["lastPhaseTransitionTime"]
    assert (
        pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain" and pv["spec"]["volumeMode"] == "Filesystem"
    )
    assert "namespace" not in pv["metadata"]

    claim = _created(cluster, PVCS, _pvc("data"))
    assert claim["spec"]["storageClassName"] == "standard"  # DefaultStorageClass admission
    assert claim["spec"]["volumeMode"] == "Filesystem" and claim["status"] == {"phase": "Pending"}
    no_class = _created(cluster, PVCS, _pvc("scratch", storageClassName=""))
    assert no_class["spec"]["storageClassName"] == ""

    code, got, _ = cluster.request("GET", f"{PVCS}/data")
    assert code == 200 and got["metadata"]["uid"] == claim["metadata"]["uid"]


def test_a_broken_rule_is_a_422_naming_every_field(cluster):
    code, status, _ = cluster.request("POST", PVCS, {**_pvc("bad"), "spec": {}})
    assert code == 422 and status["reason"] == "Invalid"
    assert [c["field"] for c in status["details"]["causes"]] == [
        "spec.accessModes",
        "spec.resources[storage]",
    ]
    assert status["message"].startswith('PersistentVolumeClaim "bad" is invalid: [spec.accessModes: Required')

    local_without_affinity = _pv("pv-b")
    del local_without_affinity["spec"]["nodeAffinity"]
    code, status, _ = cluster.request("POST", PVS, local_without_affinity)
    assert code == 422
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueRequired",
            "message": "Required value: Local volume requires node affinity",
            "field": "spec.nodeAffinity",
        }
    ]
    code, status, _ = cluster.request("POST", f"{STORAGE}/storageclasses", {**_class("x"), "provisioner": ""})
    assert code == 422 and status["details"]["causes"][0]["field"] == "provisioner"
    code, status, _ = cluster.request("POST", PVS, _pv("pv-c", capacity={"storage": "ten gigs"}))
    assert code == 400 and "quantities must match" in status["message"]


def test_updates_keep_what_upstream_keeps(cluster):
    _created(cluster, f"{STORAGE}/storageclasses", _class("local"))
    claim = _created(cluster, PVCS, _pvc("data", storageClassName="local"))
    claim["spec"]["resources"]["requests"]["storage"] = "50Gi"
    code, status, _ = cluster.request("PUT", f"{PVCS}/data", claim)
    assert code == 422 and status["details"]["causes"][0]["field"] == "spec"

    # A binder names the claim's volume (once) and annotates it: both are allowed.
    code, got, _ = cluster.request("GET", f"{PVCS}/data")
    got["spec"]["volumeName"] = "pv-a"
    got["metadata"]["annotations"] = {"volume.kubernetes.io/selected-node": "node-0"}
    code, updated, _ = cluster.request("PUT", f"{PVCS}/data", got)
    assert code == 200, updated
    assert updated["spec"]["volumeName"] == "pv-a" and updated["status"]["phase"] == "Pending"

    # A stale resourceVersion is a conflict, as the volume binder expects.
    code, status, _ = cluster.request("PUT", f"{PVCS}/data", got)
    assert code == 409 and status["reason"] == "Conflict"

    sc = cluster.request("GET", f"{STORAGE}/storageclasses/local")[1]
    sc["parameters"] = {"type": "ssd"}
    code, status, _ = cluster.request("PUT", f"{STORAGE}/storageclasses/local", sc)
    assert code == 422 and status["details"]["causes"][0]["message"] == (
        "Forbidden: updates to parameters are forbidden."
    )


def _put_read(cluster, path: str, change: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """GET, change, PUT until the PUT is not refused as stale (the PV controller writes the status
    too): what was read and what the PUT answered."""
    for _ in range(20):
        code, read, _ = cluster.request("GET", path.removesuffix("/status"))
        assert code == 200, read
        body = copy.deepcopy(read)
        change(body)
        code, written, _ = cluster.request("PUT", path, body)
        if code != 409:
            assert code == 200, written
            return read, written
    raise AssertionError(f"PUT {path} refused as stale 20 times")


def test_the_status_subresource_is_the_controllers(cluster):
    _created(cluster, PVS, _pv("pv-a"))

    def claim_bound(pv: dict[str, Any]) -> None:
        pv["status"] = {"phase": "Bound"}

    # A write of the object does not change its status...
    read, updated = _put_read(cluster, f"{PVS}/pv-a", claim_bound)
    assert updated["status"]["phase"] == read["status"]["phase"] != "Bound"
    since = updated["status"]["lastPhaseTransitionTime"]
    # ...a write of the status does, and moves the transition time with the phase.
    time.sleep(1.1)

    def failed(pv: dict[str, Any]) -> None:
        pv["status"] = {"phase": "Failed"}

    _, written = _put_read(cluster, f"{PVS}/pv-a/status", failed)
    assert written["status"]["phase"] == "Failed"
    assert written["status"]["lastPhaseTransitionTime"] > since
    code, _, _ = cluster.request(
        "PATCH",
        f"{PVCS}/missing/status",
        {"status": {"phase": "Bound"}},
        content_type="application/merge-patch+json",
    )
    assert code == 404


def test_tables_and_discovery(cluster):
    _created(cluster, f"{STORAGE}/storageclasses", _class("standard", default=True))
    _created(cluster, PVS, _pv("pv-a"))
    _created(cluster, PVCS, _pvc("data"))

    def volume_table() -> Any:
        # serve's PV controller makes the new volume Available (matching no claim of its class).
        code, table, _ = cluster.request("GET", PVS, headers=TABLE)
        return table if code == 200 and table["rows"][0]["cells"][4] == "Available" else None

    table = until(volume_table)
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Capacity",
        "Access Modes",
        "Reclaim Policy",
        "Status",
        "Claim",
        "StorageClass",
        "VolumeAttributesClass",
        "Reason",
        "Age",
        "VolumeMode",
    ]
    assert table["rows"][0]["cells"][:9] == [
        "pv-a",
        "10Gi",
        "RWO",
        "Retain",
        "Available",
        "",
        "local",
        "<unset>",
        "",
    ]
    code, table, _ = cluster.request("GET", f"{STORAGE}/storageclasses", headers=TABLE)
    assert code == 200
    assert table["rows"][0]["cells"][:5] == [
        "standard (default)",
        "kubernetes.io/no-provisioner",
        "Delete",
        "Immediate",
        False,
    ]

    code, v1, _ = cluster.request("GET", "/api/v1")
    assert code == 200
    short = {r["name"]: r.get("shortNames") for r in v1["resources"]}
    assert short["persistentvolumes"] == ["pv"] and short["persistentvolumeclaims"] == ["pvc"]
    assert "persistentvolumes/status" in short and "persistentvolumeclaims/status" in short
    code, storage, _ = cluster.request("GET", STORAGE)
    assert code == 200
    names = {r["name"]: r for r in storage["resources"]}
    assert {
        "storageclasses",
        "csidrivers",
        "csinodes",
        "csistoragecapacities",
        "volumeattachments",
        "volumeattachments/status",
    } <= set(names)
    assert names["storageclasses"]["shortNames"] == ["sc"] and names["csistoragecapacities"]["namespaced"]
    _, groups, _ = cluster.request("GET", "/apis")
    assert "storage.k8s.io" in [g["name"] for g in groups["groups"]]


def test_the_served_schedulers_bind_volumes_through_the_store(cluster):
    schedulers = cluster.served.schedulers
    assert schedulers.cluster.ports.volumes is not None
    assert schedulers.scheduler.ports.volumes is not None
    _created(cluster, PVS, _pv("pv-a"))
    pv = cluster.store.get("PersistentVolume", None, "pv-a")
    written = schedulers.scheduler.ports.volumes.update_persistent_volume(
        {**pv, "spec": {**pv["spec"], "claimRef": {"namespace": "default", "name": "data"}}}
    )
    assert written["spec"]["claimRef"]["name"] == "data"
    assert cluster.request("GET", f"{PVS}/pv-a")[1]["spec"]["claimRef"]["name"] == "data"


# -- kubectl and the official client -----------------------------------------------------------
STATEFUL = [
    _class("standard", default=True, volumeBindingMode="WaitForFirstConsumer"),
    _pv("pv-a", "node-0", storageClassName="standard"),
    _pv("pv-b", "node-1", storageClassName="standard", accessModes=["ReadWriteOncePod"]),
    {**_pvc("data"), "metadata": {"name": "data", "namespace": "default"}},
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": {"name": "ebs.csi.aws.com"},
        "spec": {"attachRequired": True},
    },
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": {"name": "node-0"},
        "spec": {"drivers": [{"name": "ebs.csi.aws.com", "nodeID": "i-1", "allocatable": {"count": 25}}]},
    },
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": "cap-a", "namespace": "default"},
        "storageClassName": "standard",
        "capacity": "100Gi",
        "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": "node-0"}},
    },
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": "va-a"},
        "spec": {
            "attacher": "ebs.csi.aws.com",
            "nodeName": "node-0",
            "source": {"persistentVolumeName": "pv-a"},
        },
    },
]


@needs_kubectl
def test_kubectl_applies_and_gets_every_storage_kind(cluster, tmp_path: Path):
    manifest = tmp_path / "stateful.yaml"
    manifest.write_text(yaml.safe_dump_all(STATEFUL))
    out = kubectl(cluster, "apply", "-f", str(manifest))
    assert "storageclass.storage.k8s.io/standard created" in out
    assert "persistentvolume/pv-a created" in out and "persistentvolumeclaim/data created" in out
    assert "unchanged" in kubectl(cluster, "apply", "-f", str(manifest))

    lines = kubectl(cluster, "get", "pv,pvc,sc").splitlines()
    header = lines[0].split()
    assert header == [
        "NAME",
        "CAPACITY",
        "ACCESS",
        "MODES",
        "RECLAIM",
        "POLICY",
        "STATUS",
        "CLAIM",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "REASON",
        "AGE",
    ]
    rows = {line.split()[0]: line.split() for line in lines if line and not line.startswith("NAME")}
    # The PV controller makes a new volume Available at its next pass.
    pv_a = rows["persistentvolume/pv-a"]
    assert pv_a[1:4] + pv_a[5:6] == ["10Gi", "RWO", "Retain", "standard"]
    assert pv_a[4] in ("Pending", "Available")
    assert rows["persistentvolume/pv-b"][2] == "RWOP"
    assert rows["persistentvolumeclaim/data"][1:3] == ["Pending", "standard"]
    assert rows["storageclass.storage.k8s.io/standard"][1:3] == ["(default)", "kubernetes.io/no-provisioner"]
    pvc_header = next(line for line in lines[1:] if line.startswith("NAME") and "VOLUME " in line + " ")
    assert pvc_header.split() == [
        "NAME",
        "STATUS",
        "VOLUME",
        "CAPACITY",
        "ACCESS",
        "MODES",
        "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS",
        "AGE",
    ]
    wide = kubectl(cluster, "get", "pv", "-o", "wide").splitlines()[0].split()
    assert wide[-1] == "VOLUMEMODE"

    others = kubectl(cluster, "get", "csidriver,csinode,csistoragecapacity,volumeattachment").splitlines()
    assert any(
        line.split()[:4] == ["csidriver.storage.k8s.io/ebs.csi.aws.com", "true", "false", "false"]
        for line in others
    )
    assert any(line.split()[:2] == ["csinode.storage.k8s.io/node-0", "1"] for line in others)
    assert any(
        line.split() == ["csistoragecapacity.storage.k8s.io/cap-a", "standard", "100Gi"] for line in others
    )
    assert any(
        line.split()[:5]
        == ["volumeattachment.storage.k8s.io/va-a", "ebs.csi.aws.com", "pv-a", "node-0", "false"]
        for line in others
    )

    refused = _kubectl_with_input(
        cluster, "create", "-f", "-", input_text=yaml.safe_dump(_pvc("empty") | {"spec": {}})
    )
    assert "spec.accessModes: Required value" in refused


def test_the_python_client_creates_and_lists_claims(make_cluster):
    kubernetes = pytest.importorskip("kubernetes")
    from kubernetes import client, config

    cluster = make_cluster(nodes=1)
    api_client = config.new_client_from_config(config_file=str(cluster.kubeconfig))
    core = client.CoreV1Api(api_client)
    storage = client.StorageV1Api(api_client)
    storage.create_storage_class(
        client.V1StorageClass(
            metadata=client.V1ObjectMeta(
                name="standard", annotations={"storageclass.kubernetes.io/is-default-class": "true"}
            ),
            provisioner="kubernetes.io/no-provisioner",
            volume_binding_mode="WaitForFirstConsumer",
        )
    )
    created = core.create_namespaced_persistent_volume_claim(
        "default",
        client.V1PersistentVolumeClaim(
            metadata=client.V1ObjectMeta(name="data"),
            spec=client.V1PersistentVolumeClaimSpec(
                access_modes=["ReadWriteOnce"],
                resources=client.V1VolumeResourceRequirements(requests={"storage": "1Gi"}),
            ),
        ),
    )
    assert created.spec.storage_class_name == "standard" and created.status.phase == "Pending"
    listed = core.list_namespaced_persistent_volume_claim("default")
    assert [c.metadata.name for c in listed.items] == ["data"]
    assert [c.metadata.name for c in storage.list_storage_class().items] == ["standard"]
    with pytest.raises(kubernetes.client.ApiException) as refused:
        core.create_persistent_volume(
            client.V1PersistentVolume(metadata=client.V1ObjectMeta(name="bad"), spec={})
        )
    assert refused.value.status == 422
    api_client.close()


def _kubectl_with_input(cluster: Any, *args: str, input_text: str) -> str:
    """kubectl reading its manifest from stdin."""
    env = {**os.environ, "KUBECONFIG": str(cluster.kubeconfig)}
    proc = subprocess.run(
        [shutil.which("kubectl") or "kubectl", *args],
        env=env,
        capture_output=True,
        text=True,
        input=input_text,
        timeout=30,
    )
    return proc.stdout + proc.stderr
