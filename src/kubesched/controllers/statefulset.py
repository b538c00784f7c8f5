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

import orjson

from kubesched.controllers.controller_utils import (
    OwnerController,
    controller_uid,
    create_pod,
    is_terminal,
    normalized,
    owner_ref,
    safe_hash,
    write_status,
)
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


REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def revision_data(sts: Obj) -> dict[str, Any]:
    """Upstream ``getPatch``: what a revision keeps of the set, its pod template to be put back
    whole (``$patch: replace``), as ``kubectl rollout undo`` applies it."""
    template = copy.deepcopy((sts.get("spec") or {}).get("template") or {})
    return {"spec": {"template": {**template, "$patch": "replace"}}}


def _revision_template(revision: Obj) -> dict[str, Any]:
    template = dict(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    return template


def _running_and_ready(pod: Obj) -> bool:
    status = pod.get("status") or {}
    if status.get("phase") != "Running":
        return False
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _terminating(pod: Obj) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


class StatefulSetController(OwnerController):
    """Upstream's ``StatefulSetControl``: pods by ordinal, in order (``OrderedReady``: each waits
    for the one before it to be running and ready; ``Parallel``: all at once), each from the set's
    revision it belongs to. A template change is a new ControllerRevision (``<set>-<hash>``); a
    ``RollingUpdate`` replaces the pods at or above the partition from the highest ordinal down,
    one at a time, and the update revision becomes the current one once every pod runs it."""

    kind = "StatefulSet"

    def _create_claim(self, claim: dict[str, Any]) -> Any:
        apply_defaults(claim)
        admit(self.store, claim)
        return self.store.create(claim)

    # -- revisions -------------------------------------------------------------------------------
    def _revisions(self, sts: Obj) -> list[Obj]:
        meta = sts["metadata"]
        uid = meta.get("uid")
        return sorted(
            (
                r
                for r in self.store.list("ControllerRevision")
                if (r.get("metadata") or {}).get("namespace") == meta.get("namespace")
                and controller_uid(r) == uid
            ),
            key=lambda r: (int(r.get("revision") or 0), str(r["metadata"].get("creationTimestamp"))),
        )

    def _sync_revisions(self, sts: Obj, revisions: list[Obj]) -> tuple[Obj, Obj, list[Obj]]:
        """Upstream ``getStatefulSetRevisions``: the current and update revisions, made or renumbered
        as needed, and every revision of the set."""
        meta = sts["metadata"]
        status = sts.get("status") or {}
        data = revision_data(sts)
        latest = max((int(r.get("revision") or 0) for r in revisions), default=0)
        equal = [r for r in revisions if normalized(r.get("data")) == normalized(data)]
        if equal and int(equal[-1].get("revision") or 0) == latest:
            update = equal[-1]
        elif equal:
            # An earlier template again (an undo): its revision becomes the newest.
            update = self.store.update({**equal[-1], "revision": latest + 1})
            revisions = [update if r is equal[-1] else r for r in revisions]
        else:
            collisions = status.get("collisionCount")
            count = collisions if isinstance(collisions, int) else 0
            raw = orjson.dumps(normalized(data), option=orjson.OPT_SORT_KEYS)
            while True:
                name = f"{str(meta['name'])[:223]}-{safe_hash(raw + (str(count).encode() if count else b''))}"
                revision: dict[str, Any] = {
                    "apiVersion": "apps/v1",
                    "kind": "ControllerRevision",
                    "metadata": {
                        "name": name,
                        "namespace": meta.get("namespace"),
                        "labels": dict(
                            ((sts.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels")
                            or {}
                        ),
                        "ownerReferences": [owner_ref(sts)],
                    },
                    "data": data,
                    "revision": latest + 1,
                }
                if meta.get("annotations"):
                    revision["metadata"]["annotations"] = dict(meta["annotations"])
                try:
                    update = self.store.create(revision)
                    break
                except AlreadyExists:
                    taken = self.store.get("ControllerRevision", meta.get("namespace"), name)
                    if (
                        taken is not None
                        and controller_uid(taken) == meta.get("uid")
                        and normalized(taken.get("data")) == normalized(data)
                    ):
                        update = self.store.update({**taken, "revision": latest + 1})
                        break
                    count += 1
            revisions = [*revisions, update]
        current = next(
            (r for r in revisions if r["metadata"]["name"] == status.get("currentRevision")), update
        )
        return current, update, revisions

    def _truncate_history(self, sts: Obj, revisions: list[Obj], pods: list[Obj], keep: set[str]) -> None:
        """Upstream ``truncateHistory``: beyond ``revisionHistoryLimit``, the oldest revisions no
        pod runs go."""
        limit = (sts.get("spec") or {}).get("revisionHistoryLimit")
        limit = limit if isinstance(limit, int) and not isinstance(limit, bool) else 10
        live = keep | {str((p["metadata"].get("labels") or {}).get(REVISION_LABEL)) for p in pods}
        history = [r for r in revisions if r["metadata"]["name"] not in live]
        for revision in history[: max(0, len(history) - limit)]:
            with contextlib.suppress(NotFound):
                self.store.delete(
                    "ControllerRevision", revision["metadata"].get("namespace"), revision["metadata"]["name"]
                )

    # -- pods ------------------------------------------------------------------------------------
    def _create_member(self, sts: Obj, ordinal: int, revision: Obj) -> bool:
        name = sts["metadata"]["name"]
        pod_name = f"{name}-{ordinal}"
        if create_missing_claims(self.store, sts, ordinal, pod_name, self._create_claim):
            return False  # no pod without its claims; tried again at the next change
        template = _revision_template(revision)
        pod_spec = with_storage(sts, ordinal, template.get("spec") or {})
        create_pod(
            self.store,
            sts,
            pod_name,
            {
                **template,
                "spec": {
                    **pod_spec,
                    "hostname": pod_name,
                    **({"subdomain": s} if (s := (sts.get("spec") or {}).get("serviceName")) else {}),
                },
            },
            {
                POD_NAME_LABEL: pod_name,
                POD_INDEX_LABEL: str(ordinal),
                REVISION_LABEL: revision["metadata"]["name"],
            },
        )
        return True

    def reconcile(self, sts: Obj, pods: list[Obj]) -> None:
        spec = sts.get("spec") or {}
        replicas = _replicas(sts)
        name = sts["metadata"]["name"]
        revisions = self._revisions(sts)
        current, update, revisions = self._sync_revisions(sts, revisions)
        sts = self.store.get("StatefulSet", sts["metadata"].get("namespace"), name) or sts
        monotonic = spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        strategy = spec.get("updateStrategy") or {}
        rolling = strategy.get("type", "RollingUpdate") == "RollingUpdate"
        partition = (strategy.get("rollingUpdate") or {}).get("partition") or 0
        if not isinstance(partition, int):
            partition = 0
        have: dict[int, Obj] = {}
        condemned: list[tuple[int, Obj]] = []
        for member in pods:
            ordinal = ordinal_of(name, member["metadata"]["name"])
            if 0 <= ordinal < replicas:
                have[ordinal] = member
            elif ordinal >= replicas:
                condemned.append((ordinal, member))
        condemned.sort(key=lambda item: -item[0])
        current_replicas = int((sts.get("status") or {}).get("currentReplicas") or 0)
        status_out = self._status(sts, pods, current, update)
        blocked = False
        pod: Obj | None
        for ordinal in range(replicas):
            pod = have.get(ordinal)
            if pod is not None and is_terminal(pod) and not _terminating(pod):
                # A failed or finished member is replaced under its name.
                with contextlib.suppress(NotFound):
                    self.store.delete("Pod", pod["metadata"].get("namespace"), pod["metadata"]["name"])
                pod = None
                if monotonic:
                    blocked = True
                    break
                continue
            if pod is None:
                use_current = (ordinal < partition) if rolling else (ordinal < current_replicas)
                self._create_member(sts, ordinal, current if use_current else update)
                if monotonic:
                    blocked = True
                    break
                continue
            if _pending(pod):
                create_missing_claims(self.store, sts, ordinal, pod["metadata"]["name"], self._create_claim)
            if monotonic and (_terminating(pod) or not _running_and_ready(pod)):
                blocked = True
                break
        if not blocked:
            for ordinal, pod in condemned:
                if _terminating(pod):
                    if monotonic:
                        blocked = True
                        break
                    continue
                if (
                    monotonic
                    and not _running_and_ready(pod)
                    and any(not _running_and_ready(p) for o, p in condemned if o != ordinal)
                ):
                    blocked = True
                    break
                self._scale_down(sts, pod, ordinal)
                if monotonic:
                    blocked = True
                    break
        if not blocked and rolling:
            # Highest ordinal first, one at a time, waiting for each updated pod to be ready.
            for ordinal in range(replicas - 1, partition - 1, -1):
                pod = have.get(ordinal)
                if pod is None:
                    break
                if (pod["metadata"].get("labels") or {}).get(REVISION_LABEL) != update["metadata"]["name"]:
                    if not _terminating(pod):
                        with contextlib.suppress(NotFound):
                            delete_cascading(
                                self.store,
                                "Pod",
                                pod["metadata"].get("namespace"),
                                pod["metadata"]["name"],
                                "Background",
                            )
                    break
                if not _running_and_ready(pod):
                    break
        self._truncate_history(
            sts, revisions, pods, {current["metadata"]["name"], update["metadata"]["name"]}
        )
        write_status(self.store, sts, status_out)

    def _status(self, sts: Obj, pods: list[Obj], current: Obj, update: Obj) -> dict[str, Any]:
        """Upstream ``computeReplicaStatus`` and ``completeRollingUpdate``."""
        current_name, update_name = current["metadata"]["name"], update["metadata"]["name"]
        counts = {"replicas": 0, "readyReplicas": 0, "currentReplicas": 0, "updatedReplicas": 0}
        for pod in pods:
            if not (pod.get("status") or {}).get("phase"):
                continue
            counts["replicas"] += 1
            if _running_and_ready(pod):
                counts["readyReplicas"] += 1
            if not _terminating(pod):
                label = (pod["metadata"].get("labels") or {}).get(REVISION_LABEL)
                if label == current_name:
                    counts["currentReplicas"] += 1
                if label == update_name:
                    counts["updatedReplicas"] += 1
        old = sts.get("status") or {}
        status: dict[str, Any] = {
            "observedGeneration": sts["metadata"].get("generation", 1),
            "replicas": counts["replicas"],
            "readyReplicas": counts["readyReplicas"],
            "currentReplicas": counts["currentReplicas"],
            "updatedReplicas": counts["updatedReplicas"],
            "currentRevision": current_name,
            "updateRevision": update_name,
            "collisionCount": old.get("collisionCount", 0),
            "availableReplicas": counts["readyReplicas"],
        }
        strategy = (sts.get("spec") or {}).get("updateStrategy") or {}
        if (
            strategy.get("type", "RollingUpdate") == "RollingUpdate"
            and counts["updatedReplicas"] == counts["replicas"]
            and counts["readyReplicas"] == counts["replicas"]
        ):
            status["currentReplicas"] = counts["updatedReplicas"]
            status["currentRevision"] = update_name
        # Upstream leaves zero counts out of what it writes.
        for key in ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"):
            if status[key] == 0 and key != "replicas":
                del status[key]
        return status

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
