"""The resourceclaim controller (kube-controller-manager's, upstream
``pkg/controller/resourceclaim/controller.go``): the cluster's half of a pod's ResourceClaims.

- A pod whose ``spec.resourceClaims`` names a ResourceClaimTemplate gets a claim made from it:
  named ``<pod>-<pod claim>-<5 random>`` (both parts shortened in proportion past 57 characters),
  with the template's labels and annotations plus ``resource.kubernetes.io/pod-claim-name``, owned
  by the pod (``controller: true``), and recorded in the pod's ``status.resourceClaimStatuses``. A
  claim made before but not yet recorded (the status write failed) is found by its annotation
  and owner and recorded instead of made twice. A missing template is a
  ``FailedResourceClaimCreation`` event on the pod, tried again when something changes.
- A pod that is bound (by anything but the scheduler) gets itself added to the ``reservedFor`` of
  an allocated claim it uses.
- ``reservedFor`` entries of pods that are gone, replaced (another uid) or done (Succeeded, Failed,
  or deleted before being scheduled) are removed. A claim whose last consumer left is deallocated
  (``status.allocation`` cleared, the ``resource.kubernetes.io/delete-protection`` finalizer the
  scheduler set removed), and one being deleted loses its allocation and that finalizer.
- A generated claim no consumer reserves is deleted once its pod is done or gone; a deleted pod
  takes the claims it owns with it, as the garbage collector does.

The handlers mark pods and claims due; :meth:`sync` does the work, reading the store for what it
writes. ``synchronous`` runs ``sync`` from the handlers themselves, so that the simulation's
cluster answers within one pump of the informers.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Mapping
from typing import Any, Final

from kubesched.api.objects import Pod
from kubesched.api.owners import controller_ref
from kubesched.api.resource import (
    FINALIZER,
    POD_RESOURCE_CLAIM_ANNOTATION,
    RESERVED_FOR_MAX_SIZE,
    PodResourceClaim,
    pod_claim_ref,
)
from kubesched.controllers.controller_utils import sync_guarded
from kubesched.errors import InputError
from kubesched.store.base import ClusterStore, EventType, Obj
from kubesched.store.informers import Change, InformerFactory

log = logging.getLogger(__name__)


#: The component upstream's events name.
REPORTER: Final = "resource_claim"
#: What the API server's generateName appends: five of these.
_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
#: The longest generated name base: a 63-character name with room for the random suffix.
_MAX_BASE: Final = 57

Key = tuple[str, str]


def generated_name_base(pod_name: str, claim_name: str) -> str:
    """Upstream's ``generateName`` for a pod's claim: ``<pod>-<pod claim>-``, or past 57 characters
    both parts cut in proportion to their length (so the pod claim's name is never lost)."""
    base = f"{pod_name}-{claim_name}-"
    if len(base) <= _MAX_BASE:
        return base
    return (
        pod_name[: len(pod_name) * _MAX_BASE // len(base)]
        + "-"
        + claim_name[: len(claim_name) * _MAX_BASE // len(base)]
    )


def owning_pod(claim: Mapping[str, Any]) -> tuple[str, str]:
    """The name and uid of the pod that controls ``claim``; ("", "") when none does."""
    for ref in (claim.get("metadata") or {}).get("ownerReferences") or []:
        if (
            isinstance(ref, Mapping)
            and ref.get("controller") is True
            and ref.get("apiVersion") == "v1"
            and ref.get("kind") == "Pod"
        ):
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return "", ""


def _pod_view(change: Change[Any]) -> Pod | None:
    """The pod of an event, parsed if the informer keeps raw objects; None if it does not parse."""
    for view in (change.view, change.old_view):
        if isinstance(view, Pod):
            return view
    spec = change.obj.get("spec")
    if not isinstance(spec, Mapping) or not spec.get("resourceClaims"):
        return None  # most pods: not worth a parse
    try:
        return Pod.from_dict(change.obj)
    except InputError:
        return None


def is_pod_done(pod: Mapping[str, Any]) -> bool:
    """Upstream ``isPodDone``: none of its containers runs or ever will."""
    meta, spec = pod.get("metadata") or {}, pod.get("spec") or {}
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Succeeded", "Failed") or (
        bool(meta.get("deletionTimestamp")) and not spec.get("nodeName")
    )


class ResourceClaimController:
    """Claims from templates, reservations kept true, claims deallocated and removed when unused;
    ``sync`` runs what is due."""

    def __init__(
        self,
        store: ClusterStore,
        informers: InformerFactory,
        *,
        synchronous: bool = False,
        rng: random.Random | None = None,
    ) -> None:
        self.store = store
        self.synchronous = synchronous
        self._rng = rng if rng is not None else random.Random()
        self._due_pods: dict[Key, None] = {}
        self._due_claims: dict[Key, None] = {}
        #: Pods that use each claim (namespace, claim name) → their keys.
        self._users: dict[Key, set[Key]] = {}
        self._uses: dict[Key, tuple[Key, ...]] = {}
        #: The templates each pod with claims names.
        self._templates: dict[Key, frozenset[str]] = {}
        #: Claims by the uid of the pod that controls them (upstream's claim owner index).
        self._owned: dict[str, dict[Key, None]] = {}
        self._owner_of: dict[Key, str] = {}
        #: Uids of pods seen deleted: their reservations go without asking the store.
        self._deleted: set[str] = set()
        self._syncing = False
        informers.informer("Pod").add_handler(self._on_pod)
        informers.informer("ResourceClaim").add_handler(self._on_claim)
        informers.informer("ResourceClaimTemplate").add_handler(self._on_template, replay=False)

    # -- informer handlers -----------------------------------------------------------------------
    def _on_pod(self, change: Change[Any]) -> None:
        pod = _pod_view(change)
        if pod is None or not pod.resource_claims:
            if self._uses:  # most clusters: no pod uses claims, nothing to forget
                self._forget_pod(change)
            return
        key = (pod.namespace, pod.name)
        deleted = change.type == EventType.DELETED
        claims = tuple(
            (pod.namespace, name) for pc in pod.resource_claims if (name := self._claim_name(pod, pc))
        )
        if deleted:
            self._deleted.add(pod.uid)
            self._untrack(key)
        else:
            self._track(key, claims)
            self._templates[key] = frozenset(
                pc.resource_claim_template_name
                for pc in pod.resource_claims
                if pc.resource_claim_template_name
            )
        if deleted or is_pod_done(pod.raw):
            # Reservations of a pod that will not run are released; generated claims may go.
            for claim in claims:
                self._due_claims[claim] = None
            if deleted:
                for claim in self._owned_claims(pod.uid):
                    self._due_claims[claim] = None
        else:
            self._due_pods[key] = None
        self._maybe_sync()

    def _forget_pod(self, change: Change[Any]) -> None:
        meta = change.obj.get("metadata") or {}
        self._untrack((str(meta.get("namespace") or "default"), str(meta.get("name"))))

    def _on_claim(self, change: Change[Any]) -> None:
        meta = change.obj.get("metadata") or {}
        key = (str(meta.get("namespace") or "default"), str(meta.get("name")))
        self._index_owner(key, "" if change.type == EventType.DELETED else owning_pod(change.obj)[1])
        if change.type != EventType.DELETED:
            self._due_claims[key] = None
        # The pods using it may now need it made again, or reserved.
        for pod in self._users.get(key, ()):
            self._due_pods[pod] = None
        self._maybe_sync()

    def _on_template(self, change: Change[Any]) -> None:
        # A template that arrives late lets the pods waiting for it have their claims.
        if change.type == EventType.DELETED:
            return
        meta = change.obj.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name"))
        for pod_key, claims in self._templates.items():
            if pod_key[0] == namespace and name in claims:
                self._due_pods[pod_key] = None
        self._maybe_sync()

    def _track(self, pod: Key, claims: tuple[Key, ...]) -> None:
        if self._uses.get(pod) == claims:
            return
        self._untrack(pod)
        self._uses[pod] = claims
        for claim in claims:
            self._users.setdefault(claim, set()).add(pod)

    def _untrack(self, pod: Key) -> None:
        self._templates.pop(pod, None)
        for claim in self._uses.pop(pod, ()):
            users = self._users.get(claim)
            if users is not None:
                users.discard(pod)
                if not users:
                    del self._users[claim]

    def _index_owner(self, claim: Key, pod_uid: str) -> None:
        before = self._owner_of.pop(claim, "")
        if before:
            owned = self._owned.get(before, {})
            owned.pop(claim, None)
            if not owned:
                self._owned.pop(before, None)
        if pod_uid:
            self._owner_of[claim] = pod_uid
            self._owned.setdefault(pod_uid, {})[claim] = None

    def _owned_claims(self, pod_uid: str) -> list[Key]:
        return list(self._owned.get(pod_uid, ()))

    def _maybe_sync(self) -> None:
        if self.synchronous and not self._syncing:
            self.sync()

    @staticmethod
    def _claim_name(pod: Pod, pod_claim: PodResourceClaim) -> str | None:
        return pod_claim_ref(pod, pod_claim).name

    # -- the work --------------------------------------------------------------------------------
    #: Rounds of work one sync may take before leaving the rest for the next.
    MAX_ROUNDS = 100_000

    def sync(self) -> None:
        """Sync every pod and claim that is due, and what that makes due, until none is."""
        if self._syncing:
            return
        self._syncing = True
        try:
            for _ in range(self.MAX_ROUNDS):
                if self._due_pods:
                    key = next(iter(self._due_pods))
                    del self._due_pods[key]
                    sync_guarded(self.sync_pod, key, log, "resourceclaim controller")
                elif self._due_claims:
                    key = next(iter(self._due_claims))
                    del self._due_claims[key]
                    sync_guarded(self.sync_claim, key, log, "resourceclaim controller")
                else:
                    break
        finally:
            self._syncing = False

    # -- pods ------------------------------------------------------------------------------------
    def sync_pod(self, key: Key) -> None:
        """Upstream ``syncPod``: make the pod's missing claims, record them, reserve what a bound
        pod uses."""
        obj = self.store.get("Pod", *key)
        if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp") or is_pod_done(obj):
            return  # a pod that will not run needs no claims made or reserved
        try:
            pod = Pod.from_dict(obj)
        except InputError:
            return
        made: dict[str, str] = {}
        for pod_claim in pod.resource_claims:
            name = self._handle_claim(pod, pod_claim)
            if name is not None:
                made[pod_claim.name] = name
        if made:
            obj = self._record_claims(obj, made)
            pod = Pod.from_dict(obj)
        if not pod.node_name:
            return  # the scheduler reserves the claims of the pods it binds
        for pod_claim in pod.resource_claims:
            ref = pod_claim_ref(pod, pod_claim)
            if ref.name is None:
                continue
            claim = self.store.get("ResourceClaim", pod.namespace, ref.name)
            if claim is None or (ref.must_check_owner and owning_pod(claim)[1] != pod.uid):
                continue
            status = claim.get("status") or {}
            reserved = status.get("reservedFor") or []
            if (
                status.get("allocation") is not None
                and not any(isinstance(r, Mapping) and r.get("uid") == pod.uid for r in reserved)
                and len(reserved) < RESERVED_FOR_MAX_SIZE
            ):
                entry = {"resource": "pods", "name": pod.name, "uid": pod.uid}
                self.store.update({**claim, "status": {**status, "reservedFor": [*reserved, entry]}})

    def _handle_claim(self, pod: Pod, pod_claim: PodResourceClaim) -> str | None:
        """Upstream ``handleClaim``: the name of a claim made (or found) for a template entry that
        the pod's status does not record yet; None when there is nothing to record."""
        ref = pod_claim_ref(pod, pod_claim)
        if ref.generated:
            if ref.name is None:
                return None  # recorded as needing no claim
            existing = self.store.get("ResourceClaim", pod.namespace, ref.name)
            if existing is not None and (not ref.must_check_owner or owning_pod(existing)[1] == pod.uid):
                return None
        template_name = pod_claim.resource_claim_template_name
        if template_name is None:
            return None
        claim = self._find_generated(pod, pod_claim)
        if claim is None:
            template = self.store.get("ResourceClaimTemplate", pod.namespace, template_name)
            if template is None:
                self.store.record_event(
                    pod.raw,
                    "Warning",
                    "FailedResourceClaimCreation",
                    "FailedResourceClaimCreation",
                    f'PodResourceClaim {pod_claim.name}: resource claim template "{template_name}": '
                    f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found',
                    REPORTER,
                )
                return None
            claim = self.store.create(self._claim_from(pod, pod_claim, template))
            # Known at once, before its event: a retry must find it rather than make another.
            meta = claim["metadata"]
            self._index_owner((pod.namespace, str(meta["name"])), pod.uid)
        return str(claim["metadata"]["name"])

    def _find_generated(self, pod: Pod, pod_claim: PodResourceClaim) -> Obj | None:
        """Upstream ``findPodResourceClaim``: a claim the pod owns, made for this entry."""
        for key in self._owned_claims(pod.uid):
            claim = self.store.get("ResourceClaim", *key)
            if claim is None or owning_pod(claim)[1] != pod.uid:
                continue
            if ((claim.get("metadata") or {}).get("annotations") or {}).get(
                POD_RESOURCE_CLAIM_ANNOTATION
            ) == (pod_claim.name):
                return claim
        return None

    def _claim_from(self, pod: Pod, pod_claim: PodResourceClaim, template: Obj) -> dict[str, Any]:
        outer = template.get("spec") or {}
        claim_meta = outer.get("metadata") or {}
        annotations = dict(claim_meta.get("annotations") or {})
        annotations[POD_RESOURCE_CLAIM_ANNOTATION] = pod_claim.name
        suffix = "".join(self._rng.choice(_ALPHABET) for _ in range(5))
        meta: dict[str, Any] = {
            "name": generated_name_base(pod.name, pod_claim.name)[:58] + suffix,
            "namespace": pod.namespace,
            "annotations": annotations,
            "ownerReferences": [controller_ref("v1", "Pod", pod.name, pod.uid)],
        }
        if claim_meta.get("labels"):
            meta["labels"] = dict(claim_meta["labels"])
        return {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": meta,
            "spec": outer.get("spec") or {},
        }

    def _record_claims(self, pod: Obj, made: Mapping[str, str]) -> Obj:
        """The pod's ``status.resourceClaimStatuses`` with the claims just made (upstream applies
        them as the status's owner)."""
        status = dict(pod.get("status") or {})
        statuses = [
            s
            for s in status.get("resourceClaimStatuses") or []
            if not (isinstance(s, Mapping) and s.get("name") in made)
        ]
        statuses += [{"name": name, "resourceClaimName": claim} for name, claim in made.items()]
        status["resourceClaimStatuses"] = statuses
        return self.store.update({**pod, "status": status})

    # -- claims ----------------------------------------------------------------------------------
    def sync_claim(self, key: Key) -> None:
        """Upstream ``syncClaim``."""
        claim = self.store.get("ResourceClaim", *key)
        if claim is None:
            return
        meta = claim.get("metadata") or {}
        status = claim.get("status") or {}
        reserved = [r for r in status.get("reservedFor") or [] if isinstance(r, Mapping)]
        valid = [r for r in reserved if self._still_reserves(key[0], r)]
        finalizers = list(meta.get("finalizers") or [])
        deleting = bool(meta.get("deletionTimestamp"))
        if len(valid) < len(reserved):
            new_status = {**status, "reservedFor": valid}
            if not valid:
                new_status.pop("reservedFor")
                if FINALIZER in finalizers:
                    # The last consumer left: the devices go back, so that a later consumer may get
                    # any of them, not only the node the previous one ran on.
                    new_status.pop("allocation", None)
                    new_status.pop("devices", None)
            claim = self.store.update({**claim, "status": new_status})
            if FINALIZER in finalizers and "allocation" not in new_status:
                claim = self._drop_finalizer(claim)
                if claim is None:
                    return
        elif FINALIZER in finalizers and deleting and not valid:
            if (claim.get("status") or {}).get("allocation") is not None:
                claim = self.store.update({**claim, "status": {}})
            claim = self._drop_finalizer(claim)
            if claim is None:
                return
        if not valid:
            self._delete_if_unneeded(claim)

    def _still_reserves(self, namespace: str, ref: Mapping[str, Any]) -> bool:
        """A consumer entry stays unless it is a pod that is gone, replaced or done."""
        if ref.get("apiGroup") or ref.get("resource") != "pods":
            return True
        if str(ref.get("uid") or "") in self._deleted:
            return False
        pod = self.store.get("Pod", namespace, str(ref.get("name") or ""))
        if pod is None or (pod.get("metadata") or {}).get("uid") != ref.get("uid"):
            return False
        return not is_pod_done(pod)

    def _drop_finalizer(self, claim: Obj) -> Obj | None:
        """The claim without the scheduler's finalizer; a claim being deleted is then gone (what the
        API server does once an object's last finalizer is removed). None when it is gone."""
        meta = dict(claim.get("metadata") or {})
        meta["finalizers"] = [f for f in meta.get("finalizers") or [] if f != FINALIZER]
        if not meta["finalizers"]:
            del meta["finalizers"]
            if meta.get("deletionTimestamp"):
                self.store.delete("ResourceClaim", meta.get("namespace"), str(meta["name"]))
                return None
        return self.store.update({**claim, "metadata": meta})

    def _delete_if_unneeded(self, claim: Obj) -> None:
        """A generated claim nobody reserves goes once its pod is done, replaced or gone."""
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name:
            return
        meta = claim["metadata"]
        pod = self.store.get("Pod", meta.get("namespace"), pod_name)
        if pod is None or (pod.get("metadata") or {}).get("uid") != pod_uid or is_pod_done(pod):
            self.store.delete("ResourceClaim", meta.get("namespace"), str(meta["name"]))
