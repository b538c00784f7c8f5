"""The StatefulSet controller (upstream ``pkg/controller/statefulset``): pods named
``<name>-<ordinal>`` for ordinals below ``spec.replicas``, a missing one made again under its
name, those at higher ordinals removed.

Each pod has its own claims from the set's ``volumeClaimTemplates``, named
``<template>-<set>-<ordinal>`` and made before the pod (and again for a pending pod whose claim is
gone); the pod's volumes name them. ``persistentVolumeClaimRetentionPolicy`` decides who owns a
claim, and so whether the garbage collector deletes it: with ``Retain`` for both (the default)
nobody does and claims outlive their pods and set; ``whenDeleted: Delete`` makes the set their
owner, ``whenScaled: Delete`` makes a pod scaled away the owner of its claims."""

from __future__ import annotations

import contextlib
import copy
import re
from collections.abc import Callable, Mapping
from typing import Any

from kubesched.controllers.controller_utils import OwnerController, create_pod, owner_ref, write_status
from kubesched.controllers.garbagecollector import delete_cascading
from kubesched.registry.admission import admit, apply_defaults
from kubesched.store.base import AlreadyExists, ClusterStore, NotFound, Obj

RETAIN = "Retain"
DELETE = "Delete"

#: Upstream ``statefulPodRegex``: a member's name is its set's, a dash and its ordinal.
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")

#: Creates one object in the store, through whatever admission the caller's mode runs.
Create = Callable[[dict[str, Any]], Any]


def ordinal_of(set_name: str, pod_name: str) -> int:
    """The pod's ordinal in the set named ``set_name`` (-1 when it is not one of its names)."""
    match = _ORDINAL.match(pod_name)
    if match is None or match.group(1) != set_name:
        return -1
    return int(match.group(2))


def claim_name(template: str, set_name: str, ordinal: int) -> str:
    """Upstream ``getPersistentVolumeClaimName``."""
    return f"{template}-{set_name}-{ordinal}"


def retention_policy(sts: Obj) -> tuple[str, str]:
    """``(whenDeleted, whenScaled)``; ``Retain`` for what the set leaves unset."""
    policy = (sts.get("spec") or {}).get("persistentVolumeClaimRetentionPolicy") or {}
    if not isinstance(policy, Mapping):
        return RETAIN, RETAIN
    return str(policy.get("whenDeleted") or RETAIN), str(policy.get("whenScaled") or RETAIN)


def templates(sts: Obj) -> list[Mapping[str, Any]]:
    """The set's claim templates that name a claim (what the API server's validation lets through)."""
    raw = (sts.get("spec") or {}).get("volumeClaimTemplates")
    if not isinstance(raw, list):
        return []
    return [
        t
        for t in raw
        if isinstance(t, Mapping)
        and isinstance(t.get("metadata"), Mapping)
        and isinstance(t["metadata"].get("name"), str)
        and isinstance(t.get("spec") or {}, Mapping)
    ]


def _replicas(sts: Obj) -> int:
    replicas = (sts.get("spec") or {}).get("replicas", 1)
    return replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1


