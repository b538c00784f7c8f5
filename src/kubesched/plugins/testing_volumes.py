"""Builders shared by the volume plugins' tests: pods with volumes and the storage objects they refer
to, as Kubernetes JSON, and a handle whose informers list them.

This module is imported only by tests; it does not depend on pytest.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubesched.api.objects import Pod
from kubesched.cache.cache import Snapshot
from kubesched.framework.handle import Handle
from kubesched.plugins.testing import pod_dict, store_handle
from kubesched.store.base import ClusterStore
from kubesched.store.memory import MemoryStore

_uids = itertools.count(1)


def volume(name: str, kind: str, source: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One ``spec.volumes`` entry of source ``kind``."""
    return {"name": name, kind: dict(source or {})}


def claim_volume(claim: str, name: str | None = None, *, read_only: bool = False) -> dict[str, Any]:
    """A ``persistentVolumeClaim`` volume (named after its claim unless ``name`` is given)."""
    source: dict[str, Any] = {"claimName": claim}
    if read_only:
        source["readOnly"] = True
    return volume(name or claim, "persistentVolumeClaim", source)


def ephemeral_volume(name: str) -> dict[str, Any]:
    """A generic ephemeral volume: its claim is ``<pod>-<name>``."""
    return volume(name, "ephemeral", {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}})


def pod_with_volumes(
    name: str = "pod",
    volumes: Sequence[Mapping[str, Any]] = (),
    *,
    namespace: str = "default",
    node_name: str = "",
    uid: str | None = None,
) -> Pod:
    raw = pod_dict(name, namespace=namespace, node_name=node_name, uid=uid)
    if volumes:
        raw["spec"]["volumes"] = [dict(v) for v in volumes]
    return Pod.from_dict(raw)


def claim_dict(
    name: str,
    *,
    namespace: str = "default",
    access_modes: Iterable[str] = (),
    volume_name: str = "",
    storage_class: str | None = None,
    owner_uid: str | None = None,
    bound: bool = False,
) -> dict[str, Any]:
    """A PersistentVolumeClaim; ``owner_uid`` makes a pod its controller (an ephemeral volume's
    claim); ``bound``: the PV controller finished binding it to ``volume_name``."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "uid": f"pvc-uid-{next(_uids)}"}
    if owner_uid is not None:
        meta["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner_uid, "controller": True}
        ]
    spec: dict[str, Any] = {"accessModes": list(access_modes)}
    if volume_name:
        spec["volumeName"] = volume_name
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": meta,
        "spec": spec,
    }
    if bound:
        meta["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        obj["status"] = {"phase": "Bound", "accessModes": list(access_modes), "capacity": {"storage": "1Gi"}}
    return obj


def pv_dict(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    csi: tuple[str, str] | None = None,
    source: tuple[str, Mapping[str, Any]] | None = None,
    claim: Mapping[str, Any] | None = None,
    access_modes: Iterable[str] = ("ReadWriteOnce",),
) -> dict[str, Any]:
    """A PersistentVolume with a ``csi`` source (driver, handle) or another ``(kind, source)``;
    with ``claim`` (a :func:`claim_dict`), bound to it."""
    spec: dict[str, Any] = {"capacity": {"storage": "1Gi"}, "accessModes": list(access_modes)}
    if csi is not None:
        spec["csi"] = {"driver": csi[0], "volumeHandle": csi[1]}
    elif source is not None:
        spec[source[0]] = dict(source[1])
    obj: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": spec,
    }
    if claim is not None:
        meta = claim["metadata"]
        # The claim's fixture uid: a store gives the claim a new one, which create_all follows.
        spec["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "namespace": meta["namespace"],
            "name": meta["name"],
            "uid": meta["uid"],
        }
        obj["status"] = {"phase": "Bound"}
    return obj


def bound_claim(
    claim: str,
    pv: str,
    *,
    namespace: str = "default",
    access_modes: Iterable[str] = ("ReadWriteOnce",),
    labels: Mapping[str, str] | None = None,
    csi: tuple[str, str] | None = None,
) -> list[dict[str, Any]]:
    """A claim and the PV it is bound to (both sides written, as the PV controller leaves them)."""
    modes = list(access_modes)
    claim_obj = claim_dict(claim, namespace=namespace, access_modes=modes, volume_name=pv, bound=True)
    return [claim_obj, pv_dict(pv, labels=labels, csi=csi, claim=claim_obj, access_modes=modes)]


def storage_class_dict(
    name: str, provisioner: str = "example.com/p", mode: str | None = None
) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
    }
    if mode is not None:
        obj["volumeBindingMode"] = mode
    return obj


def csinode_dict(
    name: str, drivers: Mapping[str, int | None] | None = None, *, migrated: Iterable[str] = ()
) -> dict[str, Any]:
    """A CSINode listing ``drivers`` (name → ``allocatable.count``, None for no limit)."""
    entries: list[dict[str, Any]] = []
    for driver, count in (drivers or {}).items():
        entry: dict[str, Any] = {"name": driver, "nodeID": name}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    meta: dict[str, Any] = {"name": name}
    plugins = list(migrated)
    if plugins:
        meta["annotations"] = {"storage.alpha.kubernetes.io/migrated-plugins": ",".join(plugins)}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSINode",
        "metadata": meta,
        "spec": {"drivers": entries},
    }


def volume_attachment_dict(
    name: str, node: str, attacher: str, *, pv: str | None = None, inline_driver: str | None = None
) -> dict[str, Any]:
    source: dict[str, Any] = {}
    if pv is not None:
        source["persistentVolumeName"] = pv
    if inline_driver is not None:
        source["inlineVolumeSpec"] = {"csi": {"driver": inline_driver, "volumeHandle": "h"}}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {"name": name},
        "spec": {"attacher": attacher, "nodeName": node, "source": source},
    }


def handle_with(objects: Iterable[Mapping[str, Any]], snapshot: Snapshot | None = None) -> Handle:
    """A handle over a fresh embedded store holding ``objects``, its listers up to date."""
    store = MemoryStore()
    for obj in objects:
        store.create(dict(obj))
    handle = store_handle(store, snapshot)
    handle.informers.pump()
    return handle


def create_all(store: ClusterStore, objs: Iterable[dict[str, Any]]) -> None:
    """Create ``objs`` in ``store`` as a cluster holds them: the store gives every claim a uid of its
    own, so a volume's ``claimRef`` naming a claim's fixture uid is pointed at the uid it got (else the
    PersistentVolume controller would read the volume as bound to a claim since replaced). Claims are
    created first, then the rest in order."""
    objs = list(objs)
    uids: dict[str, str] = {}
    for obj in objs:
        if obj.get("kind") == "PersistentVolumeClaim":
            given = str((obj.get("metadata") or {}).get("uid") or "")
            created = store.create(copy.deepcopy(obj))
            if given:
                uids[given] = str(created["metadata"]["uid"])
    for obj in objs:
        if obj.get("kind") == "PersistentVolumeClaim":
            continue
        obj = copy.deepcopy(obj)
        ref = (obj.get("spec") or {}).get("claimRef") if obj.get("kind") == "PersistentVolume" else None
        if isinstance(ref, dict) and ref.get("uid") in uids:
            ref["uid"] = uids[ref["uid"]]
        store.create(obj)
