"""The PersistentVolume controller (kube-controller-manager's ``persistentvolume-binder``, upstream
``pkg/controller/volume/persistentvolume/pv_controller.go``): it keeps the two pointers between a
claim and its volume — ``PersistentVolume.spec.claimRef`` and ``PersistentVolumeClaim.spec.volumeName``
— consistent, and drives both objects' phases.

- A claim of an ``Immediate`` class (or of no class) is bound here to the smallest matching volume
  (``findBestMatchForClaim``: access modes, size, class, volume mode, selector), volume first.
- A claim of a ``WaitForFirstConsumer`` class is left to the scheduler: without the
  ``volume.kubernetes.io/selected-node`` annotation it only gets a ``WaitForFirstConsumer`` (or
  ``WaitForPodScheduled``) event; a volume the scheduler pre-bound (its ``claimRef``) is bound as
  any pre-bound volume is.
- With no matching volume, a claim whose class names a provisioner is handed to it: the
  ``volume.kubernetes.io/storage-provisioner`` annotation and an ``ExternalProvisioning`` event (for
  a ``WaitForFirstConsumer`` class once the scheduler selected the node).
- A volume whose claim is gone is ``Released`` and reclaimed by its policy (Retain: kept; Delete:
  left to the external provisioner that made it, otherwise ``Failed`` as no in-tree deleter
  applies; Recycle of hostPath and NFS volumes: made ``Available`` again); a bound claim whose
  volume is gone or bound elsewhere is ``Lost``.

As upstream, the controller keeps its own cache of volumes and claims, fed by the informers and by
the objects its own writes return, so that an event of an older version does not undo a binding it
just made. The handlers only mark objects due; :meth:`sync` does the work. ``synchronous`` runs
``sync`` from the handlers themselves, so that the simulation's cluster answers within one pump of
the informers (what a scheduler waiting in PreBind pumps).
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Iterable, Mapping
from typing import Any

from kubesched.api.objects import Pod
from kubesched.api.storage import (
    BETA_STORAGE_PROVISIONER_ANNOTATION,
    BIND_COMPLETED_ANNOTATION,
    BINDING_WAIT_FOR_FIRST_CONSUMER,
    BOUND_BY_CONTROLLER_ANNOTATION,
    CLAIM_BOUND,
    CLAIM_LOST,
    CLAIM_PENDING,
    IN_TREE_CSI_DRIVERS,
    IN_TREE_PLUGIN_NAMES,
    PROVISIONED_BY_ANNOTATION,
    PV_AVAILABLE,
    PV_BOUND,
    PV_FAILED,
    PV_RELEASED,
    SELECTED_NODE_ANNOTATION,
    STORAGE_PROVISIONER_ANNOTATION,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    pod_volumes,
)
from kubesched.controllers.controller_utils import sync_guarded
from kubesched.errors import InputError
from kubesched.store.base import ClusterStore, EventType, Obj
from kubesched.store.informers import Change, InformerFactory

log = logging.getLogger(__name__)


#: The component upstream's events name.
REPORTER = "persistentvolume-controller"

RECLAIM_RETAIN = "Retain"
RECLAIM_DELETE = "Delete"
RECLAIM_RECYCLE = "Recycle"

#: Access modes in the order upstream writes them in its index keys (``GetAccessModesAsString``).
_MODE_ORDER = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")

#: Volume sources whose in-tree plugin can recycle a volume.
_RECYCLABLE = ("hostPath", "nfs")

#: In-tree plugin name → the CSI driver it migrated to (the provisioner external provisioners serve).
MIGRATED_PROVISIONERS: Mapping[str, str] = {
    plugin: IN_TREE_CSI_DRIVERS[source] for source, plugin in IN_TREE_PLUGIN_NAMES.items()
}

ClaimKey = tuple[str, str]


def csi_provisioner_name(provisioner: str) -> str:
    """The provisioner name an external provisioner serves for a class's ``provisioner``: an in-tree
    plugin migrated to CSI is served by its CSI driver (upstream's CSI translation)."""
    return MIGRATED_PROVISIONERS.get(provisioner, provisioner)


def claim_provisioner(claim: PersistentVolumeClaim) -> str:
    """The provisioner a claim was handed to (the GA annotation, else the beta one); "" for none."""
    return claim.annotations.get(STORAGE_PROVISIONER_ANNOTATION) or claim.annotations.get(
        BETA_STORAGE_PROVISIONER_ANNOTATION, ""
    )


def reclaim_policy(volume: PersistentVolume) -> str:
    spec = volume.raw.get("spec") or {}
    return str(spec.get("persistentVolumeReclaimPolicy") or RECLAIM_RETAIN)


def is_volume_bound_to_claim(volume: PersistentVolume, claim: PersistentVolumeClaim) -> bool:
    """Upstream ``IsVolumeBoundToClaim``: the volume's claimRef names the claim (and its uid, when
    the reference has one)."""
    ref = volume.claim_ref
    if ref is None or ref.name != claim.name or ref.namespace != claim.namespace:
        return False
    return not ref.uid or ref.uid == claim.uid


def check_access_modes(claim: PersistentVolumeClaim, volume: PersistentVolume) -> bool:
    """Every access mode the claim asks for is one the volume offers."""
    return set(claim.access_modes) <= set(volume.access_modes)


def find_matching_volume(
    claim: PersistentVolumeClaim, volumes: Iterable[PersistentVolume], delay_binding: bool
) -> PersistentVolume | None:
    """Upstream ``FindMatchingVolume`` on the controller's path (no node): the volume pre-bound to
    the claim if one fits, else — unless binding is delayed to the scheduler — the smallest
    ``Available`` volume of the claim's class whose labels match its selector."""
    smallest: PersistentVolume | None = None
    wanted_class = claim.class_name
    for volume in volumes:
        if volume.claim_ref is not None and not is_volume_bound_to_claim(volume, claim):
            continue
        if volume.capacity < claim.request:
            continue
        if volume.volume_mode != claim.volume_mode:
            continue
        if volume.deletion_timestamp:
            continue
        if is_volume_bound_to_claim(volume, claim):
            return volume
        if delay_binding:
            continue
        if volume.phase != PV_AVAILABLE:
            # Volumes on their way to Available would be bound into an API conflict.
            continue
        if claim.selector is not None and not claim.selector.matches(volume.labels):
            continue
        if volume.storage_class != wanted_class:
            continue
        if smallest is None or volume.capacity < smallest.capacity:
            smallest = volume
    return smallest


def _modes_key(modes: Iterable[str]) -> tuple[str, ...]:
    unique = set(modes)
    return tuple(m for m in _MODE_ORDER if m in unique)


def find_best_match_for_claim(
    claim: PersistentVolumeClaim, volumes: Iterable[PersistentVolume], delay_binding: bool
) -> PersistentVolume | None:
    """Upstream ``findBestMatchForClaim``: volumes are grouped by their set of access modes; the
    groups offering every mode the claim asks for are searched fewest modes first, so a claim gets
    what is closest to what it asked for."""
    groups: dict[tuple[str, ...], list[PersistentVolume]] = {}
    for volume in volumes:
        groups.setdefault(_modes_key(volume.access_modes), []).append(volume)
    wanted = set(claim.access_modes)
    candidates = sorted((key for key in groups if wanted <= set(key)), key=lambda k: (len(k), k))
    for key in candidates:
        match = find_matching_volume(claim, groups[key], delay_binding)
        if match is not None:
            return match
    return None


def check_volume_satisfies_claim(volume: PersistentVolume, claim: PersistentVolumeClaim) -> str | None:
    """Upstream ``checkVolumeSatisfyClaim``: why a volume a claim names cannot serve it (None: it
    can)."""
    if volume.deletion_timestamp:
        return f"the volume is marked for deletion {volume.name!r}"
    if volume.capacity < claim.request:
        return "requested PV is too small"
    if volume.storage_class != claim.class_name:
        return "storageClassName does not match"
    if volume.volume_mode != claim.volume_mode:
        return "incompatible volumeMode"
    if not check_access_modes(claim, volume):
        return "incompatible accessMode"
    return None


def claim_ref(claim: PersistentVolumeClaim) -> dict[str, Any]:
    """The ``claimRef`` a binding writes (upstream ``reference.GetReference`` of the claim)."""
    return {
        "kind": "PersistentVolumeClaim",
        "namespace": claim.namespace,
        "name": claim.name,
        "uid": claim.uid,
        "apiVersion": "v1",
        "resourceVersion": claim.resource_version,
    }


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except (TypeError, ValueError):
        return 0


def _set_annotation(obj: dict[str, Any], key: str, value: str) -> None:
    meta = obj.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations[key] = value
    meta["annotations"] = annotations


def _as_volume(change: Change[Any]) -> PersistentVolume | None:
    if isinstance(change.view, PersistentVolume):
        return change.view
    try:
        return PersistentVolume.from_dict(change.obj)
    except (InputError, KeyError, TypeError, ValueError):
        return None


def _as_claim(change: Change[Any]) -> PersistentVolumeClaim | None:
    if isinstance(change.view, PersistentVolumeClaim):
        return change.view
    try:
        return PersistentVolumeClaim.from_dict(change.obj)
    except (InputError, KeyError, TypeError, ValueError):
        return None


def storage_class_of(informers: InformerFactory, name: str) -> StorageClass | None:
    """A class by name from the informers, whether they hold typed views or stored mappings."""
    view = informers.informer("StorageClass").get(None, name)
    if view is None or isinstance(view, StorageClass):
        return view
    try:
        return StorageClass.from_dict(view)
    except (InputError, KeyError, TypeError, ValueError):
        return None


class PersistentVolumeController:
    """Binds claims to volumes and follows both through their phases; ``sync`` runs what is due."""

    def __init__(self, store: ClusterStore, informers: InformerFactory, *, synchronous: bool = False) -> None:
        self.store = store
        self.informers = informers
        self.synchronous = synchronous
        #: The latest known version of every volume and claim (informers and own writes).
        self._volumes: dict[str, PersistentVolume] = {}
        self._claims: dict[ClaimKey, PersistentVolumeClaim] = {}
        self._due_volumes: dict[str, None] = {}
        self._due_claims: dict[ClaimKey, None] = {}
        self._syncing = False
        self._pods = informers.informer("Pod")
        self._pods.add_handler(self._on_pod, replay=False)
        informers.informer("StorageClass").add_handler(self._on_class)
        informers.informer("PersistentVolume").add_handler(self._on_volume)
        informers.informer("PersistentVolumeClaim").add_handler(self._on_claim)

    # -- informer handlers -----------------------------------------------------------------------
    def _on_volume(self, change: Change[Any]) -> None:
        volume = _as_volume(change)
        if volume is None:
            return
        if change.type == EventType.DELETED:
            # Upstream ``deleteVolume``: the claim learns at once that its volume is gone.
            self._volumes.pop(volume.name, None)
            if volume.claim_ref is not None:
                self._due_claims[(volume.claim_ref.namespace, volume.claim_ref.name)] = None
        elif self._store_volume(volume):
            self._due_volumes[volume.name] = None
        self._maybe_sync()

    def _on_claim(self, change: Change[Any]) -> None:
        claim = _as_claim(change)
        if claim is None:
            return
        key = (claim.namespace, claim.name)
        if change.type == EventType.DELETED:
            # Upstream ``deleteClaim``: the volume is released without waiting for a resync.
            self._claims.pop(key, None)
            if claim.volume_name:
                self._due_volumes[claim.volume_name] = None
        elif self._store_claim(claim):
            self._due_claims[key] = None
        self._maybe_sync()

    def _on_class(self, change: Change[Any]) -> None:
        # Upstream's periodic resync retries the claims a missing class held back; here the class
        # arriving (or changing) retries them.
        if change.type == EventType.DELETED:
            return
        name = str((change.obj.get("metadata") or {}).get("name"))
        for key, claim in self._claims.items():
            if claim.class_name == name and BIND_COMPLETED_ANNOTATION not in claim.annotations:
                self._due_claims[key] = None
        self._maybe_sync()

    def _on_pod(self, change: Change[Any]) -> None:
        # Upstream's periodic resync tells a claim waiting for its first consumer about the pods
        # that came to use it; here a new pod that names claims does.
        if change.type != EventType.ADDED:
            return
        spec = change.obj.get("spec") or {}
        volumes = spec.get("volumes")
        if not volumes or spec.get("nodeName") or not isinstance(volumes, list):
            return
        namespace = str((change.obj.get("metadata") or {}).get("namespace") or "default")
        for volume in volumes:
            source = volume.get("persistentVolumeClaim") if isinstance(volume, Mapping) else None
            if not isinstance(source, Mapping):
                continue
            key = (namespace, str(source.get("claimName")))
            claim = self._claims.get(key)
            if (
                claim is not None
                and not claim.volume_name
                and SELECTED_NODE_ANNOTATION not in claim.annotations
            ):
                self._due_claims[key] = None
        self._maybe_sync()

    def _maybe_sync(self) -> None:
        if self.synchronous and not self._syncing:
            self.sync()

    def _store_volume(self, volume: PersistentVolume) -> bool:
        """Upstream ``storeObjectUpdate``: keep ``volume`` unless a newer version is known."""
        old = self._volumes.get(volume.name)
        if old is not None and _rv(old.raw) >= _rv(volume.raw) and old.uid == volume.uid:
            return False
        self._volumes[volume.name] = volume
        return True

    def _store_claim(self, claim: PersistentVolumeClaim) -> bool:
        key = (claim.namespace, claim.name)
        old = self._claims.get(key)
        if old is not None and _rv(old.raw) >= _rv(claim.raw) and old.uid == claim.uid:
            return False
        self._claims[key] = claim
        return True

    # -- the work --------------------------------------------------------------------------------
    #: Rounds of work one sync may take before leaving the rest for the next (a guard against two
    #: writers undoing each other forever).
    MAX_ROUNDS = 100_000

    def sync(self) -> None:
        """Sync every volume and claim that is due, and what that makes due, until none is."""
        if self._syncing:
            return
        self._syncing = True
        try:
            for _ in range(self.MAX_ROUNDS):
                if self._due_volumes:
                    name = next(iter(self._due_volumes))
                    del self._due_volumes[name]
                    volume = self._latest_volume(name)
                    if volume is not None:
                        sync_guarded(self.sync_volume, volume, log, "persistent volume controller")
                elif self._due_claims:
                    key = next(iter(self._due_claims))
                    del self._due_claims[key]
                    claim = self._latest_claim(*key)
                    if claim is not None:
                        sync_guarded(self.sync_claim, claim, log, "persistent volume controller")
                else:
                    break
        finally:
            self._syncing = False

    # -- claims ----------------------------------------------------------------------------------
    def sync_claim(self, claim: PersistentVolumeClaim) -> None:
        if BIND_COMPLETED_ANNOTATION not in claim.annotations:
            self.sync_unbound_claim(claim)
        else:
            self.sync_bound_claim(claim)

    def sync_unbound_claim(self, claim: PersistentVolumeClaim) -> None:
        if not claim.volume_name:
            delay_binding = self._is_delay_binding_mode(claim)
            volume = find_best_match_for_claim(claim, self._volumes.values(), delay_binding)
            if volume is not None:
                self.bind(volume, claim)
                return
            if self._assign_default_storage_class(claim):
                return
            if delay_binding and SELECTED_NODE_ANNOTATION not in claim.annotations:
                self._emit_unbound_delay_binding_event(claim)
            elif claim.class_name:
                self.provision_claim(claim)
                return
            else:
                self._event(
                    claim.raw,
                    "Normal",
                    "FailedBinding",
                    "no persistent volumes available for this claim and no storage class is set",
                )
            self.update_claim_status(claim, CLAIM_PENDING, None)
            return
        volume = self._latest_volume(claim.volume_name)
        if volume is None:
            # The claim asks for a volume that does not exist (yet): it waits.
            self.update_claim_status(claim, CLAIM_PENDING, None)
        elif volume.claim_ref is None:
            why = check_volume_satisfies_claim(volume, claim)
            if why is not None:
                self._event(
                    claim.raw,
                    "Warning",
                    "VolumeMismatch",
                    f'Cannot bind to requested volume "{volume.name}": {why}',
                )
                self.update_claim_status(claim, CLAIM_PENDING, None)
            else:
                self.bind(volume, claim)
        elif is_volume_bound_to_claim(volume, claim):
            self.bind(volume, claim)
        else:
            self._event(
                claim.raw,
                "Warning",
                "FailedBinding",
                f'volume "{volume.name}" already bound to a different claim.',
            )
            if BOUND_BY_CONTROLLER_ANNOTATION not in claim.annotations:
                self.update_claim_status(claim, CLAIM_PENDING, None)

    def sync_bound_claim(self, claim: PersistentVolumeClaim) -> None:
        if not claim.volume_name:
            self._claim_lost(
                claim,
                "ClaimLost",
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
            )
            return
        volume = self._latest_volume(claim.volume_name)
        if volume is None:
            self._claim_lost(
                claim, "ClaimLost", "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
            )
        elif volume.claim_ref is None or volume.claim_ref.uid == claim.uid:
            # Unbound volume: bound again; correctly bound: whatever is missing is finished.
            self.bind(volume, claim)
        else:
            self._claim_lost(
                claim,
                "ClaimMisbound",
                "Two claims are bound to the same volume, this one is bound incorrectly",
            )

    def _claim_lost(self, claim: PersistentVolumeClaim, reason: str, message: str) -> None:
        if claim.phase == CLAIM_LOST:
            return
        updated = self.update_claim_status(claim, CLAIM_LOST, None)
        self._event(updated.raw, "Warning", reason, message)

    # -- volumes ---------------------------------------------------------------------------------
    def sync_volume(self, volume: PersistentVolume) -> None:
        ref = volume.claim_ref
        if ref is None or not ref.uid:
            # Unused, or pre-bound to a claim whose sync will finish the binding.
            self.update_volume_phase(volume, PV_AVAILABLE, "")
            return
        claim = self._latest_claim(ref.namespace, ref.name)
        if claim is not None and claim.uid != ref.uid:
            # The claim the volume pointed to was deleted and another made under its name.
            claim = None
        if claim is None:
            if volume.phase not in (PV_RELEASED, PV_FAILED):
                volume = self.update_volume_phase(volume, PV_RELEASED, "")
            self.reclaim_volume(volume)
        elif not claim.volume_name:
            if volume.volume_mode != claim.volume_mode:
                self._event(
                    volume.raw,
                    "Warning",
                    "VolumeMismatch",
                    f'Cannot bind PersistentVolume to requested PersistentVolumeClaim "{claim.name}" due to '
                    "incompatible volumeMode.",
                )
                self._event(
                    claim.raw,
                    "Warning",
                    "VolumeMismatch",
                    f'Cannot bind PersistentVolume "{volume.name}" to requested PersistentVolumeClaim due to '
                    "incompatible volumeMode.",
                )
                return
            # The claim's own sync completes what the scheduler or a provisioner began.
            self._due_claims[(claim.namespace, claim.name)] = None
        elif claim.volume_name == volume.name:
            self.update_volume_phase(volume, PV_BOUND, "")
        elif PROVISIONED_BY_ANNOTATION in volume.annotations and reclaim_policy(volume) == RECLAIM_DELETE:
            # Provisioned for a claim that got bound elsewhere: not needed any more.
            if volume.phase not in (PV_RELEASED, PV_FAILED):
                volume = self.update_volume_phase(volume, PV_RELEASED, "")
            self.reclaim_volume(volume)
        else:
            self.unbind_volume(volume)

    def _latest_volume(self, name: str) -> PersistentVolume | None:
        """The volume as the store holds it now. The informers may still be delivering older
        versions (in the simulation the controller works inside their handlers); acting on one of
        those would undo what a newer version says, as upstream's controller asks the API server
        before it releases a volume."""
        obj = self.store.get("PersistentVolume", None, name)
        if obj is None:
            return None
        cached = self._volumes.get(name)
        if cached is not None and cached.raw is obj:
            return cached
        try:
            volume = PersistentVolume.from_dict(obj)
        except InputError:
            return None
        self._store_volume(volume)
        return volume

    def _latest_claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        """The claim as the store holds it now (see :meth:`_latest_volume`)."""
        obj = self.store.get("PersistentVolumeClaim", namespace, name)
        if obj is None:
            return None
        cached = self._claims.get((namespace, name))
        if cached is not None and cached.raw is obj:
            return cached
        try:
            claim = PersistentVolumeClaim.from_dict(obj)
        except InputError:
            return None
        self._store_claim(claim)
        return claim

    def reclaim_volume(self, volume: PersistentVolume) -> None:
        """Upstream ``reclaimVolume``: what the volume's reclaim policy does with a released volume."""
        policy = reclaim_policy(volume)
        if policy == RECLAIM_RETAIN:
            return
        if policy == RECLAIM_RECYCLE:
            if volume.source_kind in _RECYCLABLE:
                self._event(volume.raw, "Normal", "VolumeRecycled", "Volume recycled")
                self.unbind_volume(volume)
            else:
                self._volume_failed(volume, "VolumeFailedRecycle", "No recycler plugin found for the volume!")
            return
        if policy == RECLAIM_DELETE:
            why = self._delete_volume(volume)
            if why is not None:
                self._volume_failed(volume, "VolumeFailedDelete", why)
            return
        self._volume_failed(
            volume, "VolumeUnknownReclaimPolicy", "Volume has unrecognized PersistentVolumeReclaimPolicy"
        )

    def _delete_volume(self, volume: PersistentVolume) -> str | None:
        """Upstream ``deleteVolumeOperation``: delete the volume when an in-tree deleter applies,
        leave it to the external provisioner that serves it otherwise; why it cannot be deleted, or
        None."""
        provisioned_by = volume.annotations.get(PROVISIONED_BY_ANNOTATION, "")
        if provisioned_by and not provisioned_by.startswith("kubernetes.io/"):
            return None  # an external provisioner deletes what it made
        if volume.source_kind == "csi" or volume.source_kind in IN_TREE_CSI_DRIVERS:
            return None  # served by a CSI driver (in-tree sources through migration)
        if volume.source_kind == "hostPath":
            path = str(volume.source.get("path") or "")
            if not re.fullmatch(r"/tmp/.+", path):
                return f"host_path deleter only supports /tmp/.+ but received provided {path}"
        elif not provisioned_by:
            return (
                f'error getting deleter volume plugin for volume "{volume.name}": '
                "no deletable volume plugin matched"
            )
        self.store.delete("PersistentVolume", None, volume.name)
        return None

    def _volume_failed(self, volume: PersistentVolume, reason: str, message: str) -> None:
        if volume.phase == PV_FAILED:
            return
        updated = self.update_volume_phase(volume, PV_FAILED, message)
        self._event(updated.raw, "Warning", reason, message)

    # -- provisioning ----------------------------------------------------------------------------
    def provision_claim(self, claim: PersistentVolumeClaim) -> None:
        """Upstream ``provisionClaim`` with an external provisioner: annotate the claim with the
        provisioner that is to make its volume."""
        storage_class = storage_class_of(self.informers, claim.class_name)
        if storage_class is None:
            self._event(
                claim.raw,
                "Warning",
                "ProvisioningFailed",
                f'storageclass.storage.k8s.io "{claim.class_name}" not found',
            )
            return
        provisioner = csi_provisioner_name(storage_class.provisioner)
        if provisioner.startswith("kubernetes.io/"):
            # No in-tree plugin provisions anything any more (kubernetes.io/no-provisioner included).
            self._event(
                claim.raw, "Warning", "ProvisioningFailed", f"no volume plugin matched name: {provisioner}"
            )
            return
        claim = self._set_claim_provisioner(claim, provisioner)
        self._event(
            claim.raw,
            "Normal",
            "ExternalProvisioning",
            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' or "
            "manually by the system administrator. If volume creation is delayed, please verify that the "
            "provisioner is running and correctly registered.",
        )

    def _set_claim_provisioner(self, claim: PersistentVolumeClaim, provisioner: str) -> PersistentVolumeClaim:
        if claim.annotations.get(STORAGE_PROVISIONER_ANNOTATION) == provisioner:
            return claim
        obj = copy.deepcopy(dict(claim.raw))
        _set_annotation(obj, BETA_STORAGE_PROVISIONER_ANNOTATION, provisioner)
        _set_annotation(obj, STORAGE_PROVISIONER_ANNOTATION, provisioner)
        return self._write_claim(obj)

    def _is_delay_binding_mode(self, claim: PersistentVolumeClaim) -> bool:
        if not claim.class_name:
            return False
        storage_class = storage_class_of(self.informers, claim.class_name)
        return (
            storage_class is not None and storage_class.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER
        )

    def _assign_default_storage_class(self, claim: PersistentVolumeClaim) -> bool:
        """Upstream ``assignDefaultStorageClass``: a claim that names no class at all gets the
        default one (the newest when several are marked), after the fact."""
        if claim.storage_class is not None:
            return False
        defaults = [c for c in self._classes() if c.is_default]
        if not defaults:
            return False
        newest = max(
            defaults,
            key=lambda c: (str((c.raw.get("metadata") or {}).get("creationTimestamp") or ""), c.name),
        )
        obj = copy.deepcopy(dict(claim.raw))
        obj.setdefault("spec", {})["storageClassName"] = newest.name
        # Not into the cache: the claim's event then syncs it again, now with its class.
        self.store.update(obj)
        return True

    def _classes(self) -> list[StorageClass]:
        out: list[StorageClass] = []
        for view in self.informers.informer("StorageClass").list():
            if isinstance(view, StorageClass):
                out.append(view)
                continue
            try:
                out.append(StorageClass.from_dict(view))
            except (InputError, KeyError, TypeError, ValueError):
                continue
        return out

    def _emit_unbound_delay_binding_event(self, claim: PersistentVolumeClaim) -> None:
        """Upstream ``emitEventForUnboundDelayBindingClaim``: which unscheduled pods the claim waits
        for, if any uses it yet."""
        waiting = sorted(self._unscheduled_pods_using(claim))
        if not waiting:
            reason, message = (
                "WaitForFirstConsumer",
                "waiting for first consumer to be created before binding",
            )
        elif len(waiting) == 1:
            reason, message = "WaitForPodScheduled", f"waiting for pod {waiting[0]} to be scheduled"
        else:
            reason, message = "WaitForPodScheduled", f"waiting for pods {','.join(waiting)} to be scheduled"
        self._event(claim.raw, "Normal", reason, message)

    def _unscheduled_pods_using(self, claim: PersistentVolumeClaim) -> Iterable[str]:
        for view in self._pods.in_namespace(claim.namespace):
            if isinstance(view, Pod):
                pod_name, node, phase, volumes = view.name, view.node_name, view.phase, view.volumes
            else:
                meta, spec = view.get("metadata") or {}, view.get("spec") or {}
                pod_name, node = str(meta.get("name")), spec.get("nodeName") or ""
                phase = str((view.get("status") or {}).get("phase") or "")
                try:
                    volumes = pod_volumes(spec, pod_name) if spec.get("volumes") else ()
                except InputError:
                    continue
            if node or phase in ("Succeeded", "Failed"):
                continue
            if any(v.claim_name == claim.name for v in volumes):
                yield pod_name

    # -- binding ---------------------------------------------------------------------------------
    def bind(self, volume: PersistentVolume, claim: PersistentVolumeClaim) -> None:
        """Upstream ``bind``: the volume's claimRef, the volume Bound, the claim's volumeName and
        annotations, the claim Bound — in that order, each written on its own."""
        volume = self._bind_volume_to_claim(volume, claim)
        volume = self.update_volume_phase(volume, PV_BOUND, "")
        claim = self._bind_claim_to_volume(claim, volume)
        self.update_claim_status(claim, CLAIM_BOUND, volume)

    def _bind_volume_to_claim(
        self, volume: PersistentVolume, claim: PersistentVolumeClaim
    ) -> PersistentVolume:
        ref = volume.claim_ref
        set_bound_by_controller = not is_volume_bound_to_claim(volume, claim)
        obj = copy.deepcopy(dict(volume.raw))
        dirty = False
        if ref is None or ref.name != claim.name or ref.namespace != claim.namespace or ref.uid != claim.uid:
            obj.setdefault("spec", {})["claimRef"] = claim_ref(claim)
            dirty = True
        if set_bound_by_controller and BOUND_BY_CONTROLLER_ANNOTATION not in volume.annotations:
            _set_annotation(obj, BOUND_BY_CONTROLLER_ANNOTATION, "yes")
            dirty = True
        return self._write_volume(obj) if dirty else volume

    def _bind_claim_to_volume(
        self, claim: PersistentVolumeClaim, volume: PersistentVolume
    ) -> PersistentVolumeClaim:
        obj = copy.deepcopy(dict(claim.raw))
        dirty = False
        if claim.volume_name != volume.name:
            obj.setdefault("spec", {})["volumeName"] = volume.name
            if BOUND_BY_CONTROLLER_ANNOTATION not in claim.annotations:
                _set_annotation(obj, BOUND_BY_CONTROLLER_ANNOTATION, "yes")
            dirty = True
        if BIND_COMPLETED_ANNOTATION not in claim.annotations:
            _set_annotation(obj, BIND_COMPLETED_ANNOTATION, "yes")
            dirty = True
        return self._write_claim(obj) if dirty else claim

    def unbind_volume(self, volume: PersistentVolume) -> None:
        """Upstream ``unbindVolume``: a binding the controller made is undone; a user's pre-binding
        loses only the claim's uid. The volume is Available again."""
        obj = copy.deepcopy(dict(volume.raw))
        spec = obj.setdefault("spec", {})
        if BOUND_BY_CONTROLLER_ANNOTATION in volume.annotations:
            spec.pop("claimRef", None)
            meta = obj.setdefault("metadata", {})
            annotations = {
                k: v
                for k, v in (meta.get("annotations") or {}).items()
                if k != BOUND_BY_CONTROLLER_ANNOTATION
            }
            if annotations:
                meta["annotations"] = annotations
            else:
                meta.pop("annotations", None)
        elif isinstance(spec.get("claimRef"), Mapping):
            spec["claimRef"] = {**spec["claimRef"], "uid": ""}
        updated = self._write_volume(obj)
        self.update_volume_phase(updated, PV_AVAILABLE, "")

    # -- status writes ---------------------------------------------------------------------------
    def update_claim_status(
        self, claim: PersistentVolumeClaim, phase: str, volume: PersistentVolume | None
    ) -> PersistentVolumeClaim:
        status = dict(claim.raw.get("status") or {})
        dirty = False
        old_phase = (claim.raw.get("status") or {}).get("phase")
        if old_phase != phase:
            status["phase"] = phase
            dirty = True
        if volume is None:
            for key in ("accessModes", "capacity"):
                if status.get(key) is not None:
                    status.pop(key)
                    dirty = True
        else:
            modes = list((volume.raw.get("spec") or {}).get("accessModes") or [])
            if status.get("accessModes") != modes:
                status["accessModes"] = modes
                dirty = True
            if old_phase != phase:
                # Set as the claim becomes Bound; a later difference may be an intended resize.
                capacity = dict((volume.raw.get("spec") or {}).get("capacity") or {})
                if status.get("capacity") != capacity:
                    status["capacity"] = capacity
                    dirty = True
        if not dirty:
            return claim
        return self._write_claim({**claim.raw, "status": status})

    def update_volume_phase(self, volume: PersistentVolume, phase: str, message: str) -> PersistentVolume:
        if (volume.raw.get("status") or {}).get("phase") == phase:
            return volume
        status = {k: v for k, v in (volume.raw.get("status") or {}).items() if k != "message"}
        status["phase"] = phase
        if message:
            status["message"] = message
        return self._write_volume({**volume.raw, "status": status})

    def _write_volume(self, obj: Obj) -> PersistentVolume:
        saved = PersistentVolume.from_dict(self.store.update(obj))
        self._store_volume(saved)
        return saved

    def _write_claim(self, obj: Obj) -> PersistentVolumeClaim:
        saved = PersistentVolumeClaim.from_dict(self.store.update(obj))
        self._store_claim(saved)
        return saved

    def _event(self, regarding: Obj, event_type: str, reason: str, note: str) -> None:
        self.store.record_event(regarding, event_type, reason, reason, note, REPORTER)