def claims_for(sts: Obj, ordinal: int, pod: Obj | None = None) -> dict[str, dict[str, Any]]:
    """Upstream ``getPersistentVolumeClaims``: template name → the claim of member ``ordinal``,
    labelled with the set's selector labels, owned as the retention policy says."""
    meta = sts.get("metadata") or {}
    set_name = str(meta.get("name"))
    selector = ((sts.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    if not isinstance(selector, Mapping):
        selector = {}
    when_deleted, when_scaled = retention_policy(sts)
    replicas = _replicas(sts)
    out: dict[str, dict[str, Any]] = {}
    for template in templates(sts):
        tmeta = template["metadata"]
        name = str(tmeta["name"])
        if not name:
            continue
        labels = tmeta.get("labels")
        claim_meta: dict[str, Any] = {
            "name": claim_name(name, set_name, ordinal),
            "namespace": meta.get("namespace") or "default",
            "labels": {**(labels if isinstance(labels, Mapping) else {}), **selector},
        }
        if isinstance(tmeta.get("annotations"), Mapping) and tmeta["annotations"]:
            claim_meta["annotations"] = dict(tmeta["annotations"])
        owners: list[dict[str, Any]] = []
        if when_deleted == DELETE and (when_scaled != DELETE or ordinal < replicas):
            owners.append(owner_ref(sts))
        if when_scaled == DELETE and ordinal >= replicas and pod is not None:
            owners.append(owner_ref(pod))
        if owners and meta.get("uid"):
            claim_meta["ownerReferences"] = owners
        out[name] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": claim_meta,
            "spec": copy.deepcopy(dict(template.get("spec") or {})),
            "status": {"phase": "Pending"},
        }
    return out


def with_storage(sts: Obj, ordinal: int, pod_spec: Mapping[str, Any]) -> dict[str, Any]:
    """Upstream ``updateStorage``: the pod's volumes name its claims; a volume of the same name
    as a template is replaced."""
    claims = claims_for(sts, ordinal)
    volumes: list[Any] = [
        {"name": name, "persistentVolumeClaim": {"claimName": claim["metadata"]["name"]}}
        for name, claim in claims.items()
    ]
    for volume in pod_spec.get("volumes") or []:
        if not (isinstance(volume, Mapping) and volume.get("name") in claims):
            volumes.append(volume)
    spec = dict(pod_spec)
    if volumes:
        spec["volumes"] = volumes
    return spec


def create_missing_claims(
    store: ClusterStore,
    sts: Obj,
    ordinal: int,
    pod_name: str,
    create: Create,
    *,
    only: set[str] | None = None,
) -> list[str]:
    """Upstream ``createPersistentVolumeClaims``: make the member's claims that do not exist (of
    the templates whose claim names are in ``only``, when given), each with its event on the set;
    what went wrong, one line each."""
    errors: list[str] = []
    set_name = str((sts.get("metadata") or {}).get("name"))
    for claim in claims_for(sts, ordinal).values():
        meta = claim["metadata"]
        name = meta["name"]
        if only is not None and name not in only:
            continue
        existing = store.get("PersistentVolumeClaim", meta["namespace"], name)
        if existing is not None:
            if (existing.get("metadata") or {}).get("deletionTimestamp"):
                errors.append(f"pvc {name} is being deleted")
            continue
        try:
            create(claim)
        except AlreadyExists:
            continue
        except Exception as exc:
            errors.append(f"failed to create PVC {name}: {exc}")
            store.record_event(
                sts,
                "Warning",
                "FailedCreate",
                "Create",
                f"create Claim {name} for Pod {pod_name} in StatefulSet {set_name} failed error: {exc}",
                "statefulset-controller",
            )
            continue
        store.record_event(
            sts,
            "Normal",
            "SuccessfulCreate",
            "Create",
            f"create Claim {name} Pod {pod_name} in StatefulSet {set_name} success",
            "statefulset-controller",
        )
    return errors


class StatefulSetController(OwnerController):
    kind = "StatefulSet"

    def _create_claim(self, claim: dict[str, Any]) -> Any:
        apply_defaults(claim)
        admit(self.store, claim)
        return self.store.create(claim)

    def reconcile(self, sts: Obj, pods: list[Obj]) -> None:
        spec = sts.get("spec") or {}
        replicas = int(spec.get("replicas", 1))
        name = sts["metadata"]["name"]
        have = {p["metadata"]["name"]: p for p in pods}
        template = spec.get("template") or {}
        for i in range(replicas):
            pod_name = f"{name}-{i}"
            pod = have.get(pod_name)
            if pod is None:
                if create_missing_claims(self.store, sts, i, pod_name, self._create_claim):
                    continue  # no pod without its claims; tried again at the next change
                pod_spec = with_storage(sts, i, template.get("spec") or {})
                create_pod(
                    self.store,
                    sts,
                    pod_name,
                    {**template, "spec": pod_spec},
                    {"statefulset.kubernetes.io/pod-name": pod_name},
                )
            elif _pending(pod):
                create_missing_claims(self.store, sts, i, pod_name, self._create_claim)
        for pod_name, pod in have.items():
            ordinal = pod_name.rsplit("-", 1)[-1]
            if ordinal.isdigit() and int(ordinal) >= replicas:
                self._scale_down(sts, pod, int(ordinal))
        ready = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running")
        write_status(
            self.store,
            sts,
            {
                "replicas": min(len(pods), replicas),
                "readyReplicas": ready,
                "currentReplicas": min(len(pods), replicas),
                "availableReplicas": ready,
                "observedGeneration": sts["metadata"].get("generation", 1),
            },
        )

    def _scale_down(self, sts: Obj, pod: Obj, ordinal: int) -> None:
        namespace = pod["metadata"].get("namespace")
        if retention_policy(sts)[1] == DELETE:
            # The pod going away owns its claims first, so that they go with it.
            for claim in claims_for(sts, ordinal, pod).values():
                existing = self.store.get("PersistentVolumeClaim", namespace, claim["metadata"]["name"])
                if existing is None:
                    continue
                refs = [
                    r
                    for r in (existing.get("metadata") or {}).get("ownerReferences") or []
                    if isinstance(r, Mapping) and r.get("uid") != sts["metadata"].get("uid")
                ]
                refs.append(owner_ref(pod))
                self.store.update({**existing, "metadata": {**existing["metadata"], "ownerReferences": refs}})
        with contextlib.suppress(NotFound):
            delete_cascading(self.store, "Pod", namespace, pod["metadata"]["name"], "Background")


def _pending(pod: Obj) -> bool:
    return not (pod.get("spec") or {}).get("nodeName") and (pod.get("status") or {}).get("phase") in (
        None,
        "Pending",
    )
